"""Focus on a real KDE Plasma 5.27 on Wayland: Konsole runs as a Wayland client of KWin,
with a real `tray run` in one of its tabs, and a second tab and another Konsole window
in front. tray's focus selects the session's tab through Konsole's D-Bus window object
and asks KWin's scripting to activate its window; KWin's scripting (which window is
active) and Konsole's D-Bus (which session is current) say whether it happened. The click
is a real one on Plasma's popup. Two windows of one Konsole process cannot be told apart
by KWin: focus says so. An xterm on Xwayland is found by its X11 window id.

Measured on this Plasma: Konsole on Wayland sets WINDOWID=2, a number that names no X11
window; Konsole's currentSession follows setCurrentSession only once its window is
active; and the activation token Plasma hands over on a click cannot raise an existing
Konsole window (its org.freedesktop.Application.Activate opens a new window), so KWin's
scripting does that.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.desktop_apps import REPO, TIMEOUT, start_app_process
from helpers.desktop_services import stop_process
from helpers.plasma import Plasma
from helpers.plasma_input import FakePointer
from helpers.plasma_popups import hover_button, new_popup, popups, settled_buttons
from helpers.processes import children_of
from helpers.waiting import wait_for

from tray.core.session.model import Session
from tray.desktop.focus import focus_plan, focus_session
from tray.desktop.focus.kwin import script
from tray.state.liveness import process_start_token
from tray.state.store import StateStore

KONSOLE_WINDOW = "org.kde.konsole.Window"


@dataclass
class Konsoles:
    """Konsole processes on the Plasma, and the state dir their `tray run` writes to."""

    plasma: Plasma
    directory: Path
    state_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**self.plasma.env, "TRAY_STATE_DIR": str(self.state_dir), "PYTHONPATH": str(REPO)}

    def start(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        """``konsole --nofork`` running ``argv`` through a script of its own (Konsole's
        parser would take `--name` for itself), as a Wayland client."""
        script_path = self.directory / f"{name}.sh"
        script_path.write_text("#!/bin/sh\nexec " + shlex.join(argv) + "\n")
        script_path.chmod(0o755)
        with (self.directory / f"konsole-{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                ["konsole", "--nofork", "-e", str(script_path)],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self.processes.append(proc)
        wait_for(lambda: self.active_pid() == proc.pid, TIMEOUT, 0.1, f"Konsole {name} active")
        return proc

    def active_pid(self) -> int | None:
        """The pid of the window KWin has active."""
        found = self.plasma.kwin_script("var w = workspace.activeClient; return w ? w.pid : null;")
        return found if isinstance(found, int) else None

    def recorded(self, name: str) -> Session:
        store = StateStore(self.state_dir)

        def found() -> Session | None:
            sessions, _ = store.read_all(time.time())
            return next((s for s in sessions if s.name == name and s.terminal), None)

        return wait_for(found, TIMEOUT, 0.1, f"session {name!r} in the state dir")

    def call(self, service: str, path: str, method: str, *args: str) -> str:
        return self.plasma.call(service, path, f"{KONSOLE_WINDOW}.{method}", *args)

    def current_session(self, service: str, window: str) -> int:
        return int(self.call(service, window, "currentSession").strip("(),"))


@pytest.fixture
def konsoles(plasma: Plasma, tmp_path: Path) -> Iterator[Konsoles]:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    found = Konsoles(plasma, tmp_path, state_dir)
    try:
        yield found
    finally:
        for proc in reversed(found.processes):
            leftovers = children_of(proc.pid)
            stop_process(proc)
            for pid in leftovers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)


def _session_tab_behind(konsoles: Konsoles, argv: list[str]) -> tuple[dict[str, str], int]:
    """Konsole A runs ``argv`` (a `tray run`) in its first tab; a second tab becomes its
    current one, then Konsole B's window comes in front. Returns the session's recorded
    terminal facts and Konsole A's pid."""
    session_konsole = konsoles.start(argv, "session")
    terminal = dict(konsoles.recorded("agent").terminal)
    service, window = terminal["KONSOLE_DBUS_SERVICE"], terminal["KONSOLE_DBUS_WINDOW"]
    session = int(terminal["KONSOLE_DBUS_SESSION"].removeprefix("/Sessions/"))
    konsoles.call(service, window, "newSession")
    wait_for(
        lambda: konsoles.current_session(service, window) != session,
        TIMEOUT,
        what="Konsole's second tab to be current",
    )
    konsoles.start(["sleep", "600"], "front")
    return terminal, session_konsole.pid


def _brought_forward(konsoles: Konsoles, terminal: dict[str, str], pid: int) -> None:
    service, window = terminal["KONSOLE_DBUS_SERVICE"], terminal["KONSOLE_DBUS_WINDOW"]
    session = int(terminal["KONSOLE_DBUS_SESSION"].removeprefix("/Sessions/"))
    wait_for(lambda: konsoles.active_pid() == pid, TIMEOUT, 0.1, "the session's Konsole active")
    wait_for(
        lambda: konsoles.current_session(service, window) == session,
        TIMEOUT,
        what="the session's tab to be current",
    )


