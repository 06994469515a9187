"""The shipped rules of Copilot CLI, opencode and aider, read against their real output.

``tests/data/agents/{copilot,opencode,aider}-*.bin`` are every byte each agent wrote in
one run (see the README there). Their rules read the screen: fed through the screen
reader with the shipped rules, in pieces of the sizes a pty read gives, with the user's
answer where it was typed, each capture must give the states the agent showed, in
order; and tray's scanner must find in it what the rules rely on: the titles, no bell,
no notification (the captures are the bytes measured: test_agent_captures.py). A
question reads as one, never as a permission prompt, whose answer keys tray would type
into it; so do the payloads their hooks gave for it.
"""

from __future__ import annotations

import pytest
from helpers.data import DATA

from tray.core.agents.rules import hook_report
from tray.core.agents.tracker import AgentTracker
from tray.protocol.output_events import Bell, Event, Osc, Query, Title
from tray.protocol.report import Report
from tray.protocol.scanner import Scanner
from tray.state.agent_files import shipped_agent_book

AGENTS = DATA / "agents"
ASKED = [("blocked", "permission"), ("working", None)]
QUESTIONED = [("blocked", "question"), ("working", None)]
EXPECTED = {
    "copilot-approve": ASKED,
    "copilot-deny": ASKED,
    "copilot-error": [],
    # Its ask_user form, then Enter.
    "copilot-question": QUESTIONED,
    "opencode-approve": ASKED,
    "opencode-deny": ASKED,
    "opencode-error": [],
    # Its question dialog, then Enter.
    "opencode-question": QUESTIONED,
    # Its input prompt at start (nothing done yet), the question, the answer, and its
    # input prompt again.
    "aider-approve": [("idle", None), *ASKED, ("done", None)],
    "aider-deny": [("idle", None), *ASKED, ("done", None)],
    # An error ends nothing that had begun: its prompt comes back, still idle.
    "aider-error": [("idle", None)],
    # "Add file to the chat?" for the file its reply named, "y" and Enter, its reply
    # sent on with the file, and its input prompt again.
    "aider-question": [("idle", None), *QUESTIONED, ("done", None)],
}
# Where the answer was typed: after the dialog's last words (Copilot, opencode), or just
# before aider draws its question again with the answer after it.
ANSWER_AFTER = {
    "copilot": b"to cancel",
    "copilot-question": b"\x1b[m cancel",
    "opencode": b"enter \x1b[0m",
    "opencode-question": b"dismiss",
    "aider": b"\x1b[0;38;5;40mRun shell command?",
    "aider-question": b"\x1b[0;38;5;40mAdd file to the chat?",
}
# The message of each question's report.
QUESTION_MSG = {
    "copilot": "Copilot asks you a question",
    "opencode": "opencode asks you a question",
    "aider": "aider asks to add a file to the chat",
}


def _answer_at(app: str, scenario: str, data: bytes) -> int:
    after = ANSWER_AFTER.get(f"{app}-{scenario}", ANSWER_AFTER[app])
    if app == "aider":
        return data.rindex(after)
    return data.rindex(after) + len(after)


def _reports(name: str, chunk: int) -> list[Report]:
    """The reports the rules give, the user's answer read where it was typed."""
    app, scenario = name.rsplit("-", 1)
    rules = shipped_agent_book().get(app)
    assert rules is not None
    tracker = AgentTracker(rules)
    data = (AGENTS / f"{name}.bin").read_bytes()
    said: list[Report] = []

    def read(part: bytes) -> None:
        for start in range(0, len(part), chunk):
            report = tracker.screen(part[start : start + chunk])
            if report is not None:
                said.append(report)

    answered = len(data) if scenario == "error" else _answer_at(app, scenario, data)
    read(data[:answered])
    if answered < len(data):
        report = tracker.answered()
        assert report is not None
        said.append(report)
        read(data[answered:])
    return said


def _states(name: str, chunk: int) -> list[tuple[str, str | None]]:
    """The states the rules give, a repeat of the same one left out."""
    said = [(report.state, report.kind) for report in _reports(name, chunk)]
    return [state for index, state in enumerate(said) if index == 0 or state != said[index - 1]]


