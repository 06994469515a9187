"""``tray doctor``'s agent lines: every agent tray knows, whether its program is on PATH,
what tray sees from it, whether Approve and Deny work, and the advice; bad user rules
files as one warning. Each test has a home, a config directory and a PATH of its own."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tray.base.check import Check
from tray.commands.doctor_agents import agent_checks
from tray.commands.hooks import FORMATS
from tray.core.config.settings import ConfigError
from tray.state.agent_files import shipped_agent_book
from tray.state.config_file import load_config
from tray.state.environment import Environment

ROOT = Path(__file__).resolve().parents[2]
_LINE = re.compile(r"(ok|warn|FAIL) +([^:]+): (.*)")

MY_AGENT = """
name = "My Agent"
commands = ["myagent", "ma"]
checked = "3.1"
live = false

[[titles]]
match = "^Approve\\\\?"
state = "blocked"
kind = "permission"

[doctor]
sees = "its title when it asks to run a command"
advice = "set notify = true in its settings for more"
"""


class Home:
    """A private home: its config directory, its state directory and its own PATH."""

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.config = tmp_path / "config"
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.environ = {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config),
            "TRAY_STATE_DIR": str(tmp_path / "state"),
            "XDG_RUNTIME_DIR": str(tmp_path / "runtime"),
            "PATH": str(self.bin),
        }

    def install(self, name: str, executable: bool = True) -> Path:
        program = self.bin / name
        program.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
        program.chmod(0o755 if executable else 0o644)
        return program

    def agent_file(self, app: str, text: str) -> Path:
        path = self.config / "tray" / "agents" / f"{app}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def config_file(self, text: str) -> None:
        path = self.config / "tray" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def lines(self) -> dict[str, Check]:
        env = Environment(environ=self.environ, stdout=io.StringIO(), stderr=io.StringIO())
        try:
            config = load_config(env)
        except ConfigError as error:
            return {check.name: check for check in agent_checks(env, error)}
        return {check.name: check for check in agent_checks(env, config)}


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


def test_every_shipped_agent_has_a_line_in_the_books_order(home: Home) -> None:
    lines = home.lines()
    apps = [rules.app for rules in shipped_agent_book().agents]
    assert apps, "tray ships rules for some agents"
    assert list(lines) == [f"agent {app}" for app in apps]
    for app in apps:
        rules = shipped_agent_book().get(app)
        assert rules is not None
        check = lines[f"agent {app}"]
        assert check.status == "ok"
        assert check.fix is None
        assert check.found.startswith(f"{rules.name}, not on PATH (looked for ")
        assert rules.advice in check.found
        # One line each, whatever the files say.
        assert "\n" not in check.line()


def test_a_program_on_path_is_named_and_its_answer_keys_are_said(home: Home) -> None:
    claude = shipped_agent_book().get("claude-code")
    assert claude is not None and claude.answer is not None
    program = home.install(claude.commands[0])
    found = home.lines()["agent claude-code"].found
    assert found.startswith(f"{claude.name}, on PATH at {program}; ")
    assert f"tray sees {claude.sees} (rules for {claude.checked}, tested live)" in found
    assert f"Approve and Deny work (keys checked on {claude.answer.checked})" in found
    assert found.endswith(f"; {claude.advice}")


def test_a_file_that_is_not_executable_is_not_the_program(home: Home) -> None:
    codex = shipped_agent_book().get("codex")
    assert codex is not None
    home.install(codex.commands[0], executable=False)
    assert "not on PATH (looked for codex)" in home.lines()["agent codex"].found


def test_a_users_own_agent_is_listed_with_what_its_file_says(home: Home) -> None:
    home.agent_file("myagent", MY_AGENT)
    program = home.install("ma")  # the second of its commands
    check = home.lines()["agent myagent"]
    assert check.status == "ok"
    assert check.found == (
        f"My Agent, on PATH at {program}; "
        "tray sees its title when it asks to run a command (rules for 3.1, from its "
        "documentation); no Approve or Deny: tray knows no keys for its prompt; "
        "set notify = true in its settings for more"
    )


def test_without_words_of_its_own_the_line_says_what_the_rules_read(home: Home) -> None:
    home.agent_file("myagent", MY_AGENT.split("[doctor]", maxsplit=1)[0])
    found = home.lines()["agent myagent"].found
    assert "tray sees its title (rules for 3.1" in found
    assert found.endswith("no Approve or Deny: tray knows no keys for its prompt")


def test_a_users_file_replaces_the_shipped_one(home: Home) -> None:
    home.agent_file("claude-code", MY_AGENT.replace("My Agent", "Claude, my way"))
    found = home.lines()["agent claude-code"].found
    assert found.startswith("Claude, my way, not on PATH (looked for myagent, ma)")
    assert "no Approve or Deny" in found


def test_answering_off_or_keys_of_the_users_own(home: Home) -> None:
    home.agent_file("myagent", MY_AGENT)
    home.config_file('[answer.apps.myagent]\napprove = "y"\ndeny = "n"\n')
    lines = home.lines()
    assert "Approve and Deny with your keys from [answer.apps]" in lines["agent myagent"].found
    assert "Approve and Deny work" in lines["agent codex"].found
    home.config_file("[answer]\nenabled = false\n")
    lines = home.lines()
    assert "no Approve or Deny" in lines["agent myagent"].found  # no keys at all now
    with_keys = [rules.app for rules in shipped_agent_book().agents if rules.answer is not None]
    assert with_keys
    for app in with_keys:
        assert "Approve and Deny off ([answer] enabled = false)" in lines[f"agent {app}"].found


def test_a_bad_config_still_lists_the_agents_with_their_own_keys(home: Home) -> None:
    home.config_file("[answer]\nenabled = 3\n")
    found = home.lines()["agent codex"].found
    assert "Approve and Deny work (keys checked on" in found


def test_bad_user_files_are_one_warning_and_the_rest_still_shows(home: Home) -> None:
    home.agent_file("codex", 'name = "Codex"\ncommands = ["codex"]\nchecked = "1"\nwhat = 1\n')
    home.agent_file("broken", "this is not toml")
    lines = home.lines()
    problems = lines["agent files"]
    assert problems.status == "warn"
    assert "codex.toml: what" in problems.found
    assert "broken.toml" in problems.found
    assert problems.fix == f"correct them, or remove them from {home.config}/tray/agents"
    # The shipped Codex rules stand in for the bad file.
    assert "Approve and Deny work" in lines["agent codex"].found
    assert list(lines)[-1] == "agent files"


def test_text_from_a_users_file_is_shown_clean(home: Home) -> None:
    home.agent_file(
        "myagent",
        MY_AGENT.replace("My Agent", "My\\u001b[31m\\u202eAgent").replace(
            "its title when", "its\\ntitle\\u0007 when"
        ),
    )
    found = home.lines()["agent myagent"].found
    assert found.startswith("My[31mAgent, not on PATH")
    assert "tray sees its title when" in found
    assert not any(ord(char) < 0x20 or char == "\u202e" for char in found)


def test_tray_doctor_prints_the_agent_lines(home: Home) -> None:
    home.agent_file("myagent", MY_AGENT)
    home.agent_file("broken", "not toml")
    program = home.install("myagent")
    done = subprocess.run(
        [sys.executable, "-m", "tray", "doctor"],
        env={**home.environ, "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8"},
        cwd=home.home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    found: dict[str, tuple[str, str]] = {}
    for line in done.stdout.splitlines():
        match = _LINE.fullmatch(line)
        assert match is not None, f"not a check line: {line!r}"
        found[match.group(2)] = (match.group(1), match.group(3))
    assert found["agent myagent"][0] == "ok"
    assert found["agent myagent"][1].startswith(f"My Agent, on PATH at {program}; ")
    assert found["agent codex"][1].startswith("Codex, not on PATH")
    assert found["agent files"][0] == "warn"
    # The agents come after the other checks, and a bad rules file fails nothing.
    names = list(found)
    assert names.index("answer") < names.index("agent claude-code") < names.index("agent files")
    assert all(status != "FAIL" for name, (status, _) in found.items() if name.startswith("agent"))
    assert os.path.isdir(home.config / "tray" / "agents")


# --- tray's hooks -----------------------------------------------------------------------

COPILOT = """
name = "Copilot, my rules"
commands = ["copilot"]
checked = "1.0"

