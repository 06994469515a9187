"""The answering gate and the ``[answer]`` table: pure, so every rule is checked here."""

from __future__ import annotations

import pytest
from helpers.answer_keys import SHIPPED_KEYS, SHIPPED_SETTINGS

from tray.core.answers import gate as answering
from tray.core.answers.gate import (
    DEFAULT_SETTINGS,
    ESC,
    SETTLE,
    AnswerSettings,
    AppKeys,
    Request,
    answers_for,
    decide,
    pick_record,
)
from tray.core.config.answer import parse_answer
from tray.core.config.parsing import ConfigError
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.agent_files import shipped_agent_book

SINCE = 100.0


def rec(  # noqa: PLR0917 - a record in a line
    id: str = "",
    state: str = "blocked",
    kind: str | None = "permission",
    app: str | None = "claude-code",
    since: float | None = SINCE,
    msg: str | None = None,
) -> Record:
    return Record(id, State(state), kind, None, app, None, msg, since or 0.0, since)


def gate(  # noqa: PLR0917 - a request in a line
    records: list[Record],
    answer: str = "approve",
    record: str | None = None,
    since: float | None = SINCE,
    last_input_at: float | None = None,
    settings: AnswerSettings = SHIPPED_SETTINGS,
    alive: bool = True,
) -> answering.Decision:
    return decide(
        tuple(records), Request(answer, record, since), last_input_at, settings, alive=alive
    )


def test_the_shipped_keys_pick_one_use_and_never_enter_where_no_reason_is_given() -> None:
    assert SHIPPED_KEYS["claude-code"] == AppKeys("1", "\x1b")
    assert SHIPPED_KEYS["codex"] == AppKeys("y", "\x1b")
    for rules in shipped_agent_book().agents:
        if rules.answer is None or rules.answer.why:
            continue
        keys = rules.answer.keys
        assert "\r" not in keys.approve + keys.deny
        assert "\n" not in keys.approve + keys.deny


@pytest.mark.parametrize(("app", "answer", "keys"), [
    ("claude-code", "approve", b"1"),
    ("claude-code", "deny", b"\x1b"),
    ("codex", "approve", b"y"),
    ("codex", "deny", b"\x1b"),
])  # fmt: skip
def test_a_standing_prompt_gets_its_apps_keys(app: str, answer: str, keys: bytes) -> None:
    decision = gate([rec(app=app)], answer)
    assert decision.ok
    assert decision.keys == keys
    assert decision.reason is None
    assert (decision.record, decision.since) == ("", SINCE)
    assert decision.not_before == SINCE + SETTLE


def test_without_since_the_prompt_standing_now_is_answered() -> None:
    assert gate([rec()], since=None).keys == b"1"


def test_a_stale_since_is_the_prompt_changed() -> None:
    decision = gate([rec(since=SINCE + 5)], since=SINCE)
    assert decision.keys is None
    assert decision.reason == answering.CHANGED


def test_a_prompt_that_is_gone_is_not_answered() -> None:
    assert gate([rec(state="working", kind=None)]).reason == answering.NONE_STANDS
    assert gate([]).reason == answering.NONE_STANDS
    assert gate([rec(state="working", kind=None)], record="").reason == answering.GONE
    assert gate([rec()], record="nope").reason == answering.GONE


def test_a_question_or_auth_prompt_is_not_a_permission() -> None:
    for kind in ("question", "auth", None):
        assert gate([rec(kind=kind)]).reason == answering.GONE


def test_typing_since_the_prompt_appeared_wins() -> None:
    assert gate([rec()], last_input_at=SINCE).reason == answering.TYPED
    assert gate([rec()], last_input_at=SINCE + 0.001).reason == answering.TYPED
    assert gate([rec()], last_input_at=SINCE - 0.001).ok


def test_an_app_without_keys_is_refused() -> None:
    assert gate([rec(app="terraform")]).reason == answering.NO_KEYS
    assert gate([rec(app=None)]).reason == answering.NO_KEYS


