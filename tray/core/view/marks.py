"""Pure: the tray's own marks on sessions (seen, dismissed, paused and snoozed), changed.

The file that keeps them between runs is :mod:`tray.state.marks_file`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import replace

from tray.core.view.overview import AppMemory


def running_snoozes(snoozed: Mapping[str, float], now: float) -> dict[str, float]:
    return {key: until for key, until in snoozed.items() if until > now}


def forget_missing(
    memory: AppMemory, present: Collection[str], now: float | None = None
) -> AppMemory:
    """Drop marks for sessions whose files are gone, so the file never grows without end;
    with ``now``, also snoozes that have run out. Returns ``memory`` itself when nothing
    was dropped."""
    seen = {key: value for key, value in memory.seen.items() if key in present}
    dismissed = frozenset(key for key in memory.dismissed if key in present)
    snoozed = {key: value for key, value in memory.snoozed.items() if key in present}
    if now is not None:
        snoozed = running_snoozes(snoozed, now)
    if (
        len(seen) == len(memory.seen)
        and dismissed == memory.dismissed
        and len(snoozed) == len(memory.snoozed)
    ):
        return memory
    return replace(memory, seen=seen, dismissed=dismissed, snoozed=snoozed)


def snooze(memory: AppMemory, session_ids: Collection[str], until: float) -> AppMemory:
    """The memory with these sessions snoozed until ``until``; a later snooze already
    in place is kept."""
    snoozed = dict(memory.snoozed)
    for session_id in session_ids:
        snoozed[session_id] = max(until, snoozed.get(session_id, -math.inf))
    return replace(memory, snoozed=snoozed)


def unsnooze(memory: AppMemory, session_id: str) -> AppMemory:
    return replace(
        memory, snoozed={key: value for key, value in memory.snoozed.items() if key != session_id}
    )
