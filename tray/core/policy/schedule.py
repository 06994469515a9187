"""Pure: the policy's pieces of time. What may become a ping (a prompt's first ping or
reminder, a request for attention), when a reminder is due, and the burst budget. What
drops a ping (pause, snooze, an unreachable host, quiet hours) is
:mod:`tray.core.policy.mutes`.

:mod:`tray.core.policy.notification_policy` puts these together.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar, Final, Literal

from tray.core.answers.gate import SINCE_TOLERANCE
from tray.core.config.settings import PolicySettings
from tray.core.policy.observe import ConditionKey, Observation
from tray.core.policy.wording import Ping, attention_ping, attention_state, ping_for, reminder_ping
from tray.core.session.model import Attention
from tray.protocol.state import State

DedupKey = tuple[str | None, ...]
Verdict = Literal["send", "told"]
Focus = Literal["told", "free", "typing"]

# A 7501 report and a terminal notification or bell this close together (by their own
# times) are one request: Claude Code with iterm2_with_bell and Jazz send both.
COALESCE: Final = 2.0
HOUR: Final = 3600.0
# Reminders double this many times (remind, 2x, 4x, 8x) before they go hourly.
DOUBLINGS: Final = 4
# OSC 99's ``o=`` values that ask to be shown only to someone not looking.
ONLY_UNSEEN: Final = frozenset({"unfocused", "invisible"})


def reminder_offset(step: int, remind: float) -> float:
    """How long after a prompt appeared its ``step``-th reminder (from 0) is due: remind,
    2x, 4x and 8x remind, then hourly."""
    if step < DOUBLINGS:
        return math.ldexp(remind, step)
    return math.ldexp(remind, DOUBLINGS - 1) + HOUR * (step - DOUBLINGS + 1)


@dataclass(slots=True)
class Budget:
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
class Prompt:
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
class Event:
    attention: Attention
    observation: Observation  # the session's latest, for its label and focus


@dataclass(slots=True)
class PromptCandidate:
    """A prompt's first ping (``reminder`` false) or its next reminder.

    ``ready`` is when it falls due, typing hold-back included; ``moment`` is the
    condition's since, which coalescing compares.
    """

    prompt: Prompt
    reminder: bool
    ready: float
    verdict: Verdict
    # 0 a 7501 report, 1 a terminal notification or command, 2 a bell: the lowest speaks.
    rank: ClassVar[int] = 0
    is_event: ClassVar[bool] = False

    @property
    def observation(self) -> Observation:
        return self.prompt.observation

    @property
    def session_id(self) -> str:
        return self.prompt.observation.session_id

    @property
    def moment(self) -> float:
        return self.prompt.since

    def key(self) -> DedupKey:
        observation = self.observation
        return (observation.session_id, "record", observation.record_id, *observation.condition)

    def ping(self, now: float) -> Ping:
        if self.reminder:
            return reminder_ping(self.observation, now - self.prompt.since)
        return ping_for(self.observation)

    def state(self) -> str:
        return self.observation.state or ""


@dataclass(slots=True)
class EventCandidate:
    """A request for attention (a terminal notification, a bell, a command's end).

    ``ready`` is when it falls due; ``moment`` is the event's own ``at``.
    """

    event: Event
    ready: float
    verdict: Verdict
    reminder: ClassVar[bool] = False
    is_event: ClassVar[bool] = True

    @property
    def observation(self) -> Observation:
        return self.event.observation

    @property
    def session_id(self) -> str:
        return self.event.observation.session_id

    @property
    def moment(self) -> float:
        return self.event.attention.at

    @property
    def rank(self) -> int:
        return 2 if self.event.attention.source == "bell" else 1

    def key(self) -> DedupKey:
        item = self.event.attention
        return (self.session_id, "attention", item.source, item.title, item.body)

    def ping(self, now: float) -> Ping:
        observation = self.observation
        return attention_ping(self.event.attention, observation.label, observation.session_id)

    def state(self) -> str:
        return attention_state(self.event.attention)


Candidate = PromptCandidate | EventCandidate


def coalesces_with(moment: float, by_event: bool, candidate: Candidate) -> bool:
    """Whether a ping of the candidate's session, about ``moment`` (an event's if
    ``by_event``), makes the candidate one request with it, to be told once: an event is
    spoken for by anything that close, a 7501 ping only by an event."""
    return abs(moment - candidate.moment) <= COALESCE and (candidate.is_event or by_event)


def _after(moment: float, now: float, lower: float) -> bool:
    return moment > now and moment >= lower


def schedule_reminder(prompt: Prompt, remind: float, now: float) -> None:
    """The prompt's next reminder: the first on the schedule after ``now``, and at
    least half an interval after it was last noticed."""
    if remind <= 0 or prompt.observation.state != State.BLOCKED:
        prompt.remind_at = None
        return
    lower = now
    if prompt.noticed_at is not None:
        lower = max(lower, prompt.noticed_at + min(remind, HOUR) / 2)
    step = prompt.remind_step
    while step < DOUBLINGS and not _after(prompt.since + reminder_offset(step, remind), now, lower):
        step += 1
    if step >= DOUBLINGS:
        behind = lower - prompt.since - reminder_offset(DOUBLINGS - 1, remind)
        step = max(step, DOUBLINGS - 1 + max(1, math.floor(behind / HOUR)))
        while not _after(prompt.since + reminder_offset(step, remind), now, lower):
            step += 1
    prompt.remind_step = step
    prompt.remind_at = prompt.since + reminder_offset(step, remind)


class Timing:
    """When each candidate falls due, and whether the person has been told of it
    already: the focus and typing rules, one for every kind of ping."""

    def __init__(self, settings: PolicySettings) -> None:
        self.settings = settings
        # While the user is away from the desk ([away]), a focused terminal is not being
        # looked at: its pings go, so they can follow the user to the phone.
        self.away = False

    def focus(self, observation: Observation) -> Focus:
        if self.away:
            return "free"
        if observation.focus == "focused" and not self.settings.when_focused:
            return "told"
        return "free" if observation.focus == "unfocused" else "typing"

    def decide_delivery(
        self,
        observation: Observation,
        ready: float,
        *,
        appeared: float | None,
        only_unseen: bool = False,
        shy: bool = False,
    ) -> tuple[float, Verdict]:
        """The focus and typing rule, for every kind of ping: when it may go (``ready``,
        held back while the person is typing) and whether the person has been told.

        Keystrokes after it ``appeared`` (None: a reminder, which asks again whatever
        was typed) mean told. One ``only_unseen`` (a bell, OSC 99 with ``o=``) is dropped
        after recent typing instead of held back; a ``shy`` one (that OSC 99) is told
        by focus alone, whatever ``when_focused`` says.
        """
        last = observation.last_input_at
        focus = self.focus(observation)
        if shy and observation.focus == "focused":
            focus = "told"
        if focus == "told" or (last is not None and appeared is not None and last > appeared):
            return ready, "told"
        if focus == "typing" and last is not None:
            grace = self.settings.typing_grace
            if not only_unseen:
                return max(ready, last + grace), "send"
            if appeared is not None and last > appeared - grace:
                return ready, "told"
        return ready, "send"

    def first(self, prompt: Prompt) -> PromptCandidate:
        since = prompt.since
        ready, verdict = self.decide_delivery(
            prompt.observation, since + self.settings.settle, appeared=since
        )
        return PromptCandidate(prompt, False, ready, verdict)

    def reminder(self, prompt: Prompt, remind_at: float) -> PromptCandidate:
        ready, verdict = self.decide_delivery(prompt.observation, remind_at, appeared=None)
        return PromptCandidate(prompt, True, ready, verdict)

    def event(self, event: Event) -> EventCandidate:
        item = event.attention
        shy = item.source == "osc99" and item.condition in ONLY_UNSEEN
        ready, verdict = self.decide_delivery(
            event.observation,
            item.at + self.settings.settle,
            appeared=item.at,
            only_unseen=shy or item.source == "bell",
            shy=shy,
        )
        return EventCandidate(event, ready, verdict)


class AfterAnswer:
    """Which conditions an answer given through tray speaks for: the answered prompt
    itself, while the launcher's file still shows it, and the state of its record that
    directly follows it. A new prompt of that record is news again."""

    def __init__(self) -> None:
        # session -> (the answered prompt, the since of the state that followed it)
        self._followers: dict[str, tuple[tuple[str, float], float]] = {}

    def __call__(self, observation: Observation) -> bool:
        answered, seen = observation.answered, observation.since
        if answered is None or seen is None or observation.record_id != answered[0]:
            return False
        if abs(seen - answered[1]) <= SINCE_TOLERANCE:
            return observation.state == State.BLOCKED
        if seen < answered[1] or observation.state == State.BLOCKED:
            return False  # an older state, or a new prompt
        session_id = observation.session_id
        follower = self._followers.get(session_id)
        if follower is None or follower[0] != answered:
            # The first state seen after the answer is the one that followed it.
            self._followers[session_id] = (answered, seen)
            return True
        return abs(follower[1] - seen) <= SINCE_TOLERANCE

    def forget(self, session_id: str) -> None:
        self._followers.pop(session_id, None)
