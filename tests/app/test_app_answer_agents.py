"""Real agents under a real `tray run`, a real `tray app`, and dunst: Approve and Deny
pressed on the real notification, and nothing typed into the terminal. Claude Code and
Codex report their prompts (OSC 7501); Gemini CLI and Qwen Code are read through their
rules files (their titles), and Copilot CLI, opencode and aider through the dialog they
draw, each with its default settings (opencode with bash set to "ask", or it never asks).

Each agent talks to a loopback stand-in for its model API that asks for ``touch
approved-file``. The test plays the terminal around `tray run` (it answers the
terminal's queries, as a terminal does) and never types the answer: dunst's context
menu (a stub dmenu) presses the button, the app asks the launcher over its answer
socket, and the launcher types the keys.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_standins import FakeAnthropic, FakeResponses
from helpers.agent_terminal import PlayedTerminal
from helpers.agents import start_claude, start_codex
from helpers.copilot_opencode_aider import start_aider, start_copilot, start_opencode
from helpers.desktop_apps import TIMEOUT, RunningApp, start_app_process
from helpers.desktop_services import BusMonitor, MenuDunst, start_menu_dunst, stop_process
from helpers.gemini_qwen import start_gemini, start_qwen
from helpers.hook_homes import install_hooks
from helpers.model_standins import FakeChatCompletions, FakeGemini
from helpers.waiting import barrier, wait_for

from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL
from tray.core.session.model import Session
from tray.state.store import StateStore

# done_after = 0: a state after the answer that were let through would ping at once.
SETTLE = 0.5
CONFIG = f"[notify]\nsettle = {SETTLE}\ndone_after = 0\n"
AGENT_TIMEOUT = 90.0

# Runs the real agents from npm (.agents): the marker lets a bare machine leave them out.
pytestmark = pytest.mark.agents


class Pumped:
    """The played terminal, read (and its queries answered) on a thread of its own."""

    def __init__(self, terminal: PlayedTerminal) -> None:
        self.terminal = terminal
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        while not self._stop.is_set() and self.terminal.process.isalive():
            self.terminal.pump(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.terminal.close()


def claude_session(state_dir: Path) -> Session | None:
    sessions, _ = StateStore(state_dir).read_all(time.time())
    return next((s for s in sessions if s.id != "marker"), None)


def state_of(state_dir: Path) -> str | None:
    session = claude_session(state_dir)
    return None if session is None else session.state


@pytest.fixture
def desk(
    request: pytest.FixtureRequest,
    xvfb_display: str,
    desktop_env: dict[str, str],
    tmp_path: Path,
    trayer: object,
) -> Iterator[tuple[MenuDunst, RunningApp, BusMonitor]]:
    pick = request.param
    menu_dunst = start_menu_dunst(xvfb_display, tmp_path / "md", pick)
    env = {**desktop_env, **menu_dunst.bus_env}
    monitor = BusMonitor(env, tmp_path / "monitor.log")
    app = start_app_process(env, tmp_path, CONFIG)
    try:
        yield menu_dunst, app, monitor
    finally:
        stop_process(app.proc)
        monitor.stop()
        menu_dunst.stop()
    assert "Traceback" not in app.log, app.log


# Each agent, and the stand-in for its model API.
AGENTS: dict[str, tuple[Callable[..., tuple[PlayedTerminal, Path]], Callable[[int], Any]]] = {
    "claude": (start_claude, FakeAnthropic),
    "codex": (start_codex, FakeResponses),
    "gemini": (start_gemini, FakeGemini),
    "qwen": (start_qwen, FakeChatCompletions),
    # After `tray hooks install`: their hooks say when a turn ends (the screen does not).
    "copilot": (start_copilot, FakeChatCompletions),
    "opencode": (start_opencode, FakeChatCompletions),
    # Read from what it draws, as it is.
    "aider": (start_aider, FakeChatCompletions),
}
HOOKED = ("copilot", "opencode")


def agent_under_tray(
    agent: str, tmp_path: Path, app: RunningApp, model_url: str
) -> tuple[Pumped, Path]:
    start, _fake = AGENTS[agent]
    if agent in HOOKED:
        install_hooks(agent, tmp_path / "agent" / "home")
    terminal, work = start(tmp_path / "agent", model_url, app.state_dir)
    return Pumped(terminal), work


def press_on_the_prompt(menu_dunst: MenuDunst, monitor: BusMonitor, state_dir: Path) -> None:
    [call] = monitor.wait_for_notify(1, AGENT_TIMEOUT)
    assert call.summary.endswith("needs approval"), call.summary
    assert "approve" in call.actions and "deny" in call.actions
    assert state_of(state_dir) == "blocked"
    dunst = menu_dunst.dunst
    wait_for(lambda: dunst.count() == 1, TIMEOUT, what="dunst to show it")
    dunst.ctl("context")  # the stub dmenu presses the button by its label


@pytest.mark.parametrize("agent", list(AGENTS))
@pytest.mark.parametrize("desk", [APPROVE_LABEL], indirect=True)
def test_approve_on_the_notification_runs_the_tool(
    agent: str, desk: tuple[MenuDunst, RunningApp, BusMonitor], tmp_path: Path
) -> None:
    menu_dunst, app, monitor = desk
    (tmp_path / "agent").mkdir()
    with AGENTS[agent][1](1) as fake:
        pumped, work = agent_under_tray(agent, tmp_path, app, fake.url)
        try:
            press_on_the_prompt(menu_dunst, monitor, app.state_dir)
            wait_for((work / "approved-file").exists, AGENT_TIMEOUT, what="approved-file")
            wait_for(
                lambda: state_of(app.state_dir) == "done", AGENT_TIMEOUT, what="the turn's end"
            )
            session = claude_session(app.state_dir)
            assert session is not None and session.answered is not None
            assert session.answered.answer == "approve"
        finally:
            pumped.stop()


@pytest.mark.parametrize("agent", list(AGENTS))
@pytest.mark.parametrize("desk", [DENY_LABEL], indirect=True)
def test_deny_on_the_notification_refuses_it_and_the_state_after_is_quiet(
    agent: str, desk: tuple[MenuDunst, RunningApp, BusMonitor], tmp_path: Path
) -> None:
    menu_dunst, app, monitor = desk
    (tmp_path / "agent").mkdir()
    with AGENTS[agent][1](1) as fake:
        pumped, work = agent_under_tray(agent, tmp_path, app, fake.url)
        try:
            press_on_the_prompt(menu_dunst, monitor, app.state_dir)
            wait_for(
                lambda: state_of(app.state_dir) not in (None, "blocked"),
                AGENT_TIMEOUT,
                what="the prompt to go",
            )
            if agent == "claude":
                wait_for(
                    lambda: "should Claude do" in pumped.terminal.screen_text(),
                    AGENT_TIMEOUT,
                    what="Claude to ask what to do instead",
                )
            session = claude_session(app.state_dir)
            assert session is not None and session.answered is not None
            assert session.answered.answer == "deny"
            # A ping of the state after the deny would come before the barrier's.
            summaries = barrier(app.state_dir, monitor, 2, SETTLE)
            assert summaries[1:] == ["marker needs approval"], summaries
            assert not (work / "approved-file").exists()
        finally:
            pumped.stop()
