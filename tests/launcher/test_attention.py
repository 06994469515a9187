"""Focus, the user's own typing and requests for attention, on real ptys."""

from __future__ import annotations

import contextlib
import select
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.launcher_terminal import Job, Terminal, launcher_argv, only_session
from helpers.waiting import wait_for
from ptyprocess import PtyProcess

from tray.core.session.model import Session

# Turns focus reporting on, asks for the primary device attributes and the background
# colour as agents do at start, then echoes every byte it reads as hex on a line of its
# own, and acts on a few capital letters typed to it.
PROGRAM = r"""
import os, sys, termios, tty
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)
actions = {
    b"B": b"\x07",
    b"N": b"\x1b]9;Build finished\x07",
    b"M": b"\x1b]777;notify;Deploy;needs a look\x1b\\",
    b"P": b"\x1b]9;4;1;40\x07",
    b"D": b"\x1b]7;file://localhost/srv/other%20place\x07",
    b"L": b"\x1b[?1004l",
    # The terminal's answer to the DA1 query: ring, so the state file is written.
    b"\x1b[?62;": b"\x07",
}
try:
    os.write(1, b"\x1b[?1004h\x1b[c\x1b]11;?\x1b\\ready\r\n")
    while True:
        data = os.read(fd, 1024)
        os.write(1, b"got:" + data.hex().encode() + b"\r\n")
        if b"Q" in data:
            break
        for key, answer in actions.items():
            if key in data:
                os.write(1, answer)
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
"""


def start(job_runner: Callable[..., Job]) -> Job:
    job: Job = job_runner(launcher_argv([sys.executable, "-c", PROGRAM]))
    job.expect(b"ready")
    return job


def session_where(job: Job, state_dir: Path, test: Callable[[Session], bool]) -> Session:
    def probe() -> Session | None:
        session = only_session(state_dir)
        return session if session is not None and test(session) else None

    return job.wait(probe, "the state file to change")


def echoed(job: Job, data: bytes) -> None:
    job.expect(b"got:" + data.hex().encode())


def test_focus_events_are_read_and_still_reach_the_program(
    job_runner: Callable[..., Job], state_dir: Path, terminal: Terminal
) -> None:
    job = start(job_runner)
    terminal.type(b"\x1b[O")
    echoed(job, b"\x1b[O")
    away = session_where(job, state_dir, lambda s: s.focus == "unfocused")
    assert away.focus_since is not None
    assert away.last_input_at is None  # leaving the tab is not typing
    terminal.type(b"\x1b[I")
    echoed(job, b"\x1b[I")
    session_where(job, state_dir, lambda s: s.focus == "focused")
    # Once the program turns focus reporting off, nobody knows.
    terminal.type(b"L")
    session_where(job, state_dir, lambda s: s.focus == "unknown")
    terminal.type(b"\x1b[O")
    echoed(job, b"\x1b[O")
    terminal.type(b"Q")
    assert job.exit_code() == 0
    ended = only_session(state_dir)
    assert ended is not None and ended.focus == "unknown"
    assert ended.last_input_at is not None  # ESC [ O without focus reporting is a key


def test_terminal_replies_are_not_typing(
    job_runner: Callable[..., Job], state_dir: Path, terminal: Terminal
) -> None:
    job = start(job_runner)
    replies = b"\x1b[?62;22c\x1b]11;rgb:1e1e/1e1e/1e1e\x1b\\"
    terminal.type(replies)
    echoed(job, replies)
    # The program rings when the DA1 answer arrives: that write must carry no keystroke.
    rang = session_where(job, state_dir, lambda s: any(a.source == "bell" for a in s.attention))
    assert rang.last_input_at is None
    terminal.type(b"x")
    typed = session_where(job, state_dir, lambda s: s.last_input_at is not None)
    assert typed.last_input_at is not None and typed.last_input_at >= rang.attention[0].at
    terminal.type(b"Q")
    assert job.exit_code() == 0