def test_an_ended_session_is_refused() -> None:
    assert gate([rec()], alive=False).reason == answering.ENDED


def test_answering_off_is_refused() -> None:
    assert gate([rec()], settings=AnswerSettings(enabled=False)).reason == answering.OFF


def test_a_child_record_is_answered_with_its_inherited_app() -> None:
    records = [rec(state="working", kind=None), rec(id="task/1", app="codex", since=7.0)]
    decision = gate(records, record="task/1", since=7.0)
    assert decision.keys == b"y"
    assert decision.record == "task/1"
    # The only blocked record is picked without --record.
    assert gate(records, since=7.0).record == "task/1"


def test_the_root_wins_when_it_is_blocked() -> None:
    records = [rec(), rec(id="task/1", since=7.0)]
    assert gate(records).record == ""


def test_several_blocked_children_need_a_record() -> None:
    records = [rec(state="working", kind=None), rec(id="a", since=1.0), rec(id="b", since=2.0)]
    assert gate(records, since=None).reason == answering.SEVERAL
    assert gate(records, record="b", since=2.0).ok


def test_pick_record_names_the_reason() -> None:
    assert pick_record([], None) == answering.NONE_STANDS
    assert pick_record([rec()], "x") == answering.GONE
    assert pick_record([rec()], None) == rec()


def test_a_record_without_since_is_never_answered() -> None:
    assert gate([rec(since=None)], since=None).reason == answering.CHANGED


def test_a_hostile_msg_never_affects_the_keys() -> None:
    for msg in ("\r", "y\ry", "\x1b[201~rm -rf /\r", "2", "approve=2", "é" * 2000):
        assert gate([rec(msg=msg)]).keys == b"1"
        assert gate([rec(msg=msg)], "deny").keys == b"\x1b"


def test_an_unknown_answer_is_refused() -> None:
    assert gate([rec()], "always").reason == answering.BAD_ANSWER


def test_answers_offered() -> None:
    assert answers_for(rec(), True, SHIPPED_SETTINGS) == ["approve", "deny"]
    assert answers_for(rec(), False, SHIPPED_SETTINGS) == []
    assert answers_for(rec(), True, AnswerSettings(enabled=False)) == []
    assert answers_for(rec(app="pi"), True, SHIPPED_SETTINGS) == []
    assert answers_for(rec(kind="question"), True, SHIPPED_SETTINGS) == []
    assert answers_for(rec(state="done", kind=None), True, SHIPPED_SETTINGS) == []
    assert answers_for(rec(since=None), True, SHIPPED_SETTINGS) == []


# The config table.


def test_no_table_is_the_defaults() -> None:
    assert parse_answer({}) == DEFAULT_SETTINGS
    assert parse_answer({"answer": {}}).enabled is True


def test_a_table_replaces_a_built_in_and_adds_apps() -> None:
    settings = parse_answer(
        {"answer": {"enabled": False, "apps": {"codex": {"approve": "Y", "deny": "n"},
                                               "pi": {"approve": "y", "deny": "\x1b"}}}},
        SHIPPED_KEYS,
    )  # fmt: skip
    assert settings.enabled is False
    assert settings.apps["codex"] == AppKeys("Y", "n")
    assert settings.apps["pi"] == AppKeys("y", "\x1b")
    assert settings.apps["claude-code"] == SHIPPED_KEYS["claude-code"]
    assert gate([rec(app="pi")], settings=AnswerSettings(apps=settings.apps)).keys == b"y"


