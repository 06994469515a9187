"""Without a terminal on stdin or stdout: pipes, /dev/null, CI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.launcher_terminal import TIMEOUT, Job, Terminal, launcher_argv, run_piped
from helpers.waiting import wait_for


def test_piped_lines_come_back_exactly(tray_env: dict[str, str], tmp_path: Path) -> None:
    result = run_piped(["cat"], tray_env, tmp_path, data=b"a\nb\n")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"a\nb\n", b"")


def test_a_last_line_without_newline_still_ends(tray_env: dict[str, str], tmp_path: Path) -> None:
    result = run_piped(["cat"], tray_env, tmp_path, data=b"a\nb")
    assert (result.returncode, result.stdout) == (0, b"a\nb")


def test_piped_data_is_not_mangled(tray_env: dict[str, str], tmp_path: Path) -> None:
    # Carriage returns, tabs, Ctrl-C, Ctrl-S, Ctrl-Z and UTF-8 pass as data, not as keys.
    data = "tab\there\r\nctrl \x03 \x13 \x1a \x11 done\n\u00e9t\u00e9 \u2603\n".encode()
    result = run_piped(["cat"], tray_env, tmp_path, data=data)
    assert (result.returncode, result.stdout) == (0, data)


def test_stdin_from_dev_null(tray_env: dict[str, str], tmp_path: Path) -> None:
    result = run_piped(
        ["sh", "-c", "cat; echo after"], tray_env, tmp_path, stdin=subprocess.DEVNULL
    )
    assert (result.returncode, result.stdout) == (0, b"after\n")


def test_stdin_closed(tray_env: dict[str, str], tmp_path: Path) -> None:
    argv = launcher_argv(["sh", "-c", "cat; echo after"])
    result = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *argv],
        capture_output=True,
        env=tray_env,
        cwd=tmp_path,
        timeout=TIMEOUT,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"after\n", b"")


def test_size_from_the_environment_or_default(tray_env: dict[str, str], tmp_path: Path) -> None:
    sized = run_piped(["stty", "size"], {**tray_env, "LINES": "33", "COLUMNS": "99"}, tmp_path)
    assert sized.stdout == b"33 99\n"
    default = run_piped(["stty", "size"], tray_env, tmp_path)
    assert default.stdout == b"24 80\n"


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("exit 0", 0),
        ("exit 42", 42),
        ("kill -TERM $$", 128 + signal.SIGTERM),
        ("kill -USR1 $$", 128 + signal.SIGUSR1),
    ],
)
def test_exit_status_passes_through(
    tray_env: dict[str, str], tmp_path: Path, script: str, expected: int
) -> None:
    assert run_piped(["sh", "-c", script], tray_env, tmp_path).returncode == expected


def test_a_missing_command_is_127_with_one_line(tray_env: dict[str, str], tmp_path: Path) -> None:
    result = run_piped(["tray-no-such-command-7501", "arg"], tray_env, tmp_path)
    assert result.returncode == 127
    assert result.stdout == b""
    assert result.stderr == b"tray: tray-no-such-command-7501: command not found\n"


def test_a_file_that_is_not_executable_is_127_with_one_line(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "script.sh"
    script.write_text("echo never\n")
    result = run_piped([str(script)], tray_env, tmp_path)
    assert result.returncode == 127
    assert result.stderr == f"tray: {script}: Permission denied\n".encode()


def test_sigint_in_pipe_mode_goes_to_the_command(tray_env: dict[str, str], tmp_path: Path) -> None:
    launcher = subprocess.Popen(
        launcher_argv(["sh", "-c", "echo ready; exec sleep 60"]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=tray_env,
        cwd=tmp_path,
    )
    try:
        assert launcher.stdout is not None
        assert launcher.stdout.readline() == b"ready\n"
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(TIMEOUT) == 128 + signal.SIGINT
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(TIMEOUT)


def test_terminal_stdin_with_redirected_stdout_stays_cooked(
    job_runner: Callable[..., Job], terminal: Terminal, tmp_path: Path
) -> None:
    before = terminal.attributes()
    out = tmp_path / "out"
    job = job_runner(launcher_argv(["sh", "-c", "echo ready; read x; echo got $x"]), out)
    job.wait(lambda: out.exists() and out.read_bytes() == b"ready\n", "ready in the file")
    assert terminal.attributes() == before
    terminal.type(b"hello\r")  # the terminal's own line editing sends "hello\n"
    assert job.exit_code() == 0
    assert out.read_bytes() == b"ready\ngot hello\n"
    assert terminal.attributes() == before


def test_ctrl_z_in_pipe_mode_stops_the_command_and_the_launcher(
    job_runner: Callable[..., Job], terminal: Terminal, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    job = job_runner(launcher_argv(["sh", "-c", "echo ready; exec cat"]), out)
    job.wait(lambda: out.exists() and out.read_bytes() == b"ready\n", "ready in the file")
    terminal.type(b"\x1a")  # the cooked terminal sends SIGTSTP to the launcher's group
    job.wait(lambda: any(os.WIFSTOPPED(s) for s in job.statuses), "the launcher to stop")
    os.kill(job.pid, signal.SIGCONT)
    terminal.type(b"more\r")
    wait_for(lambda: out.read_bytes() == b"ready\nmore\n", what="cat to run again")
    terminal.type(b"\x04")
    assert job.exit_code() == 0


def test_a_large_binary_free_stream_round_trips(tray_env: dict[str, str], tmp_path: Path) -> None:
    data = b"".join(b"line %06d %s\n" % (i, b"z" * (i % 200)) for i in range(5000))
    result = run_piped(
        [sys.executable, "-c", "import sys; sys.stdout.write(sys.stdin.read())"],
        tray_env,
        tmp_path,
        data=data,
    )
    assert (result.returncode, result.stdout) == (0, data)
