"""Focusing a session: a real tmux server on a private socket, real windows on Xvfb."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.desktop_services import base_env
from helpers.processes import process_name
from helpers.waiting import wait_for
from Xlib import X
from Xlib import display as xdisplay

from tray.desktop.focus import FocusResult, focus_session


@dataclass
class Tmux:
    socket: Path
    pid: int
    panes: dict[str, str]  # pane id -> window index
    env: dict[str, str]

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return done.stdout.strip()

    @property
    def recorded(self) -> str:
        """What the TMUX variable holds inside one of its panes."""
        return f"{self.socket},{self.pid},0"

    def current(self) -> str:
        """The session's current window and active pane."""
        return self.run("display-message", "-p", "-t", "work", "#{window_index} #{pane_id}")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A tmux server with window 0 split in two panes and window 1 current; every pane
    runs cat, so anything typed into one would show in its contents."""
    # A comma in the path: TMUX joins socket, pid and session with commas.
    directory = tmp_path / "a,b"
    directory.mkdir()
    socket = directory / "sock"
    env = base_env()
    server = Tmux(socket, 0, {}, env)
    server.run("-f", "/dev/null", "new-session", "-d", "-s", "work", "-x", "80", "-y", "24", "cat")
    try:
        server.pid = int(server.run("display-message", "-p", "#{pid}"))
        server.run("split-window", "-t", "work:0", "cat")
        server.run("new-window", "-t", "work", "cat")
        for line in server.run(
            "list-panes", "-s", "-t", "work", "-F", "#{pane_id} #{window_index}"
        ).splitlines():
            pane, window = line.split()
            server.panes[pane] = window
        yield server
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], env=env, timeout=10, check=False)
        if server.pid:
            _stop_pid(server.pid)


def _stop_pid(pid: int) -> None:
    """tmux daemonises, so its server is no child of ours: stop it by its pid, but only
    while that pid is still a tmux. Once kill-server has ended it, the pid may already be
    another process's (the suite runs on several workers), which a SIGTERM would end."""

    def gone() -> bool:
        return not process_name(pid).startswith("tmux")

    if not gone():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        wait_for(gone, 10, what=f"tmux server {pid} to exit")


def test_tmux_selects_the_recorded_window_and_pane(tmux: Tmux) -> None:
    first, second = sorted(pane for pane, window in tmux.panes.items() if window == "0")
    [other] = [pane for pane, window in tmux.panes.items() if window == "1"]
    assert tmux.current() == f"1 {other}"

    result = focus_session({"TMUX": tmux.recorded, "TMUX_PANE": first}, env=tmux.env)
    assert result.ok, result.message
    assert tmux.current() == f"0 {first}"

    result = focus_session({"TMUX": tmux.recorded, "TMUX_PANE": second}, env=tmux.env)
    assert result.ok, result.message
    assert tmux.current() == f"0 {second}"

    result = focus_session({"TMUX": tmux.recorded, "TMUX_PANE": other}, env=tmux.env)
    assert result.ok, result.message
    assert tmux.current() == f"1 {other}"

    # Nothing was typed into any pane.
    for pane in tmux.panes:
        assert tmux.run("capture-pane", "-p", "-t", pane) == ""


def test_tmux_reports_a_pane_the_server_does_not_have(tmux: Tmux) -> None:
    result = focus_session({"TMUX": tmux.recorded, "TMUX_PANE": "%999"}, env=tmux.env)
    assert not result.ok
    assert "can't find pane" in result.message


def test_tmux_reports_a_server_that_is_gone(tmp_path: Path) -> None:
    terminal = {"TMUX": f"{tmp_path / 'sock'},1,0", "TMUX_PANE": "%0"}
    result = focus_session(terminal, env=base_env())
    assert not result.ok
    assert result.message.startswith("tmux could not select pane %0: ")


def test_a_pane_without_its_server_socket_is_not_guessed() -> None:
    result = focus_session({"TMUX_PANE": "%1"}, env=base_env())
    assert result == FocusResult(
        False, "the tmux server's socket was not recorded for this session"
    )


@pytest.fixture
def windows(xvfb_display: str) -> Iterator[tuple[int, int]]:
    """Two mapped top-level windows on the Xvfb, which has no window manager."""
    connection = xdisplay.Display(xvfb_display)
    screen = connection.screen()
    created = []
    for left in (20, 60):
        window = screen.root.create_window(
            left, 100, 200, 150, 0, screen.root_depth, X.InputOutput, X.CopyFromParent,
            background_pixel=screen.white_pixel,
        )  # fmt: skip
        window.map()
        created.append(window)
    connection.sync()
    try:
        yield created[0].id, created[1].id
    finally:
        for window in created:
            window.destroy()
        connection.close()


def focused_window(display: str) -> int:
    connection = xdisplay.Display(display)
    try:
        focus = connection.get_input_focus().focus
        return focus if isinstance(focus, int) else int(focus.id)
    finally:
        connection.close()


