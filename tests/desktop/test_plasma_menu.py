"""tray's menu on a real KDE Plasma 5.27, opened and used the way a user does: a real
`tray app` (appindicator backend) shows its icon in Plasma's own system tray, a click
on the icon (KWin's fake input, helpers/plasma_input.py) makes plasmashell open the
item's menu, and a click on one of its items reaches the app, which acts.

What the test reads is Plasma's own: KWin's scripting says which windows there are
(plasmashell's menu is a popup window of its own, transient for the panel), KWin's
screenshot says where the menu's rows are, the item's com.canonical.dbusmenu layout says
which row is which, and a monitor on the session bus sees plasmashell send the item's
``Event(id, "clicked")``.

Measured on this Plasma (Breeze, a fresh home, 1280x800): a left click on the icon opens
the menu within 0.4 s, right above the panel at the screen's right edge (e.g. x=1038,
y=611, 242x145 for five items and a separator); every item is 26 px high, a separator 7,
the menu's padding 4. The rows' text is read from the screenshot instead of trusting
those numbers. A pointer merely moved over an item showed no highlight in a screenshot
(a row that was clicked did), so the click is not held back for a hover; it landed in
every run here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from helpers.desktop_apps import TIMEOUT, RunningApp, start_app_process
from helpers.desktop_services import stop_process
from helpers.plasma import Plasma
from helpers.plasma_input import FakePointer
from helpers.plasma_keyboard import KEY_DOWN, KEY_ENTER, KEY_ESC, FakeKeyboard
from helpers.sessions import blocked, live_session, working
from helpers.waiting import wait_for
from PIL import Image

from desktop.test_plasma import QUIET, SNI_ITEM, our_item, panel_box, wait_for_icon
from tray.core.view.overview import Mutes
from tray.desktop.tray_menu import PAUSE, RESUME, SNOOZE, UNSNOOZE
from tray.protocol.state import State
from tray.state.marks_file import FILE_NAME, load_marks
from tray.state.store import StateStore

DBUSMENU = "com.canonical.dbusmenu"
# A menu's text is dark grey (77-98 enabled, lighter when disabled); its background
# 244-245, a separator's line 188 across nearly the whole width.
INK = 200
LINE = 225
SEPARATOR_SHARE = 0.8
# Rows of text closer than this belong to one item (a glyph's parts, a descender).
ROW_GAP = 3
# The menu's frame: the outermost pixels on each side are its border.
BORDER = 2


@dataclass(frozen=True)
class Entry:
    """One entry of the item's menu, as com.canonical.dbusmenu has it."""

    id: int
    label: str
    separator: bool
    visible: bool
    enabled: bool


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    width: int
    height: int


async def _layout(address: str, name: str, path: str, parent: int) -> list[Entry]:
    from dbus_fast import Message, MessageType  # noqa: PLC0415 - Linux only
    from dbus_fast.aio import MessageBus  # noqa: PLC0415

    bus = await MessageBus(bus_address=address).connect()
    try:
        reply = await asyncio.wait_for(
            bus.call(
                Message(
                    destination=name,
                    path=path,
                    interface=DBUSMENU,
                    member="GetLayout",
                    signature="iias",
                    body=[parent, 1, []],
                )
            ),
            TIMEOUT,
        )
    finally:
        bus.disconnect()
    assert reply is not None and reply.message_type is MessageType.METHOD_RETURN, reply
    _revision, (_root, _props, children) = reply.body
    entries = []
    for child in children:
        number, props, _grandchildren = child.value
        values: dict[str, Any] = {key: value.value for key, value in props.items()}
        entries.append(
            Entry(
                int(number),
                str(values.get("label", "")),
                values.get("type") == "separator",
                bool(values.get("visible", True)),
                bool(values.get("enabled", True)),
            )
        )
    return entries


def menu_path(plasma: Plasma, name: str, path: str) -> str:
    menu = plasma.get_property(name, path, SNI_ITEM, "Menu")
    assert menu.startswith("objectpath '"), menu
    return menu[len("objectpath '") : -1]


def shown_entries(plasma: Plasma, name: str, path: str, parent: int = 0) -> list[Entry]:
    """The shown entries under ``parent`` (0: the top level), in order, as plasmashell
    reads them."""
    address = plasma.env["DBUS_SESSION_BUS_ADDRESS"]
    entries = asyncio.run(_layout(address, name, menu_path(plasma, name, path), parent))
    return [entry for entry in entries if entry.visible]


