"""Real Claude Code and Codex under the real launcher, answered through `tray answer`.

Each agent runs as ``tray run -- AGENT`` on a pty whose outer side the test plays: it
answers the terminal's queries and, for the deny case, types the user's next message.
It never types the answer. That goes as a script's would: the real CLI, ``tray answer
SESSION approve|deny --since T``, with the session id and ``since`` read from the state
file, to the launcher's own answer socket; the launcher's gate picks the keys and types
them into the agent's input.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.agent_standins import FakeAnthropic, FakeResponses, function_outputs, tool_results
from helpers.agent_terminal import PlayedTerminal
from helpers.agents import TRAY, start_claude, start_codex

from tray.core.session import Session
from tray.state.store import StateStore

AgentRun = tuple[PlayedTerminal, Path, Path, FakeAnthropic | FakeResponses]

# Runs the real agents from npm (.agents): the marker lets a bare machine leave them out.
pytestmark = pytest.mark.agents


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[AgentRun]:
    state_dir = tmp_path / "state"
    fake = FakeAnthropic()
    with fake:
        terminal, work = start_claude(tmp_path, fake.url, state_dir)
        try:
            yield terminal, work, state_dir, fake
        finally:
            terminal.close()


@pytest.fixture
def codex(tmp_path: Path) -> Iterator[AgentRun]:
    state_dir = tmp_path / "state"
    fake = FakeResponses()
    with fake:
        terminal, work = start_codex(tmp_path, fake.url, state_dir)
        try:
            yield terminal, work, state_dir, fake
        finally:
            terminal.close()


def _session(state_dir: Path) -> Session | None:
    found, _ = StateStore(state_dir).read_all(time.time())
    return found[0] if len(found) == 1 else None


def _prompt(state_dir: Path) -> tuple[Session, float] | None:
    """The session and the ``since`` of its permission prompt, while one stands."""
    session = _session(state_dir)
    if session is None:
        return None
    for record in session.records:
        if record.state == "blocked" and record.kind == "permission" and record.since:
            return session, record.since
    return None


def _answer(terminal: PlayedTerminal, state_dir: Path, app: str, answer: str) -> Session:
    """Wait for the prompt in the state file, then `tray answer` it, as a script would;
    the test keeps playing the terminal meanwhile."""
    terminal.wait_for("the prompt in the state file", lambda: _prompt(state_dir) is not None)
    found = _prompt(state_dir)
    assert found is not None
    session, since = found
    assert session.records[0].app == app
    done: list[subprocess.CompletedProcess[str]] = []
    client = threading.Thread(
        target=lambda: done.append(
            subprocess.run(
                [*TRAY, "answer", session.id, answer, "--since", repr(since)],
                env={"TRAY_STATE_DIR": str(state_dir), "PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        )
    )
    client.start()
    terminal.wait_for("tray answer to return", lambda: not client.is_alive())
    client.join()
    assert (done[0].returncode, done[0].stderr) == (0, "")
    written = _session(state_dir)
    assert written is not None
    assert written.answered is not None
    assert (written.answered.since, written.answered.answer) == (since, answer)
    return session


def _say(terminal: PlayedTerminal, text: str) -> None:
    """The user's next message: typed, seen on the screen, then Enter on its own."""
    shown = len(terminal.screen_text())
    terminal.write(text.encode())
    terminal.wait_for("the typed text", lambda: text in terminal.screen_text()[shown - 200 :])
    terminal.write(b"\r")


def _state(state_dir: Path) -> str | None:
    session = _session(state_dir)
    return None if session is None else session.state


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_tray_answer_approve_runs_the_tool(agent: str, request: pytest.FixtureRequest) -> None:
    terminal, work, state_dir, fake = request.getfixturevalue(agent)
    _answer(terminal, state_dir, "claude-code" if agent == "claude" else "codex", "approve")
    terminal.wait_for("approved-file", (work / "approved-file").exists)
    terminal.wait_for("the session to be done", lambda: _state(state_dir) == "done")
    if agent == "claude":
        results = tool_results(fake.seen())
        assert results
        assert not any(r.get("is_error") for r in results)
    else:
        assert function_outputs(fake.seen())


def test_tray_answer_deny_refuses_claude_codes_tool(claude: AgentRun) -> None:
    terminal, work, state_dir, fake = claude
    _answer(terminal, state_dir, "claude-code", "deny")
    terminal.wait_for("the prompt to go", lambda: _prompt(state_dir) is None)
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


def test_tray_answer_deny_aborts_codexs_tool(codex: AgentRun) -> None:
    terminal, work, state_dir, fake = codex
    _answer(terminal, state_dir, "codex", "deny")
    terminal.wait_for("the prompt to go", lambda: _prompt(state_dir) is None)
    assert not (work / "approved-file").exists()
    _say(terminal, "never mind")

    def aborted() -> bool:
        return any(
            "abort" in str(o.get("output", "")).lower() for o in function_outputs(fake.seen())
        )

    terminal.wait_for("the abort to reach the model", aborted)
    assert not (work / "approved-file").exists()
