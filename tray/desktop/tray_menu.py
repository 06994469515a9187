"""Sessions to the tray menu: one submenu per session, its sub-agents and tasks indented
under it, then the app's own items.

This machine's sessions come first; each ``[[hosts]]`` entry's follow in a group of
their own under a line naming the host, which says so when the host is unreachable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tray.base.safe_text import cells, clean_text, cut, format_age
from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL, AnswerTarget
from tray.core.hosts.remote_sessions import clock_time, split_remote_id
from tray.core.view.overview import ChildRow, HostLine, Overview, Row
from tray.core.worker.user_actions import (
    ClearFinished,
    Copy,
    Dismiss,
    Focus,
    MarkSeen,
    Resume,
    Unsnooze,
    UserAction,
    answer_to,
    pause_hour,
    snooze_hour,
)
from tray.protocol.state import FINISHED, Answer

if TYPE_CHECKING:
    import pystray

MESSAGE_WIDTH = 60
HEADER_WIDTH = 80
# A long label gives way first, so the state and the markers after it stay readable.
LABEL_MIN_WIDTH = 16
NO_SESSIONS = "No sessions"
PAUSE = "Pause notifications for an hour"
RESUME = "Resume notifications"
SNOOZE = "Snooze for an hour"
UNSNOOZE = "Unsnooze"
NEEDS_YOU = "needs you"
# Child lines sit in the top-level menu, so the indent is what ties them to their
# session; the arrow keeps that visible where a menu trims leading spaces.
CHILD_INDENT = "    ↳ "


@dataclass(frozen=True, slots=True)
class FocusLook:
    """A session's Focus item: its label ("Focus (kitty: remote control is off)" when
    it can do nothing), and what the last focus left undone, in lines shown under it."""

    enabled: bool
    label: str = "Focus"
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MenuExtras:
    """What the worker adds to the overview (tray.app.focus_looks, tray.app.away_routing);
    hashable, so the app can tell when the menu must change."""

    focus: tuple[tuple[str, FocusLook], ...] = ()
    away_line: str | None = None


NO_EXTRAS = MenuExtras()
Looks = Mapping[str, FocusLook]


def focus_look(row: Row, looks: Looks) -> FocusLook:
    if row.stale:
        return FocusLook(False)
    return looks.get(row.session_id) or FocusLook(row.focusable)


def _focus_items(pystray_: Any, row: Row, actions: MenuActions, looks: Looks) -> list[Any]:
    item, sid, look = pystray_.MenuItem, row.session_id, focus_look(row, looks)
    items = [item(look.label, _post(actions, lambda: Focus(sid)), enabled=look.enabled)]
    items += [item(note, None, enabled=False) for note in look.notes]
    return items


class MenuActions(Protocol):
    """What the menu reaches of the app: each item posts one user action
    (:mod:`tray.core.worker.user_actions`), made when it is clicked and stamped with
    :meth:`now`; :attr:`paused` is read when the Pause item is shown and clicked."""

    @property
    def paused(self) -> bool: ...

    def now(self) -> float: ...

    def post(self, action: UserAction) -> None: ...

    def quit(self) -> None: ...


def shorten(text: str, width: int) -> str:
    """One line of visible text, at most ``width`` characters."""
    return cut(clean_text(text), width)


def _state_words(state: str, kind: str | None, progress: int | None) -> str:
    words = state
    if kind:
        words += f" ({kind})"
    if progress is not None:
        words += f" {progress}%"
    return words


def _state_text(row: Row) -> str:
    state = _state_words(row.state or ("running" if row.alive else "ended"), row.kind, row.progress)
    if not row.alive and row.state is not None:
        state += ", ended"
    return state


def _with_label(label: str, tail: str, width: int) -> str:
    tail = clean_text(tail)
    room = max(width - cells(tail) - 1, LABEL_MIN_WIDTH)
    return cut(f"{shorten(label, room)} {tail}", width)


def row_header(row: Row, now: float) -> str:
    """ "<label> — <state>[ (<kind>)][ N%] <age>[ · needs you][ · snoozed until HH:MM]",
    the line naming a session's submenu."""
    tail = f"— {_state_text(row)} {format_age(now - row.since)}"
    if row.needs_you:
        tail += f" · {NEEDS_YOU}"
    if row.snoozed_until is not None:
        tail += f" · snoozed until {clock_time(row.snoozed_until)}"
    return _with_label(row.label, tail, HEADER_WIDTH)


