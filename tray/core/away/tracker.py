"""Whether the user is at the desk: pure, fed by the idle and lock sources, with a clock
passed in.

Sources report in three ways, and one tracker takes them all:
- a locked screen, or an unlocked one (logind's LockedHint, ScreenSaver.ActiveChanged);
- how long since the last input, from a source that is asked (X11, GetSessionIdleTime);
- an edge: idle for ``after``, or input again (Mutter's idle and user-active watches).

Away is a locked screen, or no input for ``after``. ``since`` is the moment the user
became away by that rule (the lock, or the last input plus ``after``), so the menu's
"Away since 14:02" is when pings began to follow them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tray.protocol.state import State

# A polled source is asked again this soon at the least while the user is away (to see
# them come back quickly) and at the most this rarely while they are here: reaching
# `after` is computed from the idle time, so no query is wasted in between.
POLL_MIN = 2.0
POLL_MAX = 60.0


@dataclass(frozen=True, slots=True)
class AwayState:
    """``away``, and since when (a time from the tracker's clock); None when present."""

    away: bool
    since: float | None = None


PRESENT = AwayState(False)


class AwayTracker:
    """Combines what the sources said into one :class:`AwayState`.

    Each ``*`` method returns the new state when it changed, else None, so a caller
    forwards only changes.
    """

    def __init__(self, after: float) -> None:
        self.after = after
        self._locked_at: float | None = None
        self._idle_since: float | None = None  # the last input plus `after`
        self._state = PRESENT

    @property
    def state(self) -> AwayState:
        return self._state

    def locked(self, is_locked: bool, now: float) -> AwayState | None:
        if is_locked and self._locked_at is None:
            self._locked_at = now
        elif not is_locked:
            self._locked_at = None
        return self._update()

    def idle_seconds(self, seconds: float, now: float) -> AwayState | None:
        """A polled idle time: ``seconds`` since the last input, as of ``now``."""
        if seconds >= self.after:
            last_input = now - seconds
            # Keep the first moment: successive polls of one absence agree on it only
            # to the poll's rounding.
            if self._idle_since is None:
                self._idle_since = last_input + self.after
        else:
            self._idle_since = None
        return self._update()

    def idle_edge(self, idle: bool, now: float) -> AwayState | None:
        """An event: idle for ``after`` (True), or input again (False)."""
        if idle and self._idle_since is None:
            self._idle_since = now
        elif not idle:
            self._idle_since = None
        return self._update()

    def next_poll(self, seconds: float) -> float:
        """How long to wait before asking a polled source again, given its last answer."""
        if seconds >= self.after:
            return POLL_MIN
        return min(POLL_MAX, max(POLL_MIN, self.after - seconds))

    def _update(self) -> AwayState | None:
        moments = [t for t in (self._locked_at, self._idle_since) if t is not None]
        if not moments:
            new = PRESENT
        elif self._state.away and self._state.since is not None:
            # Still away: a lock during an absence does not move its start.
            new = self._state
        else:
            new = AwayState(True, min(moments))
        if new == self._state:
            return None
        self._state = new
        return new


def is_forwarded(ping_state: str | None, states: frozenset[State], away: AwayState) -> bool:
    """Whether a ping goes to ``[away] forward`` too: the user is away, and its state is
    one of ``states``. Reminders and burst summaries pass the state they are about, so
    a prompt that pinged while the user was here goes with its next reminder."""
    return away.away and ping_state is not None and ping_state in states


def menu_line(away: AwayState, forwarding: bool, clock_text: str | None = None) -> str | None:
    """The menu's line while away, e.g. "Away since 14:02: pings also go to your phone";
    None while present or with nowhere to forward. ``clock_text`` is ``since`` as the
    local "HH:MM" (the caller formats it: the core reads no clock or time zone)."""
    if not away.away or not forwarding or away.since is None:
        return None
    since = f" since {clock_text}" if clock_text else ""
    return f"Away{since}: pings also go to your phone"


__all__ = [
    "POLL_MAX",
    "POLL_MIN",
    "PRESENT",
    "AwayState",
    "AwayTracker",
    "is_forwarded",
    "menu_line",
]
