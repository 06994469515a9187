"""Record what real Copilot CLI, opencode and aider write to their terminal, for
tests/data/agents.

Run from the project root: ``.venv/bin/python tests/helpers/capture_copilot_opencode_aider.py
[OUT [NAME...]]`` (OUT defaults to tests/data/agents; NAMEs such as ``aider-deny`` pick
scenarios). Each scenario runs the agent on a played terminal (no tray) against the
loopback chat fake, plays it to the end, quits it and saves every byte it wrote,
unchanged, as ``OUT/<app>-<scenario>.bin``. Kept here so the captures can be taken again
on a new version of an agent.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `helpers` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.agent_terminal import PlayedTerminal
from helpers.captures import idle, write_captures
from helpers.copilot_opencode_aider import PROMPT_TEXT, STARTERS, start_aider
from helpers.model_standins import FakeChatCompletions, tool_messages
from tray.core.agents.tracker import screen_text

KEYS = {
    "copilot": {"approve": b"1", "deny": b"\x1b", "question": b"\r"},
    "opencode": {"approve": b"\r", "deny": b"\x1b", "question": b"\r"},
    "aider": {"approve": b"y\r", "deny": b"n\r", "question": b"y\r"},
}
# The question scenario: the model asks the user which name the marker file should have,
# with Copilot's ask_user tool (a form of one field whose first choice Enter accepts) or
# opencode's question tool (Enter submits the first option). aider has no tools: its
# answer names a file git tracks but the chat lacks, and aider asks to add it ("y" and
# Enter add it, then it sends the reply on).
QUESTION = "Which name should the marker file have?"
CHOICES = ("approved-file", "marker")
ASKING: dict[str, tuple[str, dict[str, Any]]] = {
    "copilot": (
        "ask_user",
        {
            "message": QUESTION,
            "requestedSchema": {
                "properties": {"name": {"type": "string", "title": "File name", "enum": CHOICES}}
            },
        },
    ),
    "opencode": (
        "question",
        {
            "questions": [
                {
                    "question": QUESTION,
                    "header": "File name",
                    "options": [
                        {"label": name, "description": f"Call it {name}"} for name in CHOICES
                    ],
                }
            ]
        },
    ),
}
NOTES = "notes.txt"
NOTES_TEXT = "Call the marker file approved-file.\n"
AIDER_ASKS = f"The name to give the marker file is written in {NOTES}."
# What each draws, in one piece, when its question comes up.
QUESTION_TEXT = {
    "copilot": b"Copilot needs information.",
    "opencode": QUESTION.encode(),
    "aider": b"Add file to the chat?",
}
# Typed to leave: text, then Enter on its own (an Enter on the heels of text reads as a
# pasted newline in some of them).
QUIT = {"copilot": b"/exit", "opencode": b"\x03", "aider": b"/exit"}


@dataclass(frozen=True)
class Scenario:
    app: str
    name: str  # approve, deny, error or question


NAMES = ("approve", "deny", "error", "question")
SCENARIOS = tuple(Scenario(app, name) for app in STARTERS for name in NAMES)


def _text_after(terminal: PlayedTerminal, mark: int) -> str:
    """What the agent drew from byte ``mark`` on, as the launcher's screen rules see it."""
    return screen_text(bytes(terminal.output[mark:]))


def _back(app: str, terminal: PlayedTerminal, mark: int) -> bool:
    """Whether the agent drew its resting state after byte ``mark``: aider draws its
    input prompt again, Copilot its bar's "/ commands"."""
    text = _text_after(terminal, mark)
    if app == "aider":
        return re.search(r"(^|\s)diff> ", text) is not None
    return "/ commands" in text


