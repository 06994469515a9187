"""Sessions to the tray menu: one submenu per session, then the app's own items."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from tray.app.overview import Overview, Row
from tray.text import clean_text, cut, format_age

if TYPE_CHECKING:
    import pystray

MESSAGE_WIDTH = 60
HEADER_WIDTH = 80
NO_SESSIONS = "No sessions"
PAUSE = "Pause notifications for an hour"
RESUME = "Resume notifications"


class MenuActions(Protocol):
    """What the menu can ask the app to do; every id is a session id."""

    @property
    def paused(self) -> bool: ...

    def mark_seen(self, session_id: str) -> None: ...

    def dismiss(self, session_id: str) -> None: ...

    def copy_message(self, session_id: str) -> None: ...

    def focus(self, session_id: str) -> None: ...

    def clear_finished(self) -> None: ...

    def pause_hour(self) -> None: ...

    def resume(self) -> None: ...

    def quit(self) -> None: ...


FINISHED = frozenset({"done", "error"})


def shorten(text: str, width: int) -> str:
    """One line of visible text, at most ``width`` characters."""
    return cut(clean_text(text), width)


def _state_text(row: Row) -> str:
    state = row.state or ("running" if row.alive else "ended")
    if row.kind:
        state += f" ({row.kind})"
    if not row.alive and row.state is not None:
        state += ", ended"
    return state


def row_header(row: Row, now: float) -> str:
    """ "<label> — <state>[ (<kind>)] <age>", the line naming a session's submenu."""
    return shorten(f"{row.label} — {_state_text(row)} {format_age(now - row.since)}", HEADER_WIDTH)


def _run(callback: Callable[[], None]) -> Callable[[Any, Any], None]:
    # pystray counts an action's parameters to decide what to pass; two is explicit.
    def action(_icon: Any, _item: Any) -> None:
        callback()

    return action


def _row_items(pystray_: Any, row: Row, actions: MenuActions) -> list[Any]:
    item, sid = pystray_.MenuItem, row.session_id
    items: list[Any] = []
    if row.msg:
        items += [item(shorten(row.msg, MESSAGE_WIDTH), None, enabled=False)]
        items += [pystray_.Menu.SEPARATOR]
    items += [
        item("Focus", _run(lambda: actions.focus(sid)), enabled=row.focusable),
        item("Copy message", _run(lambda: actions.copy_message(sid)), enabled=bool(row.msg)),
        item("Mark seen", _run(lambda: actions.mark_seen(sid)), enabled=row.unseen),
        item("Dismiss", _run(lambda: actions.dismiss(sid)), enabled=not row.alive),
    ]
    return items


def _toggle_pause(actions: MenuActions) -> None:
    if actions.paused:
        actions.resume()
    else:
        actions.pause_hour()


def build_menu(overview: Overview, actions: MenuActions, now: float) -> pystray.Menu:
    """The whole tray menu for ``overview``; ages are measured against ``now``.

    A left click on the gtk backend runs the default item: it focuses the most urgent
    session when that one can be focused, and there is no default otherwise. The item
    is hidden because the same action is in that session's submenu.
    """
    import pystray  # noqa: PLC0415  (lazy: importing it needs a display)

    item = pystray.MenuItem
    entries: list[Any] = []
    first = overview.rows[0] if overview.rows else None
    if first is not None and first.focusable:
        sid = first.session_id
        entries.append(item("Focus", _run(lambda: actions.focus(sid)), default=True, visible=False))
    for row in overview.rows:
        entries.append(item(row_header(row, now), pystray.Menu(*_row_items(pystray, row, actions))))
    if not overview.rows:
        entries.append(item(NO_SESSIONS, None, enabled=False))
    finished = any(row.state in FINISHED or not row.alive for row in overview.rows)
    entries += [
        pystray.Menu.SEPARATOR,
        item("Clear all finished", _run(actions.clear_finished), enabled=finished),
        # Text and action read ``paused`` when shown and clicked, so the item stays
        # right even before the app rebuilds the menu.
        item(
            lambda _item: RESUME if actions.paused else PAUSE,
            _run(lambda: _toggle_pause(actions)),
        ),
        item("Quit", _run(actions.quit)),
    ]
    return pystray.Menu(*entries)