def stacking(display: str) -> list[int]:
    """Top-level windows, bottom first."""
    connection = xdisplay.Display(display)
    try:
        return [int(child.id) for child in connection.screen().root.query_tree().children]
    finally:
        connection.close()


def test_x11_raises_and_focuses_the_recorded_window(
    xvfb_display: str, windows: tuple[int, int]
) -> None:
    env = base_env(DISPLAY=xvfb_display)
    for target, other in (windows, windows[::-1]):
        result = focus_session({"WINDOWID": str(target)}, env=env)
        assert result.ok, result.message
        assert focused_window(xvfb_display) == target
        order = stacking(xvfb_display)
        assert order.index(target) > order.index(other)


def test_x11_uses_the_display_the_session_recorded(
    xvfb_display: str, windows: tuple[int, int]
) -> None:
    terminal = {"WINDOWID": str(windows[0]), "DISPLAY": xvfb_display}
    result = focus_session(terminal, env=base_env(DISPLAY=":9999"))
    assert result.ok, result.message
    assert focused_window(xvfb_display) == windows[0]


def test_x11_reports_a_window_that_does_not_exist(xvfb_display: str) -> None:
    result = focus_session({"WINDOWID": "12345"}, env=base_env(DISPLAY=xvfb_display))
    assert not result.ok
    assert "BadWindow" in result.message


def test_tmux_and_x11_together(tmux: Tmux, xvfb_display: str, windows: tuple[int, int]) -> None:
    pane = min(pane for pane, window in tmux.panes.items() if window == "0")
    terminal = {"TMUX": tmux.recorded, "TMUX_PANE": pane, "WINDOWID": str(windows[1])}
    result = focus_session(terminal, env={**tmux.env, "DISPLAY": xvfb_display})
    assert result.ok, result.message
    assert result.message == f"selected tmux pane {pane}; raised X11 window {windows[1]}"
    assert tmux.current() == f"0 {pane}"
    assert focused_window(xvfb_display) == windows[1]


def test_nothing_recorded() -> None:
    result = focus_session({}, env=base_env())
    assert not result.ok
    assert result.message == "no tmux pane, terminal tab or window recorded for this session"


@pytest.fixture
def spy_path(tmp_path: Path) -> tuple[Path, Path]:
    """A PATH holding only stand-ins for tmux and xdotool that record each call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for tool in ("tmux", "xdotool"):
        script = bin_dir / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{calls}"\n')
        script.chmod(0o755)
    return bin_dir, calls


@pytest.mark.parametrize(
    "terminal",
    [
        {"TMUX": "/tmp/s,1,0", "TMUX_PANE": "%1; touch /tmp/owned"},
        {"TMUX": "/tmp/s,1,0", "TMUX_PANE": "$(reboot)"},
        {"TMUX": "/tmp/s,1,0", "TMUX_PANE": "1"},
        {"TMUX": "/tmp/s,1,0", "TMUX_PANE": "%1\n"},
        {"TMUX": "/tmp/s,1,0", "TMUX_PANE": "-t%1"},
        {"TMUX": "relative/sock,1,0", "TMUX_PANE": "%1"},
        {"WINDOWID": "0x400001"},
        {"WINDOWID": "-5"},
        {"WINDOWID": "0"},
        {"WINDOWID": "4194304; xterm"},
        {"WINDOWID": "99999999999"},
        {"WINDOWID": "4194304", "DISPLAY": ":0 -e"},
    ],
)
def test_malformed_records_run_nothing(
    terminal: dict[str, str], spy_path: tuple[Path, Path]
) -> None:
    bin_dir, calls = spy_path
    result = focus_session(terminal, env={"PATH": str(bin_dir), "DISPLAY": ":1"})
    assert not result.ok
    assert result.message
    assert not calls.exists()


def test_valid_records_reach_the_tools_as_plain_arguments(spy_path: tuple[Path, Path]) -> None:
    bin_dir, calls = spy_path
    terminal = {"TMUX": "/tmp/x,y/sock,77,3", "TMUX_PANE": "%12", "WINDOWID": "4194304"}
    result = focus_session(terminal, env={"PATH": str(bin_dir), "DISPLAY": ":1"})
    assert result.ok, result.message
    assert calls.read_text().splitlines() == [
        "tmux -S /tmp/x,y/sock select-window -t %12",
        "tmux -S /tmp/x,y/sock select-pane -t %12",
        "xdotool windowactivate --sync 4194304",
    ]


@pytest.mark.parametrize(
    ("terminal", "message"),
    [
        ({"TMUX": "/tmp/s,1,0", "TMUX_PANE": "%1"}, "tmux is not installed"),
        ({"WINDOWID": "4194304"}, "xdotool is not installed"),
    ],
)
def test_missing_tools_are_named(terminal: dict[str, str], message: str, tmp_path: Path) -> None:
    result = focus_session(terminal, env={"PATH": str(tmp_path), "DISPLAY": ":1"})
    assert (result.ok, result.message) == (False, message)
