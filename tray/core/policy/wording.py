"""Pure: every notification's words, and what each one is about.

The policy (:mod:`tray.core.policy.notification_policy`) decides what pings and when;
this module says what the notification reads. A :class:`Ping` also carries the states it
is about and whether it is a reminder or a summary, so that whatever passes pings on (the
desktop, a forward while the user is away) can choose by those without reading the words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from tray.base.safe_text import clean_text, cut, format_duration
from tray.core.answers.target import AnswerTarget
from tray.core.policy.observe import Observation
from tray.core.session.model import Attention
from tray.protocol.state import State

Urgency = Literal["critical", "normal"]
# A single ping is news told once; a reminder tells a waiting prompt again; a summary
# stands for many pings the burst budget had no room for.
PingKind = Literal["single", "reminder", "summary"]

_CRITICAL_KINDS: Final = frozenset({"permission", "auth"})
_BLOCKED_WORDS: Final = {
    # kind -> (what the title says the session needs, the body when msg is absent)
    "permission": ("needs approval", "Waiting for your approval"),
    "question": ("needs an answer", "Waiting for your answer"),
    "auth": ("needs you to sign in", "Waiting for you to sign in"),
    None: ("needs you", "Waiting for you"),
}
# The words of a summary, in its order: (state, one session, many sessions).
_SUMMARY_WORDS: Final = (
    (State.BLOCKED, "needs you", "need you"),
    (State.ERROR, "failed", "failed"),
    (State.DONE, "finished", "finished"),
)
_SUMMARY_LABELS: Final = 5
_COMMAND_CELLS: Final = 60


@dataclass(frozen=True, slots=True)
class Ping:
    """One notification. ``record_id`` names the record a child prompt's ping is about;
    it is None for a session's lead, its finished state, and its attention events.

    ``states`` is what it is about, among blocked, error and done: a bell or a terminal
    notification asks for the person, so it counts as blocked; a shell command's end as
    done or error. ``label`` is the session's (a summary's is empty).
    """

    title: str
    body: str
    urgency: Urgency
    session_ids: tuple[str, ...]
    record_id: str | None = None
    kind: PingKind = "single"
    states: frozenset[str] = frozenset()
    label: str = ""
    # A permission prompt tray can answer: the notification offers Approve and Deny.
    answer: AnswerTarget | None = None

    @property
    def reminder(self) -> bool:
        return self.kind == "reminder"


def urgency_of(observation: Observation) -> Urgency:
    if observation.state == State.BLOCKED and observation.kind in _CRITICAL_KINDS:
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
    if observation.state == State.BLOCKED:
        need, waiting = _BLOCKED_WORDS.get(observation.kind, _BLOCKED_WORDS[None])
        title, body = f"{label} {need}", msg or waiting
    elif observation.state == State.ERROR:
        code = observation.exit_code
        fallback = f"Exited with status {code}" if code else "Failed"
        title, body = f"{label} failed", msg or fallback
    else:
        run = observation.run_seconds
        fallback = "Done" if run is None else f"Done in {format_duration(run)}"
        title, body = f"{label} finished", msg or fallback
    return Ping(
        title,
        body,
        urgency_of(observation),
        (observation.session_id,),
        None if observation.lead else observation.record_id,
        states=frozenset({observation.state or ""}),
        label=observation.label,
        answer=observation.answer if observation.state == State.BLOCKED else None,
    )


def waited_text(seconds: float) -> str:
    """How long a prompt has waited, in whole minutes once it is a minute or more: the
    reminder is about the wait, not the exact second it went out."""
    whole = seconds - seconds % 60 if seconds >= 60 else seconds
    return format_duration(whole)


def reminder_ping(observation: Observation, waited: float) -> Ping:
    """The prompt's ping again, its body saying how long it has waited."""
    ping = ping_for(observation)
    body = f"{ping.body} (still waiting, {waited_text(waited)})"
    return replace(ping, body=body, kind="reminder")


def command_failed(attention: Attention) -> bool:
    return attention.exit_code not in (None, 0)


def attention_state(attention: Attention) -> State:
    """The state a request for attention counts as: a finished command's, else blocked."""
    if attention.source == "command":
        return State.ERROR if command_failed(attention) else State.DONE
    return State.BLOCKED


def attention_ping(attention: Attention, label: str, session_id: str) -> Ping:
    """A terminal notification, a bell, or a long command's end, as a notification."""
    if attention.source == "bell":
        title, body = f"{label} rang the bell", "It may need you"
    elif attention.source == "command":
        line = clean_text(attention.title or "")
        what = f"{label}: {cut(line, _COMMAND_CELLS)}" if line else f"{label}: command"
        if command_failed(attention):
            title, body = f"{what} failed", f"Exited with status {attention.exit_code}"
        else:
            run = attention.duration
            title = f"{what} finished"
            body = "Done" if run is None else f"Done in {format_duration(run)}"
    else:
        own = _shown(attention.title)
        title = f"{label}: {own}" if own else label
        body = _shown(attention.body) or ("" if own else "Sent a notification")
    return Ping(
        title,
        body,
        "normal",
        (session_id,),
        states=frozenset({attention_state(attention)}),
        label=label,
    )


def summary_ping(pings: Sequence[Ping]) -> Ping:
    """Many pings in one notification: "2 sessions need you · 1 failed"; one reads as
    itself."""
    if len(pings) == 1:
        return pings[0]
    parts: list[str] = []
    for state, one, many in _SUMMARY_WORDS:
        # Sessions, not pings: two prompts of one session are one session that needs you.
        count = len({sid for p in pings if state in p.states for sid in p.session_ids})
        if not count:
            continue
        noun = "" if parts else (" session" if count == 1 else " sessions")
        parts.append(f"{count}{noun} {one if count == 1 else many}")
    session_ids = tuple(dict.fromkeys(sid for p in pings for sid in p.session_ids))
    labels = list(dict.fromkeys(p.label for p in pings))
    body = ", ".join(labels[:_SUMMARY_LABELS])
    if len(labels) > _SUMMARY_LABELS:
        body += f" and {len(labels) - _SUMMARY_LABELS} more"
    urgent = any(p.urgency == "critical" for p in pings)
    return Ping(
        title=" · ".join(parts),
        body=body,
        urgency="critical" if urgent else "normal",
        session_ids=session_ids,
        kind="summary",
        states=frozenset(state for p in pings for state in p.states),
    )
