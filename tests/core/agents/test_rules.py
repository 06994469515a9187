"""The agents' rules files: their format, every shipped file, and what a rule may say."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.core.agents.rules import (
    AgentBook,
    AgentFileError,
    Effect,
    fill,
    hook_report,
    parse_agent_file,
)
from tray.core.answers.gate import AppKeys
from tray.protocol.report import MAX_MSG_DECODED, encode_body, parse_body
from tray.protocol.state import State
from tray.state.agent_files import shipped_agent_book

MINIMAL = 'name = "Demo"\ncommands = ["demo"]\nchecked = "1.0"\n'


def test_a_minimal_file_knows_the_agent_and_infers_nothing() -> None:
    rules = parse_agent_file(MINIMAL, "demo")
    assert (rules.app, rules.name, rules.commands, rules.checked) == (
        "demo",
        "Demo",
        ("demo",),
        "1.0",
    )
    assert not rules.infers
    assert rules.answer is None


def test_every_section_is_read() -> None:
    rules = parse_agent_file(
        MINIMAL
        + """
executables = ["@demo/cli/"]
live = true
[[titles]]
match = "^Busy"
state = "working"
[[notifications]]
title = "^Demo$"
body = "needs"
state = "blocked"
kind = "permission"
msg = "{body}"
[[screen]]
match = "Allow\\\\?"
state = "blocked"
kind = "question"
[bell]
state = "blocked"
kind = "permission"
[[hooks]]
event = "permission.asked"
state = "blocked"
kind = "permission"
msg = "Run: {command}"
[answer]
checked = "1.0"
approve = "1"
deny = "\\u001b"
[doctor]
sees = "its title"
advice = "turn on notifications"
""",
        "demo",
    )
    assert rules.live and rules.infers
    assert rules.executables == ("@demo/cli/",)
    assert rules.titles[0].effect == Effect(State.WORKING, None, None)
    assert rules.notifications[0].effect == Effect(State.BLOCKED, "permission", "{body}")
    assert rules.screen[0].pattern.search("Allow?") is not None
    assert rules.bell == Effect(State.BLOCKED, "permission", None)
    assert rules.hook("permission.asked") == Effect(State.BLOCKED, "permission", "Run: {command}")
    assert rules.hook("other") is None
    assert rules.answer is not None
    assert rules.answer.keys == AppKeys("1", "\x1b")
    assert (rules.sees, rules.advice) == ("its title", "turn on notifications")


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('colour = "red"\n', "colour: unknown key"),
        ("[[titles]]\nstate = 'working'\n", "titles[0].match: missing"),
        ("[[titles]]\nmatch = '('\nstate = 'working'\n", "not a regular expression"),
        ("[[titles]]\nmatch = 'x'\nstate = 'clear'\n", "titles[0].state: expected one of"),
        ("[[titles]]\nmatch = 'x'\nstate = 'working'\nkind = 'permission'\n", "only with blocked"),
        ("[[titles]]\nmatch = 'x'\nstate = 'blocked'\nkind = 'maybe'\n", "titles[0].kind"),
        ("[[notifications]]\nstate = 'blocked'\n", "needs a title or a body pattern"),
        ("[[hooks]]\nevent = 'a b'\nstate = 'working'\n", "hooks[0].event"),
        ("[[hooks]]\nevent = 'a'\nfield = 'x'\nstate = 'working'\n", "hooks[0].match: missing"),
        ("[[hooks]]\nevent = 'a'\nmatch = 'x'\nstate = 'working'\n", "hooks[0].field: missing"),
        ("[[hooks]]\nevent = 'a'\nfield = 'a/b'\nmatch = 'x'\nstate = 'done'\n", "dotted path"),
        ('[answer]\nchecked = "1"\napprove = "\\r"\ndeny = "n"\n', "holds Enter"),
        ("[answer]\nchecked = '1'\napprove = 'y'\n", "answer.deny: missing"),
        ("[answer]\napprove = 'y'\ndeny = 'n'\n", "answer.checked: missing"),
        ('[answer]\nchecked = "1"\napprove = "y\\u0003"\ndeny = "n"\n', "control character"),
        ("[doctor]\nhint = 'x'\n", "doctor.hint: unknown key"),
        ("live = 'yes'\n", "live: expected true or false"),
        ("titles = 3\n", "titles: expected a list of tables"),
        (f"[[titles]]\nmatch = '{'a' * 600}'\nstate = 'working'\n", "longer than 512"),
        ("name = \n", "demo.toml: "),
    ],
)
def test_a_bad_file_is_one_line_naming_the_key(extra: str, problem: str) -> None:
    with pytest.raises(AgentFileError) as raised:
        parse_agent_file(MINIMAL + extra, "demo")
    message = str(raised.value)
    assert message.startswith("demo.toml: ")
    assert problem in message
    assert "\n" not in message


def test_a_hook_rule_can_ask_the_payload_which_of_two_things_the_event_is() -> None:
    rules = parse_agent_file(
        MINIMAL
        + """
