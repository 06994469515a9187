"""The tray icon on a real X server, in a real tray, with each pystray backend.

pystray must own the main thread, so each test runs this very file as a small driver
program (``python -m tests.desktop.test_icon``): it shows a TrayIcon, takes commands
on stdin ("show STATE COUNT", "quit") and prints events on stdout ("ready BACKEND",
"shown STATE COUNT", "action NAME [SESSION]", "stopped"). The test reads the screen
with Pillow and clicks with xdotool.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import pytest
from helpers.desktop_driver import DriverProgram
from helpers.desktop_screen import (
    SNI_HOST,
    TRAYER,
    Box,
    click,
    colour_count,
    grab,
    icon_box,
    main_colour,
    menu_boxes,
    open_menu,
    tray_box,
    xdotool,
)
from helpers.desktop_services import base_env, start_trayer, start_xvfb, stop_process
from helpers.waiting import wait_for
from PIL import Image, ImageGrab
from Xlib import display as xdisplay

from tray.core.view.overview import IconState, Overview, Row
from tray.core.worker.user_actions import UserAction
from tray.desktop.tray_icon import TrayIcon
from tray.desktop.tray_menu import build_menu
from tray.protocol.state import State

ROOT = Path(__file__).resolve().parents[2]
# Set to a file name to keep the screenshot of the open menu (for the README).
SCREENSHOT_VARIABLE = "TRAY_MENU_SCREENSHOT"
TIMEOUT = 20.0
STATES: tuple[IconState, ...] = get_args(IconState)
# The order the brief walks through: quiet, busy, two need you, finished, failed.
WALK: tuple[tuple[IconState, int], ...] = (
    ("calm", 0),
    (State.WORKING, 0),
    (State.BLOCKED, 2),
    (State.DONE, 0),
    (State.ERROR, 0),
)
BADGE_RED = (200, 30, 45)


# --- the driver, run in its own process -------------------------------------------------


def sample_overview(state: IconState, count: int, now: float) -> Overview:
    """Two sessions whose first one is in ``state``; it can be focused, the other not."""
    row_state = State.IDLE if state == "calm" else state
    first = Row(
        session_id="s1",
        label="api · ~/src/api",
        state=row_state,
        kind="question" if state == State.BLOCKED else None,
        since=now - 300,
        msg="Allow edits to config.toml?" if state == State.BLOCKED else "Tests passed",
        alive=True,
        exit_code=None,
        unseen=state in ("done", "error"),
        focusable=True,
    )
    second = Row(
        session_id="s2",
        label="docs · ~/src/docs",
        state=State.BLOCKED if count >= 2 else State.WORKING,
        kind="permission" if count >= 2 else None,
        since=now - 42,
        msg="Run make publish?",
        alive=True,
        exit_code=None,
        unseen=False,
        focusable=False,
    )
    return Overview(
        icon_state=state, blocked_count=count, tooltip=f"test: {state}", rows=(first, second)
    )


def _emit(*words: str) -> None:
    print(*words, flush=True)


@dataclass
class PrintingActions:
    """Menu actions that report themselves on stdout ("action focus s1": the action's
    kind, then its values); quit also stops the icon."""

    host: TrayIcon | None = None
    paused: bool = False

    def now(self) -> float:
        return time.time()

    def post(self, action: UserAction) -> None:
        values = (getattr(action, name) for name in action.__slots__)
        _emit("action", type(action).__name__.lower(), *(str(v) for v in values if v is not None))

    def quit(self) -> None:
        _emit("action", "quit")
        if self.host is not None:
            self.host.stop()


def drive() -> None:
    # The host's own log goes to stderr, which the test keeps in a file.
    logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(threadName)s %(message)s")
    logging.getLogger("PIL").setLevel(logging.INFO)
    # A driver still running at teardown is stopped with SIGTERM: show where it hung.
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=True)
    actions = PrintingActions()
    host = TrayIcon("tray-test", on_ready=lambda: _emit("ready", host.backend_name()))
    actions.host = host

    def read_commands() -> None:
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["show"] and words[1] in STATES:
                state: IconState = next(s for s in STATES if s == words[1])
                count = int(words[2])
                now = time.time()
                overview = sample_overview(state, count, now)
                host.apply(overview, build_menu(overview, actions, now))
                _emit("shown", state, str(count))
            elif words == ["quit"]:
                break
        host.stop()  # also when stdin closes: the test is gone

    host.run(setup=lambda: threading.Thread(target=read_commands, daemon=True).start())
    _emit("stopped")


# --- the test side ----------------------------------------------------------------------


class Driver(DriverProgram):
    """The icon's driver program."""

    def __init__(self, backend: str, env: Mapping[str, str], log: Path) -> None:
        super().__init__("tests.desktop.test_icon", backend, env, log)

    def show(self, state: IconState, count: int) -> None:
        self.send(f"show {state} {count}")
        self.expect(f"shown {state} {count}")


