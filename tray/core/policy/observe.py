"""Pure: sessions into what the notification policy sees of them.

The app builds one :class:`Observation` per prompt or finished state of every session at
each refresh, and hands the lot to
:meth:`tray.core.policy.notification_policy.NotificationPolicy.update`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tray.base.safe_text import clean_text
from tray.core.answers.gate import DEFAULT_SETTINGS, AnswerSettings
from tray.core.answers.target import AnswerTarget, target_for
from tray.core.session.model import Attention, Session, answered_prompt
from tray.core.view.overview import lead_record
from tray.protocol.records import Record
from tray.protocol.state import State

ConditionKey = tuple[str, str | None, str | None]
# A place a condition can live: (session id, record id), the record id being None for
# the launcher's own state. A prompt keeps its slot whether or not it leads its session.
Slot = tuple[str, str | None]


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
    state: State | None
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
    # The prompt tray can answer (Approve, Deny), and the (record, since) of the last
    # answer the session's launcher typed for tray: the state right after it is quiet.
    answer: AnswerTarget | None = None
    answered: tuple[str, float] | None = None

    @property
    def condition(self) -> ConditionKey:
        return (self.state or "", self.kind, self.msg)

    @property
    def slot(self) -> Slot:
        return (self.session_id, self.record_id)


def observe_session(
    session: Session, label: str, now: float, answering: AnswerSettings = DEFAULT_SETTINGS
) -> Observation:
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
    if state == State.DONE:
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
        answer=target_for(session.id, session.running, leader, answering)
        if state == State.BLOCKED
        else None,
        answered=answered_prompt(session),
    )


def observe(
    session: Session, label: str, now: float, answering: AnswerSettings = DEFAULT_SETTINGS
) -> list[Observation]:
    """Everything of the session that may ping: the session itself first (see
    :func:`observe_session`), then every other blocked record, each its own prompt.
    ``answering`` (the config's ``[answer]``) says which prompts can be answered."""
    lead = observe_session(session, label, now, answering)
    observations = [lead]
    if lead.state != State.BLOCKED:
        return observations
    for record in session.records:
        if record.state != State.BLOCKED or record.id == lead.record_id:
            continue
        observations.append(
            Observation(
                session_id=session.id,
                label=label,
                state=State.BLOCKED,
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
                answer=target_for(session.id, session.running, record, answering),
                answered=lead.answered,
            )
        )
    return observations


def _child_name(record: Record) -> str:
    return record.title if record.title and clean_text(record.title) else record.id