def capture(scenario: Scenario, root: Path) -> bytes:
    app = scenario.app
    fake = FakeChatCompletions()
    fake.fail_status = 400 if scenario.name == "error" else None
    asking = scenario.name == "question"
    if asking and app == "aider":
        fake.first_text = AIDER_ASKS
    elif asking:
        fake.tool_call = ASKING[app]
    with fake:
        if asking and app == "aider":
            terminal, work = start_aider(root, fake.url, None, tracked={NOTES: NOTES_TEXT})
        else:
            terminal, work = STARTERS[app](root, fake.url, None)
        try:
            if asking:
                _ask(app, terminal, fake)
            else:
                _play(scenario, terminal, fake, work)
            idle(terminal, 2.0)
            terminal.write(QUIT[app])
            idle(terminal, 0.5)
            if app != "opencode":
                terminal.write(b"\r")
            terminal.wait_for("the agent to quit", lambda: not terminal.process.isalive(), 30)
            return bytes(terminal.output)
        finally:
            terminal.close()


def _play(
    scenario: Scenario, terminal: PlayedTerminal, fake: FakeChatCompletions, work: Path
) -> None:
    app = scenario.app
    if scenario.name == "error":
        terminal.wait_for("a model request", lambda: bool(fake.seen()), 120)
        mark = len(terminal.output)
        if app == "copilot":
            shown = lambda: "fake model failure" in _text_after(terminal, mark)  # noqa: E731
            terminal.wait_for("the failure", shown, 60)
        if app == "opencode":
            # It retries the failure 5 times with growing waits (about 80 s in all), after
            # a title request of its own; its bar, redrawn cell by cell, is no sure sign.
            tried = lambda: len(fake.seen()) >= 7  # noqa: E731
            terminal.wait_for("the last retry", tried, 240)
            idle(terminal, 5.0)
            return
        terminal.wait_for("the turn's end", lambda: _back(app, terminal, mark), 60)
        return
    terminal.wait_for("the prompt", lambda: PROMPT_TEXT[app] in terminal.output, 120)
    idle(terminal, 0.2)
    mark = len(terminal.output)
    terminal.write(KEYS[app][scenario.name])
    if scenario.name == "approve":
        terminal.wait_for("approved-file", (work / "approved-file").exists)
        if app != "aider":  # aider sends a silent command's result nowhere
            # The tool's result goes back to the model, which ends the turn.
            terminal.wait_for("the turn's last request", lambda: len(fake.seen()) >= 2)
            mark = len(terminal.output)
    elif app == "copilot":
        cancelled = lambda: "cancelled by user" in _text_after(terminal, mark)  # noqa: E731
        terminal.wait_for("the cancellation", cancelled)
        return
    if app == "opencode":
        # Its status bar, redrawn cell by cell, shows the end of a turn only in part.
        idle(terminal, 5.0)
        return
    terminal.wait_for("the turn's end", lambda: _back(app, terminal, mark), 60)
    assert (work / "approved-file").exists() == (scenario.name == "approve")


def _ask(app: str, terminal: PlayedTerminal, fake: FakeChatCompletions) -> None:
    """The question scenario: answered as a user would, 0.2 s after it is drawn, and
    played to the end of the turn."""
    terminal.wait_for("the question", lambda: QUESTION_TEXT[app] in terminal.output, 120)
    idle(terminal, 0.2)
    terminal.write(KEYS[app]["question"])
    if app == "aider":
        # Its next request carries the file the user let it add.
        added = lambda: NOTES_TEXT.strip() in str(fake.seen()[1:])  # noqa: E731
        terminal.wait_for("the file in the next request", added, 60)
    else:
        # The tool's result, the user's choice, goes back to the model.
        terminal.wait_for("the answer's request", lambda: bool(tool_messages(fake.seen())), 60)
        answer = str(tool_messages(fake.seen()))
        assert CHOICES[0] in answer, answer
    mark = len(terminal.output)
    if app == "opencode":
        idle(terminal, 5.0)  # its bar, redrawn cell by cell, shows the end only in part
        return
    terminal.wait_for("the turn's end", lambda: _back(app, terminal, mark), 60)


def main(argv: list[str]) -> int:
    return write_captures(argv, SCENARIOS, capture, b"02", _bells)


def _bells(data: bytes) -> str:
    """BEL bytes that end no OSC string: real bells."""
    count = len(re.findall(rb"\x07", re.sub(rb"\x1b\][^\x07\x1b]*\x07", b"", data)))
    return f"; bells {count}"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
