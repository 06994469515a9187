"""However `tray run` ends, no process of the command's pty session is left behind.

Under ``script -qfec`` nothing is left when ``script`` is SIGKILLed: the pty hangs up,
its session leader (the command) gets SIGHUP and dies. Under tray the session leader is
the keeper, so the keeper must pass the hangup on and end with the command.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.launcher_terminal import (
    TIMEOUT,
    Job,
    Terminal,
    launcher_argv,
    pid_gone,
    started_session,
)
from helpers.waiting import wait_for

# The keeper reacts to the hangup at once; this is slack for a busy machine.
GONE_WITHIN = 2.5


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def session_of(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[3]) if fields else None


def session_members(session: int) -> dict[int, str]:
    """The live processes (zombies left out) of ``session``, with their names."""
    members = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat(int(entry))
        if fields is None or fields[0] == b"Z" or int(fields[3]) != session:
            continue
        try:
            with open(f"/proc/{entry}/comm") as comm:
                members[int(entry)] = comm.read().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue
    return members


def _sleeping(session: int) -> dict[int, str] | None:
    """The session's processes once ``sleep`` runs in it, else None."""
    found = session_members(session)
    return found if "sleep" in found.values() else None


def _running(job: Job, state_dir: Path) -> tuple[int, dict[int, str]]:
    """The keeper's pid (the session's id) and the session, once ``sleep`` runs in it."""
    session = job.wait(lambda: started_session(state_dir), "the session")
    keeper = session_of(session.child_pid or 0)
    assert keeper is not None
    members = job.wait(lambda: _sleeping(keeper), "sleep to run in the session")
    assert keeper in members
    return keeper, members


def _nothing_left(job: Job, keeper: int, members: dict[int, str]) -> None:
    everyone = {*members, job.pid}
    wait_for(
        lambda: all(pid_gone(pid) for pid in everyone),
        GONE_WITHIN,
        what=f"every process of the session to end: {session_members(keeper)}",
    )
    assert session_members(keeper) == {}


# The command alone; a shell that runs sleep as its child (the `; exit` keeps the shell
# from exec'ing it); and the shell as the brief names it, which may do either.
COMMANDS = [
    ["sleep", "1000"],
    ["sh", "-c", "sleep 1000; exit 3"],
    ["sh", "-c", "sleep 1000"],
]
# With job control the shell runs sleep as a foreground job in a group of its own.
JOB_CONTROL = ["sh", "-c", "set -m; sleep 1000; exit 3"]


@pytest.mark.parametrize(
    "command",
    [*COMMANDS, JOB_CONTROL],
    ids=["sleep", "sh-and-sleep", "sh-c-sleep", "sh-job-control"],
)
def test_a_sigkilled_launcher_leaves_no_process(
    job_runner: Callable[..., Job], state_dir: Path, command: list[str]
) -> None:
    job = job_runner(launcher_argv(command))
    keeper, members = _running(job, state_dir)
    os.kill(job.pid, signal.SIGKILL)
    assert job.exit_code() == -signal.SIGKILL
    _nothing_left(job, keeper, members)


def test_a_sigkilled_launcher_of_a_stopped_command_leaves_no_process(
    job_runner: Callable[..., Job], terminal: Terminal, state_dir: Path
) -> None:
    # Ctrl-Z stops command, keeper and launcher; then the launcher is killed for good.
    job = job_runner(launcher_argv(["sh", "-c", "sleep 1000; exit 3"]))
    keeper, members = _running(job, state_dir)
    job.wait(terminal.is_raw, "raw mode")
    terminal.type(b"\x1a")
    job.wait(lambda: any(os.WIFSTOPPED(s) for s in job.statuses), "the launcher to stop")
    os.kill(job.pid, signal.SIGKILL)
    assert job.exit_code() == -signal.SIGKILL
    _nothing_left(job, keeper, members)