def stale_line(row: Row) -> str:
    """ "<label> (last seen 14:02) — was <state>": what a lost host's session last said."""
    words = _state_words(row.state or ("running" if row.alive else "ended"), row.kind, row.progress)
    return _with_label(row.label, f"— was {words}", HEADER_WIDTH)


def host_line(host: HostLine) -> str:
    """ "devbox", or "devbox: unreachable since 14:02, retrying: <why>"."""
    text = host.name if host.problem is None else f"{host.name}: {host.problem}"
    return shorten(text, HEADER_WIDTH)


def host_of(row: Row) -> str | None:
    parts = split_remote_id(row.session_id)
    return parts[0] if parts is not None else None


def child_line(child: ChildRow, now: float) -> str:
    """ "    ↳ <title or id> — <state>[ (<kind>)][ N%] <age>[ · <message>]"."""
    tail = f"— {_state_words(child.state, child.kind, child.progress)}"
    tail += f" {format_age(now - child.since)}"
    if child.msg:
        tail += f" · {child.msg}"
    width = HEADER_WIDTH - cells(CHILD_INDENT)
    # The message may be cut; the title, state and age come first and stay.
    head = f"{shorten(child.label, LABEL_MIN_WIDTH * 2)} {clean_text(tail)}"
    return CHILD_INDENT + cut(head, width)


def more_line(count: int) -> str:
    return f"{CHILD_INDENT}and {count} more"


def _run(callback: Callable[[], None]) -> Callable[[Any, Any], None]:
    # pystray counts an action's parameters to decide what to pass; two is explicit.
    def action(_icon: Any, _item: Any) -> None:
        callback()

    return action


def _post(actions: MenuActions, make: Callable[[], UserAction]) -> Callable[[Any, Any], None]:
    """An item's action: post what ``make`` makes at the click (a time in it is the
    click's)."""
    return _run(lambda: actions.post(make()))


def _message_items(pystray_: Any, msg: str | None) -> list[Any]:
    if not msg:
        return []
    return [
        pystray_.MenuItem(shorten(msg, MESSAGE_WIDTH), None, enabled=False),
        pystray_.Menu.SEPARATOR,
    ]


def _row_items(pystray_: Any, row: Row, actions: MenuActions, looks: Looks) -> list[Any]:
    item, sid = pystray_.MenuItem, row.session_id
    if row.snoozed_until is not None:
        snooze = item(UNSNOOZE, _post(actions, lambda: Unsnooze(sid)))
    else:
        # An ended session sends nothing more to snooze.
        snooze_item = _post(actions, lambda: snooze_hour((sid,), actions.now()))
        snooze = item(SNOOZE, snooze_item, enabled=row.alive)
    return [
        *_message_items(pystray_, row.msg),
        *_answer_items(pystray_, row.answer, actions),
        *_focus_items(pystray_, row, actions, looks),
        item("Copy message", _post(actions, lambda: Copy(sid)), enabled=bool(row.msg)),
        item(
            "Mark seen",
            _post(actions, lambda: MarkSeen(sid, actions.now())),
            enabled=row.unseen or row.needs_you,
        ),
        snooze,
        item("Dismiss", _post(actions, lambda: Dismiss(sid)), enabled=not row.alive),
    ]


def _answer_items(pystray_: Any, target: AnswerTarget | None, actions: MenuActions) -> list[Any]:
    """Approve and Deny, for a prompt tray can answer: each names the prompt shown."""
    if target is None:
        return []
    item = pystray_.MenuItem
    return [
        item(APPROVE_LABEL, _post(actions, lambda: answer_to(target, Answer.APPROVE))),
        item(DENY_LABEL, _post(actions, lambda: answer_to(target, Answer.DENY))),
    ]


