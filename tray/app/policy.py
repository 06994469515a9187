"""Pure: which session changes become notifications, and when.

The app feeds every snapshot of the sessions to :meth:`NotificationPolicy.update`, asks
:meth:`NotificationPolicy.due` for the pings to show, and sleeps until
:meth:`NotificationPolicy.next_wakeup`. The clock and the local time of day are injected,
so every rule here is exercised with a fake clock.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from tray.app.overview import lead_record
from tray.config import PolicySettings, in_quiet_hours
from tray.session import Session
from tray.text import clean_text, format_duration

Urgency = Literal["critical", "normal"]
ConditionKey = tuple[str, str | None, str | None]

PINGING: Final = frozenset({"blocked", "error", "done"})
_STATE_RANK: Final = {"blocked": 0, "error": 1, "done": 2}
_CRITICAL_KINDS: Final = frozenset({"permission", "auth"})
_BLOCKED_WORDS: Final = {
    # kind -> (what the title says the session needs, the body when msg is absent)
    "permission": ("needs approval", "Waiting for your approval"),
    "question": ("needs an answer", "Waiting for your answer"),
    "auth": ("needs you to sign in", "Waiting for you to sign in"),
    None: ("needs you", "Waiting for you"),
}
_SUMMARY_LABELS: Final = 5


@dataclass(frozen=True, slots=True)
class Observation:
    """What the policy sees of one session at one moment."""

    session_id: str
    label: str
    state: str | None
    kind: str | None = None
    msg: str | None = None
    exit_code: int | None = None
    alive: bool = True
    run_seconds: float | None = None  # for done: how long the run took
    last_input_at: float | None = None

    @property
    def condition(self) -> ConditionKey:
        return (self.state or "", self.kind, self.msg)


@dataclass(frozen=True, slots=True)
class Ping:
    title: str
    body: str
    urgency: Urgency
    session_ids: tuple[str, ...]


def observe_session(session: Session, label: str, now: float) -> Observation:
    """The session as the policy sees it.

    ``run_seconds`` (done only) is how long the work ran unattended: from the later of
    the session's start and the person's last keystroke in it, to the moment done was
    reported (the done record's time, or the launcher's last write when the program has
    no records). A keystroke is what starts a turn for an agent such as Claude Code, so a
    done record from a program that is still running measures that turn, and answering a
    prompt restarts the count. A program nobody typed into measures its whole run.
    """
    state = session.state
    leader = lead_record(session)
    run_seconds = None
    if state == "done":
        finished_at = leader.updated_at if leader is not None else session.updated_at
        started = session.started_at
        if session.last_input_at is not None:
            started = max(started, session.last_input_at)
        run_seconds = max(0.0, min(finished_at, now) - started)
    return Observation(
        session_id=session.id,
        label=label,
        state=state,
        kind=leader.kind if leader is not None else None,
        msg=leader.msg if leader is not None else None,
        exit_code=session.exit_code,
        alive=session.alive,
        run_seconds=run_seconds,
        last_input_at=session.last_input_at,
    )


def urgency_of(observation: Observation) -> Urgency:
    if observation.state == "blocked" and observation.kind in _CRITICAL_KINDS:
        return "critical"
    return "normal"


def ping_for(observation: Observation) -> Ping:
    """One session's notification. The body is the program's own msg, raw: the notifier
    cleans and escapes every text it shows."""
    label = observation.label
    msg = observation.msg if observation.msg and clean_text(observation.msg) else None
    if observation.state == "blocked":
        need, waiting = _BLOCKED_WORDS.get(observation.kind, _BLOCKED_WORDS[None])
        title, body = f"{label} {need}", msg or waiting
    elif observation.state == "error":
        code = observation.exit_code
        fallback = f"Exited with status {code}" if code else "Failed"
        title, body = f"{label} failed", msg or fallback
    else:
        run = observation.run_seconds
        fallback = "Done" if run is None else f"Done in {format_duration(run)}"
        title, body = f"{label} finished", msg or fallback
    return Ping(title, body, urgency_of(observation), (observation.session_id,))


def summary_ping(observations: Sequence[Observation]) -> Ping:
    """Many sessions in one notification: "2 sessions need you · 1 failed"."""
    if len(observations) == 1:
        return ping_for(observations[0])
    counts = [
        (sum(1 for o in observations if o.state == state), one, many)
        for state, one, many in (
            ("blocked", "needs you", "need you"),
            ("error", "failed", "failed"),
            ("done", "finished", "finished"),
        )
    ]
    parts: list[str] = []
    for count, one, many in counts:
        if not count:
            continue
        noun = "" if parts else (" session" if count == 1 else " sessions")
        parts.append(f"{count}{noun} {one if count == 1 else many}")
    labels = [o.label for o in observations[:_SUMMARY_LABELS]]
    body = ", ".join(labels)
    if len(observations) > _SUMMARY_LABELS:
        body += f" and {len(observations) - _SUMMARY_LABELS} more"
    urgent = any(urgency_of(o) == "critical" for o in observations)
    return Ping(
        title=" · ".join(parts),
        body=body,
        urgency="critical" if urgent else "normal",
        session_ids=tuple(o.session_id for o in observations),
    )


@dataclass(slots=True)
class _Pending:
    observation: Observation
    ready_at: float


@dataclass(slots=True)
class _Pause:
    start: float
    end: float


@dataclass(slots=True)
class _Budget:
    """The global rate limit: ``burst`` single pings, plus one summary, per window."""

    burst: int
    window: float
    singles: deque[float] = field(default_factory=deque)
    summary_at: float = -math.inf

    def forget_before(self, now: float) -> None:
        while self.singles and now >= self.singles[0] + self.window:
            self.singles.popleft()

    def room(self, now: float) -> int:
        self.forget_before(now)
        return max(0, self.burst - len(self.singles))

    def summary_free(self, now: float) -> bool:
        return now >= self.summary_at + self.window

    def free_at(self, now: float) -> float:
        """The earliest time from ``now`` at which anything may be sent."""
        if self.room(now) or self.summary_free(now):
            return now
        candidates = [self.summary_at + self.window]
        if self.singles:
            candidates.append(self.singles[0] + self.window)
        return min(candidates)


class NotificationPolicy:
    """Settle, dedup, burst summary, typing suppression, pause and quiet hours.

    - A session pings once the same (state, kind, msg) has held for ``settle`` seconds,
      in one of ``settings.states``; a change or an answer before then cancels it.
    - The same (session, state, kind, msg) pings at most once per ``dedup_window``, even
      when it flaps away and back.
    - At most ``burst`` single pings per ``burst_window``; the rest merge into one summary
      per window, and whatever is left after that waits for the window.
    - A ping is dropped, never postponed, while the person types into that session, while
      paused, and in quiet hours.
    - Done and error already present in the first snapshot are old news and do not ping:
      restarting the tray must not repeat every finished session. Blocked ones do.
    """

    def __init__(
        self,
        settings: PolicySettings,
        clock: Callable[[], float],
        local_minute: Callable[[float], int],
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._local_minute = local_minute
        self._conditions: dict[str, ConditionKey | None] = {}
        self._pending: dict[str, _Pending] = {}
        self._handled: dict[tuple[str, ConditionKey], float] = {}
        self._budget = _Budget(settings.burst, settings.burst_window)
        self._pauses: list[_Pause] = []
        self._first = True

    # -- input --------------------------------------------------------------------------

    def _eligible(self, observation: Observation) -> bool:
        state = observation.state
        if state not in PINGING or state not in self.settings.states:
            return False
        if state == "done":
            run = observation.run_seconds
            return run is None or run >= self.settings.done_after
        return True

    def update(self, observations: Sequence[Observation]) -> None:
        """A new snapshot of every session."""
        now = self._clock()
        conditions: dict[str, ConditionKey | None] = {}
        for observation in observations:
            session_id = observation.session_id
            condition = observation.condition if self._eligible(observation) else None
            conditions[session_id] = condition
            if condition is None:
                self._pending.pop(session_id, None)
            elif session_id not in self._conditions and self._first:
                if observation.state == "blocked":
                    self._pending[session_id] = _Pending(observation, now + self.settings.settle)
            elif self._conditions.get(session_id) != condition:
                self._pending[session_id] = _Pending(observation, now + self.settings.settle)
            elif session_id in self._pending:
                self._pending[session_id].observation = observation
        for gone in self._pending.keys() - conditions.keys():
            del self._pending[gone]
        self._conditions = conditions
        self._first = False

    # -- pause --------------------------------------------------------------------------

    def pause(self, until: float) -> None:
        """No pings until ``until``; whatever falls due meanwhile is dropped."""
        now = self._clock()
        self.resume()
        if until > now:
            self._pauses.append(_Pause(now, until))

    def resume(self) -> None:
        now = self._clock()
        for pause in self._pauses:
            pause.end = min(pause.end, now)

    @property
    def paused_until(self) -> float | None:
        now = self._clock()
        ends = [p.end for p in self._pauses if p.start <= now < p.end]
        return max(ends) if ends else None

    def _paused_during(self, start: float, end: float) -> bool:
        return any(p.start <= end and start < p.end for p in self._pauses)

    def _muted(self, ready_at: float, now: float) -> bool:
        """Paused or quiet when the ping fell due, or now: either way it is dropped."""
        return self._paused_during(ready_at, now) or self._quiet_at(ready_at) or self._quiet_at(now)

    def _quiet_at(self, moment: float) -> bool:
        hours = self.settings.quiet_hours
        return hours is not None and in_quiet_hours(hours, self._local_minute(moment))

    # -- output -------------------------------------------------------------------------

    def _typing(self, observation: Observation, now: float) -> bool:
        last = observation.last_input_at
        return last is not None and now < last + self.settings.typing_grace

    def _duplicate(self, key: tuple[str, ConditionKey], now: float) -> bool:
        sent = self._handled.get(key)
        return sent is not None and now < sent + self.settings.dedup_window

    def due(self) -> list[Ping]:
        """The pings to show now, in order; each session's ping is consumed."""
        now = self._clock()
        self._forget(now)
        if not self.settings.enabled:
            self._pending.clear()
            return []
        ready = sorted(
            (p for p in self._pending.values() if p.ready_at <= now),
            key=lambda p: (
                _STATE_RANK.get(p.observation.state or "", 3),
                urgency_of(p.observation) != "critical",
                p.ready_at,
                p.observation.session_id,
            ),
        )
        wanted: list[Observation] = []
        for pending in ready:
            observation = pending.observation
            key = (observation.session_id, observation.condition)
            if self._muted(pending.ready_at, now) or self._duplicate(key, now):
                del self._pending[observation.session_id]
            elif self._typing(observation, now):
                # The person is looking at it: that counts as having been told.
                self._handled[key] = now
                del self._pending[observation.session_id]
            else:
                wanted.append(observation)

        room = self._budget.room(now)
        singles, rest = wanted[:room], wanted[room:]
        pings = [ping_for(o) for o in singles]
        self._budget.singles.extend(now for _ in singles)
        sent = list(singles)
        if rest and self._budget.summary_free(now):
            pings.append(summary_ping(rest))
            self._budget.summary_at = now
            sent.extend(rest)
        for observation in sent:
            self._handled[(observation.session_id, observation.condition)] = now
            del self._pending[observation.session_id]
        return pings

    def next_wakeup(self) -> float | None:
        """When :meth:`due` may next have something; ``None`` while nothing is pending."""
        if not self._pending or not self.settings.enabled:
            return None
        now = self._clock()
        free_at = self._budget.free_at(now)
        return min(max(p.ready_at, free_at) for p in self._pending.values())

    def _forget(self, now: float) -> None:
        window = self.settings.dedup_window
        self._handled = {k: t for k, t in self._handled.items() if now < t + window}
        horizon = min([now, *(p.ready_at for p in self._pending.values())])
        self._pauses = [p for p in self._pauses if p.end > horizon]
