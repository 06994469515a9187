"""How the command is started: its pid, argv, signals, fds and terminal, and exec errors."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.launcher_terminal import TIMEOUT, Job, Terminal, launcher_argv, only_session, run_piped
from helpers.waiting import wait_for

from tray.launcher.spawn import CannotStartError, Spawned, child_dispositions, exit_code, spawn

# Waits for Enter, then prints the size it sees and how many SIGWINCH it got meanwhile.
PIXELS_CHILD = r"""
import fcntl, os, signal, struct, sys, termios
changes = []
signal.signal(signal.SIGWINCH, lambda *_: changes.append(1))
print("ready", flush=True)
sys.stdin.readline()
size = struct.unpack("HHHH", fcntl.ioctl(0, termios.TIOCGWINSZ, bytes(8)))
print("size %d %d %d %d winch %d" % (*size, len(changes)), flush=True)
"""


def _signal_mask(status: str, field: str) -> int:
    line = next(line for line in status.splitlines() if line.startswith(field + ":"))
    return int(line.split()[1], 16)


def _bit(signum: int) -> int:
    return 1 << (signum - 1)


def test_child_pid_is_the_command_itself(
    tray_env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    result = run_piped(["sh", "-c", 'echo "pid=$$"'], tray_env, tmp_path)
    assert result.returncode == 0
    session = only_session(state_dir)
    assert session is not None
    assert result.stdout == f"pid={session.child_pid}\n".encode()


def test_the_command_gets_its_argv_as_typed(tray_env: dict[str, str], tmp_path: Path) -> None:
    # Not the path PATH lookup found: what a shell passes, and what `ps` shows.
    result = run_piped(["sh", "-c", "tr '\\0' ' ' < /proc/$$/cmdline", "name"], tray_env, tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith(b"sh -c ")


def test_ignored_signals_stay_ignored_and_the_rest_are_default(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    # As under nohup, or a background job of a script: SIGHUP and SIGINT ignored.
    launcher = shlex.join(launcher_argv(["cat", "/proc/self/status"]))
    result = subprocess.run(
        ["sh", "-c", f"trap '' HUP INT; exec {launcher}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=tray_env,
        cwd=tmp_path,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    status = result.stdout.decode()
    ignored = _signal_mask(status, "SigIgn")
    assert ignored & _bit(signal.SIGHUP)
    assert ignored & _bit(signal.SIGINT)
    for signum in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGQUIT, signal.SIGTERM, signal.SIGTSTP):
        assert not ignored & _bit(signum), signum
    # The launcher blocks signals while it starts the command; none stays blocked.
    assert _signal_mask(status, "SigBlk") == 0


def test_the_launchers_other_fds_do_not_reach_the_command(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    with open(tmp_path / "held", "wb") as held:
        fd = held.fileno()
        script = f"[ -e /proc/$$/fd/{fd} ] && echo open || echo closed"
        result = subprocess.run(
            launcher_argv(["sh", "-c", script]),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=tray_env,
            cwd=tmp_path,
            pass_fds=(fd,),
            timeout=TIMEOUT,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"closed\n"


def test_a_file_exec_refuses_is_127_with_the_reason(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "no-interpreter"
    script.write_bytes(b"\x00\x01 neither a binary nor a script\n")
    script.chmod(0o755)
    result = run_piped([str(script)], tray_env, tmp_path)
    assert result.returncode == 127
    assert result.stdout == b""
    assert result.stderr == f"tray: {script}: Exec format error\n".encode()


def test_a_directory_is_127_with_the_reason(tray_env: dict[str, str], tmp_path: Path) -> None:
    result = run_piped([str(tmp_path)], tray_env, tmp_path)
    assert result.returncode == 127
    assert result.stderr == f"tray: {tmp_path}: Is a directory\n".encode()


def test_the_pixel_size_comes_too_and_no_resize_at_start(
    job_runner: Callable[..., Job], terminal: Terminal
) -> None:
    terminal.resize(31, 101, 1010, 620)
    job = job_runner(launcher_argv([sys.executable, "-c", PIXELS_CHILD]))
    job.expect(b"ready")
    terminal.type(b"\r")
    job.expect(b"size 31 101 1010 620 winch 0\r\n")
    assert job.exit_code() == 0


def test_the_launcher_keeps_no_fd_of_the_pty_it_does_not_use(
    job_runner: Callable[..., Job], terminal: Terminal
) -> None:
    job = job_runner(launcher_argv(["sh", "-c", "echo ready; read line"]))
    job.expect(b"ready")
    ptys = [
        target
        for target in (os.readlink(f"/proc/{job.pid}/fd/{fd}") for fd in _fds(job.pid))
        if target.startswith("/dev/pts/") or target == "/dev/ptmx"
    ]
    # The user's terminal on 0, 1 and 2 (2 goes to a file here) and one master.
    assert sorted(ptys) == sorted([terminal.path, terminal.path, "/dev/ptmx"])
    terminal.type(b"\r")
    assert job.exit_code() == 0


def _fds(pid: int) -> list[str]:
    return os.listdir(f"/proc/{pid}/fd")


@pytest.mark.parametrize("kind", ["file without the x bit", "directory"])
def test_a_name_that_path_holds_only_as_a_non_executable_is_not_found(
    tray_env: dict[str, str], tmp_path: Path, kind: str
) -> None:
    # exec says EACCES for these; a name nothing can run is not found, as it always was.
    directory = tmp_path / "bin"
    directory.mkdir()
    if kind == "directory":
        (directory / "tray-unrunnable").mkdir()
    else:
        (directory / "tray-unrunnable").write_text("#!/bin/sh\n")
    tray_env["PATH"] = f"{directory}:{tray_env['PATH']}"
    result = run_piped(["tray-unrunnable"], tray_env, tmp_path)
    assert result.returncode == 127
    assert result.stderr == b"tray: tray-unrunnable: command not found\n"


def _spawn(argv: list[str], setup_terminal: Callable[[int], None] = lambda fd: None) -> Spawned:
    return spawn(argv, dict(os.environ), setup_terminal, child_dispositions())


def _output_and_status(spawned: Spawned) -> tuple[bytes, int]:
    output = b""
    try:
        while chunk := os.read(spawned.master, 4096):
            output += chunk
    except OSError:  # EIO: every process on the pty has gone
        pass
    finally:
        os.close(spawned.master)
    _, status = os.waitpid(spawned.keeper, 0)
    return output, exit_code(status)


def test_keeper_and_command_hold_only_the_pty_and_the_launcher_only_the_master(
    tmp_path: Path,
) -> None:
    before = set(os.listdir("/proc/self/fd"))
    with open(tmp_path / "held", "wb") as held:
        os.set_inheritable(held.fileno(), True)
        spawned = _spawn(["sleep", "60"])
    try:
        # spawn() returns once the command runs: the report pipe is gone from all three.
        assert sorted(os.listdir(f"/proc/{spawned.keeper}/fd")) == ["0", "1", "2"]
        # The command's own start (the dynamic loader reading its libraries) may hold a
        # file of its own for a moment after its exec: what it inherited is what counts.
        wait_for(
            lambda: sorted(os.listdir(f"/proc/{spawned.child}/fd")) == ["0", "1", "2"],
            what="the command to hold the pty alone",
        )
        assert set(os.listdir("/proc/self/fd")) == before | {str(spawned.master)}
        assert not os.get_inheritable(spawned.master)
    finally:
        # Closing the master hangs the pty up; the keeper passes that on to the command.
        os.close(spawned.master)
        _, status = os.waitpid(spawned.keeper, 0)
    assert exit_code(status) == 128 + signal.SIGHUP


def test_the_pty_is_24_by_80_when_the_setup_sets_no_size() -> None:
    output, code = _output_and_status(_spawn(["stty", "size"]))
    assert (output, code) == (b"24 80\r\n", 0)


def test_a_setup_that_fails_is_a_command_that_cannot_start() -> None:
    def failing_setup(fd: int) -> None:
        raise OSError("no such terminal setting")

    with pytest.raises(CannotStartError) as raised:
        _spawn(["true"], failing_setup)
    assert str(raised.value) == "tray: true: could not be started (no such terminal setting)"


def test_the_program_is_looked_up_in_the_commands_path_not_the_launchers(tmp_path: Path) -> None:
    directory = tmp_path / "bin"
    directory.mkdir()
    program = directory / "tray-only-here"
    program.write_text("#!/bin/sh\necho found\n")
    program.chmod(0o755)
    assert shutil.which(program.name) is None  # not in the launcher's own PATH
    environ = {**os.environ, "PATH": f"{directory}{os.pathsep}{os.environ['PATH']}"}
    spawned = spawn([program.name], environ, lambda fd: None, child_dispositions())
    assert _output_and_status(spawned) == (b"found\r\n", 0)