@pytest.fixture
def start_driver(
    desktop_env: dict[str, str], tmp_path: Path, no_notifications: None
) -> Iterator[Any]:
    drivers: list[Driver] = []

    def start(backend: str, env: Mapping[str, str] | None = None) -> Driver:
        driver = Driver(backend, env or desktop_env, tmp_path / f"driver-{backend}.log")
        drivers.append(driver)
        return driver

    yield start
    for driver in drivers:
        driver.stop()


def walk_states(driver: Driver, display: str, tray: tuple[str, str]) -> None:
    """Each state shows in the tray in its own colour, and the previous one is gone."""
    previous: IconState | None = None
    for state, count in WALK:
        driver.show(state, count)
        colour = main_colour(state)

        def drawn(
            state: IconState = state,
            colour: tuple[int, int, int] = colour,
            previous: IconState | None = previous,
        ) -> bool:
            box = tray_box(display, tray)
            if box is None:
                return False
            shot = grab(display, box)
            if colour_count(shot, colour) < 20:
                return False
            if previous is not None and colour_count(shot, main_colour(previous)) >= 20:
                return False
            return state != State.BLOCKED or colour_count(shot, BADGE_RED, 40) >= 6

        wait_for(drawn, TIMEOUT, what=f"the {state} icon in the tray")
        previous = state


def save_screenshot(display: str, tray: Box, menus: list[Box], path: Path) -> None:
    boxes = [tray, *menus]
    left = max(0, min(box.left for box in boxes) - 12)
    top = max(0, min(box.top for box in boxes) - 12)
    right = max(box.right for box in boxes) + 12
    bottom = max(box.bottom for box in boxes) + 12
    shot = ImageGrab.grab(xdisplay=display).crop((left, top, right, bottom))
    path.parent.mkdir(parents=True, exist_ok=True)
    shot.save(path)


def use_menu(
    driver: Driver, display: str, tray: tuple[str, str], button: int, screenshot: Path | None
) -> None:
    """Open the menu, run the first session's Focus from its submenu, then Quit."""
    at = icon_box(display, tray).centre
    menus = open_menu(display, at, button)
    # Down: the first session; Right: its submenu, whose first enabled item is Focus
    # (the message above it is disabled).
    xdotool(display, "key", "Down")
    xdotool(display, "key", "Right")

    def submenu_open() -> list[Box]:
        boxes = menu_boxes(display)
        return boxes if len(boxes) >= 2 else []

    menus = wait_for(submenu_open, TIMEOUT, what="the session's submenu")
    if screenshot is not None:
        tray_window = tray_box(display, tray)
        assert tray_window is not None
        save_screenshot(display, tray_window, menus, screenshot)
        with Image.open(screenshot) as saved:
            # The icon and the menu with its submenu are all in the picture.
            assert saved.width >= sum(box.width for box in menus)
    xdotool(display, "key", "Return")
    driver.expect("action focus s1")
    wait_for(lambda: not menu_boxes(display), TIMEOUT, what="the menu to close")

    open_menu(display, at, button)
    # Up from nothing selected lands on the last item: Quit.
    xdotool(display, "key", "Up")
    xdotool(display, "key", "Return")
    driver.expect("action quit")
    driver.expect("stopped")
    # No notification server runs on this bus: stopping must still end cleanly.
    assert driver.proc.wait(TIMEOUT) == 0, driver.log.read_text()


def test_xorg_icon_follows_the_state(start_driver: Any, xvfb_display: str, trayer: Any) -> None:
    driver = start_driver("xorg")
    driver.expect("ready xorg")
    walk_states(driver, xvfb_display, TRAYER)

    # The xorg backend cannot draw transparency; the host flattens the image on the
    # tray's own colour (white here) instead of pystray's black.
    def on_white() -> bool:
        box = tray_box(xvfb_display, TRAYER)
        return box is not None and colour_count(grab(xvfb_display, box), (0, 0, 0)) == 0

    wait_for(on_white, TIMEOUT, what="the icon drawn on the tray's white")
    driver.send("quit")
    driver.expect("stopped")
    assert driver.proc.wait(TIMEOUT) == 0


