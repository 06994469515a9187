"""Real Gemini CLI and Qwen Code under the real launcher, answered through `tray answer`.

Neither speaks OSC 7501: the launcher knows them from ``tray/core/agents/gemini.toml``
and ``qwen-code.toml`` and reads their window titles. Each runs as ``tray run -- AGENT``
on a pty whose outer side the test plays (it answers the terminal's queries and, after a
refusal, types the user's next message) against a loopback fake of its model API that
asks to run ``touch approved-file``. The answer goes as a script's would: ``tray answer
SESSION approve|deny --since T``, with the session id and ``since`` read from the state
file; the launcher's gate types the keys of the rules file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import under_tray
from helpers.agent_standins import FINAL_TEXT
from helpers.agent_terminal import PlayedTerminal
from helpers.gemini_qwen import start_gemini, start_qwen
from helpers.model_standins import (
    FakeChatCompletions,
    FakeGemini,
    function_responses,
    tool_messages,
)

# Runs the real agents from npm (.agents): the marker lets a bare machine leave them out.
pytestmark = pytest.mark.agents

APPS = {"gemini": "gemini", "qwen": "qwen-code"}


class AgentRun:
    """One agent under `tray run`, its fake, and where to look."""

    def __init__(
        self, agent: str, terminal: PlayedTerminal, work: Path, state_dir: Path, fake: Any
    ) -> None:
        self.app = APPS[agent]
        self.terminal, self.work, self.state_dir, self.fake = terminal, work, state_dir, fake
        self._results: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
        self._results = function_responses if agent == "gemini" else tool_messages

    def results(self) -> list[dict[str, Any]]:
        """The tool results the agent sent back to its model."""
        return self._results(self.fake.seen())

    @property
    def marker(self) -> Path:
        return self.work / "approved-file"


@pytest.fixture
def calls() -> int:
    return 1


def _start(agent: str, root: Path, calls: int, hooks: bool) -> Iterator[AgentRun]:
    state_dir = root / "state"
    fake = FakeGemini(calls) if agent == "gemini" else FakeChatCompletions(calls)
    start = start_gemini if agent == "gemini" else start_qwen
    with fake:
        terminal, work = start(root, fake.url, state_dir, hooks=hooks)
        try:
            yield AgentRun(agent, terminal, work, state_dir, fake)
        finally:
            terminal.close()


@pytest.fixture(params=["gemini", "qwen"])
def run(request: pytest.FixtureRequest, tmp_path: Path, calls: int) -> Iterator[AgentRun]:
    yield from _start(request.param, tmp_path, calls, hooks=False)


@pytest.fixture(params=["gemini", "qwen"])
def hooked(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AgentRun]:
    """The agent after `tray hooks install APP` in its home."""
    yield from _start(request.param, tmp_path, 1, hooks=True)


# Gemini CLI 0.61.0 reads an Enter within 30 ms of a typed key as part of a paste, a
# newline (its FAST_RETURN_TIMEOUT): a person's Enter comes later than that.
ENTER_AFTER = 0.1


def test_tray_answer_approve_runs_the_tool(run: AgentRun) -> None:
    under_tray.answer(run.terminal, run.state_dir, run.app, "approve")
    run.terminal.wait_for("approved-file", run.marker.exists)
    under_tray.wait_done(run.terminal, run.state_dir)
    assert len(run.results()) == 1


@pytest.mark.parametrize("calls", [2])
def test_approve_grants_only_this_one_use(run: AgentRun, calls: int) -> None:
    """The model asks for the same command twice: after the first approve the agent must
    ask again. "Allow for this session" or "always allow" would let it run unasked."""
    first = under_tray.answer(run.terminal, run.state_dir, run.app, "approve")
    run.terminal.wait_for("approved-file", run.marker.exists)
    run.marker.unlink()
    under_tray.answer(run.terminal, run.state_dir, run.app, "approve", after=first)
    run.terminal.wait_for("approved-file again", run.marker.exists)
    under_tray.wait_done(run.terminal, run.state_dir)
    assert len(run.results()) == calls


def test_tray_answer_deny_refuses_and_the_agent_waits_for_the_user(run: AgentRun) -> None:
    terminal = run.terminal
    under_tray.answer(run.terminal, run.state_dir, run.app, "deny")
    # The dialog goes, and the title is back at rest: the agent waits at its prompt.
    terminal.wait_for("the agent at rest", lambda: under_tray.state(run.state_dir) == "done")
    assert terminal.process.isalive()
    assert under_tray.prompt(run.state_dir) is None
    assert not run.marker.exists()
    assert run.results() == []
    asked = len(run.fake.seen())
    under_tray.say(terminal, "never mind", ENTER_AFTER)
    terminal.wait_for("the message to reach the model", lambda: len(run.fake.seen()) > asked)
    said = terminal.screen_text().rindex("never mind")
    terminal.wait_for("the model's reply", lambda: FINAL_TEXT in terminal.screen_text()[said:])
    assert terminal.process.isalive()
    assert not run.marker.exists()
    if run.app == "qwen-code":
        # Qwen tells the model, with the user's next message, that the call was refused.
        assert ["[Operation Cancelled]" in json.dumps(m) for m in run.results()] == [True]
    else:
        assert run.results() == []  # Gemini drops the refused call from the conversation


# What the hooks say at the prompt, from the hook's own payload; the title alone says
# "Gemini CLI: action required" and "Qwen Code needs approval".
HOOK_MESSAGES = {
    "gemini": "Confirm Shell Command: touch approved-file",
    "qwen-code": "Qwen Code needs your permission to use run_shell_command",
}


def _message(run: AgentRun) -> str | None:
    found = under_tray.prompt(run.state_dir)
    return None if found is None else found[1].msg


def test_with_hooks_the_prompt_has_the_hooks_words_and_approve_runs_it(hooked: AgentRun) -> None:
    """With `tray hooks install`, the prompt carries the hook's words; the title still
    tells the rest: back to work at the answer, done at the turn's end."""
    hooked.terminal.wait_for(
        "the hook's words", lambda: _message(hooked) == HOOK_MESSAGES[hooked.app]
    )
    under_tray.answer(hooked.terminal, hooked.state_dir, hooked.app, "approve")
    hooked.terminal.wait_for("approved-file", hooked.marker.exists)
    under_tray.wait_done(hooked.terminal, hooked.state_dir)
    assert len(hooked.results()) == 1


def test_with_hooks_deny_refuses_and_the_title_tells_the_rest(hooked: AgentRun) -> None:
    """No hook fires at a refusal: the title, still read, says the agent is at rest."""
    terminal = hooked.terminal
    terminal.wait_for("the hook's words", lambda: _message(hooked) == HOOK_MESSAGES[hooked.app])
    under_tray.answer(terminal, hooked.state_dir, hooked.app, "deny")
    terminal.wait_for("the agent at rest", lambda: under_tray.state(hooked.state_dir) == "done")
    assert under_tray.prompt(hooked.state_dir) is None
    assert terminal.process.isalive()
    assert not hooked.marker.exists()
