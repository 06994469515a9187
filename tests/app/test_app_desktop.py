"""`tray app` as a whole, on a real X server with a tray host and dunst on a private bus.

Sessions come from real `tray run` launchers where the test is about the path from a
program to the bus, and from session files written with the store where the test needs
twenty sessions at once or exact control over when each one changes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.desktop_apps import TIMEOUT, RunningApp, StartApp, start_app_process
from helpers.desktop_screen import (
    TRAYER,
    colour_count,
    grab,
    icon_box,
    main_colour,
    menu_boxes,
    open_menu,
    xdotool,
)
from helpers.desktop_services import (
    BusMonitor,
    Dunst,
    base_env,
    start_bus,
    start_trayer,
    start_xvfb,
    stop_process,
)
from helpers.sessions import blocked, live_session, working
from helpers.waiting import barrier, wait_for, wait_past

from tray.core.config.settings import PolicySettings
from tray.core.worker.refresh import MENU_TEXT_PERIOD
from tray.protocol.state import State
from tray.state.store import StateStore

BURST_WINDOW = 3
Procs = list[subprocess.Popen[bytes]]
STORM_ROUNDS = 30


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _tmux(socket: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-S", str(socket), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return done.stdout.strip()


def test_a_blocked_program_pings_once_escaped_and_a_click_focuses_its_pane(
    start_app: StartApp, bus_monitor: BusMonitor, dunst: Dunst, tmp_path: Path
) -> None:
    app = start_app()
    message = 'approve Bash: <b>git push</b> & "x" \u202e'
    child = tmp_path / "agent.py"
    child.write_text(
        "import sys\n"
        f"sys.stdout.write('\\x1b]7501;state=blocked:kind=permission:app=claude-code"
        f":msg={_b64(message)}\\x07')\n"
        "sys.stdout.flush()\n"
        "input()\n"
        "sys.stdout.write('\\x1b]7501;state=done:app=claude-code\\x07')\n"
    )
    socket = tmp_path / "tmux.sock"
    tmux_env = {**app.env, "TERM": "xterm"}
    _tmux(socket, tmux_env, "new-session", "-d", "-s", "work", "-x", "100", "-y", "30")
    try:
        _tmux(
            socket,
            tmux_env,
            "new-window",
            "-t",
            "work:1",
            "-c",
            str(tmp_path),
            f"{sys.executable} -m tray run --name agent -- {sys.executable} {child}",
        )
        _tmux(socket, tmux_env, "select-window", "-t", "work:0")

        calls = bus_monitor.wait_for_notify(1, TIMEOUT)
        assert calls[0].summary == "agent needs approval"
        assert calls[0].body == "approve Bash: &lt;b&gt;git push&lt;/b&gt; &amp; &quot;x&quot;"
        assert calls[0].urgency == 2

        assert _tmux(socket, tmux_env, "display", "-p", "#{window_index}") == "0"
        dunst.action(0)
        wait_for(
            lambda: _tmux(socket, tmux_env, "display", "-p", "#{window_index}") == "1",
            TIMEOUT,
            what="the click to select the agent's tmux window",
        )

        # A repeat of the first ping would come before the barrier's.
        assert barrier(app.state_dir, bus_monitor, 2, PolicySettings().settle) == [
            "agent needs approval",
            "marker needs approval",
        ]
        _tmux(socket, tmux_env, "send-keys", "-t", "work:1", "Enter")
    finally:
        subprocess.run(
            ["tmux", "-S", str(socket), "kill-server"], env=tmux_env, timeout=10, check=False
        )


def test_twenty_sessions_blocking_at_once_give_a_burst_and_one_summary(
    start_app: StartApp, bus_monitor: BusMonitor, tmp_path: Path
) -> None:
    # Written before the app starts, so its first read finds all twenty at once.
    store = StateStore(tmp_path / "state")
    store.ensure()
    now = time.time()
    for index in range(20):
        store.write(live_session(f"s{index:02}", blocked(f"step {index}", now), now))
    start_app(f"[notify]\nsettle = 0.2\nburst = 3\nburst_window = {BURST_WINDOW}\n")

    calls = bus_monitor.wait_for_notify(4, TIMEOUT)
    assert [call.summary for call in calls] == [
        "s00 needs approval",
        "s01 needs approval",
        "s02 needs approval",
        "17 sessions need you",
    ]
    assert calls[3].body == "s03, s04, s05, s06, s07 and 12 more"

    # After the burst window, a new session pings again, and nothing else came between.
    wait_for(
        lambda: time.time() >= now + BURST_WINDOW + 0.5,
        TIMEOUT,
        what="the burst window to pass",
    )
    store.write(live_session("marker", blocked("marker", time.time()), time.time()))
    calls = bus_monitor.wait_for_notify(5, TIMEOUT)
    assert len(calls) == 5
    assert calls[-1].summary == "marker needs approval"


def test_flapping_prompts_ping_once_within_the_dedup_window(
    start_app: StartApp, bus_monitor: BusMonitor
) -> None:
    app = start_app("[notify]\nsettle = 0.3\ndedup_window = 60\n")
    store = StateStore(app.state_dir)
    now = time.time()
    store.write(live_session("flappy", blocked("approve rm", now), now))
    bus_monitor.wait_for_notify(1, TIMEOUT)
    for _ in range(3):
        store.write(live_session("flappy", working(time.time()), now))
        store.write(live_session("flappy", blocked("approve rm", time.time()), now))
    # Answered faster than the settle window: never pings.
    store.write(live_session("quick", blocked("auto-approved", time.time()), now))
    store.write(live_session("quick", working(time.time()), now))

    store.write(live_session("marker", blocked("marker", time.time()), now))
    calls = bus_monitor.wait_for_notify(2, TIMEOUT)
    assert [call.summary for call in calls] == [
        "flappy needs approval",
        "marker needs approval",
    ]


def test_a_second_app_says_one_is_running_and_exits_0(
    start_app: StartApp, desktop_env: dict[str, str]
) -> None:
    app = start_app()
    second = subprocess.run(
        [sys.executable, "-m", "tray", "app"],
        env=app.env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert second.returncode == 0
    assert "already running" in second.stdout
    assert app.proc.poll() is None


def test_a_corrupt_session_file_is_warned_about_once_and_the_app_keepsworking(
    start_app: StartApp, bus_monitor: BusMonitor
) -> None:
    app = start_app("[notify]\nsettle = 0\n")
    broken = app.state_dir / "broken.json"
    broken.write_text('{"version": 1, "id": ')
    store = StateStore(app.state_dir)
    now = time.time()
    for step in range(3):
        store.write(live_session("other", working(now + step), now))
        broken.write_text('{"version": 1, "id": ' + " " * step)
    store.write(live_session("marker", blocked("marker", now), now))
    bus_monitor.wait_for_notify(1, TIMEOUT)
    assert app.log.count("broken.json") == 1, app.log
    assert app.proc.poll() is None


def test_a_killed_launcher_ends_its_session_and_the_app_says_it_failed(
    start_app: StartApp, bus_monitor: BusMonitor, tmp_path: Path
) -> None:
    app = start_app("[notify]\nsettle = 0\n")
    child = tmp_path / "agent.py"
    child.write_text(
        "import sys\n"
        "sys.stdout.write('\\x1b]7501;state=blocked:kind=question:app=pi\\x07')\n"
        "sys.stdout.flush()\n"
        "sys.stdin.read()\n"
    )
    launcher = subprocess.Popen(
        [sys.executable, "-m", "tray", "run", "--name", "doomed", "--", sys.executable, child],
        env=app.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        [blocked] = bus_monitor.wait_for_notify(1, TIMEOUT)
        assert blocked.summary == "doomed needs an answer"
        launcher.kill()  # SIGKILL: no chance to record the end
        launcher.wait(TIMEOUT)
        calls = bus_monitor.wait_for_notify(2, TIMEOUT)
        assert calls[1].summary == "doomed failed"
    finally:
        if launcher.poll() is None:
            launcher.kill()
        assert launcher.stdin is not None
        launcher.stdin.close()
        launcher.wait(TIMEOUT)


def test_hundreds_of_sessions_coming_and_going_leave_the_appworking(
    start_app: StartApp, bus_monitor: BusMonitor
) -> None:
    app = start_app("[notify]\nsettle = 0.5\n")
    store = StateStore(app.state_dir)
    for wave in range(3):
        now = time.time()
        for index in range(150):
            store.write(live_session(f"w{wave}-{index:03}", working(now), now))
        for index in range(150):
            store.remove(f"w{wave}-{index:03}")
    store.write(live_session("marker", blocked("marker", time.time()), time.time()))
    [call] = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert call.summary == "marker needs approval"
    assert app.proc.poll() is None
    assert "WARNING" not in app.log, app.log


def _app_state(app: RunningApp) -> dict[str, object]:
    try:
        document = json.loads((app.state_dir / "app.state").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    assert isinstance(document, dict)
    return document


def _snoozed(app: RunningApp) -> set[str]:
    snoozed = _app_state(app).get("snoozed")
    return set(snoozed) if isinstance(snoozed, dict) else set()


def test_the_menu_pauses_and_resumes_pings_and_copies_a_message(
    start_app: StartApp, bus_monitor: BusMonitor, xvfb_display: str
) -> None:
    app = start_app("[notify]\nsettle = 0\n", PYSTRAY_BACKEND="gtk")
    icon = icon_box(xvfb_display, TRAYER).centre

    # Up from nothing selected is the last item, Quit; once more is Pause.
    open_menu(xvfb_display, icon, 3)
    xdotool(xvfb_display, "key", "Up", "Up", "Return")
    wait_for(lambda: _app_state(app).get("paused_until"), TIMEOUT, what="the pause")

    store = StateStore(app.state_dir)
    now = time.time()
    store.write(live_session("quiet", blocked("approve while paused", now), now))
    amber = main_colour(State.BLOCKED)
    wait_for(
        lambda: colour_count(grab(xvfb_display, icon_box(xvfb_display, TRAYER)), amber) >= 20,
        TIMEOUT,
        what="the icon to show the blocked session",
    )
    wait_for(lambda: not menu_boxes(xvfb_display), TIMEOUT, what="the menu to close")

    # The session's submenu: its message is disabled and Focus is off (no terminal
    # recorded), so the first item the keys reach is Copy message.
    open_menu(xvfb_display, icon, 3)
    xdotool(xvfb_display, "key", "Down", "Right")
    wait_for(lambda: len(menu_boxes(xvfb_display)) >= 2, TIMEOUT, what="the submenu")
    xdotool(xvfb_display, "key", "Return")
    wait_for(
        lambda: _clipboard(app.env) == "approve while paused",
        TIMEOUT,
        what="the message on the clipboard",
    )
    wait_for(lambda: not menu_boxes(xvfb_display), TIMEOUT, what="the menu to close")

    # Up from Copy message wraps to the last item that can be chosen: Snooze (Dismiss
    # is off while the session runs).
    open_menu(xvfb_display, icon, 3)
    xdotool(xvfb_display, "key", "Down", "Right")
    wait_for(lambda: len(menu_boxes(xvfb_display)) >= 2, TIMEOUT, what="the submenu")
    xdotool(xvfb_display, "key", "Up", "Return")
    wait_for(lambda: "quiet" in _snoozed(app), TIMEOUT, what="the snooze")
    wait_for(lambda: not menu_boxes(xvfb_display), TIMEOUT, what="the menu to close")

    open_menu(xvfb_display, icon, 3)
    xdotool(xvfb_display, "key", "Up", "Up", "Return")  # now "Resume notifications"
    wait_for(
        lambda: "paused_until" in _app_state(app) and _app_state(app)["paused_until"] is None,
        TIMEOUT,
        what="the resume",
    )
    store.write(live_session("marker", blocked("marker", time.time()), time.time()))
    calls = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert [call.summary for call in calls] == ["marker needs approval"]


def _clipboard(env: dict[str, str]) -> str:
    result = subprocess.run(
        ["xclip", "-o", "-selection", "clipboard"],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    return result.stdout if result.returncode == 0 else ""


@contextlib.contextmanager
def own_desktop(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Procs]]:
    """An Xvfb and a bus of this test's own, with no tray: yields the display, the
    environment for it (without PYSTRAY_BACKEND) and a list whose processes, the Xvfb's
    and the bus's first, are all stopped at the end, last first."""
    xvfb, display = start_xvfb(tmp_path / "xvfb.log")
    procs: Procs = [xvfb]
    try:
        bus, address = start_bus(tmp_path / "bus")
        procs.append(bus)
        env = base_env(DISPLAY=display, DBUS_SESSION_BUS_ADDRESS=address)
        env.pop("PYSTRAY_BACKEND", None)
        yield display, env, procs
    finally:
        for proc in reversed(procs):
            stop_process(proc)


