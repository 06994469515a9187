"""The real `tray app` and tray's away watch on a real KDE Plasma 5.27 on Wayland
(helpers/plasma.py): the icon in Plasma's own system tray and its menu as Plasma reads
it; away when nobody touched the desk for ``after``, told by KWin's Wayland idle
protocol (``ext_idle_notifier_v1``), and away when the screen locks, told by KWin's
``org.freedesktop.ScreenSaver.ActiveChanged``.

What the tests read is Plasma's own: KWin's screenshot of the panel, the watcher that
kded5 runs, and the item's menu over com.canonical.dbusmenu, the way plasmashell reads
it (the item's ``Menu``, then ``GetLayout``); no click opens that menu here. Input
comes through KWin's fake-input protocol (helpers/plasma_input.py), as a real
pointer's would.

The lock test runs after every other test of the run (it asks for ``locking_plasma``):
unlocking takes a password. There a real ``tray app`` with ``[away]`` forwards a blocked
ping to a loopback JSON server while the screen is locked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.away_forwarding import blocked_ping_is_forwarded, forward_config
from helpers.desktop_apps import TIMEOUT, RunningApp, start_app_process
from helpers.desktop_screen import main_colour
from helpers.desktop_services import stop_process
from helpers.plasma import SCREENSAVER, Plasma
from helpers.plasma_input import FakePointer
from helpers.receiver import running_receiver
from helpers.sessions import blocked, live_session, working
from helpers.waiting import wait_for
from PIL import Image

from desktop.test_idle import Changes
from tray.core.view.overview import IconState
from tray.desktop.idle import PresenceMonitor, probe
from tray.protocol.state import State
from tray.state.store import StateStore

AFTER = 1.0  # seconds without input that count as away: short, for a quick test
SNI_ITEM = "org.kde.StatusNotifierItem"
DESCRIBED = (
    "the compositor's idle notice (Wayland ext_idle_notifier_v1)"
    " and the screen saver's lock (org.freedesktop.ScreenSaver)"
)
# Pixels of the state's colour that make an icon (a 22 px icon in a 44 px panel has
# hundreds; a stray anti-aliased edge, a few).
ICON_PIXELS = 40
QUIET = "[notify]\nenabled = false\n"
TOLERANCE = 60


@pytest.fixture
def plasma_app(plasma: Plasma) -> Iterator[list[RunningApp]]:
    """The apps a test starts on Plasma: stopped after it, their logs checked."""
    started: list[RunningApp] = []
    yield started
    for app in started:
        stop_process(app.proc)
    for app in started:
        assert "Traceback" not in app.log, app.log


def panel_box(plasma: Plasma) -> tuple[int, int, int, int]:
    """The panel's rectangle (left, top, right, bottom), as KWin has it."""
    [panel] = [window for window in plasma.windows() if window["dock"]]
    left, top = panel["x"], panel["y"]
    return left, top, left + panel["width"], top + panel["height"]