def test_xorg_icon_docks_in_a_tray_that_comes_late(start_driver: Any, tmp_path: Path) -> None:
    """The dock request sent at start finds no tray; the host asks again later."""
    xvfb, display = start_xvfb(tmp_path / "late-xvfb.log")
    tray = None
    # Xvfb resets when its last client leaves, and pystray's import opens and closes
    # a probe connection: a connection held here keeps the driver's next one from
    # landing in that reset.
    keeper = xdisplay.Display(display)
    try:
        env = base_env(DISPLAY=display)
        driver = start_driver("xorg", env)
        driver.expect("ready xorg")
        driver.show("done", 0)
        tray = start_trayer(env, tmp_path / "late-trayer.log")
        green = main_colour(State.DONE)

        def shown() -> bool:
            box = tray_box(display, TRAYER)
            return box is not None and colour_count(grab(display, box), green) >= 20

        wait_for(shown, TIMEOUT, what="the icon to dock in the late tray")
        driver.send("quit")
        driver.expect("stopped")
    finally:
        if tray is not None:
            stop_process(tray)
        keeper.close()
        stop_process(xvfb)


def test_gtk_icon_states_default_click_and_menu(
    start_driver: Any, xvfb_display: str, trayer: Any, tmp_path: Path
) -> None:
    driver = start_driver("gtk")
    driver.expect("ready gtk")
    walk_states(driver, xvfb_display, TRAYER)
    # A left click runs the default item: focus the most urgent session.
    click(xvfb_display, icon_box(xvfb_display, TRAYER).centre, 1)
    driver.expect("action focus s1")
    driver.lines.remove("action focus s1")
    driver.show("blocked", 2)
    screenshot = Path(os.environ.get(SCREENSHOT_VARIABLE) or tmp_path / "menu.png")
    use_menu(driver, xvfb_display, TRAYER, button=3, screenshot=screenshot)


def test_appindicator_icon_states_and_menu(
    start_driver: Any, xvfb_display: str, sni_host: Any
) -> None:
    driver = start_driver("appindicator")
    driver.expect("ready appindicator")
    walk_states(driver, xvfb_display, SNI_HOST)
    use_menu(driver, xvfb_display, SNI_HOST, button=3, screenshot=None)


def test_gtk_icon_without_a_session_bus(
    start_driver: Any, desktop_env: dict[str, str], xvfb_display: str, trayer: Any
) -> None:
    """pystray's gtk backend wants a bus for its own notifications; the icon does not."""
    env = {**desktop_env, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/tray-test-bus"}
    driver = start_driver("gtk", env)
    driver.expect("ready gtk")
    driver.show("done", 0)
    green = main_colour(State.DONE)

    def shown() -> bool:
        box = tray_box(xvfb_display, TRAYER)
        return box is not None and colour_count(grab(xvfb_display, box), green) >= 20

    wait_for(shown, TIMEOUT, what="the done icon in the tray")
    driver.send("quit")
    driver.expect("stopped")
    assert driver.proc.wait(TIMEOUT) == 0


def run_python(code: str, env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c code args`` in the repository, which must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


PROBE = """
from tray.desktop.tray_icon import TrayIcon, NoDisplayError
try:
    TrayIcon("probe")
except NoDisplayError as error:
    print("NoDisplayError:", error)
"""


@pytest.mark.parametrize("backend", [None, "xorg", "gtk"])
@pytest.mark.parametrize("display", [None, ":4999", ":65000"])
def test_no_display_is_one_clear_error(backend: str | None, display: str | None) -> None:
    env = base_env()  # no DISPLAY
    env.pop("PYSTRAY_BACKEND", None)
    if backend is not None:
        env["PYSTRAY_BACKEND"] = backend
    if display is not None:
        env["DISPLAY"] = display  # names a display nobody serves
    done = run_python(PROBE, env)
    assert done.stdout.startswith("NoDisplayError: cannot show a tray icon"), done.stdout


LOAD = """
import os, sys
from tray.desktop.tray_icon import load_pystray
module = load_pystray(sys.argv[1] or None)
print(module.Icon.__module__, os.environ.get("PYSTRAY_BACKEND"))
"""


@pytest.mark.parametrize(
    ("asked", "users", "loaded"),
    [
        ("gtk", None, "pystray._gtk None"),
        # The user's PYSTRAY_BACKEND wins, and stays as it was.
        ("gtk", "xorg", "pystray._xorg xorg"),
        # A backend that cannot load leaves pystray's own choice.
        ("nonesuch", None, "pystray._appindicator None"),
        ("", None, "pystray._appindicator None"),
    ],
)
def test_the_backend_asked_for_is_loaded_and_leaves_no_trace(
    xvfb_display: str, asked: str, users: str | None, loaded: str
) -> None:
    env = base_env(DISPLAY=xvfb_display)
    env.pop("PYSTRAY_BACKEND", None)
    if users is not None:
        env["PYSTRAY_BACKEND"] = users
    assert run_python(LOAD, env, asked).stdout.strip() == loaded


if __name__ == "__main__":
    drive()
