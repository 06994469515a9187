"""Real Claude Code and Codex: they report the prompt, and the built-in keys answer it.

Each agent runs on a real pty against a loopback fake of its model API that asks to run
``touch approved-file``. The test plays the terminal (it answers the start-up queries)
and reads the agent's OSC 7501 reports with tray's scanner and record table. The answer goes
the way a script's does: ``tray answer SESSION approve --since T`` (its ``run``) to an
answer socket the test serves as the launcher does, whose gate
(:func:`tray.core.answers.gate.decide`) picks the keys. This is where the built-in table is
checked against the agents themselves; ``test_agents_under_tray.py`` runs the same agents
under the real launcher.
"""

from __future__ import annotations

import argparse
import io
import os
import select
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.agent_standins import (
    FakeAnthropic,
    FakeResponses,
    function_outputs,
    tool_results,
)
from helpers.agent_terminal import PlayedTerminal
from helpers.agents import start_claude, start_codex
from helpers.answer_keys import SHIPPED_SETTINGS

from tray.commands.answer import run
from tray.core.answers.gate import Decision, Request, decide
from tray.core.session.model import Session
from tray.launcher.answer_socket import AnswerSocket
from tray.state.answer_channel import socket_path
from tray.state.environment import Environment
from tray.state.liveness import process_start_token
from tray.state.store import StateStore

Starter = Callable[[Path, str], tuple[PlayedTerminal, Path]]
SESSION_ID = "4242-agent"

# Runs the real agents from npm (.agents): the marker lets a bare machine leave them out.
pytestmark = pytest.mark.agents


@pytest.fixture
def calls() -> int:
    return 1


@pytest.fixture
def claude(tmp_path: Path, calls: int) -> Iterator[tuple[PlayedTerminal, Path, FakeAnthropic]]:
    with FakeAnthropic(calls) as fake:
        terminal, work = start_claude(tmp_path, fake.url)
        try:
            yield terminal, work, fake  # type: ignore[misc]
        finally:
            terminal.close()


@pytest.fixture
def codex(tmp_path: Path, calls: int) -> Iterator[tuple[PlayedTerminal, Path, FakeResponses]]:
    with FakeResponses(calls) as fake:
        terminal, work = start_codex(tmp_path, fake.url)
        try:
            yield terminal, work, fake  # type: ignore[misc]
        finally:
            terminal.close()


def _answer(terminal: PlayedTerminal, answer: str, app: str, state_dir: Path) -> None:
    """Wait for the permission prompt, then answer it as a script would: `tray answer`
    with the record's `since`, to an answer socket that this test serves as the launcher
    does, whose gate picks the keys."""
    terminal.wait_for("the permission report", lambda: terminal.blocked() is not None)
    record = terminal.blocked()
    assert record is not None
    assert record.app == app
    StateStore(state_dir).ensure()
    StateStore(state_dir).write(
        Session(
            id=SESSION_ID,
            name="api-server",
            command=(app,),
            cwd=str(state_dir),
            pid=os.getpid(),
            child_pid=terminal.process.pid,
            started_at=1.0,
            updated_at=2.0,
            source="program",
            records=tuple(terminal.records()),
            pid_start=process_start_token(os.getpid()),
        )
    )

    def gate(request: Request) -> Decision:
        return decide(tuple(terminal.records()), request, None, SHIPPED_SETTINGS)

    def type_keys(keys: bytes) -> bool:
        terminal.write(keys)  # one write, and the test types nothing else meanwhile
        return True

    server = AnswerSocket(
        socket_path(state_dir, SESSION_ID), gate, type_keys, record_clock=terminal.clock
    )
    outcome: list[tuple[int, str]] = []
    client = threading.Thread(
        target=lambda: outcome.append(_tray_answer(state_dir, answer, repr(record.since)))
    )
    client.start()
    try:
        while client.is_alive():
            terminal.pump(0.01)
            ready, _, _ = select.select(server.fds(), [], [], 0.01)
            for fd in ready:
                server.on_readable(fd)
            server.tick()
    finally:
        client.join(10)
        server.close()
    assert outcome == [(0, "")]


