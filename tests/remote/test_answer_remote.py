"""Answering a session on another machine: ``tray answer`` there, over a real sshd on
loopback, through :func:`tray.remote.actions.answer_remote` (the app's way) and
``tray answer --host NAME`` (a script's way).

Two launchers answer on the remote side:
- a thread of this test that serves the remote state directory's answer socket with the
  real gate (:func:`tray.core.answers.gate.decide`) over records of its own, and records what it
  would type;
- a real ``tray run`` in a real tmux window, of a small program that reports a
  permission prompt with ``app=claude-code`` (OSC 7501) and writes what reaches its
  input to a file.
The remote's ``tray answer`` runs for real in both, started by the remote's sshd.
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.fake_launcher import FakeLauncher
from helpers.sshd import Remote, client_environ, hosts_toml, run_tmux
from helpers.waiting import wait_for

from tray.cli import main
from tray.core.answers.gate import SETTLE
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.remote.actions import answer_remote, fetch_state
from tray.state.environment import Environment
from tray.state.liveness import process_start_token

SESSION_ID = "4242-abc123"


def blocked(since: float, record_id: str = "") -> Record:
    return Record(
        record_id, State.BLOCKED, "permission", None, "claude-code", None, None, since, since
    )


def remote_launcher(remote: Remote, records: list[Record]) -> FakeLauncher:
    """The remote session's launcher, played by a thread (started by the caller): its
    session file on the remote, and the real socket and gate behind it."""
    remote.write(
        Session(
            id=SESSION_ID,
            name="api-server",
            command=("claude",),
            cwd="/home/me/api-server",
            pid=os.getpid(),
            child_pid=None,
            started_at=1.0,
            updated_at=2.0,
            source="program",
            records=tuple(records),
            pid_start=process_start_token(os.getpid()),
        )
    )
    return FakeLauncher(remote.state_dir, SESSION_ID, records, serving=False)


@pytest.fixture
def played(remote: Remote) -> Iterator[FakeLauncher]:
    launcher = remote_launcher(remote, [blocked(time.time() - SETTLE - 1)])
    launcher.thread.start()
    yield launcher
    launcher.stop.set()
    launcher.thread.join(5)
    launcher.socket.close()


def tray_answer(tmp_path: Path, host: HostConfig, *words: str) -> tuple[int, str]:
    """``tray answer ... --host devbox`` on this machine, with ``host`` in its config."""
    config = tmp_path / "local-config"
    (config / "tray").mkdir(parents=True, exist_ok=True)
    (config / "tray" / "config.toml").write_text(hosts_toml(host), encoding="utf-8")
    stdout, stderr = io.StringIO(), io.StringIO()
    environ = {
        **client_environ(),
        "XDG_CONFIG_HOME": str(config),
        "TRAY_STATE_DIR": str(tmp_path / "local-state"),
    }
    code = main(
        ["answer", *words, "--host", host.name],
        Environment(environ=environ, stdout=stdout, stderr=stderr),
    )
    assert stdout.getvalue() == ""
    return code, stderr.getvalue()


def test_answer_remote_reaches_the_remote_launcher(host: HostConfig, played: FakeLauncher) -> None:
    since = played.records[0].since
    assert since is not None
    ok, line = answer_remote(host, SESSION_ID, "approve", None, since, environ=client_environ())
    assert (ok, line) == (True, "answered on devbox")
    assert played.typed == [b"1"]
    # The app's own id for the session, and the root named by an empty record.
    ok, line = answer_remote(
        host, f"host:devbox/{SESSION_ID}", "deny", "", None, environ=client_environ()
    )
    assert ok, line
    assert played.typed == [b"1", b"\x1b"]


def test_a_remote_refusal_is_the_remote_launchers_reason(
    host: HostConfig, played: FakeLauncher
) -> None:
    ok, line = answer_remote(host, SESSION_ID, "approve", None, 12.5, environ=client_environ())
    assert (ok, line) == (False, "api-server: the prompt has changed; not answered")
    ok, line = answer_remote(host, "9-nope", "approve", None, None, environ=client_environ())
    assert (ok, line) == (False, "no session 9-nope")
    assert played.typed == []


def test_tray_answer_with_host(tmp_path: Path, host: HostConfig, played: FakeLauncher) -> None:
    since = played.records[0].since
    assert tray_answer(tmp_path, host, SESSION_ID, "approve", "--since", repr(since)) == (0, "")
    assert played.typed == [b"1"]
    code, err = tray_answer(tmp_path, host, SESSION_ID, "deny", "--since", "12.5")
    assert code == 1
    assert err == "tray answer: devbox: api-server: the prompt has changed; not answered\n"
    # A session id of the app's own form names its host.
    code, err = tray_answer(tmp_path, host, f"host:devbox/{SESSION_ID}", "deny")
    assert (code, err) == (0, "")
    assert played.typed == [b"1", b"\x1b"]


@pytest.mark.parametrize(
    ("session_id", "record", "since"),
    [
        ("4242;touch pwned", None, None),
        ("$(touch pwned)", None, None),
        ("-oProxyCommand=touch", None, None),
        (SESSION_ID, "a b", None),
        (SESSION_ID, "$(touch pwned)", None),
        (SESSION_ID, "x'y", None),
        (SESSION_ID, None, float("nan")),
        (SESSION_ID, None, float("inf")),
        ("host:other/4242-abc", None, None),
    ],
)
def test_hostile_words_never_reach_ssh(
    tmp_path: Path, session_id: str, record: str | None, since: float | None
) -> None:
    # They come from the remote host's own state; an ssh that would run notes it.
    spy = tmp_path / "ssh"
    ran = tmp_path / "ssh-ran"
    spy.write_text(f"#!/bin/sh\ntouch {ran}\nexit 0\n", encoding="utf-8")
    spy.chmod(0o755)
    host = HostConfig("devbox", "me@devbox")
    ok, line = answer_remote(host, session_id, "approve", record, since, ssh=str(spy))
    assert not ok
    assert "\n" not in line
    assert not ran.exists()


# A real `tray run` on the remote side.

AGENT = """\
import os, sys, tty
tty.setcbreak(0)
sys.stdout.write("\\x1b]7501;state=blocked:kind=permission:app=claude-code\\x07")
sys.stdout.flush()
data = os.read(0, 64)
with open(sys.argv[1], "wb") as out:
    out.write(data)
