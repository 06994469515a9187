"""Pure: all sessions, plus what the tray remembers, give what the icon and menu show."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol

from tray.base.safe_text import clean_text
from tray.core.answers.gate import DEFAULT_SETTINGS, AnswerSettings
from tray.core.answers.target import AnswerTarget, target_for
from tray.core.hosts.remote_sessions import REMOTE_PANE_KEY
from tray.core.session.labels import session_label
from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.state import FINISHED, State, urgency

# The icon shows a state, but idle is calm. Enum members in a Literal: get_args gives the
# names, as the icon tests walk them.
IconState = Literal["calm", State.WORKING, State.DONE, State.ERROR, State.BLOCKED]


def icon_of(state: State) -> IconState:
    """The icon of a state.

    >>> icon_of(State.IDLE), icon_of(State.ERROR)
    ('calm', 'error')
    """
    return "calm" if state is State.IDLE else state


# Terminal facts that let the tray raise the session: locally, or over ssh.
FOCUS_KEYS: Final = ("TMUX_PANE", "WINDOWID", REMOTE_PANE_KEY)
# Attention a program asks for by ringing: it wants the person at the keyboard. A
# terminal notification or a finished shell command tells news instead, and the
# policy's notification covers those.
NEEDS_YOU_SOURCES: Final = frozenset({"bell"})
# A menu with dozens of sub-agents per session would bury every other session.
CHILDREN_SHOWN: Final = 8


class Marks(Protocol):
    """What the tray itself remembers of sessions, as the view reads it: the worker's
    :class:`tray.core.worker.marks.AppMemory`."""

    # session id -> time up to which its done/error state has been seen
    @property
    def seen(self) -> Mapping[str, float]: ...

    @property
    def dismissed(self) -> frozenset[str]: ...


@dataclass(frozen=True, slots=True)
class Mutes:
    """The pause of every notification and each session's snooze, as the menu shows
    them. The policy keeps and enforces them; this is a copy of them at one moment
    (:meth:`tray.core.policy.notification_policy.NotificationPolicy.mutes`)."""

    paused_until: float | None = None
    # session id -> time until which its notifications are snoozed
    snoozed: Mapping[str, float] = field(default_factory=dict)

    def paused(self, now: float) -> bool:
        return self.paused_until is not None and self.paused_until > now


NO_MUTES: Final = Mutes()


@dataclass(frozen=True, slots=True)
class ChildRow:
    """One child record (a sub-agent, a task) as the menu shows it under its session."""

    record_id: str
    label: str  # its title, else its id; one clean line
    state: State
    kind: str | None
    progress: int | None
    msg: str | None
    since: float  # when the record began saying what it says now
    answer: AnswerTarget | None = None  # its prompt, when tray can approve or deny it


@dataclass(frozen=True, slots=True)
class Row:
    """One session as the menu shows it."""

    session_id: str
    label: str  # "--name", else "app · directory"
    state: State | None
    kind: str | None
    since: float  # when the session entered ``state``
    msg: str | None
    alive: bool
    exit_code: int | None
    unseen: bool  # finished (done or error) and not yet marked seen
    focusable: bool  # the launcher recorded a tmux pane or an X11 window
    progress: int | None = None  # the lead record's, else the terminal's (OSC 9;4)
    needs_you: bool = False  # it rang after the person last typed into it or looked
    snoozed_until: float | None = None  # only while the snooze lasts
    children: tuple[ChildRow, ...] = ()  # the most urgent ones, at most CHILDREN_SHOWN
    more_children: int = 0  # the ones left out of ``children``
    # On a host that cannot be reached: shown as last seen, and counting for nothing.
    stale: bool = False
    answer: AnswerTarget | None = None  # the lead prompt, when tray can approve or deny it

    def message(self, record_id: str = "") -> str | None:
        """The message the menu shows for the session (``""``) or one shown child."""
        if not record_id:
            return self.msg
        return next((c.msg for c in self.children if c.record_id == record_id), None)


@dataclass(frozen=True, slots=True)
class HostLine:
    """One ``[[hosts]]`` entry as the menu shows it above its sessions."""

    name: str
    problem: str | None = None  # "unreachable since 14:02, retrying: ..."; None when fine


@dataclass(frozen=True, slots=True)
class Overview:
    icon_state: IconState
    blocked_count: int
    tooltip: str
    rows: tuple[Row, ...]  # most urgent first
    hosts: tuple[HostLine, ...] = ()  # in the order of config.toml

    def row(self, session_id: str) -> Row | None:
        return next((row for row in self.rows if row.session_id == session_id), None)


def lead_record(session: Session) -> Record | None:
    """The record that speaks for the session: one in the session's state, the most
    recently updated (the root first on a tie, as records are sorted by id)."""
    state = session.state
    leaders = [r for r in session.records if r.state == state]
    if not leaders:
        return None
    return max(leaders, key=lambda r: r.updated_at)


def estimated_since(session: Session) -> float:
    """When the session most likely entered its state, judged from its file alone.

    Records in that state carry the time of their last report; the latest one is the
    latest moment the state can have begun. Without such a record, a running launcher
    has been working since the start, and an ended one changed state at its last write.
    """
    leader = lead_record(session)
    if leader is not None:
        return leader.updated_at
    if session.state == State.WORKING and not session.records:
        return session.started_at
    return session.updated_at


class StateSince:
    """Remembers when each session entered its current state, across snapshots.

    A session seen for the first time gets :func:`estimated_since`. A state change seen
    live happened after the previous snapshot and by this one; within that span the
    session's own ``updated_at`` (the write that carried the change) is the best guess.
    """

    __slots__ = ("_entries", "_last_update")

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str | None, float]] = {}
        self._last_update = -math.inf

    def update(self, sessions: Sequence[Session], now: float) -> dict[str, float]:
        entries: dict[str, tuple[str | None, float]] = {}
        for session in sessions:
            state = session.state
            known = self._entries.get(session.id)
            if known is None:
                since = min(estimated_since(session), now)
            elif known[0] == state:
                since = known[1]
            else:
                since = min(max(session.updated_at, self._last_update, known[1]), now)
            entries[session.id] = (state, since)
        self._entries = entries
        self._last_update = now
        return self.since

    @property
    def since(self) -> dict[str, float]:
        return {session_id: since for session_id, (_, since) in self._entries.items()}


def _unseen(state: State | None, since: float, seen_until: float) -> bool:
    return state in FINISHED and since > seen_until


def _record_since(record: Record) -> float:
    return record.updated_at if record.since is None else record.since


def _child_order(record: Record) -> tuple[int, float, str]:
    # As for sessions: the longest wait first when blocked, the freshest news otherwise.
    since = _record_since(record)
    return (urgency(record.state), since if record.state == State.BLOCKED else -since, record.id)


def _optional_text(text: str | None) -> str | None:
    return (clean_text(text) or None) if text else None


def child_rows(
    session: Session, answering: AnswerSettings = DEFAULT_SETTINGS
) -> tuple[tuple[ChildRow, ...], int]:
    """The session's child records, most urgent first and at most CHILDREN_SHOWN of
    them, and how many were left out. A session whose program is gone keeps only the
    records that outlive it, as its state does."""
    records = [r for r in session.records if r.id]
    if not session.running:
        records = [r for r in records if r.state in FINISHED]
    records.sort(key=_child_order)
    shown = tuple(
        ChildRow(
            record_id=r.id,
            label=_optional_text(r.title) or clean_text(r.id) or r.id,
            state=r.state,
            kind=r.kind,
            progress=r.progress,
            msg=_optional_text(r.msg),
            since=_record_since(r),
            answer=target_for(session.id, session.running, r, answering),
        )
        for r in records[:CHILDREN_SHOWN]
    )
    return shown, len(records) - len(shown)


def needs_you(session: Session, seen_until: float) -> bool:
    """Whether the session rang after the person last typed into it or marked it seen.

    A program that is gone can no longer be answered, so its bell no longer counts.
    """
    if not session.running:
        return False
    rung = max((a.at for a in session.attention if a.source in NEEDS_YOU_SOURCES), default=None)
    if rung is None or rung <= seen_until:
        return False
    return session.last_input_at is None or rung > session.last_input_at


def row_progress(session: Session, leader: Record | None) -> int | None:
    if leader is not None:
        return leader.progress
    # A program that never spoke OSC 7501 may still draw a progress bar in the
    # terminal; it means nothing once the program is gone.
    if session.source == "launcher" and session.running:
        return session.terminal_progress
    return None


def build_row(
    session: Session,
    memory: Marks,
    since: Mapping[str, float],
    now: float,
    *,
    mutes: Mutes = NO_MUTES,
    stale: bool = False,
    answering: AnswerSettings = DEFAULT_SETTINGS,
) -> Row:
    """The session's menu row. A ``stale`` one (its host is lost) keeps what it last
    said, but nothing in it can be acted on or asks for anyone: it may have moved on."""
    state = session.state
    entered = since.get(session.id)
    if entered is None:
        entered = estimated_since(session)
    leader = lead_record(session)
    msg = clean_text(leader.msg) if leader is not None and leader.msg else None
    seen_until = memory.seen.get(session.id, -math.inf)
    snoozed = mutes.snoozed.get(session.id)
    children, more = child_rows(session, AnswerSettings(False) if stale else answering)
    return Row(
        session_id=session.id,
        label=session_label(session),
        state=state,
        kind=leader.kind if leader is not None else None,
        since=entered,
        msg=msg or None,
        alive=session.alive,
        exit_code=session.exit_code,
        unseen=not stale and _unseen(state, entered, seen_until),
        focusable=not stale and any(session.terminal.get(key) for key in FOCUS_KEYS),
        progress=row_progress(session, leader),
        needs_you=not stale and needs_you(session, seen_until),
        snoozed_until=snoozed if snoozed is not None and snoozed > now else None,
        children=children,
        more_children=more,
        stale=stale,
        answer=None
        if stale or state != State.BLOCKED
        else target_for(session.id, session.running, leader, answering),
    )


def _rank(row: Row) -> int:
    # A lost host's sessions go after every live one, in the order they had.
    return _live_rank(row) + (8 if row.stale else 0)


def _live_rank(row: Row) -> int:
    if row.state == State.BLOCKED:
        return 0
    if row.needs_you:
        return 1
    if row.state == State.ERROR and row.unseen:
        return 2
    if row.state == State.WORKING:
        return 3
    if row.state == State.DONE and row.unseen:
        return 4
    if row.state in FINISHED:
        return 5
    if row.state == State.IDLE:
        return 6
    return 7


def _order(row: Row) -> tuple[int, float, str, str]:
    # The longest wait first among blocked sessions; the freshest news first elsewhere.
    age_key = row.since if row.state == State.BLOCKED else -row.since
    return (_rank(row), age_key, row.label, row.session_id)


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def build_overview(
    sessions: Sequence[Session],
    memory: Marks,
    since: Mapping[str, float],
    now: float,
    *,
    mutes: Mutes = NO_MUTES,
    stale: Collection[str] = frozenset(),
    hosts: Sequence[HostLine] = (),
    answering: AnswerSettings = DEFAULT_SETTINGS,
) -> Overview:
    """Dismissed sessions are left out entirely. ``since`` comes from :class:`StateSince`;
    a session missing from it falls back to :func:`estimated_since`. Snoozes come from
    ``mutes.snoozed``; one that has run out by ``now`` is not shown.

    Sessions in ``stale`` (ids of a lost host's sessions) are listed, last, but count
    for nothing: a prompt nobody can see any more must not keep the icon blocked.
    """
    rows = tuple(
        sorted(
            (
                build_row(
                    s, memory, since, now, mutes=mutes, stale=s.id in stale, answering=answering
                )
                for s in sessions
                if s.id not in memory.dismissed
            ),
            key=_order,
        )
    )
    live = [row for row in rows if not row.stale]
    blocked = sum(1 for row in live if row.state == State.BLOCKED)
    failed = sum(1 for row in live if row.state == State.ERROR and row.unseen)
    working = sum(1 for row in live if row.state == State.WORKING)
    finished = sum(1 for row in live if row.state == State.DONE and row.unseen)

    icon: IconState = "calm"
    if blocked:
        icon = State.BLOCKED
    elif failed:
        icon = State.ERROR
    elif working:
        icon = State.WORKING
    elif finished:
        icon = State.DONE

    parts = []
    if blocked:
        parts.append(_plural(blocked, "needs you", "need you"))
    if failed:
        parts.append(f"{failed} failed")
    if working:
        parts.append(f"{working} working")
    if finished:
        parts.append(f"{finished} finished")
    tooltip = " · ".join(parts) or "Nothing needs you"
    lost = [host.name for host in hosts if host.problem is not None]
    if lost:
        tooltip += f" · {', '.join(lost)} unreachable"
    if mutes.paused(now):
        tooltip += " · notifications paused"
    return Overview(
        icon_state=icon, blocked_count=blocked, tooltip=tooltip, rows=rows, hosts=tuple(hosts)
    )
