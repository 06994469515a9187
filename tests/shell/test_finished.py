"""`tray _finished`: the ended session a long shell command leaves, read back as the app would."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

from tray.core.session.model import Attention
from tray.shell.finished import MAX_CMDLINE, command_name, run_finished, split_cmdline
from tray.state.environment import Environment
from tray.state.store import StateStore

NOW = 1_800_000_000.0


def environment(state_dir: Path, **environ: str) -> Environment:
    read, write = os.pipe()  # stdin that is no terminal, as in a background job
    os.close(write)
    return Environment(
        environ={"TRAY_STATE_DIR": str(state_dir), **environ},
        stdin_fd=read,
        stdout=io.StringIO(),
        stderr=io.StringIO(),
        clock=lambda: NOW,
        cwd=lambda: "/somewhere",
    )


def test_records_an_ended_session_with_one_attention(tmp_path: Path) -> None:
    env = environment(tmp_path, TMUX_PANE="%3", TERM="xterm", UNRELATED="x")
    status = run_finished(
        "make -j8 'all tests'",
        2,
        42.5,
        env,
        cwd="/project",
        pid=4242,
        tty="/dev/pts/7",
        end=NOW - 1,
    )
    assert status == 0
    [session], problems = StateStore(tmp_path).read_all(time.time())
    assert problems == []
    assert session.name == "make"
    assert session.command == ("make", "-j8", "all tests")
    assert session.cwd == "/project"
    assert (session.pid, session.child_pid) == (4242, None)
    assert (session.alive, session.exit_code, session.source) == (False, 2, "launcher")
    assert session.state == "error"
    assert (session.started_at, session.updated_at) == (NOW - 43.5, NOW - 1)
    assert session.terminal == {"TMUX_PANE": "%3", "TERM": "xterm", "tty": "/dev/pts/7"}
    assert session.attention == (
        Attention(
            seq=1,
            at=NOW - 1,
            source="command",
            title="make -j8 'all tests'",
            exit_code=2,
            duration=42.5,
        ),
    )
    assert oct(os.stat(StateStore(tmp_path).path_for(session.id)).st_mode & 0o777) == "0o600"


def test_success_is_done_and_defaults_come_from_the_environment(tmp_path: Path) -> None:
    assert run_finished("sleep 40", 0, 40.0, environment(tmp_path)) == 0
    [session], _ = StateStore(tmp_path).read_all(time.time())
    assert session.state == "done"
    assert session.cwd == "/somewhere"
    assert session.updated_at == NOW  # no --end: now
    assert session.pid == os.getppid()


def test_an_end_in_the_future_is_now(tmp_path: Path) -> None:
    run_finished("sleep 40", 0, 40.0, environment(tmp_path), end=NOW + 100)
    [session], _ = StateStore(tmp_path).read_all(time.time())
    assert session.updated_at == NOW


def test_the_shells_terminal_when_none_is_given(tmp_path: Path) -> None:
    # The process's stdin in /proc: a terminal only when it is one.
    run_finished("sleep 40", 0, 40.0, environment(tmp_path), pid=os.getpid())
    [session], _ = StateStore(tmp_path).read_all(time.time())
    stdin = os.readlink("/proc/self/fd/0") if os.path.exists("/proc/self/fd/0") else ""
    if stdin.startswith("/dev/pts/"):
        assert session.terminal.get("tty") == stdin
    else:
        assert "tty" not in session.terminal


@pytest.mark.parametrize(
    ("cmdline", "duration"),
    [("", 40.0), ("   ", 40.0), ("sleep 1", -1.0), ("sleep 1", float("nan"))],
)
def test_nothing_to_record_writes_nothing(tmp_path: Path, cmdline: str, duration: float) -> None:
    env = environment(tmp_path)
    assert run_finished(cmdline, 0, duration, env) == 2
    assert not tmp_path.exists() or os.listdir(tmp_path) == []


def test_a_huge_command_line_is_cut(tmp_path: Path) -> None:
    run_finished("echo " + "x" * 100_000, 0, 40.0, environment(tmp_path))
    [session], _ = StateStore(tmp_path).read_all(time.time())
    title = session.attention[0].title
    assert title is not None and len(title) == MAX_CMDLINE


@pytest.mark.parametrize(
    ("cmdline", "words", "name"),
    [
        ("make", ["make"], "make"),
        ("FOO=1 BAR='a b' ./bin/build --x", ["FOO=1", "BAR=a b", "./bin/build", "--x"], "build"),
        ('echo "unbalanced', ['echo "unbalanced'], "echo"),
        ("FOO=1", ["FOO=1"], "FOO=1"),
        ("/usr/bin/", ["/usr/bin/"], "/usr/bin/"),
    ],
)
def test_words_and_name(cmdline: str, words: list[str], name: str) -> None:
    assert split_cmdline(cmdline) == words
    assert command_name(cmdline) == name
