"""tray's own icon on every notification, in the colour of the state it reports.

Against a real dunst on the private bus: the icon the Notify call names (dbus-monitor),
the file dunst kept for it (``dunstctl history``), and the pixels dunst drew. Then a real
``tray app``: the state travels from the policy's ping to the notification. Last, the
icon file of an install that is a zip: copied out for the notifier's life, then removed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Final

import pytest
from helpers.desktop_apps import REPO, TIMEOUT, StartApp
from helpers.desktop_screen import Box, colour_count, grab, main_colour, tray_box
from helpers.desktop_services import BusMonitor, Dunst
from helpers.sessions import live_session
from helpers.waiting import wait_for

from outlets.test_notifier import Recorder, make_notifier, on_dunst, recorder
from tray.core.view.overview import IconState
from tray.desktop.icon_images import artwork_folder
from tray.outlets.notification_icons import ICON_SIZE, NotificationIcons, icon_name
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.store import StateStore

__all__ = ["on_dunst", "recorder"]  # fixtures, used by name

DUNST_WINDOW: Final = ("Dunst", "Dunst")
# dunst draws the icon at 32 px (its default max_icon_size): the amber triangle covered
# 548 pixels, the red square about as many; dunst's own frame and text match neither.
DRAWN_PIXELS: Final = 100
SETTLE: Final = 0.5


def installed_icon(state: IconState) -> Path:
    """The artwork file the notification should name: the checkout's (or installed) PNG."""
    entry = artwork_folder().joinpath(icon_name(state))
    assert isinstance(entry, Path)
    return entry.resolve()


def dunst_box(display: str) -> Box | None:
    return tray_box(display, DUNST_WINDOW)


def drawn(display: str, state: IconState) -> int:
    """Pixels of ``state``'s colour in dunst's window (0 while there is none)."""
    box = dunst_box(display)
    return 0 if box is None else colour_count(grab(display, box), main_colour(state))


@pytest.mark.parametrize(
    ("state", "other", "urgency"),
    [("blocked", "error", "critical"), ("error", "blocked", "normal")],
)
def test_the_notification_carries_and_shows_the_icon_of_its_state(  # noqa: PLR0917 - fixtures
    state: IconState,
    other: IconState,
    urgency: str,
    on_dunst: Dunst,
    bus_monitor: BusMonitor,
    recorder: Recorder,
    xvfb_display: str,
) -> None:
    notifier = make_notifier(recorder, [])
    try:
        notifier.send("api-server", "the message", urgency, "s-api", icon=state)
        [call] = bus_monitor.wait_for_notify(1)
        wait_for(lambda: on_dunst.count() == 1, what="dunst to show it")
        wait_for(
            lambda: drawn(xvfb_display, state) >= DRAWN_PIXELS,
            TIMEOUT,
            what=f"dunst to draw the {state} icon",
        )
        # The other state's colour only where anti-aliasing blends the icon's edge into
        # the background (blocked's is critical, dark red): measured 37 against 548.
        assert drawn(xvfb_display, other) * 5 < drawn(xvfb_display, state)
        on_dunst.close_all()
        [kept] = on_dunst.history()[:1]
    finally:
        notifier.close()
    expected = installed_icon(state)
    assert call.icon == expected.as_uri()
    assert kept["summary"] == "api-server"
    assert kept["icon_path"] == str(expected)
    assert recorder.records == [] or all(r.levelno < 30 for r in recorder.records)


def test_without_a_state_it_is_the_calm_icon_never_none(
    on_dunst: Dunst, bus_monitor: BusMonitor, recorder: Recorder
) -> None:
    notifier = make_notifier(recorder, [])
    try:
        notifier.send("build finished", "Done", "normal", "s-build")
        [call] = bus_monitor.wait_for_notify(1)
    finally:
        notifier.close()
    assert call.icon == installed_icon("calm").as_uri()


def _prompt(now: float) -> tuple[Record, ...]:
    return (Record("", State.BLOCKED, "permission", None, "agent", None, "approve Bash: ls", now),)


def _failed(now: float) -> tuple[Record, ...]:
    return (Record("", State.ERROR, None, None, "agent", None, "tests failed", now),)


def test_the_app_gives_a_prompt_the_blocked_icon_and_a_failure_the_error_icon(
    start_app: StartApp, bus_monitor: BusMonitor
) -> None:
    app = start_app(f"[notify]\nsettle = {SETTLE}\n")
    store = StateStore(app.state_dir)
    store.write(live_session("4711-api", _prompt(time.time()), time.time()))
    [prompt] = bus_monitor.wait_for_notify(1, TIMEOUT)
    # One after the other: two at once could be folded into one summary.
    store.write(live_session("4712-build", _failed(time.time()), time.time()))
    failure = bus_monitor.wait_for_notify(2, TIMEOUT)[1]
    assert prompt.summary == "4711-api needs approval"
    assert prompt.icon == installed_icon(State.BLOCKED).as_uri()
    assert failure.summary == "4712-build failed"
    assert failure.icon == installed_icon(State.ERROR).as_uri()


# Run with tray imported from the zip: the artwork is found there, its copy is a real file
# outside the zip, and close() removes it.
_FROM_ZIP: Final = """
import json, logging, sys
sys.path.insert(0, sys.argv[1])
import tray
from tray.outlets.notification_icons import NotificationIcons
icons = NotificationIcons(logging.getLogger("zip"))
path = icons.path("blocked")
again = icons.path("blocked")
data = path.read_bytes()
icons.close()
print(json.dumps([tray.__file__, str(path), path == again, data.hex(), path.exists()]))
"""


def test_from_a_zip_the_icon_is_copied_out_and_removed_at_close(tmp_path: Path) -> None:
    # tray installed as a zip, laid out as the wheel lays it out: the package's modules,
    # and icons/ as tray/artwork/ (pyproject's package-dir).
    archive = tmp_path / "tray.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for module in sorted((REPO / "tray").rglob("*")):
            if module.is_file() and "__pycache__" not in module.parts:
                out.write(module, str(module.relative_to(REPO)))
        for image in sorted((REPO / "icons").glob("*.png")):
            out.write(image, f"tray/artwork/{image.name}")
    done = subprocess.run(
        [sys.executable, "-c", _FROM_ZIP, str(archive)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    module, copied, same, data, left = json.loads(done.stdout)
    assert Path(module).is_relative_to(archive), module  # not the checkout's tray
    path = Path(copied)
    assert path.is_absolute() and not path.is_relative_to(archive), path
    assert same  # copied once
    assert bytes.fromhex(data) == (REPO / "icons" / f"blocked-{ICON_SIZE}.png").read_bytes()
    assert not left and not path.exists()
    assert "go without" not in done.stderr


def test_a_missing_icon_is_one_warning_and_the_notification_goes_without(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A folder with the probe file only, as a broken install would have.
    (tmp_path / "calm-16.png").write_bytes(b"")
    monkeypatch.setattr("tray.outlets.notification_icons.artwork_folder", lambda: tmp_path)
    icons = NotificationIcons(recorder.log)
    assert icons.path(State.BLOCKED) is None
    assert icons.path(State.BLOCKED) is None
    assert recorder.at(30) == [
        f"notifications go without tray's blocked icon: {icon_name(State.BLOCKED)} is missing "
        "from tray's artwork"
    ]