@pytest.mark.parametrize("chunk", [97, 1024])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_capture_gives_the_states_the_agent_showed(name: str, chunk: int) -> None:
    assert _states(name, chunk) == EXPECTED[name]


@pytest.mark.parametrize("app", sorted(QUESTION_MSG))
def test_a_question_says_it_is_one(app: str) -> None:
    asked = [r.msg for r in _reports(f"{app}-question", 1024) if r.state == "blocked"]
    assert asked == [QUESTION_MSG[app]]


# The window titles each agent set (OSC 0 and 2), in every run but its error's.
TITLES = {
    "copilot": {b"GitHub Copilot", b"create the marker file - GitHub Copilot"},
    # The session's title is the stand-in's first line, the start of a fenced block.
    "opencode": {b"OpenCode", b"OC | ```bash", b""},
    "aider": set(),
}


def _scanned(data: bytes, chunk: int) -> list[Event]:
    """The events tray's scanner finds in ``data``, with every title change one."""
    scanner = Scanner()
    scanner.read_titles(True)
    events: list[Event] = []
    for start in range(0, len(data), chunk):
        events.extend(scanner.feed(data[start : start + chunk]).events)
    return events


@pytest.mark.parametrize("chunk", [97, 1 << 20])
@pytest.mark.parametrize("scenario", ["approve", "deny", "error", "question"])
@pytest.mark.parametrize("app", sorted(TITLES))
def test_the_scanner_finds_the_titles_and_no_bell_or_notification(
    app: str, scenario: str, chunk: int
) -> None:
    # What the rules rest on, as the launcher reads it: the titles, and neither a bell
    # nor a notification that another reading could take for a prompt.
    events = _scanned((AGENTS / f"{app}-{scenario}.bin").read_bytes(), chunk)
    titles = {event.text for event in events if isinstance(event, Title)}
    assert titles <= TITLES[app]
    if scenario != "error":
        assert titles == TITLES[app]
    assert not [event for event in events if isinstance(event, Bell)]
    assert not [event for event in events if isinstance(event, Osc) and event.number != 7]
    # opencode only asks whether the terminal takes OSC 99 notifications: a query, which
    # the launcher answers.
    queries = {event.number for event in events if isinstance(event, Query)}
    assert queries <= ({99} if app == "opencode" else set())


# What the agents' hooks gave for the question of the captures (a run with hooks that
# kept their input): Copilot 1.0.102's "notification" hook, its cwd shortened, and
# opencode 1.18.33's question.asked event as a plugin got it. Neither tells a
# permission prompt; Copilot's holds none of the question's words.
COPILOT_ELICITATION = {
    "sessionId": "44d63f87-468f-462b-ae0f-bb0e3f3a0b38",
    "timestamp": 1796316518563,
    "cwd": "/tmp/api-server",
    "message": "Information requested",
    "title": "Information requested",
    "hook_event_name": "Notification",
    "notification_type": "elicitation_dialog",
}
OPENCODE_QUESTION = {
    "id": "evt_23cd698dd001jO7Ljr1HZQyWfx",
    "type": "question.asked",
    "properties": {
        "id": "que_23cd698dc0016mQLcgBMuH2YgL",
        "sessionID": "ses_dc329725fffeGXrB1iIAxZLZuL",
        "questions": [
            {
                "question": "Which name should the marker file have?",
                "header": "File name",
                "options": [
                    {"label": "approved-file", "description": "Call it approved-file"},
                    {"label": "marker", "description": "Call it marker"},
                ],
            }
        ],
        "tool": {"messageID": "msg_23cd6909c001LFfFeOd986ojx0", "callID": "call_fake2"},
    },
}


@pytest.mark.parametrize(
    ("app", "event", "payload", "msg"),
    [
        (
            "copilot",
            "notification:elicitation_dialog",
            COPILOT_ELICITATION,
            "Information requested",
        ),
        ("opencode", "question.asked", OPENCODE_QUESTION, "opencode asks you a question"),
    ],
)
def test_a_question_hook_reads_as_a_question(
    app: str, event: str, payload: dict[str, object], msg: str
) -> None:
    rules = shipped_agent_book().get(app)
    assert rules is not None
    report = hook_report(rules, event, payload)
    assert report is not None
    assert (report.state, report.kind, report.msg) == ("blocked", "question", msg)
