"""Pure: what silences the policy's pings: the user's pause, a session's snooze, a host
that cannot be reached, and quiet hours. Each drops, never postpones, what falls due
under it.

The pause, the snoozes and the outages are kept as spans of time, not as one end each:
a ping that fell due during a pause the user has since ended is still dropped, so a span
that ended stays until nothing can fall due in it any more (:meth:`MuteSpans.trim`).
:class:`tray.core.policy.notification_policy.NotificationPolicy` holds one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from tray.core.view.overview import Mutes


def in_quiet_hours(hours: tuple[int, int], minute: int) -> bool:
    """Whether ``minute`` of the day falls in ``hours``; equal ends mean the whole day."""
    begin, finish = hours
    if begin < finish:
        return begin <= minute < finish
    return minute >= begin or minute < finish


@dataclass(slots=True)
class Span:
    """A pause, a snooze or an outage: what falls due from ``start`` until ``end``."""

    start: float
    end: float


def active_end(spans: Iterable[Span], now: float) -> float | None:
    ends = [p.end for p in spans if p.start <= now < p.end]
    return max(ends) if ends else None


def end_spans(spans: Iterable[Span], now: float) -> None:
    for span in spans:
        span.end = min(span.end, now)


def kept_spans(spans: dict[str, list[Span]], horizon: float) -> None:
    """Drop the spans that ended before ``horizon``, in place: nothing can fall due in
    them any more."""
    for key in list(spans):
        kept = [p for p in spans[key] if p.end > horizon]
        if kept:
            spans[key] = kept
        else:
            del spans[key]


class MuteSpans:
    """The pause, each session's snoozes and each unreachable session's outage, and the
    quiet hours of the local day (``local_minute`` makes a time one of its minutes)."""

    def __init__(
        self,
        clock: Callable[[], float],
        quiet_hours: tuple[int, int] | None,
        local_minute: Callable[[float], int],
    ) -> None:
        self._clock = clock
        self._quiet_hours = quiet_hours
        self._local_minute = local_minute
        self._pauses: list[Span] = []
        self._snoozes: dict[str, list[Span]] = {}
        # Sessions of a host that cannot be reached: held apart from the user's snoozes,
        # which they must outlast.
        self._unreachable: dict[str, list[Span]] = {}

    def pause(self, until: float) -> None:
        """No pings until ``until``; whatever falls due meanwhile is dropped."""
        now = self._clock()
        self.resume()
        if until > now:
            self._pauses.append(Span(now, until))

    def resume(self) -> None:
        end_spans(self._pauses, self._clock())

    @property
    def paused_until(self) -> float | None:
        return active_end(self._pauses, self._clock())

    def snooze(self, session_id: str, until: float) -> None:
        """No pings of any kind for this session until ``until``; whatever falls due
        meanwhile is dropped, and its reminders carry on afterwards."""
        now = self._clock()
        self.unsnooze(session_id)
        if until > now:
            self._snoozes.setdefault(session_id, []).append(Span(now, until))

    def unsnooze(self, session_id: str) -> None:
        end_spans(self._snoozes.get(session_id, ()), self._clock())

    def snoozed_until(self, session_id: str) -> float | None:
        return active_end(self._snoozes.get(session_id, ()), self._clock())

    def mutes(self) -> Mutes:
        """The pause and every snooze in force now, for the menu and the app's file: the
        policy alone keeps them, since the spans that end are still needed here."""
        now = self._clock()
        snoozed: dict[str, float] = {}
        for session_id, spans in self._snoozes.items():
            end = active_end(spans, now)
            if end is not None:
                snoozed[session_id] = end
        return Mutes(active_end(self._pauses, now), snoozed)

    def set_unreachable(self, session_ids: Collection[str]) -> None:
        """These sessions, and no others, are on a host that cannot be reached now: an
        outage starts for each that has none, and ends for the others."""
        now = self._clock()
        for session_id, spans in self._unreachable.items():
            if session_id not in session_ids:
                end_spans(spans, now)
        for session_id in session_ids:
            spans = self._unreachable.setdefault(session_id, [])
            if active_end(spans, now) is None:
                spans.append(Span(now, math.inf))

    def unreachable(self, session_id: str) -> bool:
        return active_end(self._unreachable.get(session_id, ()), self._clock()) is not None

    def silenced(self, session_id: str, due_at: float, now: float) -> bool:
        """Paused, snoozed, unreachable or quiet when a ping of ``session_id`` fell due
        (``due_at``), or now: either way it is dropped."""
        spans = [
            *self._pauses,
            *self._snoozes.get(session_id, ()),
            *self._unreachable.get(session_id, ()),
        ]
        return (
            any(p.start <= now and due_at < p.end for p in spans)
            or self._quiet_at(due_at)
            or self._quiet_at(now)
        )

    def _quiet_at(self, moment: float) -> bool:
        hours = self._quiet_hours
        return hours is not None and in_quiet_hours(hours, self._local_minute(moment))

    def forget(self, session_id: str) -> None:
        """A session long gone: its snoozes and outages go too."""
        self._snoozes.pop(session_id, None)
        self._unreachable.pop(session_id, None)

    def trim(self, horizon: float) -> None:
        """Drop the spans that ended before ``horizon``: nothing falls due in them now."""
        self._pauses = [p for p in self._pauses if p.end > horizon]
        kept_spans(self._snoozes, horizon)
        kept_spans(self._unreachable, horizon)
