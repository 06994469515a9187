"""Record what real Gemini CLI and Qwen Code write to their terminal, for tests/data/agents.

Run from the project root: ``.venv/bin/python tests/helpers/capture_gemini_qwen.py [OUT
[APP-SCENARIO ...]]`` (OUT defaults to tests/data/agents; named scenarios only, if any).
Each scenario runs the agent on a played terminal (no tray) against its loopback fake,
plays it to the end, quits it with ``/quit`` and saves every byte it wrote, unchanged, as
``OUT/<app>-<scenario>.bin``. Kept here so the captures can be taken again on a new
version of an agent.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `helpers` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.agent_terminal import PlayedTerminal
from helpers.captures import idle, write_captures
from helpers.gemini_qwen import start_gemini, start_qwen
from helpers.model_standins import (
    FakeChatCompletions,
    FakeGemini,
    function_responses,
    tool_messages,
)

FOCUS_ON = b"\x1b[?1004h"
FOCUS_OUT = b"\x1b[O"
# The titles that mark the prompt and the rest, as each agent writes them (OSC 0).
BLOCKED = {"gemini": b"\x1b]0;\xe2\x9c\x8b", "qwen-code": b"\x1b]0;\xe2\x9c\xb3"}
AT_REST = {"gemini": b"\x1b]0;\xe2\x97\x87  Ready", "qwen-code": b"\x1b]0;Qwen - "}
# The question each agent's own ask-the-user tool puts (the "question" scenarios), by its
# 0.61.0 / 0.24.4 schema: Gemini's "ask_user" wants a type, Qwen's "ask_user_question"
# takes no more keys than these.
_QUESTION = {
    "question": "Which file name should I use?",
    "header": "File name",
    "options": [
        {"label": "notes.txt", "description": "A plain text file"},
        {"label": "notes.md", "description": "A Markdown file"},
    ],
}
ASK = {
    "gemini": ("ask_user", {"questions": [{**_QUESTION, "type": "choice"}]}),
    "qwen-code": ("ask_user_question", {"questions": [_QUESTION]}),
}
FIRST_OPTION = "notes.txt"
# The key hints at the foot of each question dialog: it is drawn whole once they are.
DIALOG_DRAWN = {"gemini": "Enter to select", "qwen-code": "Enter: Select"}


@dataclass(frozen=True)
class Scenario:
    app: str
    name: str
    key: bytes | None = None  # typed at the prompt; None: no prompt comes (the error)
    fail_status: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    unfocused: bool = False  # answer the focus-report request with "focus out"
    question: bool = False  # the fake asks through the agent's question tool (ASK)


SCENARIOS = (
    Scenario("gemini", "approve", key=b"1"),
    Scenario("gemini", "deny", key=b"\x1b"),
    Scenario("gemini", "error", fail_status=400),
    Scenario(
        "gemini",
        "notify",
        key=b"1",
        settings={"general": {"enableNotifications": True}},
        unfocused=True,
    ),
    # Enter takes the option the dialog opens on, the first.
    Scenario("gemini", "question", key=b"\r", question=True),
    Scenario(
        "gemini",
        "question-notify",
        key=b"\r",
        settings={"general": {"enableNotifications": True}},
        unfocused=True,
        question=True,
    ),
    Scenario("qwen-code", "approve", key=b"1"),
    Scenario("qwen-code", "deny", key=b"\x1b"),
    Scenario("qwen-code", "error", fail_status=400),
    Scenario("qwen-code", "notify", key=b"1", env={"TERM_PROGRAM": "ghostty"}, unfocused=True),
    Scenario("qwen-code", "question", key=b"\r", question=True),
    Scenario(
        "qwen-code",
        "question-notify",
        key=b"\r",
        env={"TERM_PROGRAM": "ghostty"},
        unfocused=True,
        question=True,
    ),
)


def _after(terminal: PlayedTerminal, marker: bytes, start: int) -> Callable[[], bool]:
    """A check for ``marker`` in the output from ``start`` on."""
    return lambda: bytes(terminal.output).find(marker, start) >= 0


def _answer_sent(fake: FakeGemini | FakeChatCompletions) -> Callable[[], bool]:
    """A check that the agent sent the fake the user's answer, the first option."""
    if isinstance(fake, FakeGemini):
        return lambda: any(FIRST_OPTION in str(r) for r in function_responses(fake.requests))
    return lambda: any(FIRST_OPTION in str(m) for m in tool_messages(fake.requests))


def capture(scenario: Scenario, root: Path) -> bytes:
    fake: FakeGemini | FakeChatCompletions
    fake = FakeGemini() if scenario.app == "gemini" else FakeChatCompletions()
    fake.fail_status = scenario.fail_status
    if scenario.question:
        fake.tool_call = ASK[scenario.app]
    start = start_gemini if scenario.app == "gemini" else start_qwen
    with fake:
        terminal, work = start(root, fake.url, settings=scenario.settings, env_extra=scenario.env)
        try:
            if scenario.unfocused:
                terminal.wait_for("focus reports on", _after(terminal, FOCUS_ON, 0))
                terminal.write(FOCUS_OUT)
            if scenario.key is None:
                terminal.wait_for("the error", lambda: "API Error" in terminal.screen_text())
                mark = 0
            else:
                terminal.wait_for("the prompt", _after(terminal, BLOCKED[scenario.app], 0))
                if scenario.question:
                    # Qwen sets its title before it draws the dialog.
                    drawn = DIALOG_DRAWN[scenario.app]
                    terminal.wait_for("the question", lambda: drawn in terminal.screen_text())
                idle(terminal, 0.2)
                terminal.write(scenario.key)
                mark = bytes(terminal.output).find(BLOCKED[scenario.app]) + 1
                if scenario.question:
                    terminal.wait_for("the answer", _answer_sent(fake))
                elif scenario.key == b"1":
                    terminal.wait_for("approved-file", (work / "approved-file").exists)
            terminal.wait_for("the title at rest", _after(terminal, AT_REST[scenario.app], mark))
            idle(terminal, 0.5)
            terminal.write(b"/quit")
            terminal.wait_for("the typed /quit", lambda: "/quit" in terminal.screen_text())
            # An Enter hard on the heels of typed text reads as part of a paste (a newline).
            idle(terminal, 0.5)
            terminal.write(b"\r")
            terminal.wait_for("the agent to quit", lambda: not terminal.process.isalive(), 30)
            return bytes(terminal.output)
        finally:
            terminal.close()


def main(argv: list[str]) -> int:
    return write_captures(argv, SCENARIOS, capture, b"0")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
