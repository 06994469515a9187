"""Pure: which session changes become notifications, and when.

The app feeds every snapshot of the sessions to :meth:`NotificationPolicy.update` (built
with :func:`observe`), asks :meth:`NotificationPolicy.due` for the pings to show, and
sleeps until :meth:`NotificationPolicy.next_wakeup`. The clock and the local time of day
are injected, so every rule here is exercised with a fake clock.

What the policy sees comes from :mod:`tray.core.policy.observe`, what a ping says from
:mod:`tray.core.policy.wording`, the pieces of time it schedules with from
:mod:`tray.core.policy.schedule`, and what silences it (pause, snooze, an unreachable
host, quiet hours) from :mod:`tray.core.policy.mutes`; only the worker thread of the app
calls it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Final

from tray.core.answers.gate import SINCE_TOLERANCE
from tray.core.config.settings import PolicySettings
from tray.core.policy.mutes import MuteSpans
from tray.core.policy.observe import Observation, Slot, observe, observe_session
from tray.core.policy.schedule import (
    COALESCE,
    AfterAnswer,
    Budget,
    Candidate,
    DedupKey,
    Event,
    EventCandidate,
    Prompt,
    Timing,
    coalesces_with,
    reminder_offset,
    schedule_reminder,
)
from tray.core.policy.wording import (
    Ping,
    attention_ping,
    attention_state,
    ping_for,
    reminder_ping,
    summary_ping,
    urgency_of,
)
from tray.core.session.model import ATTENTION_KEPT, Attention
from tray.core.view.overview import Mutes
from tray.protocol.state import PINGED, State

PINGING: Final = frozenset(PINGED)
_STATE_RANK: Final[dict[str, int]] = {state: rank for rank, state in enumerate(PINGED)}
TERMINAL_SOURCES: Final = frozenset({"osc9", "osc777", "osc99"})
# How long a session that vanished from the snapshots is remembered (its handled
# attention, its snooze), so that a file missed for one read does not replay its events;
# and at most how many such sessions.
RETAIN: Final = 600.0
_GONE_KEPT: Final = 256
_CLAIMS_KEPT: Final = 16


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
    - Pause, quiet hours, snooze and an unreachable host drop, never postpone, what
      falls due under them. Snooze is per session and covers all its pings; so does
      :meth:`set_unreachable`, for a lost host's sessions, apart from the user's snooze.
    - Answered through tray: the prompt (its record and since, from the session's
      ``answered`` or from :meth:`answered`) pings no more, nor do its reminders; nor
      does the state of that record that directly follows it (the user has just acted
      on that session), unless it is a new prompt, which needs the person again.
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
        self._prompts: dict[Slot, Prompt] = {}
        self._events: dict[tuple[str, int], Event] = {}
        self._handled: dict[DedupKey, float] = {}
        # session -> its recent pings that may speak for a request near them in time:
        # each one's moment, and whether it was an event (see coalesces_with)
        self._claims: dict[str, deque[tuple[float, bool]]] = {}
        self._seq: dict[str, int] = {}  # session -> the last attention seq handled
        self._seen_at: dict[str, float] = {}  # session -> when last in a snapshot
        self._timing = Timing(settings)
        self._budget = Budget(settings.burst, settings.burst_window)
        self._mutes = MuteSpans(clock, settings.quiet_hours, local_minute)
        self._started: float | None = None
        self._after_answer = AfterAnswer()

    # -- input --------------------------------------------------------------------------

    def _eligible(self, observation: Observation) -> bool:
        state = observation.state
        if state not in PINGING or state not in self.settings.states:
            return False
        if state == State.DONE:
            run = observation.run_seconds
            return run is None or run >= self.settings.done_after
        return True

    def _wanted(self, attention: Attention) -> bool:
        if attention.source in TERMINAL_SOURCES:
            return self.settings.terminal_notifications
        if attention.source == "command":
            run = attention.duration
            state = attention_state(attention)
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
        prompts: dict[Slot, Prompt] = {}
        sessions: dict[str, Observation] = {}
        attention: dict[str, list[Attention]] = {}
        for observation in observations:
            sessions.setdefault(observation.session_id, observation)
            attention.setdefault(observation.session_id, []).extend(observation.attention)
            quiet = self._after_answer(observation)
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
                    if quiet:
                        known.pending, known.remind_at = False, None
                    continue
            since = now if observation.since is None else min(observation.since, now)
            old_news = first and observation.state != State.BLOCKED
            prompts[slot] = Prompt(
                observation,
                observation.condition,
                observation.since,
                since,
                not old_news and not quiet,
            )
        self._prompts = prompts
        for session_id, events in attention.items():
            self._take_events(session_id, sessions[session_id], events, first)
        self._events = {
            key: Event(event.attention, sessions[key[0]])
            for key, event in self._events.items()
            if key[0] in sessions
        }
        self._remember_sessions(sessions.keys(), now)

    def answered(self, session_id: str, record_id: str, since: float) -> None:
        """Tray's answer to this prompt went in: it and its reminders ping no more, even
        before the launcher's file says so."""
        for (sid, rid), prompt in self._prompts.items():
            reported = prompt.reported_since
            if sid != session_id or rid != record_id or reported is None:
                continue
            if abs(reported - since) <= SINCE_TOLERANCE and prompt.condition[0] == State.BLOCKED:
                prompt.pending, prompt.remind_at = False, None

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
                self._events[(session_id, item.seq)] = Event(item, observation)
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
            self._mutes.forget(session_id)
            self._after_answer.forget(session_id)

    # -- pause, snooze and unreachable hosts ---------------------------------------------

    def pause(self, until: float) -> None:
        """No pings until ``until``; whatever falls due meanwhile is dropped."""
        self._mutes.pause(until)

    def resume(self) -> None:
        self._mutes.resume()

    def set_away(self, away: bool) -> None:
        """The user left the desk (or came back): while away, a focused terminal's
        pings go as an unfocused one's would (nobody is looking at it)."""
        self._timing.away = away

    @property
    def paused_until(self) -> float | None:
        return self._mutes.paused_until

    def snooze(self, session_id: str, until: float) -> None:
        """No pings of any kind for this session until ``until``; whatever falls due
        meanwhile is dropped, and its reminders carry on afterwards."""
        self._mutes.snooze(session_id, until)

    def unsnooze(self, session_id: str) -> None:
        self._mutes.unsnooze(session_id)

    def snoozed_until(self, session_id: str) -> float | None:
        return self._mutes.snoozed_until(session_id)

    def mutes(self) -> Mutes:
        """The pause and every snooze in force now, for the menu and the app's file."""
        return self._mutes.mutes()

    def set_unreachable(self, session_ids: Collection[str]) -> None:
        """These sessions, and no others, are on a host that cannot be reached now.

        They stay in the snapshots, so the policy still knows which prompts it has told
        about: when the host is back, those stay quiet and the others ping once. Until
        then, whatever of theirs falls due is dropped, as under a snooze; a snooze of the
        user's own is left as it is, to carry on after.
        """
        self._mutes.set_unreachable(session_ids)

    def unreachable(self, session_id: str) -> bool:
        return self._mutes.unreachable(session_id)

    def _silenced(self, candidate: Candidate, now: float) -> bool:
        return self._mutes.silenced(candidate.session_id, candidate.ready, now)

    # -- timing -------------------------------------------------------------------------

    def _candidates(self) -> list[Candidate]:
        candidates: list[Candidate] = []
        for prompt in self._prompts.values():
            if prompt.pending:
                candidates.append(self._timing.first(prompt))
            elif prompt.remind_at is not None:
                candidates.append(self._timing.reminder(prompt, prompt.remind_at))
        candidates.extend(self._timing.event(event) for event in self._events.values())
        return candidates

    @staticmethod
    def _waits(candidate: Candidate, unready: Sequence[Candidate]) -> bool:
        """An event waits for a 7501 ping, or a better event, of its session still to
        come within ``COALESCE`` of it: that one will speak for both."""
        if not candidate.is_event:
            return False
        return any(
            other.session_id == candidate.session_id
            and not other.reminder
            and other.rank < candidate.rank
            and abs(other.moment - candidate.moment) <= COALESCE
            for other in unready
        )

    # -- one request, one ping ------------------------------------------------------------

    def _told_before(self, candidate: Candidate) -> bool:
        """A ping of the session already told (sent, told or dropped) speaks for it."""
        return any(
            coalesces_with(moment, by_event, candidate)
            for moment, by_event in self._claims.get(candidate.session_id, ())
        )

    def _note_told(self, candidate: Candidate) -> None:
        """``candidate`` is told: it speaks for whatever comes near it in time."""
        claims = self._claims.setdefault(candidate.session_id, deque(maxlen=_CLAIMS_KEPT))
        claims.append((candidate.moment, candidate.is_event))

    # -- output -------------------------------------------------------------------------

    def _duplicate(self, key: DedupKey, now: float) -> bool:
        sent = self._handled.get(key)
        return sent is not None and now < sent + self.settings.dedup_window

    def _close(self, candidate: Candidate, now: float, *, noticed: bool) -> None:
        """Done with a first ping, a reminder or an event, whatever became of it."""
        if isinstance(candidate, EventCandidate):
            self._events.pop((candidate.session_id, candidate.event.attention.seq), None)
            return
        prompt = candidate.prompt
        if candidate.reminder:
            prompt.remind_step += 1
        prompt.pending = False
        if noticed:
            prompt.noticed_at = now
        schedule_reminder(prompt, self.settings.remind, now)

    def _handle(self, candidate: Candidate, now: float) -> None:
        """A first ping or event told: the same news must not ping again in the window."""
        self._handled[candidate.key()] = now
        self._close(candidate, now, noticed=True)

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
            key=lambda c: (c.reminder, c.rank, c.moment, c.session_id),
        )
        wanted: list[Candidate] = []
        this_round: list[Candidate] = []  # news about to be sent, which may speak for more
        absorbed: list[tuple[Candidate, Candidate]] = []
        for candidate in ready:
            if candidate.reminder:
                if self._silenced(candidate, now) or candidate.verdict == "told":
                    self._close(candidate, now, noticed=candidate.verdict == "told")
                else:
                    wanted.append(candidate)
                continue
            if self._waits(candidate, unready):
                continue
            if self._told_before(candidate):
                self._handle(candidate, now)
                continue
            # A ping of this round that tells this news too: the candidate goes with it.
            covering = next(
                (
                    other
                    for other in this_round
                    if other.session_id == candidate.session_id
                    and coalesces_with(other.moment, other.is_event, candidate)
                ),
                None,
            )
            if covering is not None:
                absorbed.append((candidate, covering))
                continue
            key = candidate.key()
            told = candidate.verdict == "told"
            if self._silenced(candidate, now) or self._duplicate(key, now) or told:
                if told:
                    self._handled[key] = now
                if not candidate.is_event:
                    # The event sent alongside this report must not ping in its place.
                    self._note_told(candidate)
                self._close(candidate, now, noticed=told)
                continue
            wanted.append(candidate)
            this_round.append(candidate)

        wanted.sort(
            key=lambda c: (
                c.reminder,
                _STATE_RANK.get(c.state(), 3),
                c.is_event or urgency_of(c.observation) != "critical",
                c.is_event,
                c.ready,
                c.session_id,
                c.moment,
            )
        )
        room = self._budget.room(now)
        singles, rest = wanted[:room], wanted[room:]
        pings = [c.ping(now) for c in singles]
        self._budget.singles.extend(now for _ in singles)
        sent = list(singles)
        if rest and self._budget.summary_free(now):
            pings.append(summary_ping([c.ping(now) for c in rest]))
            self._budget.summary_at = now
            sent.extend(rest)
        for candidate in sent:
            if candidate.reminder:
                self._close(candidate, now, noticed=True)
            else:
                self._note_told(candidate)
                self._handle(candidate, now)
        delivered = {id(c) for c in sent}
        for candidate, covering in absorbed:
            if id(covering) in delivered:
                self._handle(candidate, now)
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
        self._mutes.trim(min([now, *(c.ready for c in self._candidates())]))


__all__ = [
    "COALESCE",
    "PINGING",
    "RETAIN",
    "NotificationPolicy",
    "Observation",
    "Ping",
    "attention_ping",
    "observe",
    "observe_session",
    "ping_for",
    "reminder_offset",
    "reminder_ping",
    "summary_ping",
]