def test_a_command_deaf_to_the_hangup_keeps_only_itself_and_the_keeper_ends_with_it(
    job_runner: Callable[..., Job], state_dir: Path
) -> None:
    # As under script: a command that ignores SIGHUP may live on. The keeper waits for
    # its status, and goes as soon as it ends.
    job = job_runner(launcher_argv(["sh", "-c", "trap '' HUP; exec sleep 1000"]))
    keeper, members = _running(job, state_dir)
    os.kill(job.pid, signal.SIGKILL)
    assert job.exit_code() == -signal.SIGKILL
    (command,) = (pid for pid, name in members.items() if name == "sleep")
    assert not pid_gone(command)
    os.kill(command, signal.SIGKILL)
    _nothing_left(job, keeper, members)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize(
    "command", [*COMMANDS[:2], JOB_CONTROL], ids=["sleep", "sh-and-sleep", "sh-job-control"]
)
def test_a_signalled_launcher_leaves_no_process(
    job_runner: Callable[..., Job], state_dir: Path, command: list[str], signum: int
) -> None:
    job = job_runner(launcher_argv(command))
    keeper, members = _running(job, state_dir)
    os.kill(job.pid, signum)
    job.exit_code()
    _nothing_left(job, keeper, members)


@pytest.mark.parametrize(
    "command", [*COMMANDS[:2], JOB_CONTROL], ids=["sleep", "sh-and-sleep", "sh-job-control"]
)
def test_closing_the_terminal_leaves_no_process(
    job_runner: Callable[..., Job], terminal: Terminal, state_dir: Path, command: list[str]
) -> None:
    job = job_runner(launcher_argv(command))
    keeper, members = _running(job, state_dir)
    terminal.close_master()
    assert job.exit_code() == 128 + signal.SIGHUP
    _nothing_left(job, keeper, members)


def test_a_command_that_exits_leaves_no_process(
    job_runner: Callable[..., Job], terminal: Terminal, state_dir: Path
) -> None:
    # The shell's sleep child is still running when the shell is told to exit.
    job = job_runner(launcher_argv(["sh", "-c", "sleep 1000 & read line; exit 4"]))
    keeper, members = _running(job, state_dir)
    job.wait(terminal.is_raw, "raw mode")
    terminal.type(b"\r")
    assert job.exit_code() == 4
    _nothing_left(job, keeper, members)


def test_a_sigkilled_launcher_in_pipe_mode_leaves_no_process(
    tray_env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    launcher = subprocess.Popen(
        launcher_argv(["sh", "-c", "sleep 1000; exit 3"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=tray_env,
        cwd=tmp_path,
    )
    try:
        session = wait_for(lambda: started_session(state_dir), what="the session")
        keeper = session_of(session.child_pid or 0)
        assert keeper is not None
        members = wait_for(lambda: _sleeping(keeper), what="sleep to run in the session")
        launcher.kill()
        assert launcher.wait(timeout=TIMEOUT) == -signal.SIGKILL
        wait_for(
            lambda: all(pid_gone(pid) for pid in members),
            GONE_WITHIN,
            what=f"every process of the session to end: {session_members(keeper)}",
        )
    finally:
        launcher.kill()
        launcher.wait(timeout=TIMEOUT)
        for stream in (launcher.stdin, launcher.stdout):
            assert stream is not None
            stream.close()


def test_only_the_launcher_holds_the_master_and_it_closes_on_exec(
    job_runner: Callable[..., Job], state_dir: Path
) -> None:
    # A copy of the master in any other process would keep the pty from hanging up when
    # the launcher dies, and the command's session would live on.
    job = job_runner(launcher_argv(["sleep", "1000"]))
    keeper, members = _running(job, state_dir)
    masters = [
        fd
        for fd in os.listdir(f"/proc/{job.pid}/fd")
        if os.readlink(f"/proc/{job.pid}/fd/{fd}") == "/dev/ptmx"
    ]
    assert len(masters) == 1
    with open(f"/proc/{job.pid}/fdinfo/{masters[0]}") as info:
        flags = int(next(line for line in info if line.startswith("flags:")).split()[1], 8)
    assert flags & os.O_CLOEXEC
    for pid in members:
        held = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        assert "/dev/ptmx" not in held, (pid, held)
    os.kill(job.pid, signal.SIGKILL)
    job.exit_code()
    _nothing_left(job, keeper, members)
