"""``tray demo``'s prompt answered from its notification: Approve and Deny on dunst.

The real demo starts the real app; dunst on a bus of its own has a stub dmenu as its
context menu, which presses the button by its label. tray's answer goes through the same
gate as a real agent's: the app asks the demo's launcher, which types the keys of the
demo's rules file ("y", "n"), and the pretend agent moves on. Nothing is typed by the
test. On a terminal (as a user runs it) and with no terminal at all.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
from helpers.desktop_services import BusMonitor, MenuDunst, start_menu_dunst
from helpers.waiting import wait_for

from commands.test_demo import TIMEOUT, _started_with, demo_argv, demo_dir
from commands.test_doctor import run_on_pty, tray_env
from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL
from tray.outlets.notification_icons import icon_name
from tray.protocol.state import State
from tray.state.store import StateStore

__all__ = ["demo_dir"]  # a fixture, used by name

ASKED = b"Press Enter"
# Long: only tray's answer (or Enter, never typed here) can end the wait in time.
BLOCKED_SECONDS = "600"


class Presser:
    """Once the demo asks, waits for its notification on the bus and presses the button
    (dunstctl context); on a thread of its own, so the demo's output keeps flowing."""

    def __init__(self, menu_dunst: MenuDunst, monitor: BusMonitor) -> None:
        self._menu_dunst = menu_dunst
        self._monitor = monitor
        self._thread: threading.Thread | None = None
        self.problems: list[BaseException] = []

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._press, daemon=True)
            self._thread.start()

    def _press(self) -> None:
        try:
            self._monitor.wait_for_notify(1, TIMEOUT)
            dunst = self._menu_dunst.dunst
            wait_for(lambda: dunst.count() == 1, TIMEOUT, what="dunst to show the prompt")
            dunst.ctl("context")  # the stub dmenu presses the button by its label
        except BaseException as problem:  # handed to the test's thread: see join
            self.problems.append(problem)

    def join(self) -> None:
        assert self._thread is not None, "the demo never asked"
        self._thread.join(TIMEOUT)
        assert self.problems == []


def desk(
    xvfb_display: str, desktop_env: dict[str, str], tmp_path: Path, pick: str
) -> tuple[MenuDunst, BusMonitor, dict[str, str]]:
    # A short directory: the bus socket's path has little room.
    menu_dunst = start_menu_dunst(xvfb_display, tmp_path / "md", pick)
    env = tray_env({**desktop_env, **menu_dunst.bus_env}, tmp_path)
    try:
        return menu_dunst, BusMonitor(env, tmp_path / "monitor.log"), env
    except BaseException:
        menu_dunst.stop()
        raise


def check_the_prompts_notification(monitor: BusMonitor, menu_dunst: MenuDunst) -> None:
    [call] = monitor.notify_calls()[:1]
    assert (call.summary, call.body) == ("demo needs approval", "approve Bash: touch demo.txt")
    assert call.actions[2:6] == ["approve", APPROVE_LABEL, "deny", DENY_LABEL]
    assert call.icon.endswith("/" + icon_name(State.BLOCKED))
    offered = menu_dunst.offered_text()
    assert APPROVE_LABEL in offered and DENY_LABEL in offered


def answered_by_the_app(demo_dir: Path, answer: str) -> bool:
    """The app's log says the launcher typed the answer's keys (and nothing broke)."""
    log = (demo_dir / "app.log").read_text()
    assert "Traceback" not in log, log
    return f": {answer} typed" in log


def records(demo_dir: Path) -> list[tuple[str, str | None]]:
    sessions, _ = StateStore(demo_dir).read_all(time.time())
    assert [(s.name, s.state) for s in sessions] == [("demo", "done")]
    return [(r.state, r.msg) for r in sessions[0].records]


@pytest.mark.usefixtures("trayer")
def test_approve_on_the_notification_moves_the_demo_on(
    xvfb_display: str, desktop_env: dict[str, str], tmp_path: Path, demo_dir: Path
) -> None:
    menu_dunst, monitor, env = desk(xvfb_display, desktop_env, tmp_path, APPROVE_LABEL)
    presser = Presser(menu_dunst, monitor)

    def press_when_asked(output: bytes) -> bytes:
        if ASKED in output:
            presser.start()
        return b""  # the test types nothing: the answer comes from the notification

    try:
        result, _, _ = run_on_pty(
            demo_argv("--step-seconds", "0.2", "--blocked-seconds", BLOCKED_SECONDS),
            env,
            press_when_asked,
        )
        presser.join()
        check_the_prompts_notification(monitor, menu_dunst)
    finally:
        monitor.stop()
        menu_dunst.stop()
    assert result.returncode == 0, result.output
    assert "  Approved." in result.output
    assert "* Working: writing demo.txt" in result.output
    assert records(demo_dir) == [("done", "Demo finished")]
    assert answered_by_the_app(demo_dir, "approve")
    assert not (Path(env["HOME"]) / "demo.txt").exists()
    assert len(_started_with(demo_dir)) == 1  # the app the demo started lives on


@pytest.mark.usefixtures("trayer")
def test_deny_on_the_notification_ends_the_demo_without_a_terminal(
    xvfb_display: str, desktop_env: dict[str, str], tmp_path: Path, demo_dir: Path
) -> None:
    menu_dunst, monitor, env = desk(xvfb_display, desktop_env, tmp_path, DENY_LABEL)
    presser = Presser(menu_dunst, monitor)
    demo = subprocess.Popen(
        demo_argv("--step-seconds", "0.2", "--blocked-seconds", BLOCKED_SECONDS),
        env=env,
        cwd=env["HOME"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        presser.start()
        stdout, stderr = demo.communicate(timeout=120)
        presser.join()
        check_the_prompts_notification(monitor, menu_dunst)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()
        monitor.stop()
        menu_dunst.stop()
    assert demo.returncode == 0, stdout + stderr
    assert stderr == ""
    assert "  Denied." in stdout
    assert "* Working: writing demo.txt" not in stdout
    assert records(demo_dir) == [("done", "Demo finished: denied")]
    assert answered_by_the_app(demo_dir, "deny")
