"""The one toolkit and the one error: every table's mistake is a ConfigError with its key."""

from __future__ import annotations

import pytest

from tray.core.agents.rules import AgentFileError, parse_agent_file
from tray.core.config.away import check_forward, parse_away
from tray.core.config.hosts import parse_hosts
from tray.core.config.parsing import (
    ConfigError,
    checked,
    no_unknown_keys,
    setting,
    show,
    table,
)
from tray.core.config.settings import parse_config
from tray.protocol.state import State


@pytest.mark.parametrize(
    ("document", "key", "problem"),
    [
        ({"notify": {"settle": "soon"}}, "notify.settle", "expected a number of seconds"),
        ({"away": {"after": 0}}, "away.after", "expected a duration above 0"),
        ({"hosts": [{"name": "a"}]}, "hosts[0].destination", "missing"),
        ({"answer": {"apps": {"x": {"approve": "y"}}}}, "answer.apps.x.deny", "missing"),
        ({"shell": 3}, "shell", "expected a table, got 3"),
    ],
)
def test_every_table_says_its_mistake_as_one_error_with_the_keys_path(
    document: dict[str, object], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(document, "config.toml")
    assert (caught.value.origin, caught.value.key) == ("config.toml", key)
    assert caught.value.problem.startswith(problem)
    assert str(caught.value) == f"config.toml: {key}: {caught.value.problem}"


def test_a_table_read_alone_names_its_key_without_a_file() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_hosts([{"name": "a", "destination": "-oProxyCommand=x"}])
    assert str(caught.value).startswith("hosts[0].destination: must not start with '-'")
    with pytest.raises(ConfigError) as caught:
        check_forward(
            parse_away({"forward": ["json://a", "mailto://b"]}), lambda url: url.startswith("json:")
        )
    assert caught.value.key == "away.forward[1]"


def test_an_agents_rules_file_says_its_name_as_the_origin() -> None:
    with pytest.raises(AgentFileError) as caught:
        parse_agent_file('name = "x"\ncommands = ["x"]\nchecked = "1"\nlive = 1\n', "demo")
    assert isinstance(caught.value, ConfigError)
    assert str(caught.value) == "demo.toml: live: expected true or false"


def test_states_are_read_as_states() -> None:
    config = parse_config({"notify": {"states": ["done"]}, "away": {"states": ["error"]}})
    assert config.notify.states == {State.DONE}
    assert config.away is not None
    assert config.away.states == {State.ERROR}
    assert all(type(state) is State for state in config.notify.states | config.away.states)


def _whole(value: object) -> int:
    if not isinstance(value, int):
        raise ValueError("expected a whole number")
    return value


def test_the_toolkit_on_its_own() -> None:
    with pytest.raises(ConfigError, match=r"^x\.c: unknown key \(known: a, b\)$"):
        no_unknown_keys({"a": 1, "c": 2}, ("a", "b"), "x.")
    assert table({}, "t") == {}
    with pytest.raises(ConfigError, match=r"^t: expected a table$"):
        table({"t": []}, "t", got=False)
    assert setting({}, "t.n", _whole, 7) == 7
    with pytest.raises(ConfigError, match=r'^t\.n: expected a whole number, got "x"$'):
        setting({"n": "x"}, "t.n", _whole, 7)
    with pytest.raises(ConfigError, match=r"^k: expected a whole number$"):
        checked("k", _whole, "x")
    assert show("é" * 100, brief=True) == '"' + "é" * 80 + '"'
    assert show(1.5, brief=True) == "1.5"
    assert show([True, {"a": 1}]) == "[true, a table]"