[[hooks]]
event = "notification:permission_prompt"
state = "blocked"
kind = "permission"

[[hooks]]
event = "agentStop"
state = "done"

# Never installed (it fails closed): doctor does not ask for it either.
[[hooks]]
event = "permissionRequest"
state = "blocked"
kind = "permission"
"""


def copilot_hooks_file(home: Home) -> Path:
    return FORMATS["copilot"].path(home.environ, home.home)


def test_an_agent_on_path_without_its_hooks_is_a_warning_with_the_install(home: Home) -> None:
    home.agent_file("copilot", COPILOT)
    path = copilot_hooks_file(home)
    check = home.lines()["agent copilot"]
    # Not on PATH: said, and nothing to warn of.
    assert check.status == "ok"
    assert f"tray's hooks not installed ({path})" in check.found
    home.install("copilot")
    check = home.lines()["agent copilot"]
    assert (check.status, check.fix) == ("warn", "tray hooks install copilot")
    assert f"tray's hooks not installed ({path})" in check.found


def test_installed_hooks_are_said_and_half_of_them_are_not_enough(home: Home) -> None:
    home.agent_file("copilot", COPILOT)
    home.install("copilot")
    path = copilot_hooks_file(home)
    tray = [str(home.bin / "tray")]
    FORMATS["copilot"].install(path, ["notification:permission_prompt"], tray)
    check = home.lines()["agent copilot"]
    assert check.status == "warn"
    assert (
        "tray's hooks for notification:permission_prompt, where its rules name agentStop,"
        " notification:permission_prompt" in check.found
    )
    FORMATS["copilot"].install(path, ["notification:permission_prompt", "agentStop"], tray)
    check = home.lines()["agent copilot"]
    assert (check.status, check.fix) == ("ok", None)
    assert f"tray's hooks installed ({path})" in check.found


def test_an_unreadable_hooks_file_is_said_not_raised(home: Home) -> None:
    home.agent_file("copilot", COPILOT)
    path = copilot_hooks_file(home)
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    check = home.lines()["agent copilot"]
    assert f"tray's hooks: cannot read {path} (" in check.found


def test_agents_without_hook_events_say_nothing_of_hooks(home: Home) -> None:
    home.agent_file("copilot", COPILOT.split("[[hooks]]", maxsplit=1)[0])
    home.install("copilot")
    check = home.lines()["agent copilot"]
    assert (check.status, "hooks" in check.found) == ("ok", False)
