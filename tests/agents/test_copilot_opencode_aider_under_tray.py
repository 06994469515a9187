"""Real Copilot CLI, opencode and aider under the real launcher, answered through `tray answer`.

None speaks OSC 7501: the launcher knows each from its rules file
(``tray/core/agents/copilot.toml``, ``opencode.toml``, ``aider.toml``) and reads the
permission prompt they draw on the screen; with `tray hooks install` done, Copilot's
hooks and opencode's plugin report it too. Each runs as ``tray run -- AGENT`` on a pty
whose outer side the test plays (it answers the terminal's queries and, after a refusal,
types the user's next message) against a loopback fake of an OpenAI-compatible API that
asks to run ``touch approved-file``. The answer goes as a script's would: ``tray answer
SESSION approve|deny --since T``, with the session id and ``since`` read from the state
file; the launcher's gate types the keys of the rules file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import under_tray
from helpers.agent_standins import COMMAND
from helpers.agent_terminal import PlayedTerminal
from helpers.copilot_opencode_aider import STARTERS
from helpers.hook_homes import install_hooks
from helpers.model_standins import FakeChatCompletions, tool_messages

# Runs the real agents from npm and PyPI (.agents): the marker lets a bare machine leave
# them out.
pytestmark = pytest.mark.agents


class AgentRun:
    """One agent under `tray run`, its fake, and where to look."""

    def __init__(
        self,
        app: str,
        terminal: PlayedTerminal,
        work: Path,
        state_dir: Path,
        fake: FakeChatCompletions,
    ) -> None:
        self.app = app
        self.terminal, self.work, self.state_dir, self.fake = terminal, work, state_dir, fake

    @property
    def marker(self) -> Path:
        return self.work / "approved-file"


@pytest.fixture
def calls() -> int:
    return 1


def _start(app: str, root: Path, calls: int, hooks: bool) -> Iterator[AgentRun]:
    state_dir = root / "state"
    with FakeChatCompletions(calls) as fake:
        if hooks:
            install_hooks(app, root / "home")
        terminal, work = STARTERS[app](root, fake.url, state_dir)
        try:
            yield AgentRun(app, terminal, work, state_dir, fake)
        finally:
            terminal.close()


@pytest.fixture(params=list(STARTERS))
def run(request: pytest.FixtureRequest, tmp_path: Path, calls: int) -> Iterator[AgentRun]:
    yield from _start(request.param, tmp_path, calls, hooks=False)


@pytest.fixture(params=["copilot", "opencode"])
def hooked(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AgentRun]:
    """The agent after `tray hooks install APP` in its home (aider has no hooks)."""
    yield from _start(request.param, tmp_path, 1, hooks=True)


# An Enter hard on the heels of typed text reads as part of a paste (a newline) in some
# of them: a person's Enter comes later than that.
ENTER_AFTER = 0.2


def _settle(terminal: PlayedTerminal) -> None:
    """Keep playing the terminal a while after a refusal: a key typed on the heels of
    Esc would read as Alt and that key (a person's next message comes later)."""
    settle = time.monotonic() + 3
    while time.monotonic() < settle:
        terminal.pump(0.05)


def _model_asked_again(run: AgentRun, asked: int) -> None:
    """Wait until the model got a request after the first ``asked`` ones."""
    run.terminal.wait_for("a new request to the model", lambda: len(run.fake.seen()) > asked, 60)


def test_tray_answer_approve_runs_the_tool(run: AgentRun) -> None:
    under_tray.answer(run.terminal, run.state_dir, run.app, "approve", timeout=120)
    run.terminal.wait_for("approved-file", run.marker.exists)
    if run.app == "aider":
        # Back at its input prompt: the one end of a turn it shows.
        under_tray.wait_done(run.terminal, run.state_dir)
    else:
        # The command's result goes back to the model, which ends the turn.
        run.terminal.wait_for("the tool's result", lambda: len(tool_messages(run.fake.seen())) == 1)
        assert under_tray.prompt(run.state_dir) is None


@pytest.mark.parametrize("calls", [2])
def test_approve_grants_only_this_one_use(run: AgentRun, calls: int) -> None:
    """The model asks for the same command twice: after the first approve the agent must
    ask again. "Yes, and don't ask again", "Allow always" or "(D)on't ask again" would
    let it run unasked (or, in aider, refuse it unasked)."""
    first = under_tray.answer(run.terminal, run.state_dir, run.app, "approve", timeout=120)
    run.terminal.wait_for("approved-file", run.marker.exists)
    run.marker.unlink()
    if run.app == "aider":
        # aider keeps a command's (empty) result to itself: the second call comes with
        # the user's next message.
        under_tray.wait_done(run.terminal, run.state_dir)
        under_tray.say(run.terminal, "once more", ENTER_AFTER)
    under_tray.answer(run.terminal, run.state_dir, run.app, "approve", after=first, timeout=120)
    run.terminal.wait_for("approved-file again", run.marker.exists)
    if run.app != "aider":
        run.terminal.wait_for("both results", lambda: len(tool_messages(run.fake.seen())) == 2)


def test_tray_answer_deny_refuses_and_the_agent_waits_for_the_user(run: AgentRun) -> None:
    terminal = run.terminal
    under_tray.answer(run.terminal, run.state_dir, run.app, "deny", timeout=120)
    terminal.wait_for("the prompt to go", lambda: under_tray.prompt(run.state_dir) is None)
    # Nothing runs, and the agent goes on waiting: for a while, then for a message.
    _settle(terminal)
    assert terminal.process.isalive()
    assert under_tray.prompt(run.state_dir) is None
    assert not run.marker.exists()
    asked = len(run.fake.seen())
    under_tray.say(terminal, "never mind", ENTER_AFTER)
    _model_asked_again(run, asked)
    assert terminal.process.isalive()
    assert not run.marker.exists()
    results = json.dumps(tool_messages(run.fake.seen()))
    if run.app == "copilot":
        # Copilot tells the model, with the user's next message, that the call stopped.
        assert "interrupted" in results
    elif run.app == "opencode":
        assert "rejected" in results
    else:
        assert results == "[]"  # aider sends a refused command nowhere


# What the hooks say at the prompt: the command, from the hook's own payload.
HOOK_MESSAGES = {
    "copilot": f"Run command: {COMMAND}",
    "opencode": f"opencode asks: bash {COMMAND}",
}


def test_with_hooks_the_prompt_and_the_turns_end_are_reported(hooked: AgentRun) -> None:
    """With `tray hooks install`, Copilot's hooks and opencode's plugin report the prompt
    (with the command) and the end of the turn, which the screen alone cannot."""

    def message() -> str | None:
        found = under_tray.prompt(hooked.state_dir)
        return None if found is None else found[1].msg

    # The screen may say it first; the hook's report follows and outranks it.
    hooked.terminal.wait_for("the hook's report", lambda: message() == HOOK_MESSAGES[hooked.app])
    under_tray.answer(hooked.terminal, hooked.state_dir, hooked.app, "approve", timeout=120)
    hooked.terminal.wait_for("approved-file", hooked.marker.exists)
    under_tray.wait_done(hooked.terminal, hooked.state_dir)


def test_with_hooks_deny_refuses_and_the_prompt_goes(hooked: AgentRun) -> None:
    """A refusal answered through tray: nothing runs, the prompt leaves the state file
    (Copilot's hooks say nothing after Esc: the answer itself must end the prompt)."""
    terminal = hooked.terminal
    under_tray.answer(hooked.terminal, hooked.state_dir, hooked.app, "deny", timeout=120)
    terminal.wait_for("the prompt to go", lambda: under_tray.prompt(hooked.state_dir) is None)
    _settle(terminal)
    assert terminal.process.isalive()
    assert not hooked.marker.exists()
    asked = len(hooked.fake.seen())
    under_tray.say(terminal, "never mind", ENTER_AFTER)
    _model_asked_again(hooked, asked)
    under_tray.wait_done(terminal, hooked.state_dir)
    assert not hooked.marker.exists()
