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
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_standins import FINAL_TEXT
from helpers.agent_terminal import PlayedTerminal
from helpers.agents import TRAY
from helpers.gemini_qwen import start_gemini, start_qwen
from helpers.model_standins import (
    FakeChatCompletions,
    FakeGemini,
    function_responses,
    tool_messages,
)

from tray.core.session import Session
from tray.protocol.records import Record
from tray.state.store import StateStore

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


@pytest.fixture(params=["gemini", "qwen"])
def run(request: pytest.FixtureRequest, tmp_path: Path, calls: int) -> Iterator[AgentRun]:
    agent: str = request.param
    state_dir = tmp_path / "state"
    fake = FakeGemini(calls) if agent == "gemini" else FakeChatCompletions(calls)
    start = start_gemini if agent == "gemini" else start_qwen
    with fake:
        terminal, work = start(tmp_path, fake.url, state_dir)
        try:
            yield AgentRun(agent, terminal, work, state_dir, fake)
        finally:
            terminal.close()


def _session(state_dir: Path) -> Session | None:
    found, _ = StateStore(state_dir).read_all(time.time())
    return found[0] if len(found) == 1 else None


def _prompt(state_dir: Path) -> tuple[Session, Record] | None:
    """The session and its permission prompt's record, while one stands."""
    session = _session(state_dir)
    if session is None:
        return None
    for record in session.records:
        if record.state == "blocked" and record.kind == "permission" and record.since:
            return session, record
    return None


def _state(state_dir: Path) -> str | None:
    session = _session(state_dir)
    return None if session is None else session.state


def _answer(run: AgentRun, answer: str, after: float | None = None) -> float:
    """Wait for a prompt in the state file (newer than ``after``), check whose it is,
    then `tray answer` it as a script would while the test keeps playing the terminal.
    The prompt's ``since``."""
    terminal, state_dir = run.terminal, run.state_dir

    def prompt() -> tuple[Session, Record] | None:
        found = _prompt(state_dir)
        return found if found is not None and found[1].since != after else None

    terminal.wait_for("the prompt in the state file", lambda: prompt() is not None)
    found = prompt()
    assert found is not None
    session, record = found
    assert (session.state, record.app, record.kind) == ("blocked", run.app, "permission")
    since = record.since
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
    assert since is not None
    return since


# Gemini CLI 0.61.0 reads an Enter within 30 ms of a typed key as part of a paste, a
# newline (its FAST_RETURN_TIMEOUT): a person's Enter comes later than that.
ENTER_AFTER = 0.1


def _say(terminal: PlayedTerminal, text: str) -> None:
    """The user's next message: typed, seen on the screen, then Enter on its own."""
    shown = len(terminal.screen_text())
    terminal.write(text.encode())
    terminal.wait_for("the typed text", lambda: text in terminal.screen_text()[shown - 200 :])
    typed = time.monotonic()
    while time.monotonic() < typed + ENTER_AFTER:
        terminal.pump(0.01)
    terminal.write(b"\r")


def test_tray_answer_approve_runs_the_tool(run: AgentRun) -> None:
    _answer(run, "approve")
    run.terminal.wait_for("approved-file", run.marker.exists)
    run.terminal.wait_for("the session to be done", lambda: _state(run.state_dir) == "done")
    assert len(run.results()) == 1


@pytest.mark.parametrize("calls", [2])
def test_approve_grants_only_this_one_use(run: AgentRun, calls: int) -> None:
    """The model asks for the same command twice: after the first approve the agent must
    ask again. "Allow for this session" or "always allow" would let it run unasked."""
    first = _answer(run, "approve")
    run.terminal.wait_for("approved-file", run.marker.exists)
    run.marker.unlink()
    _answer(run, "approve", after=first)
    run.terminal.wait_for("approved-file again", run.marker.exists)
    run.terminal.wait_for("the session to be done", lambda: _state(run.state_dir) == "done")
    assert len(run.results()) == calls


def test_tray_answer_deny_refuses_and_the_agent_waits_for_the_user(run: AgentRun) -> None:
    terminal = run.terminal
    _answer(run, "deny")
    # The dialog goes, and the title is back at rest: the agent waits at its prompt.
    terminal.wait_for("the agent at rest", lambda: _state(run.state_dir) == "done")
    assert terminal.process.isalive()
    assert _prompt(run.state_dir) is None
    assert not run.marker.exists()
    assert run.results() == []
    asked = len(run.fake.seen())
    _say(terminal, "never mind")
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
