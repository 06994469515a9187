"""Waiting on a condition instead of sleeping: fast when things are quick, patient when
the machine is loaded.

``wait_for`` waits until something has happened. ``barrier`` shows that something has
not: a later ping that must come, and would come after it. ``wait_past`` is for the one
thing neither can do, letting time itself pass for a timer in another process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from helpers.sessions import blocked, live_session
from tray.state.store import StateStore

T = TypeVar("T")

DEFAULT_TIMEOUT = 20.0
# How much later than the pings in question the marker's falls due: enough for a slow
# app to handle them in a round of their own, since within one round it orders pings by
# kind (prompts before events and reminders) rather than by time.
MARGIN = 0.5
MARKER = "marker"


def wait_for(
    predicate: Callable[[], T | None],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = 0.02,
    what: str = "the condition",
    pump: Callable[[], None] | None = None,
) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that.

    ``pump``, when given, runs before each try instead of the pause (it reads a pty, say,
    and waits on it). Raises AssertionError naming ``what`` when ``timeout`` seconds pass
    first. The last try happens at or after the deadline, so a slow poll is never failed
    untried.
    """
    deadline = time.monotonic() + timeout
    while True:
        if pump is not None:
            pump()
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what}")
        if pump is None:
            time.sleep(interval)


def wait_past(moment: float) -> None:
    """Return once the wall clock (``time.time()``) has passed ``moment``.

    Only for what time alone brings about: a pace to keep, or a timer of a program in
    another process, which runs on the real clock (a settle, a reminder, a coalescing
    window). Never to give something that must not happen its chance to: that is a
    barrier's work.
    """
    while (left := moment - time.time()) > 0:
        time.sleep(left)


class Notified(Protocol):
    @property
    def summary(self) -> str: ...


class NotifyWatch(Protocol):
    """What sees the Notify calls on a bus (tests/desktop/services.py's BusMonitor)."""

    def wait_for_notify(self, count: int = ..., timeout: float = ...) -> Sequence[Notified]: ...


def barrier(
    state_dir: Path,
    watch: NotifyWatch,
    count: int,
    settle: float,
    *,
    after: float | None = None,
    timeout: float = 30.0,
) -> list[str]:
    """Show that no ping due by ``after`` is missing, and none is there that should not be.

    A session blocked from the moment it is written (``marker``) pings once the app's
    ``settle`` is over, and the app sends pings in the order they fall due: once the
    marker's is on the bus, every ping due before it is there too. ``after`` is the
    wall-clock moment by which any ping in question would have fallen due (by default,
    one settle from now: what the app has already seen). The marker is written so that
    its own ping falls due MARGIN later, waiting for that moment when it is still ahead.

    Waits for ``count`` Notify calls in all, checks that the marker's is the last and
    the ``count``-th, and returns every summary, the marker's last.
    """
    moment = (time.time() + settle if after is None else after) + MARGIN - settle
    wait_past(moment)
    now = time.time()
    StateStore(state_dir).write(live_session(MARKER, blocked(MARKER, now), now))
    summaries = [call.summary for call in watch.wait_for_notify(count, timeout)]
    assert summaries[-1] == f"{MARKER} needs approval", summaries
    assert len(summaries) == count, summaries
    return summaries