def popups(plasma: Plasma) -> dict[str, list[Box]]:
    """plasmashell's popup menus: "menu", those that hang off its panel (the tray's
    menus); "submenu", those that hang off another popup."""
    found = plasma.kwin_script(
        "var out = {menu: [], submenu: []};"
        " workspace.clientList().forEach(function (w) {"
        "  if (!w.popupWindow || String(w.resourceClass) != 'plasmashell' || !w.transientFor)"
        "   return;"
        "  var box = [w.x, w.y, w.width, w.height];"
        "  if (w.transientFor.dock) out.menu.push(box);"
        "  else if (w.transientFor.popupWindow) out.submenu.push(box); });"
        " return out;"
    )
    assert isinstance(found, dict), found
    return {key: [Box(*(int(v) for v in box)) for box in boxes] for key, boxes in found.items()}


def menus(plasma: Plasma) -> list[Box]:
    """The tray's menus on the screen (plasmashell's popups on its panel)."""
    return popups(plasma)["menu"]


def _row_kind(image: Image.Image, box: Box, y: int) -> str:
    """ "ink" for a row crossing text, "line" for a separator's, "" for a bare one."""
    left, right = box.x + BORDER, box.x + box.width - BORDER
    data = image.crop((left, y, right, y + 1)).tobytes()  # RGB
    pixels = [min(data[index : index + 3]) for index in range(0, len(data), 3)]
    if sum(1 for value in pixels if value < LINE) >= SEPARATOR_SHARE * len(pixels):
        return "line"
    return "ink" if any(value < INK for value in pixels) else ""


def menu_rows(image: Image.Image, box: Box) -> list[tuple[str, int, int]]:
    """The menu's rows top to bottom, read from a screenshot: ("item", first y, last y)
    for each item's text, ("separator", y, y) for each line between groups."""
    rows: list[tuple[str, int, int]] = []
    for y in range(box.y + BORDER, box.y + box.height - BORDER):
        kind = _row_kind(image, box, y)
        if kind == "line":
            rows.append(("separator", y, y))
        elif kind == "ink":
            if rows and rows[-1][0] == "item" and y - rows[-1][2] <= ROW_GAP:
                rows[-1] = ("item", rows[-1][1], y)
            else:
                rows.append(("item", y, y))
    return rows


def settled_rows(plasma: Plasma, box: Box, entries: list[Entry]) -> list[tuple[str, int, int]]:
    """The menu's rows once they match the layout's entries, kind for kind, in two
    screenshots in a row (the menu may still be drawing)."""
    kinds = ["separator" if entry.separator else "item" for entry in entries]
    last: list[list[tuple[str, int, int]]] = []

    def steady() -> list[tuple[str, int, int]] | None:
        rows = menu_rows(plasma.screenshot(), box)
        same = bool(last) and last[-1] == rows
        last.append(rows)
        return rows if same and [kind for kind, _, _ in rows] == kinds else None

    try:
        return wait_for(steady, TIMEOUT, 0.1, "the menu's rows to match its layout")
    except AssertionError as error:
        raise AssertionError(f"{error}: layout {kinds}, last seen {last[-1:]}") from None


def clicked_ids(monitor_log: Path) -> list[tuple[str, int]]:
    """(sender, id) of each com.canonical.dbusmenu ``Event(id, "clicked", ...)``, as
    dbus-monitor printed them."""
    text = monitor_log.read_text(errors="replace")
    found = re.findall(r"sender=(\S+) .*member=Event\n\s+int32 (\d+)\n\s+string \"clicked\"", text)
    return [(sender, int(number)) for sender, number in found]


def pid_of(plasma: Plasma, unique_name: str) -> str:
    return plasma.call(
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus.GetConnectionUnixProcessID",
        unique_name,
    )


def start_monitor(plasma: Plasma, log: Path) -> subprocess.Popen[bytes]:
    """dbus-monitor on the desktop's session bus, printing dbusmenu Events into ``log``;
    returns once the bus has made it a monitor."""
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [
                "dbus-monitor",
                "--address",
                plasma.env["DBUS_SESSION_BUS_ADDRESS"],
                f"type='method_call',interface='{DBUSMENU}',member='Event'",
            ],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        # A monitor gives up its name: the bus says NameLost once it is one.
        wait_for(lambda: "member=NameLost" in log.read_text(), TIMEOUT, 0.05, "dbus-monitor")
    except BaseException:
        stop_process(proc)
        raise
    return proc


