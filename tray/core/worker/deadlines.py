"""Pure: the app worker's one clock of deadlines, and when it refreshes.

The worker has several reasons to refresh besides a message: files or hosts changed, the
policy's next reminder, a menu change held back, the slow look at every file for
liveness. Each is one named time here (:class:`Deadlines`); :class:`RefreshSchedule`
sets them after every pass, no earlier than the refresh gate opens, and says what is
due; the worker runs that and sleeps on its mailbox until the earliest.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from tray.core.worker.refresh import REFRESH_INTERVAL, RefreshGate

# The deadlines of a refresh, by name.
CHANGES = "changes"  # files or hosts changed: a refresh was asked for
WAKEUP = "wakeup"  # the policy's next reminder or settled prompt
MENU = "menu"  # a menu change held back (MenuPacer)
RESCAN = "rescan"  # the slow look at every session file, for liveness


def not_before(moment: float | None, earliest: float) -> float | None:
    """``moment`` put off until ``earliest``; None stays None (nothing is due)."""
    return None if moment is None else max(moment, earliest)


class Deadlines:
    """Named next-due times on one ``clock``; a name holds one time or none.

    :meth:`due` is asked with the pass's own ``now``, so everything the pass decides
    agrees on one reading; :meth:`wait_time` reads the clock when the worker is about to
    sleep, after the pass's own work took its time.
    """

    __slots__ = ("_clock", "_times")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._times: dict[str, float] = {}

    def set(self, name: str, at: float | None) -> None:
        """``name`` falls due at ``at``; None (or NaN, which compares with nothing)
        clears it."""
        if at is None or math.isnan(at):
            self._times.pop(name, None)
        else:
            self._times[name] = at

    def get(self, name: str) -> float | None:
        return self._times.get(name)

    def due(self, now: float) -> frozenset[str]:
        """The names whose time has come by ``now``."""
        return frozenset(name for name, at in self._times.items() if at <= now)

    def earliest(self) -> float | None:
        return min(self._times.values(), default=None)

    def wait_time(self, longest: float) -> float:
        """Seconds from the clock's now until the earliest deadline: never less than
        nothing, never more than ``longest`` (so a clock set back, or no deadline at all,
        still wakes the worker now and then)."""
        earliest = self.earliest()
        if earliest is None:
            return longest
        return min(longest, max(0.0, earliest - self._clock()))


class RefreshSchedule:
    """When the worker refreshes, and whether it reads every file.

    A requested refresh goes through the :class:`RefreshGate` (at once after a quiet
    spell, else at the interval's end); the policy's wakeup and a held menu change wait
    for the gate too. Every ``rescan_every`` seconds the worker looks at every file; that
    look leaves the gate open, so a change right after it need not wait.
    """

    __slots__ = ("_gate", "_next_rescan", "_rescan_every", "deadlines")

    def __init__(
        self,
        clock: Callable[[], float],
        rescan_every: float,
        interval: float = REFRESH_INTERVAL,
    ) -> None:
        self.deadlines = Deadlines(clock)
        self._gate = RefreshGate(interval)
        self._rescan_every = rescan_every
        self._next_rescan = -math.inf  # the first pass reads everything

    def request(self) -> None:
        """Something changed; the next refresh must see it."""
        self._gate.request()

    @property
    def gathering(self) -> bool:
        """Whether a refresh is already due at the gate's opening: changes until then
        join it, and need not wake the worker one by one."""
        return self._gate.pending

    def due(self, now: float, wakeup: float | None, held: float | None) -> frozenset[str]:
        """Set the deadlines for ``now`` (``wakeup``: the policy's; ``held``: the menu
        pacer's) and say which have come."""
        gate = self._gate
        opens = gate.open_at(now)
        deadlines = self.deadlines
        deadlines.set(CHANGES, gate.ready_at(now))
        deadlines.set(WAKEUP, not_before(wakeup, opens))
        deadlines.set(MENU, not_before(held, opens))
        deadlines.set(RESCAN, max(self._next_rescan, opens))
        return deadlines.due(now)

    def begin(self, now: float, due: frozenset[str], *, watching: bool) -> bool:
        """A refresh for ``due`` starts at ``now``; whether it must read every file
        (the timed look, or no watcher to say what changed)."""
        if due != {RESCAN}:
            self._gate.request()
            self._gate.begin(now)
        rescan = RESCAN in due or not watching
        if rescan:
            self._next_rescan = now + self._rescan_every
        return rescan

    def wait_time(self, longest: float) -> float:
        return self.deadlines.wait_time(longest)


__all__ = [
    "CHANGES",
    "MENU",
    "RESCAN",
    "WAKEUP",
    "Deadlines",
    "RefreshSchedule",
    "not_before",
]