[[hooks]]
event = "Notification"
field = "details.type"
match = '^ask_user$'
state = "blocked"
kind = "question"
msg = "asks"
[[hooks]]
event = "Notification"
state = "blocked"
kind = "permission"
msg = "Run: {details.command}"
""",
        "demo",
    )
    asked = hook_report(rules, "Notification", {"details": {"type": "ask_user"}})
    assert asked is not None
    assert (asked.kind, asked.msg) == ("question", "asks")
    run = hook_report(rules, "Notification", {"details": {"type": "exec", "command": "make"}})
    assert run is not None
    assert (run.kind, run.msg) == ("permission", "Run: make")
    # Not text where the field points, or no payload at all: the rule without a field.
    for payload in ({"details": {"type": ["ask_user"]}}, {"details": "ask_user"}, None, 3):
        other = hook_report(rules, "Notification", payload)
        assert other is not None
        assert other.kind == "permission"
    assert hook_report(rules, "Other", {"details": {"type": "ask_user"}}) is None


def test_commands_are_required_and_the_file_name_must_be_an_app_name() -> None:
    with pytest.raises(AgentFileError, match="commands: missing"):
        parse_agent_file('name = "x"\nchecked = "1"\n', "demo")
    with pytest.raises(AgentFileError, match="not an app name"):
        parse_agent_file(MINIMAL, "../evil")


def test_enter_is_allowed_only_with_a_reason_and_only_as_carriage_return() -> None:
    keys = '[answer]\nchecked = "1"\napprove = "y\\r"\ndeny = "n\\r"\n'
    with pytest.raises(AgentFileError, match="holds Enter"):
        parse_agent_file(MINIMAL + keys, "demo")
    rules = parse_agent_file(MINIMAL + keys + "why = 'Enter submits the typed answer'\n", "demo")
    assert rules.answer is not None
    assert rules.answer.keys == AppKeys("y\r", "n\r")
    with pytest.raises(AgentFileError, match="holds Enter"):
        parse_agent_file(
            MINIMAL + '[answer]\nchecked = "1"\napprove = "y\\n"\ndeny = "n"\nwhy = "x"\n', "demo"
        )


def test_recognition_by_command_then_by_program_path() -> None:
    book = AgentBook(
        [
            parse_agent_file(MINIMAL + 'executables = ["@demo/cli/"]\n', "demo"),
            parse_agent_file('name = "O"\ncommands = ["other"]\nchecked = "1"\n', "other"),
        ]
    )
    assert book.recognise("demo", None).app == "demo"  # type: ignore[union-attr]
    assert book.recognise("node", "/x/node_modules/@demo/cli/index.js").app == "demo"  # type: ignore[union-attr]
    assert book.recognise("other", "/x/node_modules/@demo/cli/index.js").app == "other"  # type: ignore[union-attr]
    assert book.recognise("demo-not", "/usr/bin/demo-not") is None
    assert [rules.app for rules in book.agents] == ["demo", "other"]


def test_a_message_is_cleaned_and_never_more_than_a_report_holds() -> None:
    assert fill("Run: {tool.command}", {"tool": {"command": "rm\u202e -rf\n/"}}) == "Run: rm -rf /"
    assert fill("{a}", {"a": ["not", "text"]}) is None
    assert fill("{a}", {"a": True}) is None
    assert fill("{a.b.c}", {"a": "flat"}) is None
    assert fill("fixed", {}) == "fixed"
    long = fill("{a}", {"a": "é" * 5000})
    assert long is not None
    assert len(long.encode()) <= MAX_MSG_DECODED


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=20,
    )
)
def test_any_hook_payload_gives_a_report_that_encodes(payload: object) -> None:
    rules = parse_agent_file(
        MINIMAL + "[[hooks]]\nevent = 'ask'\nstate = 'blocked'\nkind = 'permission'\n"
        "msg = 'Run: {command} {a.b}'\n",
        "demo",
    )
    report = hook_report(
        rules,
        "ask",
        payload if not isinstance(payload, dict) else {"command": payload, "a": payload},
    )
    assert report is not None
    assert (report.state, report.kind, report.app) == ("blocked", "permission", "demo")
    assert parse_body(encode_body(report)) == report
    assert hook_report(rules, "other", payload) is None


# --- the files tray ships -------------------------------------------------------------------


def test_every_shipped_file_parses_and_names_how_to_find_and_advise() -> None:
    book = shipped_agent_book()
    apps = {rules.app for rules in book.agents}
    assert {"claude-code", "codex"} <= apps
    for rules in book.agents:
        assert rules.name and rules.checked and rules.commands, rules.app
        assert rules.sees, f"{rules.app}: doctor needs to say what tray sees"
        assert rules.speaks_osc7501 or rules.infers or rules.hooks, rules.app
        if rules.answer is not None:
            assert rules.answer.checked, rules.app
    # No two agents claim one command.
    commands = [command for rules in book.agents for command in rules.commands]
    assert len(commands) == len(set(commands))


def test_claude_code_and_codex_keep_the_keys_checked_on_them() -> None:
    keys = shipped_agent_book().answer_keys()
    assert keys["claude-code"] == AppKeys("1", "\x1b")
    assert keys["codex"] == AppKeys("y", "\x1b")


@pytest.mark.parametrize(
    ("app", "event", "payload", "said"),
    [
        # Gemini CLI 0.61.0's Notification hook: the live shell prompt's details, and
        # its ask_user dialog's (from its source).
        (
            "gemini",
            "Notification",
            {"details": {"type": "exec", "title": "Confirm Shell Command", "command": "touch x"}},
            ("permission", "Confirm Shell Command: touch x"),
        ),
        (
            "gemini",
            "Notification",
            {"details": {"type": "ask_user", "title": "Ask User"}},
            ("question", "Gemini CLI asks you a question"),
        ),
        # Qwen Code 0.24.4's: the message is its notification's words.
        (
            "qwen-code",
            "Notification:permission_prompt",
            {"message": "Qwen Code needs your permission to use ask_user_question"},
            ("question", "Qwen Code asks you a question"),
        ),
        (
            "qwen-code",
            "Notification:permission_prompt",
            {"message": "Qwen Code needs your permission to use run_shell_command"},
            ("permission", "Qwen Code needs your permission to use run_shell_command"),
        ),
    ],
)
def test_the_shipped_hooks_tell_a_question_from_a_permission(
    app: str, event: str, payload: dict[str, object], said: tuple[str, str]
) -> None:
    rules = shipped_agent_book().get(app)
    assert rules is not None
    report = hook_report(rules, event, payload)
    assert report is not None
    assert (report.kind, report.msg) == said
