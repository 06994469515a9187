"""The GTK menu of the gtk and appindicator backends, changed in place when only its
words change (tray.desktop.gtk_menu), on a real X server with a real tray host.

Like test_icon.py, each test runs this file as a driver program (``python -m
tests.desktop.test_icon_menu``) that owns the main thread for pystray. Its commands on
stdin: "menu GEN SHAPE" shows a menu whose words and actions belong to generation GEN
("narrow": two sessions, "wide": three), "dump" prints the shown Gtk.Menu as JSON,
"pystray" prints the Gtk.Menu pystray itself builds for the same menu, "quit".
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from helpers.desktop_driver import DriverProgram
from helpers.desktop_screen import SNI_HOST, TRAYER, icon_box, menu_boxes, open_menu, xdotool
from helpers.desktop_services import SNI_WATCHER, stop_process
from helpers.waiting import wait_for

from desktop.test_icon import PrintingActions, _emit
from tray.core.view.overview import Overview, Row
from tray.core.worker.user_actions import Focus, UserAction
from tray.desktop.tray_icon import TrayIcon
from tray.desktop.tray_menu import build_menu
from tray.protocol.state import State

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0
BACKENDS = {"gtk": TRAYER, "appindicator": SNI_HOST}


# --- the driver, run in its own process -------------------------------------------------


def generation_overview(generation: int, shape: str, now: float) -> Overview:
    """Sessions whose words (progress, message) say ``generation``; "wide" adds one."""
    count = 3 if shape == "wide" else 2
    rows = tuple(
        Row(
            session_id=f"s{number}",
            label=f"job{number} · ~/src/job{number}",
            state=State.WORKING,
            kind=None,
            since=now - 30,
            msg=f"step {generation} of job{number}",
            alive=True,
            exit_code=None,
            unseen=False,
            focusable=True,
            progress=generation % 101,
        )
        for number in range(1, count + 1)
    )
    return Overview(icon_state=State.WORKING, blocked_count=0, tooltip="test", rows=rows)


class GenerationActions(PrintingActions):
    """Focus says which generation of the menu it came from."""

    generation = 0

    def post(self, action: UserAction) -> None:
        if isinstance(action, Focus):
            _emit("action", "focus", action.session_id, str(self.generation))
        else:
            super().post(action)


def describe(menu: Any, with_ids: bool) -> list[dict[str, Any]]:
    """Everything a Gtk.Menu shows, item by item; ``id`` is the widget's address."""
    from gi.repository import Gtk  # noqa: PLC0415  (the driver has a display)

    items: list[dict[str, Any]] = []
    for widget in menu.get_children():
        child = widget.get_child()
        submenu = widget.get_submenu()
        look: dict[str, Any] = {
            "kind": type(widget).__name__,
            "label": child.get_label() if isinstance(child, Gtk.Label) else None,
            "markup": child.get_use_markup() if isinstance(child, Gtk.Label) else None,
            "sensitive": widget.get_sensitive(),
            "visible": widget.get_visible(),
            "submenu": describe(submenu, with_ids) if submenu is not None else None,
        }
        if isinstance(widget, Gtk.CheckMenuItem):
            look["active"] = widget.get_active()
            look["radio"] = widget.get_draw_as_radio()
        if with_ids:
            found = re.findall(r"at (0x[0-9a-f]+)", repr(widget))
            look["id"] = found[-1]  # the GTK object's, not its Python wrapper's
        items.append(look)
    return items


def drive() -> None:
    from gi.repository import GLib  # noqa: PLC0415  (the driver has a display)
    from pystray._util.gtk import GtkIcon  # noqa: PLC0415

    host = TrayIcon("tray-menu-test", on_ready=lambda: _emit("ready", host.backend_name()))

    def on_loop(what: str, build: Any) -> None:
        def run() -> bool:
            _emit(what, json.dumps(build()))
            return False

        GLib.idle_add(run)

    def read_commands() -> None:
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["menu"]:
                now = time.time()
                overview = generation_overview(int(words[1]), words[2], now)
                actions = GenerationActions(host)
                actions.generation = int(words[1])
                host.apply(overview, build_menu(overview, actions, now))
                _emit("menu", words[1], words[2])
            elif words == ["dump"]:
                on_loop("dump", lambda: describe(host.icon._menu_handle, with_ids=True))
            elif words == ["pystray"]:
                # pystray's own build of the menu shown, to compare with ours.
                on_loop(
                    "pystray",
                    lambda: describe(GtkIcon._create_menu(host.icon, host.icon.menu), False),
                )
            elif words == ["quit"]:
                break
        host.stop()

    host.run(setup=lambda: threading.Thread(target=read_commands, daemon=True).start())
    _emit("stopped")


# --- the test side ----------------------------------------------------------------------


class MenuDriver(DriverProgram):
    """The menu's driver program."""

    def __init__(self, backend: str, env: Mapping[str, str], log: Path) -> None:
        super().__init__("tests.desktop.test_icon_menu", backend, env, log)

    def show(self, generation: int, shape: str) -> None:
        self.send(f"menu {generation} {shape}")
        self.expect(f"menu {generation} {shape}")

    def ask(self, what: str) -> list[dict[str, Any]]:
        """The answer to "dump" or "pystray", as printed after this request."""
        before = len(self.lines)
        self.send(what)

        def answered() -> str | None:
            for line in self.lines[before:]:
                if line.startswith(what + " "):
                    return line.removeprefix(what + " ")
            self.alive()
            return None

        answer: list[dict[str, Any]] = json.loads(wait_for(answered, TIMEOUT, what=what))
        return answer


