"""Real Claude Code and Codex under the real launcher, answered through `tray answer`.

Each agent runs as ``tray run -- AGENT`` on a pty whose outer side the test plays: it
answers the terminal's queries and, for the deny case, types the user's next message.
It never types the answer. That goes as a script's would: the real CLI, ``tray answer
SESSION approve|deny --since T``, with the session id and ``since`` read from the state
file, to the launcher's own answer socket; the launcher's gate picks the keys and types
them into the agent's input.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import under_tray
from helpers.agent_standins import FakeAnthropic, FakeResponses, function_outputs, tool_results
from helpers.agent_terminal import PlayedTerminal
from helpers.agents import start_claude, start_codex

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


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_tray_answer_approve_runs_the_tool(agent: str, request: pytest.FixtureRequest) -> None:
    terminal, work, state_dir, fake = request.getfixturevalue(agent)
    under_tray.answer(
        terminal, state_dir, "claude-code" if agent == "claude" else "codex", "approve"
    )
    terminal.wait_for("approved-file", (work / "approved-file").exists)
    under_tray.wait_done(terminal, state_dir)
    if agent == "claude":
        results = tool_results(fake.seen())
        assert results
        assert not any(r.get("is_error") for r in results)
    else:
        assert function_outputs(fake.seen())


def test_tray_answer_deny_refuses_claude_codes_tool(claude: AgentRun) -> None:
    terminal, work, state_dir, fake = claude
    under_tray.answer(terminal, state_dir, "claude-code", "deny")
    terminal.wait_for("the prompt to go", lambda: under_tray.prompt(state_dir) is None)
    terminal.wait_for(
        "Claude to ask what to do instead", lambda: "should Claude do" in terminal.screen_text()
    )
    assert not (work / "approved-file").exists()
    under_tray.say(terminal, "never mind")
    terminal.wait_for(
        "the refusal to reach the model",
        lambda: any(r.get("is_error") for r in tool_results(fake.seen())),
    )
    assert not (work / "approved-file").exists()


def test_tray_answer_deny_aborts_codexs_tool(codex: AgentRun) -> None:
    terminal, work, state_dir, fake = codex
    under_tray.answer(terminal, state_dir, "codex", "deny")
    terminal.wait_for("the prompt to go", lambda: under_tray.prompt(state_dir) is None)
    assert not (work / "approved-file").exists()
    under_tray.say(terminal, "never mind")

    def aborted() -> bool:
        return any(
            "abort" in str(o.get("output", "")).lower() for o in function_outputs(fake.seen())
        )

    terminal.wait_for("the abort to reach the model", aborted)
    assert not (work / "approved-file").exists()
