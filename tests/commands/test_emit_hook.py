"""``tray emit --hook APP EVENT``: one report with ``via=hook`` from an agent's hook, and
never a failure the agent would see: nothing on stdout, exit 0, at most one line on stderr.

Each test writes the agent's rules as a user file, so what is tested is the command, not
the shipped rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.hook_homes import drain, raw_terminal
from helpers.tray_home import TIMEOUT, Tray

from tray.commands.emit import MAX_PAYLOAD, read_payload
from tray.protocol.report import Report, parse_body
from tray.protocol.state import State

PREFIX = b"\x1b]7501;"
BEL = b"\x07"
RULES = """\
name = "Demo Agent"
commands = ["demo-agent"]
checked = "1.0"

[[hooks]]
event = "permissionRequest"
state = "blocked"
kind = "permission"
msg = "Run: {toolInput.command}"

[[hooks]]
event = "agentStop"
state = "done"

[[hooks]]
event = "notification:permission_prompt"
state = "blocked"
kind = "permission"
msg = "{message}"
"""
PAYLOAD = {"toolName": "bash", "toolInput": {"command": "touch approved-file"}}


@dataclass(frozen=True)
class HookRun:
    returncode: int
    stdout: bytes
    stderr: str
    written: bytes  # what reached the terminal


@pytest.fixture
def agent_home(tray_home: Tray) -> Tray:
    folder = tray_home.config_home / "tray" / "agents"
    folder.mkdir(parents=True)
    (folder / "demo-agent.toml").write_text(RULES)
    return tray_home


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    with raw_terminal() as opened:
        yield opened


def run_hook(
    tray: Tray,
    *args: str,
    payload: bytes | None = None,
    environ: dict[str, str] | None = None,
    master: int | None = None,
) -> HookRun:
    """``tray ARGS`` as an agent runs its hook: in a session of its own, with no
    controlling terminal, the payload on a pipe."""
    result = subprocess.run(
        [sys.executable, "-m", "tray", *args],
        input=payload,
        stdin=subprocess.DEVNULL if payload is None else None,
        env={**tray.environ, **(environ or {})},
        cwd=tray.home,
        capture_output=True,
        timeout=TIMEOUT,
        start_new_session=True,
        check=False,
    )
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr, stderr
    written = b"" if master is None else drain(master)
    return HookRun(result.returncode, result.stdout, stderr, written)


def emit_hook(
    tray: Tray, app: str, event: str, payload: bytes, tty: str | None, *, master: int | None = None
) -> HookRun:
    """``tray emit --hook APP EVENT`` as the agent runs it, with ``TRAY_TTY`` set to
    ``tty`` (unless None)."""
    environ = None if tty is None else {"TRAY_TTY": tty}
    return run_hook(
        tray, "emit", "--hook", app, event, payload=payload, environ=environ, master=master
    )


def one_report(written: bytes) -> bytes:
    """The body of the one report in ``written``, which must hold nothing else."""
    assert written.startswith(PREFIX), written
    assert written.endswith(BEL), written
    assert written.count(BEL) == 1, written
    return written[len(PREFIX) : -len(BEL)]


def test_the_hook_writes_one_report_with_via_hook(
    agent_home: Tray, terminal: tuple[int, str]
) -> None:
    master, name = terminal
    run = emit_hook(
        agent_home,
        "demo-agent",
        "permissionRequest",
        json.dumps(PAYLOAD).encode(),
        name,
        master=master,
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", "")
    body = one_report(run.written)
    assert body.split(b":")[-1] == b"via=hook"
    assert parse_body(body) == Report(
        State.BLOCKED, kind="permission", app="demo-agent", msg="Run: touch approved-file"
    )


def test_an_event_with_a_subtype_is_its_own_name(
    agent_home: Tray, terminal: tuple[int, str]
) -> None:
    """``tray hooks install`` gives Copilot's notification hook a matcher and passes the
    whole ``EVENT:SUBTYPE`` name; the plain event is another name."""
    master, name = terminal
    payload = {"message": "Run command: ls", "notification_type": "permission_prompt"}
    run = emit_hook(
        agent_home,
        "demo-agent",
        "notification:permission_prompt",
        json.dumps(payload).encode(),
        name,
        master=master,
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", "")
    assert parse_body(one_report(run.written)) == Report(
        State.BLOCKED, kind="permission", app="demo-agent", msg="Run command: ls"
    )
    run = emit_hook(
        agent_home, "demo-agent", "notification", json.dumps(payload).encode(), name, master=master
    )
    assert (run.returncode, run.written) == (0, b"")
    assert run.stderr.startswith("tray emit: demo-agent's rules say nothing about")


def test_a_payload_with_control_characters_is_cleaned(
    agent_home: Tray, terminal: tuple[int, str]
) -> None:
    master, name = terminal
    payload = {"toolInput": {"command": "rm -rf /\x1b]7501;state=done\x07\nnext line"}}
    run = emit_hook(
        agent_home,
        "demo-agent",
        "permissionRequest",
        json.dumps(payload).encode(),
        name,
        master=master,
    )
    assert run.returncode == 0
    report = parse_body(one_report(run.written))
    assert report is not None
    assert report.state == "blocked"
    assert report.msg is not None
    assert "\x1b" not in report.msg
    assert "\x07" not in report.msg
    assert "\n" not in report.msg


@pytest.mark.parametrize(
    "payload",
    [b"", b"not json", b"[1, 2]", b'{"toolInput": ' + b"[" * 100_000, b"{" * (MAX_PAYLOAD + 10)],
    ids=["empty", "not-json", "not-an-object", "too-deep", "too-large"],
)
def test_a_payload_that_is_no_use_still_gives_the_event_s_state(
    agent_home: Tray, terminal: tuple[int, str], payload: bytes
) -> None:
    master, name = terminal
    run = emit_hook(agent_home, "demo-agent", "permissionRequest", payload, name, master=master)
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", "")
    report = parse_body(one_report(run.written))
    assert report is not None
    assert (report.state, report.kind, report.app) == ("blocked", "permission", "demo-agent")
    assert report.msg == "Run:"


def test_stdin_that_is_a_terminal_is_no_payload_and_the_controlling_terminal_is_used(
    agent_home: Tray,
) -> None:
    # run_on_pty: the pty is stdin, stdout and the controlling terminal, and nobody types:
    # reading stdin as a payload would wait forever (and the run would time out).
    run = agent_home.run_on_pty("emit", "--hook", "demo-agent", "agentStop")
    assert (run.returncode, run.stderr) == (0, "")
    assert parse_body(one_report(run.written)) == Report(State.DONE, app="demo-agent")


def test_no_terminal_at_all_is_exit_0_with_one_line(agent_home: Tray) -> None:
    # A session of its own, and no TRAY_TTY.
    run = emit_hook(agent_home, "demo-agent", "agentStop", b"{}", None)
    assert (run.returncode, run.stdout) == (0, b"")
    (line,) = run.stderr.splitlines()
    assert line.startswith("tray emit: no terminal to write to")


def test_tray_tty_that_is_not_a_terminal_is_refused(agent_home: Tray, tmp_path: Path) -> None:
    planted = tmp_path / "not-a-tty"
    planted.write_bytes(b"")
    run = emit_hook(agent_home, "demo-agent", "agentStop", b"{}", str(planted))
    assert (run.returncode, run.stdout) == (0, b"")
    assert planted.read_bytes() == b""
    (line,) = run.stderr.splitlines()
    assert line == f"tray emit: no terminal to write to (TRAY_TTY={planted} is not a terminal)"


def test_a_fifo_at_tray_tty_does_not_hold_the_hook(agent_home: Tray, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for writing would wait for a reader forever
    run = emit_hook(agent_home, "demo-agent", "agentStop", b"{}", str(fifo))
    assert (run.returncode, run.stdout) == (0, b"")
    assert len(run.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("app", "event", "said"),
    [
        ("no-such-agent", "agentStop", "tray emit: no agent named 'no-such-agent'"),
        ("demo-agent", "sessionStart", "tray emit: demo-agent's rules say nothing about"),
    ],
)
def test_an_unknown_agent_or_event_writes_nothing_and_exits_0(
    agent_home: Tray, terminal: tuple[int, str], app: str, event: str, said: str
) -> None:
    master, name = terminal
    run = emit_hook(agent_home, app, event, json.dumps(PAYLOAD).encode(), name, master=master)
    assert (run.returncode, run.stdout, run.written) == (0, b"", b"")
    (line,) = run.stderr.splitlines()
    assert line.startswith(said)


def test_a_broken_user_rules_file_is_one_line_and_exit_0(
    agent_home: Tray, terminal: tuple[int, str]
) -> None:
    master, name = terminal
    (agent_home.config_home / "tray" / "agents" / "demo-agent.toml").write_text("name = [")
    run = emit_hook(agent_home, "demo-agent", "agentStop", b"{}", name, master=master)
    assert (run.returncode, run.stdout, run.written) == (0, b"", b"")
    assert len(run.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("emit", "working", "--hook", "demo-agent", "agentStop"),
        ("emit", "--hook", "demo-agent", "agentStop", "--msg", "x"),
        ("emit", "--hook", "demo-agent"),
    ],
)
def test_hook_with_other_arguments_is_a_usage_error(
    agent_home: Tray, terminal: tuple[int, str], args: tuple[str, ...]
) -> None:
    master, name = terminal
    run = run_hook(agent_home, *args, environ={"TRAY_TTY": name}, master=master)
    assert (run.returncode, run.written) == (2, b"")
    (line,) = run.stderr.splitlines()
    assert line.startswith("tray emit")


def test_the_plain_form_prefers_tray_tty(tray_home: Tray, terminal: tuple[int, str]) -> None:
    master, name = terminal
    run = run_hook(
        tray_home, "emit", "working", "--app", "make", environ={"TRAY_TTY": name}, master=master
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert one_report(run.written) == b"state=working:app=make"


def test_the_plain_form_refuses_a_tray_tty_that_is_not_a_terminal(
    tray_home: Tray, tmp_path: Path
) -> None:
    planted = tmp_path / "file"
    planted.write_bytes(b"")
    run = run_hook(tray_home, "emit", "working", environ={"TRAY_TTY": str(planted)})
    assert run.returncode == 1
    assert planted.read_bytes() == b""
    (line,) = run.stderr.splitlines()
    assert line.startswith("tray emit: no terminal to write to")


# read_payload itself, on pipes.


def test_a_whole_document_is_read_without_waiting_for_the_end_of_input() -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, json.dumps(PAYLOAD).encode())
        # The write end stays open: an agent may never close its hook's stdin. Waiting
        # for its end would take the hour, and the test's timeout would end it first.
        assert read_payload(read_end, seconds=3600) == PAYLOAD
    finally:
        os.close(read_end)
        os.close(write_end)


def test_an_open_silent_stdin_is_given_up_on() -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b'{"toolInput": ')  # half a document, then nothing
        started = time.monotonic()
        assert read_payload(read_end, seconds=0.3) is None
        assert time.monotonic() - started >= 0.3
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_closed_stdin_is_no_payload() -> None:
    read_end, write_end = os.pipe()
    os.close(write_end)
    os.close(read_end)
    assert read_payload(read_end, seconds=5) is None
