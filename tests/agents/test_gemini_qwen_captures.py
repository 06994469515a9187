"""The shipped rules of Gemini CLI and Qwen Code, read against their real output.

``tests/data/agents/*.bin`` are every byte each agent wrote in one run (see the README
there). Fed through the launcher's own scanner and signal reader with the shipped rules,
each must give the states it showed, in order; and the scanner must find the titles the
rules rely on, as measured (the captures are the bytes measured: test_agent_captures.py).
"""

from __future__ import annotations

import pytest
from helpers.data import DATA

from tray.core.agents.tracker import AgentTracker
from tray.launcher.terminal_signals import TerminalSignals
from tray.protocol.output_events import Title
from tray.protocol.report import Report
from tray.protocol.scanner import Scanner
from tray.state.agent_files import shipped_agent_book

AGENTS = DATA / "agents"
PROMPT = [("idle", None), ("working", None), ("blocked", "permission")]
EXPECTED = {
    "gemini-approve": [*PROMPT, ("working", None), ("done", None)],
    "gemini-deny": [*PROMPT, ("done", None)],
    # An API error reads as the end of the turn: the title goes back to Ready.
    "gemini-error": [("idle", None), ("working", None), ("done", None)],
    # The title, then the notification's own words for the same prompt.
    "gemini-notify": [*PROMPT, ("blocked", "permission"), ("working", None), ("done", None)],
    # Its ask_user dialog: the same "Action Required" title as an approval, so it reads
    # as one; Enter answered it and the turn went on.
    "gemini-question": [*PROMPT, ("working", None), ("done", None)],
    # With notifications on, "Answer requested by agent" tells the question apart, after
    # the title.
    "gemini-question-notify": [*PROMPT, ("blocked", "question"), ("working", None), ("done", None)],
    "qwen-code-approve": [*PROMPT, ("working", None), ("done", None)],
    "qwen-code-deny": [*PROMPT, ("done", None)],
    "qwen-code-error": [("idle", None), ("working", None), ("done", None)],
    # The notification comes first; the title that follows says nothing new.
    "qwen-code-notify": [*PROMPT, ("working", None), ("done", None)],
    # Its ask_user_question dialog: the same "✳︎" title as an approval.
    "qwen-code-question": [*PROMPT, ("working", None), ("done", None)],
    # The notification, first, names the tool: a question; the title then says less.
    "qwen-code-question-notify": [
        ("idle", None),
        ("working", None),
        ("blocked", "question"),
        ("working", None),
        ("done", None),
    ],
}
# The words of each question's notification, kept on its report.
QUESTION_WORDS = {
    "gemini-question-notify": "Answer requested by agent | File name",
    "qwen-code-question-notify": "Qwen Code asks you a question",
}


def _pad(title: str) -> bytes:
    """A title as both write it: padded with spaces to 80 UTF-16 units (all of these
    characters are one each)."""
    return title.ljust(80).encode()


TITLES = {
    "gemini": [
        b"\x1b]0;" + _pad("\u25c7  Ready (api-server)") + b"\x07",
        b"\x1b]0;" + _pad("\u2726  Working\u2026 (api-server)") + b"\x07",
        b"\x1b]0;" + _pad("\u270b  Action Required (api-server)") + b"\x07",
    ],
    "qwen-code": [
        b"\x1b]0;" + _pad(title) + b"\x07\x1b]2;" + _pad(title) + b"\x07"
        for title in (
            "Qwen - api-server",
            "\u25d0\ufe0e Qwen - api-server",
            "\u2733\ufe0e Qwen - api-server",
        )
    ],
}


def _read(app: str, data: bytes, chunk: int, meanings: bool = True) -> tuple[list[Report], int]:
    """The reports the rules of ``app`` make of ``data``, and how many title events the
    scanner gave; ``meanings``: the scanner reports a title only when what the rules make
    of it changes, as the launcher makes it, or else every change of its text."""
    rules = shipped_agent_book().get(app)
    assert rules is not None
    signals = TerminalSignals("host", 10.0)
    signals.agent = AgentTracker(rules)
    scanner = Scanner()
    scanner.read_titles(bool(rules.titles), signals.title_meanings() if meanings else None)
    titles = 0
    for start in range(0, len(data), chunk):
        events = scanner.feed(data[start : start + chunk]).events
        titles += sum(isinstance(event, Title) for event in events)
        signals.output(events, 1.0)
    return list(signals.inferred), titles


def _reports(name: str, chunk: int) -> list[Report]:
    app = next(app for app in TITLES if name.startswith(f"{app}-"))
    return _read(app, (AGENTS / f"{name}.bin").read_bytes(), chunk)[0]


def _states(name: str, chunk: int) -> list[tuple[str, str | None]]:
    return [(report.state, report.kind) for report in _reports(name, chunk)]


@pytest.mark.parametrize("chunk", [1 << 20, 97])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_capture_gives_the_states_the_agent_showed(name: str, chunk: int) -> None:
    assert _states(name, chunk) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(QUESTION_WORDS))
def test_a_question_keeps_its_notification_words(name: str) -> None:
    questions = [r.msg for r in _reports(name, 1 << 20) if r.kind == "question"]
    assert questions == [QUESTION_WORDS[name]]


@pytest.mark.parametrize("scenario", ["approve", "deny", "question"])
@pytest.mark.parametrize("app", sorted(TITLES))
def test_the_scanner_finds_the_titles_the_rules_read(app: str, scenario: str) -> None:
    scanner = Scanner()
    scanner.read_titles(True)
    events = scanner.feed((AGENTS / f"{app}-{scenario}.bin").read_bytes()).events
    found = {event.text for event in events if isinstance(event, Title)}
    for title in TITLES[app]:
        text = title.removeprefix(b"\x1b]0;").split(b"\x07", 1)[0]
        assert text in found, (scenario, text)


# Whether the rules pass over some title of another agent: Qwen Code's read every title
# (any other than its spinner's and its prompt's is the end of a turn).
PASSES_OVER_TITLES = {"gemini": True, "qwen-code": False}


@pytest.mark.parametrize("chunk", [1 << 20, 61])
@pytest.mark.parametrize("app", sorted(TITLES))
def test_titles_reported_by_meaning_make_the_same_reports(app: str, chunk: int) -> None:
    # Every capture, of every agent, read with these rules: the titles they pass over
    # (another agent's spinner) are no events, and what the rules make of the rest is the
    # same as when every title is one.
    data = b"".join(path.read_bytes() for path in sorted(AGENTS.glob("*.bin")))
    by_meaning, fewer = _read(app, data, chunk)
    every, titles = _read(app, data, chunk, meanings=False)
    assert by_meaning == every
    assert len(every) > 10
    assert (fewer < titles) == PASSES_OVER_TITLES[app]
