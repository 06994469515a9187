"""Pure: the tray's own marks on sessions (seen and dismissed), kept by the worker.

The pause and the snoozes are marks too, but the policy keeps them, since it alone
enforces them (:meth:`tray.core.policy.notification_policy.NotificationPolicy.mutes`).
The file that keeps both between runs is :mod:`tray.state.marks_file`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class AppMemory:
    """What the tray itself remembers of sessions, beside their own files: the view
    reads it as its :class:`tray.core.view.overview.Marks`."""

    # session id -> time up to which its done/error state has been seen
    seen: Mapping[str, float] = field(default_factory=dict)
    dismissed: frozenset[str] = frozenset()


def forget_missing(memory: AppMemory, present: Collection[str]) -> AppMemory:
    """Drop marks for sessions whose files are gone, so the file never grows without end.
    Returns ``memory`` itself when nothing was dropped."""
    seen = {key: value for key, value in memory.seen.items() if key in present}
    dismissed = frozenset(key for key in memory.dismissed if key in present)
    if len(seen) == len(memory.seen) and dismissed == memory.dismissed:
        return memory
    return AppMemory(seen=seen, dismissed=dismissed)


__all__ = ["AppMemory", "forget_missing"]