@pytest.fixture
def start_driver(
    desktop_env: dict[str, str], tmp_path: Path, no_notifications: None
) -> Iterator[Any]:
    drivers: list[MenuDriver] = []

    def start(backend: str) -> MenuDriver:
        driver = MenuDriver(backend, desktop_env, tmp_path / f"menu-driver-{backend}.log")
        drivers.append(driver)
        driver.expect(f"ready {backend}")
        return driver

    yield start
    for driver in drivers:
        stop_process(driver.proc)


def ids(items: list[dict[str, Any]]) -> list[str]:
    """Every widget's address, submenus' too, in order."""
    found: list[str] = []
    for item in items:
        found.append(item["id"])
        found += ids(item["submenu"] or [])
    return found


def without_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **{key: value for key, value in item.items() if key != "id"},
            "submenu": without_ids(item["submenu"]) if item["submenu"] is not None else None,
        }
        for item in items
    ]


def labels(items: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for item in items:
        if item["label"] is not None:
            found.append(item["label"])
        found += labels(item["submenu"] or [])
    return found


def shown_menu(driver: MenuDriver, generation: int) -> list[dict[str, Any]]:
    """The menu once it shows ``generation``'s words; it is what pystray would build."""
    wanted = f"step {generation} of job1"

    def shows_it() -> list[dict[str, Any]] | None:
        menu = driver.ask("dump")
        return menu if wanted in labels(menu) else None

    shown = wait_for(shows_it, TIMEOUT, what=f"the menu of generation {generation}")
    assert without_ids(shown) == driver.ask("pystray")
    return shown


def exported_labels(env: Mapping[str, str]) -> str:
    """The menu the SNI host reads over D-Bus (com.canonical.dbusmenu), as gdbus prints
    it: every label is in it."""

    def call(*args: str) -> str:
        done = subprocess.run(
            ["gdbus", "call", "--session", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        assert done.returncode == 0, f"gdbus call {args}: {done.stderr}"
        return done.stdout

    registered = call(
        *["--dest", SNI_WATCHER, "--object-path", "/StatusNotifierWatcher"],
        *["--method", "org.freedesktop.DBus.Properties.Get"],
        *[SNI_WATCHER, "RegisteredStatusNotifierItems"],
    )
    layouts = []
    for entry in re.findall(r"'([^']+)'", registered):
        # An entry is a bus name, with the item's path after it or not: the menu is
        # found by its interface.
        name = entry.split("/", 1)[0]
        tree = subprocess.run(
            ["gdbus", "introspect", "--session", "--recurse", "--dest", name, "--object-path", "/"],
            env=env,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        node = ""
        for line in tree.splitlines():
            words = line.split()
            if words[:1] == ["node"]:
                node = words[1]
            elif words[:2] == ["interface", "com.canonical.dbusmenu"]:
                layouts.append(
                    call(
                        *["--dest", name, "--object-path", node],
                        *["--method", "com.canonical.dbusmenu.GetLayout", "--", "0", "-1", "[]"],
                    )
                )
    return "\n".join(layouts)


@pytest.fixture
def tray_host(request: pytest.FixtureRequest) -> Any:
    """The tray host the backend under test shows its icon in."""
    backend = request.node.callspec.params["backend"]
    return request.getfixturevalue("trayer" if backend == "gtk" else "sni_host")


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_new_words_change_the_shown_menu_in_place(
    backend: str, start_driver: Any, tray_host: Any, desktop_env: dict[str, str]
) -> None:
    driver = start_driver(backend)
    driver.show(1, "narrow")
    first = shown_menu(driver, 1)
    driver.show(2, "narrow")
    second = shown_menu(driver, 2)
    # The same widgets, every one of them, now with generation 2's words.
    assert ids(second) == ids(first)
    assert labels(second) != labels(first)
    assert "step 1 of job1" not in labels(second)
    if backend == "appindicator":
        # The tray host is told: the exported menu has the new words, not the old.
        wait_for(
            lambda: "step 2 of job1" in exported_labels(desktop_env),
            TIMEOUT,
            what="the new words in the exported menu",
        )
        assert "step 1 of job1" not in exported_labels(desktop_env)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_new_shape_builds_a_new_menu(backend: str, start_driver: Any, tray_host: Any) -> None:
    driver = start_driver(backend)
    driver.show(1, "narrow")
    narrow = shown_menu(driver, 1)
    driver.show(2, "wide")
    wide = shown_menu(driver, 2)
    assert not set(ids(wide)) & set(ids(narrow))
    assert "job3 · ~/src/job3" in " ".join(labels(wide))
    # And back: the narrow menu's words again, on new widgets.
    driver.show(3, "narrow")
    again = shown_menu(driver, 3)
    assert not set(ids(again)) & set(ids(wide))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_a_click_after_an_in_place_change_runs_the_new_action(
    backend: str, start_driver: Any, tray_host: Any, xvfb_display: str
) -> None:
    driver = start_driver(backend)
    driver.show(1, "narrow")
    first = shown_menu(driver, 1)
    driver.show(2, "narrow")
    assert ids(shown_menu(driver, 2)) == ids(first)
    at = icon_box(xvfb_display, BACKENDS[backend]).centre
    open_menu(xvfb_display, at, 3)
    # Down: the first session; Right: its submenu, whose first enabled item is Focus
    # (the message above it is disabled).
    xdotool(xvfb_display, "key", "Down")
    xdotool(xvfb_display, "key", "Right")
    wait_for(lambda: len(menu_boxes(xvfb_display)) >= 2, TIMEOUT, what="the submenu")
    xdotool(xvfb_display, "key", "Return")
    driver.expect("action focus s1 2")
    assert "action focus s1 1" not in driver.lines
    wait_for(lambda: not menu_boxes(xvfb_display), TIMEOUT, what="the menu to close")
    driver.send("quit")
    driver.expect("stopped")


if __name__ == "__main__":
    drive()
