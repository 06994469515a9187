"""Record what real Gemini CLI and Qwen Code write to their terminal, for tests/data/agents.

Run from the project root: ``.venv/bin/python tests/helpers/capture_gemini_qwen.py [OUT]``
(OUT defaults to tests/data/agents). Each scenario runs the agent on a played terminal (no
tray) against its loopback fake, plays it to the end, quits it with ``/quit`` and saves
every byte it wrote, unchanged, as ``OUT/<app>-<scenario>.bin``. Kept here so the
captures can be taken again on a new version of an agent.
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
from helpers.model_standins import FakeChatCompletions, FakeGemini

FOCUS_ON = b"\x1b[?1004h"
FOCUS_OUT = b"\x1b[O"
# The titles that mark the prompt and the rest, as each agent writes them (OSC 0).
BLOCKED = {"gemini": b"\x1b]0;\xe2\x9c\x8b", "qwen-code": b"\x1b]0;\xe2\x9c\xb3"}
AT_REST = {"gemini": b"\x1b]0;\xe2\x97\x87  Ready", "qwen-code": b"\x1b]0;Qwen - "}


@dataclass(frozen=True)
class Scenario:
    app: str
    name: str
    key: bytes | None = None  # typed at the prompt; None: no prompt comes (the error)
    fail_status: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    unfocused: bool = False  # answer the focus-report request with "focus out"


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
    Scenario("qwen-code", "approve", key=b"1"),
    Scenario("qwen-code", "deny", key=b"\x1b"),
    Scenario("qwen-code", "error", fail_status=400),
    Scenario("qwen-code", "notify", key=b"1", env={"TERM_PROGRAM": "ghostty"}, unfocused=True),
)


def _after(terminal: PlayedTerminal, marker: bytes, start: int) -> Callable[[], bool]:
    """A check for ``marker`` in the output from ``start`` on."""
    return lambda: bytes(terminal.output).find(marker, start) >= 0


def capture(scenario: Scenario, root: Path) -> bytes:
    fake: FakeGemini | FakeChatCompletions
    fake = FakeGemini() if scenario.app == "gemini" else FakeChatCompletions()
    fake.fail_status = scenario.fail_status
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
                idle(terminal, 0.2)
                terminal.write(scenario.key)
                mark = bytes(terminal.output).find(BLOCKED[scenario.app]) + 1
                if scenario.key == b"1":
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
