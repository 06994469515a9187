"""``tray answer``'s client side against a real answer socket and a real state file.

The command runs through ``tray.cli.main``, as the console script runs it, with an
Environment of its own. A thread plays the launcher: it serves :class:`AnswerSocket`
with the gate over its own records. (Over real ssh: tests/remote/test_answer_remote.py.)
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.fake_launcher import FakeLauncher

from tray.cli import main
from tray.commands import answer as answer_command
from tray.core.answers.gate import SETTLE
from tray.core.hosts.remote_sessions import PREFIX
from tray.core.hosts.ssh_commands import answer_words
from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.environment import Environment
from tray.state.liveness import process_start_token
from tray.state.store import StateStore

SESSION_ID = "4242-abc123"


def blocked(since: float, record_id: str = "", app: str = "claude-code") -> Record:
    return Record(record_id, State.BLOCKED, "permission", None, app, None, None, since, since)


def write_session(state_dir: Path, records: tuple[Record, ...], alive: bool = True) -> None:
    session = Session(
        id=SESSION_ID,
        name="api-server",
        command=("claude",),
        cwd="/home/me/api-server",
        pid=os.getpid(),
        child_pid=None,
        started_at=1.0,
        updated_at=2.0,
        alive=alive,
        source="program",
        records=records,
        pid_start=process_start_token(os.getpid()),
    )
    StateStore(state_dir).write(session)


@pytest.fixture
def launcher(state_dir: Path) -> Iterator[FakeLauncher]:
    """The session's launcher, played: no program runs, the keys are written down."""
    now = time.monotonic() - SETTLE - 1
    running = FakeLauncher(state_dir, SESSION_ID, [blocked(now)], record_clock=time.monotonic)
    write_session(state_dir, tuple(running.records))
    yield running
    running.close()


def answer(
    state_dir: Path,
    word: str,
    *,
    record: str | None = None,
    since: str | None = None,
    session: str = SESSION_ID,
    host: str | None = None,
) -> tuple[int, str]:
    """``tray answer SESSION WORD [--record ID] [--since T] [--host NAME]``: its exit
    status and stderr."""
    argv = ["answer", session, word]
    for flag, value in (("--record", record), ("--since", since), ("--host", host)):
        if value is not None:
            argv += [flag, value]
    stderr, stdout = io.StringIO(), io.StringIO()
    env = Environment(
        environ={"TRAY_STATE_DIR": str(state_dir), "XDG_CONFIG_HOME": str(state_dir.parent)},
        stdout=stdout,
        stderr=stderr,
    )
    code = main(argv, env)
    assert stdout.getvalue() == ""
    return code, stderr.getvalue()


def test_approve_reaches_the_launcher(state_dir: Path, launcher: FakeLauncher) -> None:
    since = launcher.records[0].since
    assert answer(state_dir, "approve", since=repr(since)) == (0, "")
    assert launcher.typed == [b"1"]


def test_a_refusal_is_one_line_and_exit_1(state_dir: Path, launcher: FakeLauncher) -> None:
    code, err = answer(state_dir, "deny", since="12.5")
    assert code == 1
    assert err == "tray answer: api-server: the prompt has changed; not answered\n"
    assert launcher.typed == []


def test_several_prompts_need_a_record(state_dir: Path, launcher: FakeLauncher) -> None:
    working = Record("", State.WORKING, None, None, "claude-code", None, None, 1.0, 1.0)
    old = time.monotonic() - SETTLE - 1
    launcher.records = [working, blocked(old, "a"), blocked(old, "b")]
    code, err = answer(state_dir, "approve")
    assert code == 1
    assert "several prompts stand" in err
    assert err.count("\n") == 1
    assert answer(state_dir, "deny", record="b") == (0, "")
    assert launcher.typed == [b"\x1b"]


def test_an_unknown_session(state_dir: Path) -> None:
    assert answer(state_dir, "approve", session="9-nope") == (
        1,
        "tray answer: no session 9-nope\n",
    )


def test_an_ended_session(state_dir: Path) -> None:
    write_session(state_dir, (), alive=False)
    code, err = answer(state_dir, "approve")
    assert (code, err) == (1, "tray answer: api-server: the session has ended; not answered\n")


def test_a_live_session_without_a_socket(state_dir: Path) -> None:
    write_session(state_dir, (blocked(1.0),))
    code, err = answer(state_dir, "approve")
    assert code == 1
    assert "takes no answers" in err


@pytest.mark.parametrize(
    ("word", "since", "session"),
    [
        ("always", None, SESSION_ID),
        ("approve", "soon", SESSION_ID),
        ("approve", "nan", SESSION_ID),
        ("approve", "inf", SESSION_ID),
        ("approve", None, "../etc"),
        ("approve", None, ".hidden"),
    ],
)
def test_usage_errors(state_dir: Path, word: str, since: str | None, session: str) -> None:
    code, err = answer(state_dir, word, since=since, session=session)
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("tray answer: ")
    assert "Traceback" not in err


def test_an_unknown_host_is_a_usage_error(state_dir: Path) -> None:
    code, err = answer(state_dir, "approve", host="devbox")
    assert code == 2
    assert "no [[hosts]] entry named 'devbox'" in err
    code, err = answer(state_dir, "approve", session="host:devbox/4242-abc", host="other")
    assert code == 2
    assert "not a session of that host" in err


def test_a_remote_id_is_told_by_the_remote_sessions_own_prefix() -> None:
    # Written out in the command so that a local answer does not import the remote package.
    assert answer_command._REMOTE_PREFIX == PREFIX


def test_the_root_record_is_named_by_an_empty_record(
    state_dir: Path, launcher: FakeLauncher
) -> None:
    old = time.monotonic() - SETTLE - 1
    launcher.records = [blocked(old), blocked(old, "task")]
    assert answer(state_dir, "approve", record="") == (0, "")
    assert answer(state_dir, "deny", record="task", since=repr(old)) == (0, "")
    assert launcher.typed == [b"1", b"\x1b"]


def test_remote_words_are_plain_and_checked() -> None:
    assert answer_words("4242-abc", "approve", None, None) == ["answer", "4242-abc", "approve"]
    assert answer_words("4242-abc", "deny", "", 1764470012.5) == [
        "answer", "4242-abc", "deny", "--record=''", "--since=1764470012.5",
    ]  # fmt: skip
    assert answer_words("4242-abc", "deny", "task/1.a", None)[-1] == "--record=task/1.a"
    # A record or a since that starts with "-" stays the option's value there.
    assert answer_words("4242-abc", "deny", "-x", -1.5)[-2:] == ["--record=-x", "--since=-1.5"]
    for bad in (
        ("4242;rm", "approve", None, None),
        ("4242", "approve; rm", None, None),
        ("4242", "approve", "a b", None),
        ("4242", "approve", "$(x)", None),
        ("4242", "approve", "a//b", None),
        ("4242", "approve", "a'b", None),
        ("4242", "approve", None, float("nan")),
        ("4242", "approve", None, float("inf")),
        ("-x", "approve", None, None),
        ("", "approve", None, None),
    ):
        with pytest.raises(ValueError):
            answer_words(*bad)