@pytest.mark.desktop  # own_desktop is no fixture, so the marker is said here
@pytest.mark.parametrize("backend", ["gtk", "appindicator"])
def test_without_a_tray_host_the_app_warns_once_and_docks_when_one_comes(
    backend: str, tmp_path: Path
) -> None:
    with own_desktop(tmp_path) as (display, env, procs):
        app = start_app_process({**env, "PYSTRAY_BACKEND": backend}, tmp_path, "")
        procs.append(app.proc)
        wait_for(lambda: "tray host: none" in app.log, TIMEOUT, what="the warning")
        # A tray that comes before the icon is up is the start-up case, not this one.
        wait_for(lambda: "icon shown" in app.log, TIMEOUT, what="the icon to be shown")
        procs.append(start_trayer(env, tmp_path / "trayer.log"))
        icon_box(display, TRAYER)  # waits until our icon is drawn in the tray
        assert app.log.count("tray host: none") == 1, app.log
        assert app.proc.poll() is None


@pytest.mark.desktop
def test_an_xembed_tray_alone_gets_the_gtk_backend_and_a_left_click_opens_the_menu(
    tmp_path: Path,
) -> None:
    """AppIndicator's own fallback to an XEmbed tray sometimes never docked; gtk does.

    On a desktop of its own: the session's StatusNotifierItem host, once a test has
    started it, would make appindicator the right choice."""
    with own_desktop(tmp_path) as (display, env, procs):
        procs.append(start_trayer(env, tmp_path / "trayer.log"))
        app = start_app_process(env, tmp_path, "")
        procs.append(app.proc)
        assert "tray backend: gtk" in app.log, app.log
        # No session to focus, so no default item: the left click opens the menu.
        open_menu(display, icon_box(display, TRAYER).centre, 1)
        assert app.proc.poll() is None