def test_bells_notifications_progress_and_directory(
    job_runner: Callable[..., Job], state_dir: Path, terminal: Terminal
) -> None:
    job = start(job_runner)
    terminal.type(b"N")
    noted = session_where(job, state_dir, lambda s: len(s.attention) == 1)
    assert [(a.seq, a.source, a.body) for a in noted.attention] == [(1, "osc9", "Build finished")]
    terminal.type(b"M")
    both = session_where(job, state_dir, lambda s: len(s.attention) == 2)
    assert (both.attention[1].source, both.attention[1].title, both.attention[1].body) == (
        "osc777",
        "Deploy",
        "needs a look",
    )
    terminal.type(b"P")
    progress = session_where(job, state_dir, lambda s: s.terminal_progress == 40)
    assert len(progress.attention) == 2  # progress is never a notification
    assert progress.state == "working"
    terminal.type(b"D")
    moved = session_where(job, state_dir, lambda s: s.cwd == "/srv/other place")
    assert (moved.state, moved.cwd_reported) == ("working", True)
    terminal.type(b"B")
    session_where(job, state_dir, lambda s: s.attention[-1].source == "bell")
    terminal.type(b"Q")
    assert job.exit_code() == 0
    # Every byte still reached the user's terminal.
    assert b"\x1b]9;Build finished\x07" in terminal.output
    assert b"\x1b]777;notify;Deploy;needs a look\x1b\\" in terminal.output
    assert b"\x07" in terminal.output.replace(b"\x1b]9;Build finished\x07", b"")


# --- inside tmux ------------------------------------------------------------------------


@pytest.fixture
def tmux(tray_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., str]]:
    """A private tmux server; the callable runs one tmux command and returns its output."""
    socket = str(tmp_path / "tmux.sock")
    environ = {**tray_env, "TERM": "xterm-256color"}

    def command(*args: str) -> str:
        result = subprocess.run(
            ["tmux", "-S", socket, "-f", "/dev/null", *args],
            env=environ,
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        return result.stdout

    try:
        yield command
    finally:
        subprocess.run(
            ["tmux", "-S", socket, "kill-server"], capture_output=True, timeout=20, check=False
        )


def test_tmux_pane_and_window_switches_and_the_outer_window_focus(
    tmux: Callable[..., str], tray_env: dict[str, str], state_dir: Path
) -> None:
    launcher = " ".join(
        shlex.quote(part) for part in launcher_argv([sys.executable, "-c", PROGRAM])
    )
    tmux("new-session", "-d", "-x", "100", "-y", "30", "-s", "work", launcher)
    tmux("split-window", "-d", "-t", "work:0", "cat")  # a second pane, not active
    tmux("new-window", "-d", "-t", "work:1", "cat")
    # tmux 3.3a (Debian 12) tells panes of pane and window switches only with this on.
    tmux("set-option", "-g", "focus-events", "on")
    client = PtyProcess.spawn(
        ["tmux", "-S", tmux("display-message", "-p", "#{socket_path}").strip(), "attach"],
        env={**tray_env, "TERM": "xterm-256color"},
        dimensions=(30, 100),
    )

    def focus_becomes(value: str) -> Session:
        def probe() -> Session | None:
            if client.isalive():
                with contextlib.suppress(OSError, EOFError):
                    while client.fileobj in select.select([client.fileobj], [], [], 0)[0]:
                        client.read(65536)  # keep the client's output flowing
            session = only_session(state_dir)
            return session if session is not None and session.focus == value else None

        return wait_for(probe, what=f"focus {value}")

    try:
        wait_for(lambda: only_session(state_dir), what="the session in the pane")
        focus_becomes("focused")  # the attached client shows the pane
        tmux("select-pane", "-t", "work:0.1")
        focus_becomes("unfocused")
        tmux("select-pane", "-t", "work:0.0")
        focus_becomes("focused")
        tmux("select-window", "-t", "work:1")
        focus_becomes("unfocused")
        tmux("select-window", "-t", "work:0")
        focus_becomes("focused")
        # The outer terminal window's own focus reaches the pane too.
        client.write(b"\x1b[O")
        focus_becomes("unfocused")
        client.write(b"\x1b[I")
        focus_becomes("focused")
        session = only_session(state_dir)
        assert session is not None and session.terminal.get("TMUX_PANE", "").startswith("%")
    finally:
        client.close(force=True)