def _blocking_agent(directory: Path) -> Path:
    """A program that asks for approval (OSC 7501) and waits for its answer."""
    message = base64.b64encode(b"approve Bash: ls").decode()
    agent = directory / "agent.py"
    agent.write_text(
        "import sys\n"
        "sys.stdout.write('\\x1b]7501;state=blocked:kind=permission:app=claude-code"
        f":msg={message}\\x07')\n"
        "sys.stdout.flush()\n"
        "input()\n"
    )
    return agent


def _tray_run(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "tray", "run", "--name", "agent", "--", *argv]


def test_focus_selects_the_konsole_tab_and_kwin_activates_its_window(
    konsoles: Konsoles,
) -> None:
    terminal, pid = _session_tab_behind(konsoles, _tray_run(["sleep", "600"]))
    # Konsole on Wayland: a WINDOWID that is no X11 window, so not the X11 way.
    assert terminal["WAYLAND_DISPLAY"] == konsoles.plasma.env["WAYLAND_DISPLAY"]
    assert terminal["terminal_pid"] == str(pid)

    way, reason = focus_plan(terminal, konsoles.env)
    assert way is not None
    assert reason == "Konsole tab, then the terminal's window, through KWin"
    result = focus_session(terminal, env=konsoles.env)
    assert result.ok, result.message
    assert not result.partial, result.message
    _brought_forward(konsoles, terminal, pid)


def test_with_two_windows_in_one_konsole_focus_says_its_window_may_stay_behind(
    konsoles: Konsoles,
) -> None:
    session_konsole = konsoles.start(_tray_run(["sleep", "600"]), "session")
    terminal = dict(konsoles.recorded("agent").terminal)
    # A second window of the same process (Konsole's Activate opens one), in front.
    konsoles.plasma.call(
        f"org.kde.konsole-{session_konsole.pid}",
        "/org/kde/konsole",
        "org.freedesktop.Application.Activate",
        "{}",
    )

    def second_window_in_front() -> bool:
        mine = [w for w in konsoles.plasma.windows() if w["pid"] == session_konsole.pid]
        return len(mine) == 2 and mine[-1]["active"]

    wait_for(second_window_in_front, TIMEOUT, 0.1, "Konsole's second window in front")

    result = focus_session(terminal, env=konsoles.env)
    assert result.ok, result.message
    assert result.partial
    assert "Konsole has 2 windows open" in result.message, result.message


def test_a_click_on_plasmas_banner_brings_the_konsole_tab_forward(
    konsoles: Konsoles, tmp_path: Path
) -> None:
    plasma = konsoles.plasma
    before = set(popups(plasma))
    app = start_app_process(konsoles.env, tmp_path, "")
    try:
        agent = _blocking_agent(tmp_path)
        terminal, pid = _session_tab_behind(konsoles, _tray_run([sys.executable, str(agent)]))
        popup = new_popup(plasma, before)
        box, buttons = settled_buttons(plasma, popup, 3)
        with FakePointer(plasma.env) as pointer:
            # Hovered first, so that the popup has taken the pointer in; then a click on
            # its text, above the buttons: the notification's default action.
            hover_button(plasma, pointer, buttons[-1])
            pointer.click(box.x + box.width // 4, (box.y + buttons[0].y) // 2)
            pointer.rest()
        _brought_forward(konsoles, terminal, pid)
        wait_for(lambda: popup not in popups(plasma), TIMEOUT, what="the popup to close")
    finally:
        stop_process(app.proc)
    assert "Traceback" not in app.log, app.log
    assert "only in part" not in app.log, app.log


def test_kwin_finds_an_xwayland_terminal_by_its_windowid(
    konsoles: Konsoles, tmp_path: Path
) -> None:
    """An X11 terminal on Xwayland: KWin's X11 window id is WINDOWID. The recorded
    process here is this test's own, which has no window, so only the id can find it."""
    id_file = tmp_path / "windowid"
    with (tmp_path / "xterm.log").open("ab") as log:
        xterm = subprocess.Popen(
            ["xterm", "-T", "x11-session", "-e", "sh", "-c",
             f'echo "$WINDOWID" > {shlex.quote(str(id_file))}; exec sleep 600'],
            env=konsoles.plasma.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )  # fmt: skip
    konsoles.processes.append(xterm)
    wait_for(lambda: konsoles.active_pid() == xterm.pid, TIMEOUT, 0.1, "xterm active")
    window: str = wait_for(
        lambda: id_file.read_text().strip() if id_file.exists() else None, TIMEOUT
    )
    konsoles.start(["sleep", "600"], "front")
    terminal = {
        "WINDOWID": window,
        "terminal_pid": str(os.getpid()),
        "terminal_start": process_start_token(os.getpid()) or "",
    }

    result = focus_session(terminal, env=konsoles.plasma.env)
    assert result.ok, result.message
    wait_for(lambda: konsoles.active_pid() == xterm.pid, TIMEOUT, 0.1, "xterm active again")


def test_the_kwin_script_prefers_the_x11_window_id_then_the_process() -> None:
    text = script([4242, 17], 4194316)
    assert "var pids = [4242, 17];" in text
    assert "var x11 = 4194316;" in text
    assert "w.windowId === x11" in text
    assert "var x11 = 0;" in script([4242])