"""


def test_the_keys_reach_a_real_remote_program(
    tmp_path: Path, host: HostConfig, remote: Remote, tmux_socket: Path
) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    typed = tmp_path / "typed"
    command = f"{remote.tray} run --name agent -- {sys.executable} {agent} {typed}"
    run_tmux(tmux_socket, "new-window", "-t", "work:1", "-c", str(tmp_path), command)

    def prompt() -> tuple[str, float] | None:
        for session in fetch_state(host, environ=client_environ()).sessions:
            for record in session.records:
                if record.state == "blocked" and record.since is not None:
                    return session.id, record.since
        return None

    found = wait_for(prompt, what="the remote agent to block")
    assert found is not None
    session_id, since = found

    # A stale since is refused, and nothing is typed.
    ok, line = answer_remote(
        host, session_id, "approve", None, since - 10, environ=client_environ()
    )
    assert (ok, line) == (False, "agent: the prompt has changed; not answered")
    code, err = tray_answer(tmp_path, host, session_id, "approve", "--since", repr(since - 10))
    assert code == 1
    assert err == "tray answer: devbox: agent: the prompt has changed; not answered\n"
    assert not typed.exists()

    ok, line = answer_remote(host, session_id, "approve", None, since, environ=client_environ())
    assert (ok, line) == (True, "answered on devbox")
    # The program's first read is the answer alone: nothing came before it.
    wait_for(typed.exists, what="the program to read its input")
    assert wait_for(typed.read_bytes, what="what it read") == b"1"
