"""The shipped rules of Copilot CLI, opencode and aider, read against their real output.

``tests/data/agents/{copilot,opencode,aider}-*.bin`` are every byte each agent wrote in
one run (see the README there). Their rules read the screen: fed through the screen
reader with the shipped rules, in pieces of the sizes a pty read gives, with the user's
answer where it was typed, each capture must give the states the agent showed, in
order. And what the rules and the notes rely on must be there byte for byte, as
measured: the prompt's words in one piece, the titles, no bell, no notification.
"""

from __future__ import annotations

import re

import pytest
from helpers.agent_terminal import PROJECT_ROOT

from tray.core.agent_tracker import AgentTracker
from tray.state.agent_files import shipped_agent_book

AGENTS = PROJECT_ROOT / "tests" / "data" / "agents"
ASKED = [("blocked", "permission"), ("working", None)]
EXPECTED = {
    "copilot-approve": ASKED,
    "copilot-deny": ASKED,
    "copilot-error": [],
    "opencode-approve": ASKED,
    "opencode-deny": ASKED,
    "opencode-error": [],
    # Its input prompt at start (nothing done yet), the question, the answer, and its
    # input prompt again.
    "aider-approve": [("idle", None), *ASKED, ("done", None)],
    "aider-deny": [("idle", None), *ASKED, ("done", None)],
    # An error ends nothing that had begun: its prompt comes back, still idle.
    "aider-error": [("idle", None)],
}
# Where the answer was typed: after the dialog's last words (Copilot, opencode), or just
# before aider draws its question again with the answer after it.
ANSWER_AFTER = {"copilot": b"to cancel", "opencode": b"enter \x1b[0m"}


def _answer_at(app: str, data: bytes) -> int:
    if app == "aider":
        return data.rindex(b"\x1b[0;38;5;40mRun shell command?")
    return data.rindex(ANSWER_AFTER[app]) + len(ANSWER_AFTER[app])


def _states(name: str, chunk: int) -> list[tuple[str, str | None]]:
    """The states the rules give, a repeat of the same one left out."""
    app, scenario = name.rsplit("-", 1)
    rules = shipped_agent_book().get(app)
    assert rules is not None
    tracker = AgentTracker(rules)
    data = (AGENTS / f"{name}.bin").read_bytes()
    said: list[tuple[str, str | None]] = []

    def read(part: bytes) -> None:
        for start in range(0, len(part), chunk):
            report = tracker.screen(part[start : start + chunk])
            if report is not None:
                said.append((report.state, report.kind))

    answered = len(data) if scenario == "error" else _answer_at(app, data)
    read(data[:answered])
    if answered < len(data):
        report = tracker.answered()
        assert report is not None
        said.append((report.state, report.kind))
        read(data[answered:])
    return [state for index, state in enumerate(said) if index == 0 or state != said[index - 1]]


@pytest.mark.parametrize("chunk", [97, 1024])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_capture_gives_the_states_the_agent_showed(name: str, chunk: int) -> None:
    assert _states(name, chunk) == EXPECTED[name]


# The prompt's words, each drawn in one piece, and how often.
PROMPT_WORDS = {
    "copilot": [(b"Do you want to run this command?", 1)],
    "opencode": [(b"Permission required", 1), (b"Allow once", 1), (b"Allow always", 1)],
    # Drawn, drawn again once the terminal answered its cursor query, then once more
    # with the answer after it.
    "aider": [(b"Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: ", 3)],
}
TITLES = {
    "copilot": {b"GitHub Copilot", b"create the marker file - GitHub Copilot"},
    # The session's title is the stand-in's first line, the start of a fenced block.
    "opencode": {b"OpenCode", b"OC | ```bash", b""},
    "aider": set(),
}


@pytest.mark.parametrize("scenario", ["approve", "deny"])
@pytest.mark.parametrize("app", sorted(PROMPT_WORDS))
def test_the_prompt_is_drawn_as_measured(app: str, scenario: str) -> None:
    data = (AGENTS / f"{app}-{scenario}.bin").read_bytes()
    for words, times in PROMPT_WORDS[app]:
        assert data.count(words) == times, words


@pytest.mark.parametrize("scenario", ["approve", "deny", "error"])
@pytest.mark.parametrize("app", sorted(TITLES))
def test_titles_and_no_bell_or_notification(app: str, scenario: str) -> None:
    data = (AGENTS / f"{app}-{scenario}.bin").read_bytes()
    titles = set(re.findall(rb"\x1b\][02];([^\x07\x1b]*)", data))
    assert titles <= TITLES[app]
    if scenario != "error":
        assert titles == TITLES[app]
    # Every BEL ends an OSC string (a title, a link, a colour query): none rings.
    assert b"\x07" not in re.sub(rb"\x1b\][^\x07\x1b]*\x07", b"", data)
    notifications = re.findall(rb"\x1b\](?:9|777|99);[^\x07\x1b]*", data)
    # opencode only asks whether the terminal takes OSC 99 notifications.
    assert set(notifications) <= {b"\x1b]99;i=opentui-notifications:p=?;"}