# `tray app` itself, with the icon host's debug lines on stderr: one line, with its time,
# for every hand-over of the icon, the tooltip or the menu to the tray backend.
APP_WITH_HANDOVER_LOG = """
import logging, sys
log = logging.getLogger("tray.desktop.tray_icon")
log.setLevel(logging.DEBUG)
handler = logging.StreamHandler(sys.stderr)
handler.setFormatter(logging.Formatter("%(created).6f %(message)s"))
log.addHandler(handler)
from tray.cli import main
from tray.state.environment import Environment
sys.exit(main(["app"], Environment()))
"""


def _handovers(log: Path, part: str, since: float, until: float = math.inf) -> int:
    count = 0
    for line in log.read_text(errors="replace").splitlines():
        stamp, _, message = line.partition(" ")
        if message.startswith("handed to the tray:") and part in message.split(":")[1]:
            count += since <= float(stamp) < until
    return count


def test_a_storm_of_changes_hands_the_tray_few_menus_and_no_images(
    desktop_env: dict[str, str],
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
    tmp_path: Path,
) -> None:
    dunst.close_all()
    handover_log = tmp_path / "handovers.log"
    app = start_app_process(
        desktop_env,
        tmp_path,
        "[notify]\nsettle = 0\n",
        argv=("-c", APP_WITH_HANDOVER_LOG),
        stderr=handover_log,
    )
    try:
        store = StateStore(app.state_dir)
        now = time.time()
        for index in range(20):
            store.write(live_session(f"s{index:02}", working(now, "step 0"), now))
        store.write(live_session("marker0", blocked("marker 0", now), now))
        bus_monitor.wait_for_notify(1, TIMEOUT)
        wait_for(lambda: _handovers(handover_log, "menu", 0), TIMEOUT, what="a first menu")

        # Twenty sessions rewritten ten times a second each, as busy launchers do, for
        # a few seconds: only the words in the menu change.
        started = time.time()
        for step in range(1, STORM_ROUNDS + 1):
            for index in range(20):
                store.write(live_session(f"s{index:02}", working(now, f"step {step}"), now))
            # The launchers' pace, which is what is tested here, not a wait for anything.
            wait_past(started + step / 10)
        ended = time.time()
        store.write(live_session("marker1", blocked("marker 1", now), now))
        bus_monitor.wait_for_notify(2, TIMEOUT)
        # A new session that needs you goes to the menu at once.
        wait_for(
            lambda: _handovers(handover_log, "menu", ended),
            TIMEOUT,
            what="the menu with the new session",
        )

        # One by one, that would be a menu and an image per refresh: dozens. Paced,
        # the words go once a period, and the image does not change at all.
        menus = _handovers(handover_log, "menu", started, ended)
        assert 1 <= menus <= math.ceil((ended - started) / MENU_TEXT_PERIOD) + 1, menus
        assert _handovers(handover_log, "icon", started, ended) == 0
    finally:
        stop_process(app.proc)
        # dunst draws every open notification in one window; two of them are as tall as
        # a menu, which later tests would take for one.
        dunst.close_all()
    assert "Traceback" not in handover_log.read_text(errors="replace")