def _child_items(
    pystray_: Any, row: Row, child: ChildRow, actions: MenuActions, looks: Looks
) -> list[Any]:
    item, sid, rid = pystray_.MenuItem, row.session_id, child.record_id
    return [
        *_message_items(pystray_, child.msg),
        *_answer_items(pystray_, child.answer, actions),
        # A sub-agent has no terminal of its own: Focus raises its session's.
        *_focus_items(pystray_, row, actions, looks),
        item(
            "Copy message",
            _post(actions, lambda: Copy(sid, rid)),
            enabled=bool(child.msg),
        ),
    ]


def _session_entries(
    pystray_: Any, row: Row, actions: MenuActions, now: float, looks: Looks
) -> list[Any]:
    item, menu = pystray_.MenuItem, pystray_.Menu
    if row.stale:
        # Greyed out: until its host answers again, nothing can be done with it.
        return [item(stale_line(row), None, enabled=False)]
    entries = [item(row_header(row, now), menu(*_row_items(pystray_, row, actions, looks)))]
    for child in row.children:
        entries.append(
            item(child_line(child, now), menu(*_child_items(pystray_, row, child, actions, looks)))
        )
    if row.more_children:
        entries.append(item(more_line(row.more_children), None, enabled=False))
    return entries


def _pause_or_resume(actions: MenuActions) -> UserAction:
    return Resume() if actions.paused else pause_hour(actions.now())


def _groups(overview: Overview) -> list[tuple[HostLine | None, list[Row]]]:
    """This machine's rows, then each host's under its line, each most urgent first. A
    host with no sessions is left out while it is fine, and shown when it is not."""
    local: list[Row] = []
    remote: dict[str, list[Row]] = {}
    for row in overview.rows:
        host = host_of(row)
        if host is None:
            local.append(row)
        else:
            remote.setdefault(host, []).append(row)
    groups: list[tuple[HostLine | None, list[Row]]] = []
    if local:
        groups.append((None, local))
    lines = {line.name: line for line in overview.hosts}
    for name in [*lines, *(name for name in remote if name not in lines)]:
        line = lines.get(name, HostLine(name))
        rows = remote.get(name, [])
        if rows or line.problem is not None:
            groups.append((line, rows))
    return groups


def build_menu(
    overview: Overview, actions: MenuActions, now: float, extras: MenuExtras = NO_EXTRAS
) -> pystray.Menu:
    """The whole tray menu for ``overview``; ages are measured against ``now``.

    A left click on the gtk backend runs the default item: it focuses the most urgent
    session when that one can be focused, and there is no default otherwise. The item
    is hidden because the same action is in that session's submenu.
    """
    import pystray  # noqa: PLC0415  (lazy: importing it needs a display)

    item = pystray.MenuItem
    entries: list[Any] = []
    first = overview.rows[0] if overview.rows else None
    looks = dict(extras.focus)
    if extras.away_line:
        entries += [item(extras.away_line, None, enabled=False), pystray.Menu.SEPARATOR]
    if first is not None and focus_look(first, looks).enabled:
        sid = first.session_id
        entries.append(
            item("Focus", _post(actions, lambda: Focus(sid)), default=True, visible=False)
        )
    if not overview.rows:
        entries.append(item(NO_SESSIONS, None, enabled=False))
    for number, (host, rows) in enumerate(_groups(overview)):
        if number or not overview.rows:
            entries.append(pystray.Menu.SEPARATOR)
        if host is not None:
            entries.append(item(host_line(host), None, enabled=False))
        for row in rows:
            entries += _session_entries(pystray, row, actions, now, looks)
    finished = any(
        not row.stale and (row.state in FINISHED or not row.alive) for row in overview.rows
    )
    entries += [
        pystray.Menu.SEPARATOR,
        item("Clear all finished", _post(actions, ClearFinished), enabled=finished),
        # Text and action read ``paused`` when shown and clicked, so the item stays
        # right even before the app rebuilds the menu.
        item(
            lambda _item: RESUME if actions.paused else PAUSE,
            _post(actions, lambda: _pause_or_resume(actions)),
        ),
        item("Quit", _run(actions.quit)),
    ]
    return pystray.Menu(*entries)