def open_popups(plasma: Plasma) -> int:
    return sum(len(boxes) for boxes in popups(plasma).values())


def close_menus(plasma: Plasma, keyboard: FakeKeyboard) -> None:
    """Close the menus left open, as a user would: Escape, one level at a time."""
    for _level in range(3):
        before = open_popups(plasma)
        if not before:
            return
        keyboard.tap(KEY_ESC)

        def fewer(count: int = before) -> bool:
            return open_popups(plasma) < count

        wait_for(fewer, TIMEOUT, 0.1, "Escape to close a menu")
    raise AssertionError(f"menus left open: {popups(plasma)}")


def memory_of(app: RunningApp) -> Mutes:
    """The pause and the snoozes the app keeps in its own file beside the sessions."""
    return load_marks(app.state_dir / FILE_NAME, logging.getLogger("test")).mutes


@dataclass
class MenuRun:
    """A real `tray app` with two live sessions on the Plasma, its item at the watcher,
    its icon in the panel, and a monitor of dbusmenu Events on the session bus."""

    app: RunningApp
    item: tuple[str, str]
    icon: tuple[int, int, int, int]
    monitor_log: Path
    pointer: FakePointer
    keyboard: FakeKeyboard


@contextlib.contextmanager
def menu_run(plasma: Plasma, tmp_path: Path) -> Iterator[MenuRun]:
    now = time.time()
    store = StateStore(tmp_path / "state")
    store.ensure()
    # States two hours old: their ages read "2h" all through the test, so the app does
    # not rebuild the menu (new ids) while a test reads and clicks it.
    since = now - 7200
    store.write(replace(live_session("s-docs", working(since, "the docs"), now), name="kde-docs"))
    store.write(replace(live_session("s-ls", blocked("Bash: ls", since), now), name="kde-tests"))
    # No notifications: a popup left open would lie over the next test's clicks.
    app = start_app_process(plasma.env, tmp_path, QUIET)
    try:
        assert "tray backend: appindicator" in app.log
        item = wait_for(lambda: our_item(plasma), TIMEOUT, 0.05, "the item at kded5's watcher")
        icon = wait_for_icon(plasma, State.BLOCKED, item)
        monitor_log = tmp_path / "dbus-monitor.log"
        monitor = start_monitor(plasma, monitor_log)
        try:
            with FakeKeyboard(plasma.env) as keyboard, FakePointer(plasma.env) as pointer:
                try:
                    yield MenuRun(app, item, icon, monitor_log, pointer, keyboard)
                finally:
                    close_menus(plasma, keyboard)
                    pointer.rest()
        finally:
            stop_process(monitor)
    finally:
        stop_process(app.proc)
    assert "Traceback" not in app.log, app.log
    # Gone from the watcher too, before the next test counts the items there.
    wait_for(
        lambda: not any(entry.partition("/")[0] == item[0] for entry in plasma.registered_items()),
        TIMEOUT,
        0.05,
        "the item to leave kded5's watcher",
    )


def open_menu(plasma: Plasma, run: MenuRun) -> Box:
    """Click the icon, as a user would; the menu that opens, right above the panel."""
    left, top, right, bottom = run.icon
    run.pointer.rest()
    run.pointer.move((left + right) / 2, (top + bottom) / 2)
    # On the icon, before the click: no menu (a hover opens nothing).
    assert popups(plasma) == {"menu": [], "submenu": []}
    run.pointer.press()
    [menu] = wait_for(lambda: menus(plasma), TIMEOUT, 0.05, "the icon's menu")
    panel_top = panel_box(plasma)[1]
    assert menu.y + menu.height <= panel_top, (menu, panel_top)
    assert menu.x <= right and left <= menu.x + menu.width, (menu, run.icon)
    return menu


def click_entry(plasma: Plasma, run: MenuRun, box: Box, entries: list[Entry], entry: Entry) -> None:
    """Click ``entry``'s row of the menu in ``box``: its text's middle, found on the
    screen, the row picked by the entry's place in the layout."""
    rows = settled_rows(plasma, box, entries)
    _, first, last = rows[entries.index(entry)]
    run.pointer.move(box.x + box.width / 2, (first + last) / 2)
    run.pointer.press()