def _tray_answer(state_dir: Path, answer: str, since: str) -> tuple[int, str]:
    stderr = io.StringIO()
    env = Environment(environ={"TRAY_STATE_DIR": str(state_dir)}, stderr=stderr)
    args = argparse.Namespace(
        session=SESSION_ID, answer=answer, record=None, since=since, host=None
    )
    return run(args, env), stderr.getvalue()


def _say(terminal: PlayedTerminal, text: str) -> None:
    """The user's next message: typed, seen on the screen, then Enter on its own."""
    shown = len(terminal.screen_text())
    terminal.write(text.encode())
    terminal.wait_for("the typed text", lambda: text in terminal.screen_text()[shown - 200 :])
    terminal.write(b"\r")


def test_claude_code_reports_its_prompt_and_1_approves(
    claude: tuple[PlayedTerminal, Path, FakeAnthropic],
) -> None:
    terminal, work, fake = claude
    _answer(terminal, "approve", "claude-code", work.parent / "state")
    terminal.wait_for("approved-file", (work / "approved-file").exists)
    terminal.wait_for("the turn's end", lambda: terminal.table.state() == "done")
    results = tool_results(fake.seen())
    assert results
    assert not any(r.get("is_error") for r in results)
    assert b"state=blocked:app=claude-code:kind=permission:msg=" in b"\n".join(terminal.reports)


def test_claude_code_esc_denies_and_the_model_sees_the_refusal(
    claude: tuple[PlayedTerminal, Path, FakeAnthropic],
) -> None:
    terminal, work, fake = claude
    _answer(terminal, "deny", "claude-code", work.parent / "state")
    terminal.wait_for("the prompt to go", lambda: terminal.blocked() is None)
    terminal.wait_for(
        "Claude to ask what to do instead", lambda: "should Claude do" in terminal.screen_text()
    )
    assert not (work / "approved-file").exists()
    _say(terminal, "never mind")
    terminal.wait_for(
        "the refusal to reach the model",
        lambda: any(r.get("is_error") for r in tool_results(fake.seen())),
    )
    assert not (work / "approved-file").exists()


def test_codex_reports_its_prompt_and_y_approves(
    codex: tuple[PlayedTerminal, Path, FakeResponses],
) -> None:
    terminal, work, fake = codex
    _answer(terminal, "approve", "codex", work.parent / "state")
    terminal.wait_for("approved-file", (work / "approved-file").exists)
    terminal.wait_for("the turn's end", lambda: terminal.table.state() == "done")
    assert function_outputs(fake.seen())
    assert b"state=blocked:app=codex:kind=permission" in b"\n".join(terminal.reports)


def test_codex_esc_denies_and_the_model_sees_the_abort(
    codex: tuple[PlayedTerminal, Path, FakeResponses],
) -> None:
    terminal, work, fake = codex
    _answer(terminal, "deny", "codex", work.parent / "state")
    terminal.wait_for("the prompt to go", lambda: terminal.blocked() is None)
    assert not (work / "approved-file").exists()
    _say(terminal, "never mind")

    def aborted() -> bool:
        return any(
            "abort" in str(o.get("output", "")).lower() for o in function_outputs(fake.seen())
        )

    terminal.wait_for("the abort to reach the model", aborted)
    assert not (work / "approved-file").exists()


@pytest.mark.parametrize("calls", [2])
@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_approve_grants_only_this_one_use(
    agent: str, calls: int, request: pytest.FixtureRequest
) -> None:
    """The model asks for the same command twice: after the first approve, the agent must
    ask again. An "always allow" or "don't ask again" would let the second run unasked."""
    terminal, work, _fake = request.getfixturevalue(agent)
    app = "claude-code" if agent == "claude" else "codex"
    state_dir = work.parent / "state"
    _answer(terminal, "approve", app, state_dir)
    terminal.wait_for("approved-file", (work / "approved-file").exists)
    first = terminal.table.records()[0].since
    terminal.wait_for("the first prompt to go", lambda: terminal.blocked() is None)
    terminal.wait_for("the second prompt", lambda: terminal.blocked() is not None)
    second = terminal.blocked()
    assert second is not None
    assert second.since != first
    (work / "approved-file").unlink()
    _answer(terminal, "approve", app, state_dir)
    terminal.wait_for("approved-file again", (work / "approved-file").exists)
    terminal.wait_for("the turn's end", lambda: terminal.table.state() == "done")
