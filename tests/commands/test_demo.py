"""``tray demo`` for real: it starts the tray app on an Xvfb with a tray host, runs its
scripted session under ``tray run``, and the notification reaches dunst on a private bus.

The app the demo starts outlives it by design, so every test stops it by its pid, and
also stops any process started with this test's state directory, whatever happens.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.desktop_services import BusMonitor, Dunst, base_env
from helpers.waiting import wait_for
from PIL import ImageGrab

from commands.test_doctor import run_on_pty, tray_env
from tray.state.store import StateStore

# Set to a file name to keep a screenshot of the demo's ping and icon (for the README).
SCREENSHOT_VARIABLE = "TRAY_DEMO_SCREENSHOT"
TIMEOUT = 60.0
STARTED = re.compile(r"Started the tray app in the background \(pid ([0-9]+)\)")


def _started_with(demo_dir: Path) -> list[int]:
    """Live processes whose environment names ``demo_dir``: ours, and only ours."""
    marker = f"TRAY_STATE_DIR={demo_dir}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path("/proc", entry, "environ").read_bytes().split(b"\0")
            state = Path("/proc", entry, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != "Z":
            found.append(int(entry))
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path("/proc", str(pid), "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # ended; its new parent has yet to reap it


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    wait_for(lambda: _gone(pid), TIMEOUT, what=f"process {pid} to end")


@pytest.fixture
def demo_dir(tmp_path: Path) -> Iterator[Path]:
    """The test's state directory; whatever still runs with it is stopped afterwards."""
    directory = tmp_path / "state"
    try:
        yield directory
    finally:
        for pid in _started_with(directory):
            _stop(pid)


def lock_held(directory: Path) -> bool:
    with open(directory / "app.lock", "rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def demo_argv(*options: str) -> list[str]:
    return [sys.executable, "-m", "tray", "demo", *options]


def run_demo(env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    """The demo to its end, with no terminal: the timeout answers its question."""
    return subprocess.run(
        demo_argv(*options),
        env=env,
        cwd=env["HOME"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.mark.usefixtures("trayer")
def test_demo_shows_blocked_once_and_ends_done(
    desktop_env: dict[str, str],
    dunst: Dunst,
    bus_monitor: BusMonitor,
    tmp_path: Path,
    demo_dir: Path,
) -> None:
    dunst.close_all()
    env = tray_env(desktop_env, tmp_path)
    started = time.monotonic()
    demo = subprocess.Popen(
        demo_argv("--step-seconds", "0.2", "--blocked-seconds", "5"),
        env=env,
        cwd=env["HOME"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        bus_monitor.wait_for_notify(1)
        # While the demo waits for approval: the ping and the amber icon, for the README.
        shot = os.environ.get(SCREENSHOT_VARIABLE)
        if shot:
            ImageGrab.grab(xdisplay=desktop_env["DISPLAY"]).crop((0, 0, 1024, 160)).save(shot)
        stdout, stderr = demo.communicate(timeout=TIMEOUT)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()
    result = subprocess.CompletedProcess(demo.args, demo.returncode, stdout, stderr)
    elapsed = time.monotonic() - started
    match = STARTED.search(result.stdout)
    assert match is not None, result.stdout + result.stderr
    app_pid = int(match.group(1))
    try:
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stderr == ""
        assert "No answer within 5 s; carrying on as if approved." in result.stdout
        assert elapsed >= 5  # the timeout, not the closed stdin, answered

        # The app it started runs on, holds the lock and showed its icon.
        assert app_pid in _started_with(demo_dir)
        cmdline = Path("/proc", str(app_pid), "cmdline").read_bytes().split(b"\0")
        assert cmdline[1:4] == [b"-m", b"tray", b"app"]
        assert lock_held(demo_dir)
        assert re.search(r"tray backend: \w+", (demo_dir / "app.log").read_text())

        calls = bus_monitor.wait_for_notify(1)
        assert [(c.summary, c.body) for c in calls] == [
            ("demo needs approval", "approve Bash: touch demo.txt")
        ]

        sessions, problems = StateStore(demo_dir).read_all(time.time())
        assert problems == []
        assert len(sessions) == 1
        session = sessions[0]
        assert (session.name, session.state, session.exit_code) == ("demo", "done", 0)
        assert [(r.state, r.msg) for r in session.records] == [("done", "Demo finished")]
        assert not (Path(env["HOME"]) / "demo.txt").exists()
    finally:
        _stop(app_pid)
    # A process's files close once its last thread is gone, a moment after it ends.
    wait_for(lambda: not lock_held(demo_dir), TIMEOUT, what="the app's lock to be free")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


@pytest.mark.usefixtures("trayer")
def test_demo_on_a_terminal_takes_enter_and_reuses_a_running_app(
    desktop_env: dict[str, str], tmp_path: Path, demo_dir: Path
) -> None:
    env = tray_env(desktop_env, tmp_path)
    demo_dir.mkdir(mode=0o700)
    with open(tmp_path / "app.out", "wb") as out:
        app = subprocess.Popen(
            [sys.executable, "-m", "tray", "app"],
            env=env,
            cwd=env["HOME"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        # Its icon is up once it names its backend; probing the lock any earlier could
        # make it think another app runs.
        wait_for(
            lambda: b"tray backend:" in _read(demo_dir / "app.log"),
            TIMEOUT,
            what="the app to show its icon",
        )
        assert lock_held(demo_dir)
        pressed = False

        def press_enter_when_asked(output: bytes) -> bytes:
            nonlocal pressed
            if not pressed and b"Press Enter" in output:
                pressed = True
                return b"\r"
            return b""

        result, _, _ = run_on_pty(
            demo_argv("--step-seconds", "0.2", "--blocked-seconds", "600"),
            env,
            press_enter_when_asked,
        )

        assert result.returncode == 0, result.output
        assert "The tray app is already running." in result.output
        assert "Started the tray app" not in result.output
        assert "Approved." in result.output
        assert _started_with(demo_dir) == [app.pid]
        sessions, _ = StateStore(demo_dir).read_all(time.time())
        assert [(s.name, s.state) for s in sessions] == [("demo", "done")]
    finally:
        app.terminate()
        app.wait(TIMEOUT)


def test_demo_without_a_display_says_why(tmp_path: Path, demo_dir: Path) -> None:
    env = tray_env(base_env(), tmp_path)
    result = run_demo(env, "--step-seconds", "0", "--blocked-seconds", "0")

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("tray demo: the tray app did not start: ")
    assert "no usable X display" in result.stderr
    assert "tray doctor" in result.stderr
    assert _started_with(demo_dir) == []
    assert StateStore(demo_dir).read_all(time.time()) == ([], [])


@pytest.mark.parametrize(
    ("option", "value"),
    [("--step-seconds", "-1"), ("--blocked-seconds", "nan"), ("--blocked-seconds", "soon")],
)
def test_demo_refuses_bad_durations(
    tmp_path: Path, demo_dir: Path, option: str, value: str
) -> None:
    env = tray_env(base_env(), tmp_path)
    result = run_demo(env, option, value)

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"tray demo: argument {option}: ")
    assert not demo_dir.exists()  # nothing started, nothing written
