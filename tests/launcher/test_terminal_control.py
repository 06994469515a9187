"""Raw mode, window size, signals and job control, on a real outer terminal."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.launcher_terminal import (
    TIMEOUT,
    Job,
    Terminal,
    launcher_argv,
    only_session,
    pid_gone,
    process_state,
    started_session,
)
from helpers.processes import runs_session
from helpers.waiting import wait_for

WAIT_FOR_ENTER = ["sh", "-c", "echo ready; read line"]
SLEEPER = ["sh", "-c", "echo ready; exec sleep 60"]

# Prints its size at start and on every SIGWINCH, until Enter.
SIZE_CHILD = r"""
import os, signal, sys
def show(*_):
    columns, lines = os.get_terminal_size(0)
    os.write(1, b"size %d %d\n" % (lines, columns))
signal.signal(signal.SIGWINCH, show)
show()
sys.stdin.readline()
"""


def test_raw_mode_while_running_and_restored_after(
    job_runner: Callable[..., Job], terminal: Terminal
) -> None:
    before = terminal.attributes()
    assert not terminal.is_raw()
    job = job_runner(launcher_argv(WAIT_FOR_ENTER))
    job.expect(b"ready")
    job.wait(terminal.is_raw, "raw mode")
    terminal.type(b"\r")
    assert job.exit_code() == 0
    assert terminal.attributes() == before


@pytest.mark.parametrize(
    ("signum", "expected"),
    [
        (signal.SIGTERM, 128 + signal.SIGTERM),
        (signal.SIGHUP, 128 + signal.SIGHUP),
        (signal.SIGINT, 128 + signal.SIGINT),
    ],
)
def test_raw_mode_restored_after_a_signal_to_the_launcher(
    job_runner: Callable[..., Job], terminal: Terminal, signum: int, expected: int
) -> None:
    before = terminal.attributes()
    job = job_runner(launcher_argv(SLEEPER))
    job.expect(b"ready")
    job.wait(terminal.is_raw, "raw mode")
    os.kill(job.pid, signum)
    assert job.exit_code() == expected
    assert terminal.attributes() == before


def test_sigterm_is_passed_on_and_the_launcher_waits_for_the_command(
    job_runner: Callable[..., Job], terminal: Terminal
) -> None:
    script = "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done"
    job = job_runner(launcher_argv(["sh", "-c", script]))
    job.expect(b"ready")
    os.kill(job.pid, signal.SIGTERM)
    job.expect(b"got-term")
    assert job.exit_code() == 7


def test_ctrl_c_reaches_the_command(job_runner: Callable[..., Job], terminal: Terminal) -> None:
    job = job_runner(launcher_argv(SLEEPER))
    job.expect(b"ready")
    job.wait(terminal.is_raw, "raw mode")
    terminal.type(b"\x03")
    assert job.exit_code() == 128 + signal.SIGINT


def test_ctrl_backslash_reaches_the_command(
    job_runner: Callable[..., Job], terminal: Terminal
) -> None:
    script = "trap 'echo got-quit; exit 9' QUIT; echo ready; while :; do sleep 0.05; done"
    job = job_runner(launcher_argv(["sh", "-c", script]))
    job.expect(b"ready")
    job.wait(terminal.is_raw, "raw mode")
    terminal.type(b"\x1c")
    job.expect(b"got-quit")
    assert job.exit_code() == 9


def test_ctrl_z_stops_command_and_launcher_then_both_resume(
    job_runner: Callable[..., Job], terminal: Terminal, state_dir: Path
) -> None:
    before = terminal.attributes()
    job = job_runner(launcher_argv(["sh", "-c", "echo ready; exec cat"]))
    job.expect(b"ready")
    job.wait(terminal.is_raw, "raw mode")
    session = job.wait(lambda: started_session(state_dir), "the session")
    assert session.child_pid is not None
    terminal.type(b"\x1a")
    stopped = job.wait(
        lambda: next((s for s in job.statuses if os.WIFSTOPPED(s)), None), "the launcher to stop"
    )
    assert os.WSTOPSIG(stopped) == signal.SIGTSTP
    assert process_state(session.child_pid) == "T"
    # The pty's echo of the key comes out before the shell would print "Stopped".
    job.wait(lambda: terminal.output.endswith(b"^Z"), "the echoed ^Z")
    assert terminal.attributes() == before  # the shell gets a sane terminal back

    os.kill(job.pid, signal.SIGCONT)  # what `fg` does
    job.wait(lambda: any(os.WIFCONTINUED(s) for s in job.statuses), "the launcher to continue")
    job.wait(terminal.is_raw, "raw mode again")
    terminal.type(b"again\r")
    # Once echoed by the command's pty, once written back by cat: cat runs again.
    job.wait(lambda: terminal.output.count(b"again\r\n") == 2, "cat to answer")
    terminal.type(b"\x04")
    assert job.exit_code() == 0
    assert terminal.attributes() == before


def test_size_is_copied_at_start_and_on_resize(
    job_runner: Callable[..., Job], terminal: Terminal
) -> None:
    terminal.resize(31, 101)
    job = job_runner(launcher_argv([sys.executable, "-c", SIZE_CHILD]))
    job.expect(b"size 31 101\r\n")
    # The kernel sends SIGWINCH to the terminal's foreground job, the launcher.
    terminal.resize(42, 123)
    job.expect(b"size 42 123\r\n")
    terminal.type(b"\r")
    assert job.exit_code() == 0


def test_sighup_hangs_up_the_command_and_ends_the_session(
    job_runner: Callable[..., Job], state_dir: Path
) -> None:
    job = job_runner(launcher_argv(SLEEPER))
    job.expect(b"ready")
    session = job.wait(lambda: started_session(state_dir), "the session")
    os.kill(job.pid, signal.SIGHUP)
    assert job.exit_code() == 128 + signal.SIGHUP
    ended = only_session(state_dir)
    assert ended is not None
    assert (ended.alive, ended.exit_code, ended.state) == (False, 128 + signal.SIGHUP, "error")
    wait_for(lambda: pid_gone(session.child_pid or 0), what="the command to end")


def test_a_command_deaf_to_the_hangup_does_not_keep_the_launcher(
    job_runner: Callable[..., Job], state_dir: Path
) -> None:
    job = job_runner(launcher_argv(["sh", "-c", "trap '' HUP; echo ready; exec sleep 60"]))
    job.expect(b"ready")
    session = job.wait(lambda: started_session(state_dir), "the session")
    assert session.child_pid is not None
    try:
        os.kill(job.pid, signal.SIGHUP)
        assert job.exit_code() == 128 + signal.SIGHUP
        ended = only_session(state_dir)
        assert ended is not None
        assert (ended.alive, ended.exit_code) == (False, 128 + signal.SIGHUP)
        assert not pid_gone(session.child_pid)  # it chose to live on
    finally:
        # Gone already only when an assertion above failed: let that one be reported.
        if runs_session(session.child_pid, session.id):
            with contextlib.suppress(ProcessLookupError):
                os.kill(session.child_pid, signal.SIGKILL)
    wait_for(lambda: pid_gone(session.child_pid or 0), what="the command to end")


def test_closing_the_terminal_ends_everything(
    job_runner: Callable[..., Job], terminal: Terminal, state_dir: Path
) -> None:
    job = job_runner(launcher_argv(SLEEPER))
    job.expect(b"ready")
    session = job.wait(lambda: started_session(state_dir), "the session")
    terminal.close_master()  # the user closes the tab
    assert job.exit_code() == 128 + signal.SIGHUP
    ended = only_session(state_dir)
    assert ended is not None
    assert not ended.alive
    assert ended.exit_code == 128 + signal.SIGHUP
    wait_for(lambda: pid_gone(session.child_pid or 0), what="the command to end")


def test_a_command_that_never_reads_cannot_block_the_launcher(
    job_runner: Callable[..., Job], terminal: Terminal
) -> None:
    # A command that lives half a second or so without ever reading: its own pace, no
    # wait for anything, while the test types at it as fast as it can.
    ticker = (
        "import time\n"
        "for i in range(100):\n"
        "    print('tick', i, flush=True)\n"
        "    time.sleep(0.005)\n"
        "print('end', flush=True)\n"
        "time.sleep(0.2)\n"
    )
    job = job_runner(launcher_argv([sys.executable, "-c", ticker]))
    job.expect(b"tick 0")
    # Whole lines, so the command's pty really fills up (a partial line is discarded).
    chunk = (b"y" * 63 + b"\r") * 1024
    saturated = accepted = 0
    ended = False
    deadline = time.monotonic() + TIMEOUT
    while not ended:
        assert time.monotonic() < deadline, "the launcher is stuck"
        try:
            accepted += os.write(terminal.master, chunk)
        except BlockingIOError:
            saturated += 1  # the launcher stopped taking input: its buffer is full
        job.pump()
        ended = any(os.WIFEXITED(s) or os.WIFSIGNALED(s) for s in job.statuses)
    assert saturated > 0
    # The command read nothing: what was taken in sits in ptys and the launcher's
    # bounded buffer, a few hundred KB at most, not all the typing there was.
    assert accepted < 1_000_000
    assert job.exit_code() == 0
    assert b"end" in terminal.output
