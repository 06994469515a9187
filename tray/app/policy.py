"""Pure: which session changes become notifications, and when.

The app feeds every snapshot of the sessions to :meth:`NotificationPolicy.update` (built
with :func:`observe`), asks :meth:`NotificationPolicy.due` for the pings to show, and
sleeps until :meth:`NotificationPolicy.next_wakeup`. The clock and the local time of day
are injected, so every rule here is exercised with a fake clock.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from tray.app.overview import lead_record
from tray.config import PolicySettings, in_quiet_hours
from tray.protocol.records import Record
from tray.session import ATTENTION_KEPT, Attention, Session
from tray.text import clean_text, cut, format_duration

Urgency = Literal["critical", "normal"]
ConditionKey = tuple[str, str | None, str | None]
# A place a condition can live: (session id, record id), the record id being None for
# the launcher's own state. A prompt keeps its slot whether or not it leads its session.
Slot = tuple[str, str | None]
DedupKey = tuple[str | None, ...]

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

TERMINAL_SOURCES: Final = frozenset({"osc9", "osc777", "osc99"})
# OSC 99's ``o=`` values that ask to be shown only to someone not looking.
_ONLY_UNSEEN: Final = frozenset({"unfocused", "invisible"})
# A 7501 report and a terminal notification or bell this close together (by their own
# times) are one request: Claude Code with iterm2_with_bell and Jazz send both.
COALESCE: Final = 2.0
_HOUR: Final = 3600.0
# Reminders double this many times (remind, 2x, 4x, 8x) before they go hourly.
_DOUBLINGS: Final = 4
# How long a session that vanished from the snapshots is remembered (its handled
# attention, its snooze), so that a file missed for one read does not replay its events;
# and at most how many such sessions.
RETAIN: Final = 600.0
_GONE_KEPT: Final = 256
_CLAIMS_KEPT: Final = 16
_COMMAND_CELLS: Final = 60


@dataclass(frozen=True, slots=True)
class Observation:
    """What the policy sees of one prompt or finished state at one moment.

    :func:`observe` gives one per session (its lead, ``lead`` true, carrying the
    session's attention events) and one per other blocked record (``lead`` false).
    ``since`` is the launcher's: when this record (or, with ``record_id`` None, the
    launcher's own state) started saying what it says; None falls back to when the
    policy first saw it. ``child`` is the name a non-lead child record goes by.
    """

    session_id: str
    label: str
    state: str | None
    kind: str | None = None
    msg: str | None = None
    exit_code: int | None = None
    alive: bool = True
    run_seconds: float | None = None  # for done: how long the run took
    last_input_at: float | None = None
    record_id: str | None = None
    lead: bool = True
    child: str | None = None
    since: float | None = None
    focus: str = "unknown"
    attention: tuple[Attention, ...] = ()

    @property
    def condition(self) -> ConditionKey:
        return (self.state or "", self.kind, self.msg)

    @property
    def slot(self) -> Slot:
        return (self.session_id, self.record_id)


@dataclass(frozen=True, slots=True)
class Ping:
    """One notification. ``record_id`` names the record a child prompt's ping is about;
    it is None for a session's lead, its finished state, and its attention events."""

    title: str
    body: str
    urgency: Urgency
    session_ids: tuple[str, ...]
    record_id: str | None = None
    reminder: bool = False


def observe_session(session: Session, label: str, now: float) -> Observation:
    """The session as a whole, as the policy sees it: its lead record's condition, its
    focus, and its attention events.

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
        record_id=leader.id if leader is not None else None,
        since=leader.since if leader is not None else session.state_since,
        focus=session.focus,
        attention=session.attention,
    )


def observe(session: Session, label: str, now: float) -> list[Observation]:
    """Everything of the session that may ping: the session itself first (see
    :func:`observe_session`), then every other blocked record, each its own prompt."""
    lead = observe_session(session, label, now)
    observations = [lead]
    if lead.state != "blocked":
        return observations
    for record in session.records:
        if record.state != "blocked" or record.id == lead.record_id:
            continue
        observations.append(
            Observation(
                session_id=session.id,
                label=label,
                state="blocked",
                kind=record.kind,
                msg=record.msg,
                exit_code=session.exit_code,
                alive=session.alive,
                last_input_at=session.last_input_at,
                record_id=record.id,
                lead=False,
                child=_child_name(record) if record.id else None,
                since=record.since,
                focus=session.focus,
            )
        )
    return observations


def _child_name(record: Record) -> str:
    return record.title if record.title and clean_text(record.title) else record.id


def urgency_of(observation: Observation) -> Urgency:
    if observation.state == "blocked" and observation.kind in _CRITICAL_KINDS:
        return "critical"
    return "normal"


def _shown(text: str | None) -> str | None:
    """``text`` raw when it has anything visible, else None: the notifier cleans and
    escapes every text it shows, so the policy only decides whether there is one."""
    return text if text and clean_text(text) else None


def ping_for(observation: Observation) -> Ping:
    """One prompt's or finished session's notification. The body is the program's own
    msg, raw."""
    label = observation.label
    if observation.child is not None:
        label = f"{label} · {observation.child}"
    msg = _shown(observation.msg)
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
    record_id = None if observation.lead else observation.record_id
    return Ping(title, body, urgency_of(observation), (observation.session_id,), record_id)


def waited_text(seconds: float) -> str:
    """How long a prompt has waited, in whole minutes once it is a minute or more: the
    reminder is about the wait, not the exact second it went out."""
    whole = seconds - seconds % 60 if seconds >= 60 else seconds
    return format_duration(whole)


def reminder_ping(observation: Observation, waited: float) -> Ping:
    """The prompt's ping again, its body saying how long it has waited."""
    ping = ping_for(observation)
    return replace(ping, body=f"{ping.body} (still waiting, {waited_text(waited)})", reminder=True)


def _command_failed(attention: Attention) -> bool:
    return attention.exit_code not in (None, 0)


def attention_ping(attention: Attention, label: str, session_id: str) -> Ping:
    """A terminal notification, a bell, or a long command's end, as a notification."""
    if attention.source == "bell":
        title, body = f"{label} rang the bell", "It may need you"
    elif attention.source == "command":
        line = clean_text(attention.title or "")
        what = f"{label}: {cut(line, _COMMAND_CELLS)}" if line else f"{label}: command"
        if _command_failed(attention):
            title, body = f"{what} failed", f"Exited with status {attention.exit_code}"
        else:
            run = attention.duration
            title = f"{what} finished"
            body = "Done" if run is None else f"Done in {format_duration(run)}"
    else:
        own = _shown(attention.title)
        title = f"{label}: {own}" if own else label
        body = _shown(attention.body) or ("" if own else "Sent a notification")
    return Ping(title, body, "normal", (session_id,))


@dataclass(frozen=True, slots=True)
class _Entry:
    """One ping's share of a summary."""

    session_id: str
    label: str
    category: str  # blocked, error or done
    critical: bool


def _summary(entries: Sequence[_Entry]) -> Ping:
    """Many pings in one notification: "2 sessions need you · 1 failed"."""
    parts: list[str] = []
    for state, one, many in (
        ("blocked", "needs you", "need you"),
        ("error", "failed", "failed"),
        ("done", "finished", "finished"),
    ):
        # Sessions, not pings: two prompts of one session are one session that needs you.
        count = len({e.session_id for e in entries if e.category == state})
        if not count:
            continue
        noun = "" if parts else (" session" if count == 1 else " sessions")
        parts.append(f"{count}{noun} {one if count == 1 else many}")
    session_ids = tuple(dict.fromkeys(e.session_id for e in entries))
    labels = list(dict.fromkeys(e.label for e in entries))
    body = ", ".join(labels[:_SUMMARY_LABELS])
    if len(labels) > _SUMMARY_LABELS:
        body += f" and {len(labels) - _SUMMARY_LABELS} more"
    urgent = any(e.critical for e in entries)
    return Ping(
        title=" · ".join(parts),
        body=body,
        urgency="critical" if urgent else "normal",
        session_ids=session_ids,
    )


def summary_ping(observations: Sequence[Observation]) -> Ping:
    """Many sessions in one notification; one reads like its own ping."""
    if len(observations) == 1:
        return ping_for(observations[0])
    return _summary(
        [
            _Entry(o.session_id, o.label, o.state or "", urgency_of(o) == "critical")
            for o in observations
        ]
    )


def reminder_offset(step: int, remind: float) -> float:
    """How long after a prompt appeared its ``step``-th reminder (from 0) is due: remind,
    2x, 4x and 8x remind, then hourly."""
    if step < _DOUBLINGS:
        return math.ldexp(remind, step)
    return math.ldexp(remind, _DOUBLINGS - 1) + _HOUR * (step - _DOUBLINGS + 1)


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


@dataclass(slots=True)
class _Prompt:
    """One slot's current condition: its first ping, then its reminders."""

    observation: Observation
    condition: ConditionKey
    reported_since: float | None
    since: float
    pending: bool  # the first ping is still to be decided
    remind_step: int = 0
    remind_at: float | None = None
    noticed_at: float | None = None  # the last ping, or the last time the person was told


@dataclass(slots=True)
class _Event:
    attention: Attention
    observation: Observation  # the session's latest, for its label and focus


What = Literal["first", "event", "remind"]
Verdict = Literal["send", "told"]
Focus = Literal["told", "free", "typing"]


@dataclass(slots=True)
class _Candidate:
    """Something that may become a ping: a prompt's first ping or reminder, or an event.

    ``ready`` is when it falls due, typing hold-back included; ``moment`` is its own
    time (the condition's since, the event's at), which coalescing compares.
    """

    what: What
    observation: Observation
    ready: float
    verdict: Verdict
    moment: float
    rank: int  # 0 a 7501 report, 1 a terminal notification or command, 2 a bell
    prompt: _Prompt | None = None
    event: _Event | None = None

    @property
    def session_id(self) -> str:
        return self.observation.session_id


class NotificationPolicy:
    """Settle, dedup, focus and typing, coalescing, reminders, burst summary, pause,
    snooze and quiet hours.

    What can ping: a session's state (blocked, or error and done in ``settings.states``;
    done only after a run of ``done_after``), each of its other blocked records (a child
    prompt, its own condition), each new attention event (OSC 9, 777 and 99 while
    ``terminal_notifications``; the bell; a shell command that ran ``done_after`` or
    longer, as done or error within ``states``), and reminders.

    - Settle: a condition (state, kind, msg) pings once it has held for ``settle``,
      counted from the launcher's ``since`` (the record's, else the session's
      ``state_since``; when the policy first saw it if neither is given). A new
      ``since`` is a new occurrence, even with the same text, so a prompt flapping faster
      than ``settle`` never pings however it is sampled. Events wait ``settle`` after
      their ``at``.
    - Dedup: the same (session, record, condition), or the same event text of a session,
      pings at most once per ``dedup_window``, even when it flaps away and back.
    - Focus, judged when the ping falls due from the latest snapshot: a focused session
      never pops up (it counts as told, so the same occurrence does not pop up later
      either) unless ``when_focused``; then, and when focus is unknown, the typing rule
      applies. An unfocused one pings without typing grace.
    - Typing: keystrokes into the session after the condition appeared (or after the
      event) mean the person has seen it: told. Keystrokes within ``typing_grace`` before
      it hold the ping back until the grace ends; it then goes out if the condition still
      stands. The bell, and OSC 99 with ``o=unfocused|invisible``, are dropped instead when
      the session was typed into within ``typing_grace`` before them (readline rings on a
      Tab right after a keystroke); OSC 99 ones never show for a focused session, whatever
      ``when_focused`` says.
    - One event, one ping: a 7501 ping and an event of the same session within
      ``COALESCE`` seconds of each other (by since and at) ping once. The 7501 one wins
      (it has the kind and msg): an event waits while such a 7501 ping is still settling,
      and is absorbed by one that was sent, told or dropped. Events absorb each other the
      same way, a notification winning over a bell.
    - Reminders: a prompt still blocked on the same occurrence pings again ``remind``,
      2x, 4x and 8x ``remind`` after its since, then every hour, saying how long it has
      waited; never sooner than half an interval (at most half an hour) after the
      previous ping or telling. They go out whether the first ping was sent or the
      person was told (looked at it, typed into it): a prompt left waiting is worth a
      reminder once the person looks away. Each obeys pause, quiet hours, snooze, focus
      and typing hold-back and the burst budget, but not dedup; one that is dropped or
      told leaves the next on schedule. ``remind = 0`` turns them off.
    - Burst: at most ``burst`` single pings per ``burst_window``; the rest merge into one
      summary per window, and whatever is left after that waits for the window.
    - Pause, quiet hours and snooze drop, never postpone, what falls due under them.
      Snooze is per session and covers all its pings.
    - Old news: done and error already present in the first snapshot, and attention
      events present then or dated before it, do not ping: restarting the tray must not
      repeat them. Blocked ones do.
    - Bounded: state is kept per present slot and pending event; handled events and
      snoozes of vanished sessions are forgotten after ``RETAIN``; dedup records after
      their window.
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
        self._prompts: dict[Slot, _Prompt] = {}
        self._events: dict[tuple[str, int], _Event] = {}
        self._handled: dict[DedupKey, float] = {}
        # session -> the moments of its recent pings, and whether each was an event
        self._claims: dict[str, deque[tuple[float, bool]]] = {}
        self._seq: dict[str, int] = {}  # session -> the last attention seq handled
        self._seen_at: dict[str, float] = {}  # session -> when last in a snapshot
        self._budget = _Budget(settings.burst, settings.burst_window)
        self._pauses: list[_Pause] = []
        self._snoozes: dict[str, list[_Pause]] = {}
        self._started: float | None = None

    # -- input --------------------------------------------------------------------------

    def _eligible(self, observation: Observation) -> bool:
        state = observation.state
        if state not in PINGING or state not in self.settings.states:
            return False
        if state == "done":
            run = observation.run_seconds
            return run is None or run >= self.settings.done_after
        return True

    def _wanted(self, attention: Attention) -> bool:
        if attention.source in TERMINAL_SOURCES:
            return self.settings.terminal_notifications
        if attention.source == "command":
            run = attention.duration
            state = "error" if _command_failed(attention) else "done"
            return (
                run is not None
                and run >= self.settings.done_after
                and (state in self.settings.states)
            )
        return True

    def update(self, observations: Sequence[Observation]) -> None:
        """A new snapshot of every session."""
        now = self._clock()
        first = self._started is None
        if self._started is None:
            self._started = now
        prompts: dict[Slot, _Prompt] = {}
        sessions: dict[str, Observation] = {}
        attention: dict[str, list[Attention]] = {}
        for observation in observations:
            sessions.setdefault(observation.session_id, observation)
            attention.setdefault(observation.session_id, []).extend(observation.attention)
            if not self._eligible(observation):
                continue
            slot = observation.slot
            known = self._prompts.get(slot)
            if known is not None and known.condition == observation.condition:
                reported = observation.since
                if reported is None or known.reported_since in (None, reported):
                    known.observation = observation
                    if reported is not None:
                        known.reported_since = reported
                    prompts[slot] = known
                    continue
            since = now if observation.since is None else min(observation.since, now)
            old_news = first and observation.state != "blocked"
            prompts[slot] = _Prompt(
                observation, observation.condition, observation.since, since, not old_news
            )
        self._prompts = prompts
        for session_id, events in attention.items():
            self._take_events(session_id, sessions[session_id], events, first)
        self._events = {
            key: _Event(event.attention, sessions[key[0]])
            for key, event in self._events.items()
            if key[0] in sessions
        }
        self._remember_sessions(sessions.keys(), now)

    def _take_events(
        self, session_id: str, observation: Observation, events: list[Attention], first: bool
    ) -> None:
        last = self._seq.get(session_id)
        newest = max((a.seq for a in events), default=last)
        if first or newest is None:
            if newest is not None:
                self._seq[session_id] = newest
            return
        started = self._started if self._started is not None else -math.inf
        for item in sorted(events, key=lambda a: a.seq):
            if last is not None and item.seq <= last:
                continue
            if item.at >= started and self._wanted(item):
                self._events[(session_id, item.seq)] = _Event(item, observation)
        self._seq[session_id] = newest if last is None else max(last, newest)
        mine = sorted(seq for sid, seq in self._events if sid == session_id)
        for seq in mine[:-ATTENTION_KEPT]:
            del self._events[(session_id, seq)]

    def _remember_sessions(self, present: Iterable[str], now: float) -> None:
        for session_id in present:
            self._seen_at.pop(session_id, None)
            self._seen_at[session_id] = now  # insertion order: least recently seen first
        gone = [sid for sid, at in self._seen_at.items() if at < now]
        stale = [sid for sid in gone if now - self._seen_at[sid] > RETAIN]
        stale += gone[: max(0, len(gone) - _GONE_KEPT)]
        for session_id in stale:
            self._seen_at.pop(session_id, None)
            self._seq.pop(session_id, None)
            self._claims.pop(session_id, None)
            self._snoozes.pop(session_id, None)

    # -- pause and snooze ---------------------------------------------------------------

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
        return _active_end(self._pauses, self._clock())

    def snooze(self, session_id: str, until: float) -> None:
        """No pings of any kind for this session until ``until``; whatever falls due
        meanwhile is dropped, and its reminders carry on afterwards."""
        now = self._clock()
        self.unsnooze(session_id)
        if until > now:
            self._snoozes.setdefault(session_id, []).append(_Pause(now, until))

    def unsnooze(self, session_id: str) -> None:
        now = self._clock()
        for span in self._snoozes.get(session_id, ()):
            span.end = min(span.end, now)

    def snoozed_until(self, session_id: str) -> float | None:
        return _active_end(self._snoozes.get(session_id, ()), self._clock())

    def _silenced(self, candidate: _Candidate, now: float) -> bool:
        """Paused, snoozed or quiet when it fell due, or now: either way it is dropped."""
        due_at = candidate.ready
        spans = [*self._pauses, *self._snoozes.get(candidate.session_id, ())]
        return (
            any(p.start <= now and due_at < p.end for p in spans)
            or self._quiet_at(due_at)
            or self._quiet_at(now)
        )

    def _quiet_at(self, moment: float) -> bool:
        hours = self.settings.quiet_hours
        return hours is not None and in_quiet_hours(hours, self._local_minute(moment))

    # -- timing -------------------------------------------------------------------------

    def _focus(self, observation: Observation) -> Focus:
        if observation.focus == "focused" and not self.settings.when_focused:
            return "told"
        return "free" if observation.focus == "unfocused" else "typing"

    def _first(self, prompt: _Prompt) -> _Candidate:
        observation = prompt.observation
        ready = prompt.since + self.settings.settle
        verdict: Verdict = "send"
        last = observation.last_input_at
        focus = self._focus(observation)
        if focus == "told" or (last is not None and last > prompt.since):
            verdict = "told"
        elif focus == "typing" and last is not None:
            ready = max(ready, last + self.settings.typing_grace)
        return _Candidate("first", observation, ready, verdict, prompt.since, 0, prompt=prompt)

    def _reminder(self, prompt: _Prompt, remind_at: float) -> _Candidate:
        observation = prompt.observation
        ready = remind_at
        verdict: Verdict = "send"
        last = observation.last_input_at
        focus = self._focus(observation)
        if focus == "told":
            verdict = "told"
        elif focus == "typing" and last is not None:
            ready = max(ready, last + self.settings.typing_grace)
        return _Candidate("remind", observation, ready, verdict, prompt.since, 0, prompt=prompt)

    def _event(self, event: _Event) -> _Candidate:
        item, observation = event.attention, event.observation
        ready = item.at + self.settings.settle
        verdict: Verdict = "send"
        last = observation.last_input_at
        focus = self._focus(observation)
        only_unseen = item.source == "bell" or (
            item.source == "osc99" and item.condition in _ONLY_UNSEEN
        )
        if item.source == "osc99" and only_unseen and observation.focus == "focused":
            focus = "told"
        if focus == "told" or (last is not None and last > item.at):
            verdict = "told"
        elif focus == "typing" and last is not None:
            if not only_unseen:
                ready = max(ready, last + self.settings.typing_grace)
            elif last > item.at - self.settings.typing_grace:
                verdict = "told"
        rank = 2 if item.source == "bell" else 1
        return _Candidate("event", observation, ready, verdict, item.at, rank, event=event)

    def _candidates(self) -> list[_Candidate]:
        candidates: list[_Candidate] = []
        for prompt in self._prompts.values():
            if prompt.pending:
                candidates.append(self._first(prompt))
            elif prompt.remind_at is not None:
                candidates.append(self._reminder(prompt, prompt.remind_at))
        candidates.extend(self._event(event) for event in self._events.values())
        return candidates

    @staticmethod
    def _waits(candidate: _Candidate, unready: Sequence[_Candidate]) -> bool:
        """An event waits for a 7501 ping, or a better event, of its session still to
        come within ``COALESCE`` of it: that one will speak for both."""
        if candidate.what != "event":
            return False
        return any(
            other.session_id == candidate.session_id
            and other.what != "remind"
            and other.rank < candidate.rank
            and abs(other.moment - candidate.moment) <= COALESCE
            for other in unready
        )

    def _claimed(self, candidate: _Candidate) -> bool:
        is_event = candidate.what == "event"
        return any(
            abs(moment - candidate.moment) <= COALESCE and (is_event or by_event)
            for moment, by_event in self._claims.get(candidate.session_id, ())
        )

    def _claim(self, candidate: _Candidate) -> None:
        claims = self._claims.setdefault(candidate.session_id, deque(maxlen=_CLAIMS_KEPT))
        claims.append((candidate.moment, candidate.what == "event"))

    def _schedule(self, prompt: _Prompt, now: float) -> None:
        """The prompt's next reminder: the first on the schedule after ``now``, and at
        least half an interval after it was last noticed."""
        remind = self.settings.remind
        if remind <= 0 or prompt.observation.state != "blocked":
            prompt.remind_at = None
            return
        lower = now
        if prompt.noticed_at is not None:
            lower = max(lower, prompt.noticed_at + min(remind, _HOUR) / 2)
        step = prompt.remind_step
        while step < _DOUBLINGS and not _after(
            prompt.since + reminder_offset(step, remind), now, lower
        ):
            step += 1
        if step >= _DOUBLINGS:
            behind = lower - prompt.since - reminder_offset(_DOUBLINGS - 1, remind)
            step = max(step, _DOUBLINGS - 1 + max(1, math.floor(behind / _HOUR)))
            while not _after(prompt.since + reminder_offset(step, remind), now, lower):
                step += 1
        prompt.remind_step = step
        prompt.remind_at = prompt.since + reminder_offset(step, remind)

    # -- output -------------------------------------------------------------------------

    def _key(self, candidate: _Candidate) -> DedupKey:
        observation = candidate.observation
        if candidate.event is not None:
            item = candidate.event.attention
            return (observation.session_id, "attention", item.source, item.title, item.body)
        return (observation.session_id, "record", observation.record_id, *observation.condition)

    def _duplicate(self, key: DedupKey, now: float) -> bool:
        sent = self._handled.get(key)
        return sent is not None and now < sent + self.settings.dedup_window

    def _close(self, candidate: _Candidate, now: float, *, noticed: bool) -> None:
        """Done with a first ping or an event, whatever became of it."""
        if candidate.event is not None:
            item = candidate.event.attention
            self._events.pop((candidate.session_id, item.seq), None)
        elif candidate.prompt is not None:
            prompt = candidate.prompt
            if candidate.what == "remind":
                prompt.remind_step += 1
            prompt.pending = False
            if noticed:
                prompt.noticed_at = now
            self._schedule(prompt, now)

    def _ping(self, candidate: _Candidate, now: float) -> Ping:
        observation = candidate.observation
        if candidate.event is not None:
            return attention_ping(
                candidate.event.attention, observation.label, observation.session_id
            )
        if candidate.what == "remind" and candidate.prompt is not None:
            return reminder_ping(observation, now - candidate.prompt.since)
        return ping_for(observation)

    def _entry(self, candidate: _Candidate) -> _Entry:
        observation = candidate.observation
        category = observation.state or ""
        critical = urgency_of(observation) == "critical"
        if candidate.event is not None:
            item = candidate.event.attention
            critical = False
            category = "blocked"
            if item.source == "command":
                category = "error" if _command_failed(item) else "done"
        return _Entry(observation.session_id, observation.label, category, critical)

    def due(self) -> list[Ping]:
        """The pings to show now, in order; what they are about is consumed."""
        now = self._clock()
        self._forget(now)
        if not self.settings.enabled:
            self._events.clear()
            for prompt in self._prompts.values():
                prompt.pending = False
                prompt.remind_at = None
            return []
        candidates = self._candidates()
        unready = [c for c in candidates if c.ready > now]
        ready = sorted(
            (c for c in candidates if c.ready <= now),
            key=lambda c: (c.what == "remind", c.rank, c.moment, c.session_id),
        )
        wanted: list[_Candidate] = []
        claims_now: list[_Candidate] = []
        absorbed: list[tuple[_Candidate, _Candidate]] = []
        for candidate in ready:
            if candidate.what == "remind":
                if self._silenced(candidate, now) or candidate.verdict == "told":
                    self._close(candidate, now, noticed=candidate.verdict == "told")
                else:
                    wanted.append(candidate)
                continue
            if self._waits(candidate, unready):
                continue
            if self._claimed(candidate):
                self._handled[self._key(candidate)] = now
                self._close(candidate, now, noticed=True)
                continue
            claimer = _claimer(candidate, claims_now)
            if claimer is not None:
                absorbed.append((candidate, claimer))
                continue
            key = self._key(candidate)
            told = candidate.verdict == "told"
            if self._silenced(candidate, now) or self._duplicate(key, now) or told:
                if told:
                    self._handled[key] = now
                if candidate.what == "first":
                    # The event sent alongside this report must not ping in its place.
                    self._claim(candidate)
                self._close(candidate, now, noticed=told)
                continue
            wanted.append(candidate)
            claims_now.append(candidate)

        wanted.sort(
            key=lambda c: (
                c.what == "remind",
                _STATE_RANK.get(self._entry(c).category, 3),
                not self._entry(c).critical,
                c.what == "event",
                c.ready,
                c.session_id,
                c.moment,
            )
        )
        room = self._budget.room(now)
        singles, rest = wanted[:room], wanted[room:]
        pings = [self._ping(c, now) for c in singles]
        self._budget.singles.extend(now for _ in singles)
        sent = list(singles)
        if rest and self._budget.summary_free(now):
            single = len(rest) == 1
            pings.append(
                self._ping(rest[0], now) if single else _summary(list(map(self._entry, rest)))
            )
            self._budget.summary_at = now
            sent.extend(rest)
        for candidate in sent:
            if candidate.what != "remind":
                self._handled[self._key(candidate)] = now
                self._claim(candidate)
            self._close(candidate, now, noticed=True)
        delivered = {id(c) for c in sent}
        for candidate, claimer in absorbed:
            if id(claimer) in delivered:
                self._handled[self._key(candidate)] = now
                self._close(candidate, now, noticed=True)
        return pings

    def next_wakeup(self) -> float | None:
        """When :meth:`due` may next have something; ``None`` while nothing is pending."""
        if not self.settings.enabled:
            return None
        now = self._clock()
        candidates = self._candidates()
        unready = [c for c in candidates if c.ready > now]
        free_at = self._budget.free_at(now)
        times = [max(c.ready, free_at) for c in candidates if not self._waits(c, unready)]
        return min(times, default=None)

    def _forget(self, now: float) -> None:
        window = self.settings.dedup_window
        self._handled = {k: t for k, t in self._handled.items() if now < t + window}
        horizon = min([now, *(c.ready for c in self._candidates())])
        self._pauses = [p for p in self._pauses if p.end > horizon]
        for session_id in list(self._snoozes):
            kept = [p for p in self._snoozes[session_id] if p.end > horizon]
            if kept:
                self._snoozes[session_id] = kept
            else:
                del self._snoozes[session_id]


def _active_end(spans: Iterable[_Pause], now: float) -> float | None:
    ends = [p.end for p in spans if p.start <= now < p.end]
    return max(ends) if ends else None


def _after(moment: float, now: float, lower: float) -> bool:
    return moment > now and moment >= lower


def _claimer(candidate: _Candidate, claims: Sequence[_Candidate]) -> _Candidate | None:
    """The ping about to be sent in this round that speaks for ``candidate`` too."""
    is_event = candidate.what == "event"
    for other in claims:
        if other.session_id != candidate.session_id:
            continue
        if abs(other.moment - candidate.moment) <= COALESCE and (is_event or other.what == "event"):
            return other
    return None