@pytest.mark.parametrize(("document", "key", "problem"), [
    ({"answer": 1}, "answer", "expected a table"),
    ({"answer": {"on": True}}, "answer.on", "unknown key"),
    ({"answer": {"enabled": "yes"}}, "answer.enabled", "true or false"),
    ({"answer": {"apps": []}}, "answer.apps", "expected a table"),
    ({"answer": {"apps": {"a/b": {"approve": "y", "deny": "n"}}}}, "answer.apps.a/b", "app name"),
    ({"answer": {"apps": {"x" * 33: {"approve": "y", "deny": "n"}}}}, "answer.apps." + "x" * 33,
     "app name"),
    ({"answer": {"apps": {"pi": "y"}}}, "answer.apps.pi", "expected a table"),
    ({"answer": {"apps": {"pi": {"approve": "y"}}}}, "answer.apps.pi.deny", "missing"),
    ({"answer": {"apps": {"pi": {"approve": "y", "deny": "n", "always": "p"}}}},
     "answer.apps.pi.always", "unknown key"),
    ({"answer": {"apps": {"pi": {"approve": "", "deny": "n"}}}}, "answer.apps.pi.approve", "empty"),
    ({"answer": {"apps": {"pi": {"approve": 1, "deny": "n"}}}}, "answer.apps.pi.approve",
     "string"),
    ({"answer": {"apps": {"pi": {"approve": "y" * 17, "deny": "n"}}}}, "answer.apps.pi.approve",
     "longer than 16"),
    ({"answer": {"apps": {"pi": {"approve": "y\r", "deny": "n"}}}}, "answer.apps.pi.approve",
     "Enter"),
    ({"answer": {"apps": {"pi": {"approve": "y", "deny": "\n"}}}}, "answer.apps.pi.deny", "Enter"),
    ({"answer": {"apps": {"pi": {"approve": "y", "deny": "\x1bn"}}}}, "answer.apps.pi.deny",
     "Esc may only be the last"),
    ({"answer": {"apps": {"pi": {"approve": "y\x03", "deny": "n"}}}}, "answer.apps.pi.approve",
     "U+0003"),
    ({"answer": {"apps": {"pi": {"approve": "y\x9b", "deny": "n"}}}}, "answer.apps.pi.approve",
     "U+009B"),
    ({"answer": {"apps": {"pi": {"approve": "y\x7f", "deny": "n"}}}}, "answer.apps.pi.approve",
     "U+007F"),
])  # fmt: skip
def test_config_errors_name_the_key(document: dict[str, object], key: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_answer(document)
    assert caught.value.key == key
    assert problem in caught.value.problem
    assert str(caught.value).startswith(key + ": ")


def test_a_since_read_back_by_another_program_still_names_the_prompt() -> None:
    assert gate([rec(since=1764470012.123456)], since=1764470012.1234561).ok
    assert gate([rec(since=1764470012.1)], since=1764470012.2).reason == answering.CHANGED


def test_a_prompt_is_answered_once() -> None:
    records = (rec(),)
    once = decide(records, Request("approve"), None, SHIPPED_SETTINGS, answered=("", SINCE))
    assert once.reason == answering.ANSWERED
    other = decide(records, Request("approve"), None, SHIPPED_SETTINGS, answered=("", 1.0))
    assert other.ok


@pytest.mark.parametrize("name", ["a", "a" * 32, "claude-code", "My_App.v2+x"])
def test_an_app_name_of_1_to_32_safe_characters_takes_keys(name: str) -> None:
    settings = parse_answer({"answer": {"apps": {name: {"approve": "y", "deny": ESC}}}})
    assert settings.apps[name] == AppKeys("y", ESC)


# The ends of each range, and what a looser check would let in: a newline at the end,
# non-ASCII letters and digits, separators.
@pytest.mark.parametrize(
    "name", ["", "a" * 33, "claude-code\n", "caf\u00e9", "\u0660", "\u212a", "a b", "a/b", "a@b"]
)
def test_any_other_app_name_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_answer({"answer": {"apps": {name: {"approve": "y", "deny": ESC}}}})
    assert caught.value.key == f"answer.apps.{name}"
    assert caught.value.problem.startswith("not an app name")