def clicked_by_plasmashell(plasma: Plasma, run: MenuRun) -> int:
    """The id of the one item plasmashell has told the app was clicked."""
    [(sender, number)] = wait_for(
        lambda: clicked_ids(run.monitor_log), TIMEOUT, 0.05, "a dbusmenu Event 'clicked'"
    )
    assert pid_of(plasma, sender) == f"(uint32 {plasma.processes['plasmashell'].pid},)"
    return number


def session_actions(plasma: Plasma, run: MenuRun, name: str) -> list[str]:
    """The labels in the submenu of the session called ``name``, found anew (by label:
    a rebuilt menu may number its items anew)."""
    [session] = [e for e in shown_entries(plasma, *run.item) if e.label.startswith(name)]
    return [entry.label for entry in shown_entries(plasma, *run.item, parent=session.id)]


def test_a_click_on_the_icon_opens_its_menu_and_a_click_on_pause_pauses_the_app(
    plasma: Plasma, tmp_path: Path
) -> None:
    with menu_run(plasma, tmp_path) as run:
        entries = shown_entries(plasma, *run.item)
        [pause] = [entry for entry in entries if entry.label == PAUSE]
        assert memory_of(run.app).paused_until is None
        # Opened, then closed with Escape: nothing reaches the app.
        open_menu(plasma, run)
        close_menus(plasma, run.keyboard)
        clicked_at = time.time()
        menu = open_menu(plasma, run)
        click_entry(plasma, run, menu, entries, pause)
        until = wait_for(lambda: memory_of(run.app).paused_until, TIMEOUT, 0.05, "a pause")
        assert until >= clicked_at + 3500, until  # an hour from the click
        # The menu closes on the click, and the app renames the item.
        wait_for(lambda: not menus(plasma), TIMEOUT, 0.1, "the menu to close")
        # (by label: the app rebuilds the menu, and the rebuilt one may number anew)
        wait_for(
            lambda: RESUME in [e.label for e in shown_entries(plasma, *run.item)],
            TIMEOUT,
            0.1,
            f"the menu to offer {RESUME!r}",
        )
        assert PAUSE not in [e.label for e in shown_entries(plasma, *run.item)]
        assert clicked_by_plasmashell(plasma, run) == pause.id


def test_a_click_on_a_sessions_row_opens_its_submenu_and_snooze_snoozes_the_session(
    plasma: Plasma, tmp_path: Path
) -> None:
    """The session's submenu opens on the click, but where no pointer reaches: Qt places
    it to the right of the menu, which already touches the screen's right edge, and
    KWin leaves it there (measured: x=1276 on a 1280 px screen, 507 px wide). So the
    user's hand goes to the keyboard: Down moves through the submenu's enabled items,
    Enter takes the one chosen."""
    with menu_run(plasma, tmp_path) as run:
        entries = shown_entries(plasma, *run.item)
        # The blocked session first: the most urgent.
        [session] = [entry for entry in entries if entry.label.startswith("kde-tests")]
        assert entries.index(session) == 0, entries
        actions = shown_entries(plasma, *run.item, parent=session.id)
        [snooze] = [entry for entry in actions if entry.label == SNOOZE]
        reachable = [entry for entry in actions if entry.enabled and not entry.separator]
        assert snooze in reachable, actions
        assert memory_of(run.app).snoozed == {}
        clicked_at = time.time()
        menu = open_menu(plasma, run)
        click_entry(plasma, run, menu, entries, session)
        # The click opens the submenu and tells the app nothing.
        wait_for(lambda: popups(plasma)["submenu"], TIMEOUT, 0.05, "the session's submenu")
        assert memory_of(run.app).snoozed == {}
        # The submenu the click opened has the keyboard and no item chosen yet: each
        # Down moves to the next enabled item, the first Down to the first.
        run.keyboard.tap(*[KEY_DOWN] * (reachable.index(snooze) + 1), KEY_ENTER)
        snoozed = wait_for(lambda: memory_of(run.app).snoozed, TIMEOUT, 0.05, "a snooze")
        assert list(snoozed) == ["s-ls"] and snoozed["s-ls"] >= clicked_at + 3500, snoozed
        wait_for(lambda: not open_popups(plasma), TIMEOUT, 0.1, "the menus to close")
        wait_for(
            lambda: UNSNOOZE in session_actions(plasma, run, "kde-tests"),
            TIMEOUT,
            0.1,
            f"the session's submenu to offer {UNSNOOZE!r}",
        )
        assert clicked_by_plasmashell(plasma, run) == snooze.id
