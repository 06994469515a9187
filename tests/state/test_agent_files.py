"""The agents' rules files as the launcher, doctor and a hook read them: one agent's alone
(:func:`load_agent_rules`, what `tray emit --hook` needs) must be what the whole book says."""

from __future__ import annotations

from pathlib import Path

import pytest

from tray.state.agent_files import load_agent_book, load_agent_rules, user_agents_dir
from tray.state.environment import Environment

OWN = 'name = "Mine"\ncommands = ["mine"]\nchecked = "1"\n'


@pytest.fixture
def env(tmp_path: Path) -> Environment:
    made = Environment(environ={"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)})
    user_agents_dir(made).mkdir(parents=True)
    return made


def _write(env: Environment, name: str, text: str) -> None:
    (user_agents_dir(env) / f"{name}.toml").write_text(text)


def test_one_agents_rules_are_the_books_for_every_agent(env: Environment) -> None:
    _write(env, "gemini", OWN.replace("Mine", "My Gemini"))  # replaces the shipped one
    _write(env, "qwen-code", "name = \n")  # left out: the shipped one applies
    _write(env, "mine", OWN)  # adds an agent
    book = load_agent_book(env)
    assert [problem.split(":")[0] for problem in book.problems] == [
        f"{user_agents_dir(env)}/qwen-code.toml"
    ]
    for rules in book.agents:
        assert load_agent_rules(env, rules.app) == rules
    gemini = load_agent_rules(env, "gemini")
    assert gemini is not None
    assert gemini.name == "My Gemini"


@pytest.mark.parametrize("name", ["nobody", "../agents/gemini", "", "a/b"])
def test_no_rules_for_a_name_no_file_has(env: Environment, name: str) -> None:
    assert load_agent_rules(env, name) is None