def _png(path: Path) -> bool:
    """Whether the file is a PNG picture; one the backend swapped away meanwhile is not."""
    try:
        return path.read_bytes().startswith(b"\x89PNG")
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("backend", ["gtk", "appindicator"])
def test_the_icons_pictures_stay_private_and_go_with_the_app_even_on_sigterm(
    backend: str, start_app: StartApp, tmp_path: Path
) -> None:
    # pystray writes each picture with tempfile.mktemp(): TMPDIR names where that would
    # be, so the count is this test's alone.
    temp = tmp_path / "tmp"
    temp.mkdir()
    before = sorted(temp.iterdir())
    leftover = tmp_path / "state" / "icons"
    leftover.mkdir(parents=True)
    (leftover / "from-a-killed-run").write_bytes(b"")
    app = start_app(PYSTRAY_BACKEND=backend, TMPDIR=str(temp))
    folder = app.state_dir / "icons"
    pictures = wait_for(
        lambda: [p for p in folder.iterdir() if _png(p)],
        TIMEOUT,
        what="the icon's picture in the app's own folder",
    )
    assert folder.stat().st_mode & 0o777 == 0o700
    assert pictures
    assert not (folder / "from-a-killed-run").exists()
    assert sorted(temp.iterdir()) == before
    app.proc.send_signal(signal.SIGTERM)
    assert app.proc.wait(TIMEOUT) == 0, app.log
    assert not folder.exists()
    assert sorted(temp.iterdir()) == before