def state_pixels(image: Image.Image, state: IconState) -> list[tuple[int, int]]:
    """Where ``image`` has the main colour of ``state``'s icon."""
    red, green, blue = main_colour(state)
    width = image.width
    data = image.tobytes()
    return [
        (index // 3 % width, index // 3 // width)
        for index in range(0, len(data), 3)
        if abs(data[index] - red) + abs(data[index + 1] - green) + abs(data[index + 2] - blue)
        <= TOLERANCE
    ]


def icon_in_panel(plasma: Plasma, state: IconState) -> tuple[int, int, int, int] | None:
    """The box of ``state``'s colour in the panel's tray end, when there is an icon's
    worth of it."""
    left, top, right, bottom = panel_box(plasma)
    panel = plasma.screenshot().crop((left, top, right, bottom))
    found = state_pixels(panel, state)
    if len(found) < ICON_PIXELS:
        return None
    xs = [x for x, _ in found]
    ys = [y for _, y in found]
    return left + min(xs), top + min(ys), left + max(xs) + 1, top + max(ys) + 1


def wait_for_icon(
    plasma: Plasma, state: IconState, item: tuple[str, str]
) -> tuple[int, int, int, int]:
    """Wait for ``state``'s icon in the panel; on a timeout, say what the item said of
    itself and keep the screen (``shown-STATE.png`` in the Plasma's directory)."""
    try:
        return wait_for(
            lambda: icon_in_panel(plasma, state), TIMEOUT, 0.05, f"the {state} icon in the panel"
        )
    except AssertionError as error:
        shot = plasma.directory / f"shown-{state}.png"
        plasma.screenshot().save(shot)
        said = {
            name: plasma.get_property(*item, SNI_ITEM, name)
            for name in ("Status", "Category", "IconName")
        }
        raise AssertionError(f"{error}; the item says {said}; the screen: {shot}") from None


def our_item(plasma: Plasma) -> tuple[str, str] | None:
    """The bus name and object path of the one item kded5's watcher lists."""
    items = plasma.registered_items()
    if len(items) != 1:
        return None
    name, slash, path = items[0].partition("/")
    return name, (slash + path) if slash else "/StatusNotifierItem"


def menu_labels(plasma: Plasma, name: str, path: str) -> list[str]:
    """The labels of the item's menu, in order, as plasmashell reads them: the item's
    ``Menu`` property, then com.canonical.dbusmenu's GetLayout of the whole tree."""
    menu = plasma.get_property(name, path, SNI_ITEM, "Menu")
    assert menu.startswith("objectpath '"), menu
    layout = plasma.call(
        name, menu[len("objectpath '") : -1], "com.canonical.dbusmenu.GetLayout", "0", "-1", "[]"
    )
    return [
        re.sub(r"\\(.)", r"\1", label)
        for label in re.findall(r"'label': <'((?:[^'\\]|\\.)*)'>", layout)
    ]


def test_the_icon_is_in_plasmas_tray_in_its_states_colour_and_its_menu_lists_the_sessions(
    plasma: Plasma, plasma_app: list[RunningApp], tmp_path: Path
) -> None:
    assert plasma.registered_items() == []
    assert icon_in_panel(plasma, State.WORKING) is None  # nothing of the colour before
    now = time.time()
    store = StateStore(tmp_path / "state")
    store.ensure()
    store.write(
        replace(live_session("s-kde", working(now, "building the docs"), now), name="kde-docs")
    )
    # No notifications: a popup left open would lie over the next test's clicks.
    app = start_app_process(plasma.env, tmp_path, QUIET)
    plasma_app.append(app)
    assert "tray backend: appindicator" in app.log
    name, path = wait_for(lambda: our_item(plasma), TIMEOUT, 0.05, "the item at kded5's watcher")
    left, top, right, bottom = panel_box(plasma)
    box = wait_for_icon(plasma, State.WORKING, (name, path))
    # In the panel, at its tray end (the right half), and no bigger than the panel.
    assert left + (right - left) // 2 <= box[0] and box[2] <= right, (box, panel_box(plasma))
    assert top <= box[1] and box[3] <= bottom and box[3] - box[1] <= bottom - top
    labels = menu_labels(plasma, name, path)
    [header] = [label for label in labels if label.startswith("kde-docs")]
    assert "working" in header, labels
    assert any("building the docs" in label for label in labels), labels
    # A new state reaches the panel: the blocked colour, where the icon is.
    store.write(
        replace(live_session("s-kde", blocked("Bash: ls", time.time()), now), name="kde-docs")
    )
    shown = wait_for_icon(plasma, State.BLOCKED, (name, path))
    assert abs(shown[0] - box[0]) <= 4 and abs(shown[2] - box[2]) <= 4, (shown, box)

    def blocked_in_menu() -> list[str] | None:
        labels = menu_labels(plasma, name, path)
        headers = [label for label in labels if label.startswith("kde-docs")]
        return labels if headers and "blocked" in headers[0] else None

    labels = wait_for(blocked_in_menu, TIMEOUT, 0.05, "the menu to say the session is blocked")
    assert any("Bash: ls" in label for label in labels), labels


def nudge(plasma: Plasma, pointer: FakePointer, step: list[int]) -> None:
    """A real input event: the pointer moves to a point it is not at now."""
    step[0] += 1
    pointer.move(300.0 + 37 * (step[0] % 10), 200.0 + 23 * (step[0] % 10))


def test_no_input_for_after_is_away_through_ext_idle_notifier_and_the_pointer_brings_the_user_back(
    plasma: Plasma,
) -> None:
    # What `tray doctor` names here: on Plasma's Wayland GetSessionIdleTime is not
    # supported, so the idle time is KWin's Wayland protocol.
    assert probe(plasma.env) == DESCRIBED
    changes = Changes()
    step = [0]
    with FakePointer(plasma.env) as pointer:
        moved_before = time.time()
        nudge(plasma, pointer, step)
        monitor = PresenceMonitor(AFTER, changes, plasma.env)
        monitor.start()
        try:
            assert monitor.wait_ready()
            assert (monitor.idle_source, monitor.lock_source) == (
                "wayland-idle",
                "screensaver-lock",
            )
            assert monitor.describe() == DESCRIBED
            for absence in (1, 2):
                wait_for(
                    changes.away, 15.0, 0.05, f"away after {AFTER} s without input ({absence})"
                )
                state = changes.last()
                assert state is not None and state.since is not None
                # Away from when the compositor said so: `after` past the last input.
                assert moved_before + AFTER - 0.1 <= state.since <= time.time()
                moved_before = time.time()
                nudge(plasma, pointer, step)
                wait_for(lambda: not changes.away(), 10.0, 0.05, "present after a pointer move")
            assert [s.away for s in changes.states] == [True, False, True, False]
        finally:
            monitor.stop()


def test_locking_the_screen_is_away_through_active_changed_and_the_app_forwards(
    locking_plasma: Plasma, plasma_app: list[RunningApp], tmp_path: Path
) -> None:
    """Locked for real through org.freedesktop.ScreenSaver.Lock (KWin's locker), seen by
    tray's PresenceMonitor and by a real ``tray app`` with ``[away]``, which then forwards
    a blocked ping to the phone (a loopback JSON server). ``after`` is long, so only the
    lock can make the user away. It runs after every other test (``locking_plasma``):
    nothing unlocks."""
    plasma = locking_plasma
    changes = Changes()
    monitor = PresenceMonitor(300.0, changes, plasma.env)
    monitor.start()
    with running_receiver() as receiver:
        app = start_app_process(plasma.env, tmp_path, forward_config(receiver, "5m"))
        plasma_app.append(app)
        try:
            assert monitor.wait_ready()
            assert monitor.lock_source == "screensaver-lock"
            assert not monitor.state.away
            wait_for(lambda: f"away: tells by {DESCRIBED}" in app.log, TIMEOUT, what="sources")
            locked_at = time.time()
            plasma.lock()
            wait_for(changes.away, 15.0, 0.05, "away once the screen is locked")
            state = changes.last()
            assert state is not None and state.since is not None
            assert locked_at <= state.since <= time.time()
            assert plasma.call(SCREENSAVER, "/ScreenSaver", f"{SCREENSAVER}.GetActive") == "(true,)"
            assert [s.away for s in changes.states] == [True]
            wait_for(lambda: "away (since" in app.log, TIMEOUT, what="the app to see the lock")
            blocked_ping_is_forwarded(app.state_dir, receiver, "while locked")
        finally:
            monitor.stop()
