"""``tray hooks``: tray's hooks in agents' own settings files, on real files.

The events come from the agents' rules; each test writes those as user files, so the
events installed are the test's, whatever the shipped rules say today.
"""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from helpers.files import umask
from helpers.hook_homes import (
    NOTIFICATIONS,
    OTHER_TRAY,
    TRAY,
    Home,
    command,
    copilot_file,
    copilot_hook,
    make_home,
    read,
    rules,
)
from helpers.tray_home import Tray

from tray.cli import main
from tray.shell.opencode_plugin import MARK, OpencodePlugin, render
from tray.state.environment import Environment


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return make_home(tmp_path)


# Copilot CLI: a file of tray's own in ~/.copilot/hooks.


def test_install_copilot_writes_its_hooks_file_and_says_so(home: Home) -> None:
    with umask(0o022):
        assert home.hooks("install", "copilot") == 0
    path = copilot_file(home)
    # EVENT:SUBTYPE is Copilot's EVENT with a matcher: a key "notification:..." would be
    # ignored by Copilot without a word. The command keeps the whole name.
    assert read(path) == {
        "version": 1,
        "hooks": {"notification": NOTIFICATIONS, "agentStop": [copilot_hook("agentStop")]},
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert str(path) in home.said
    event = "notification:permission_prompt"
    assert f"added   {event}: {command(TRAY, 'copilot', event)}" in home.said
    assert "added   notification:elicitation_dialog" in home.said
    assert "added   agentStop" in home.said
    assert "not installed" not in home.said
    assert home.error == ""


def test_installing_twice_changes_nothing_and_says_so(home: Home) -> None:
    assert home.hooks("install", "copilot") == 0
    path = copilot_file(home)
    before = path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino
    assert home.hooks("install", "copilot") == 0
    assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_ino) == before
    assert "nothing changed" in home.said
    assert "added" not in home.said


def test_remove_takes_back_the_file_it_made(home: Home) -> None:
    home.hooks("install", "copilot")
    path = copilot_file(home)
    assert home.hooks("remove", "copilot") == 0
    assert not path.exists()
    assert "removed notification:permission_prompt" in home.said
    assert "removed notification:elicitation_dialog" in home.said
    assert f"deleted {path}" in home.said
    assert home.hooks("remove", "copilot") == 0
    assert "nothing changed" in home.said


def test_copilot_home_is_where_copilot_looks(home: Home) -> None:
    home.environ["COPILOT_HOME"] = str(home.root / "copilot-home")
    home.hooks("install", "copilot")
    assert (home.root / "copilot-home" / "hooks" / "tray.json").is_file()
    assert not (home.home / ".copilot").exists()


def test_the_user_s_own_hooks_in_the_same_file_are_kept(home: Home) -> None:
    path = copilot_file(home)
    path.parent.mkdir(parents=True)
    mine = {"type": "command", "bash": "notify-send 'asked'", "timeoutSec": 30}
    theirs = {"type": "command", "matcher": "permission_prompt", "bash": "say asked"}
    original = {"version": 1, "hooks": {"notification": [mine, theirs]}, "x-note": "mine"}
    path.write_text(json.dumps(original))
    home.hooks("install", "copilot")
    document = read(path)
    assert document["hooks"]["notification"] == [mine, theirs, *NOTIFICATIONS]
    assert document["x-note"] == "mine"
    home.hooks("remove", "copilot")
    assert read(path) == original


# The events are the rules'.


def test_install_follows_the_rules_events(home: Home) -> None:
    home.hooks("install", "copilot")
    home.rules(
        "copilot",
        rules("Copilot", ("notification:permission_prompt", "blocked"), ("errorOccurred", "error")),
    )
    assert home.hooks("install", "copilot") == 0
    assert "added   errorOccurred" in home.said
    assert "removed agentStop (no longer in the rules)" in home.said
    assert "removed notification:elicitation_dialog (no longer in the rules)" in home.said
    document = read(copilot_file(home))
    assert document["hooks"] == {
        "notification": NOTIFICATIONS[:1],
        "errorOccurred": [copilot_hook("errorOccurred")],
    }


def test_rules_without_hook_events_install_nothing(home: Home) -> None:
    home.rules("copilot", rules("Copilot"))
    assert home.hooks("install", "copilot") == 1
    assert (
        home.error == "tray hooks: the rules for Copilot name no hook events: nothing to install\n"
    )
    assert not (home.home / ".copilot").exists()


def test_another_tray_s_hooks_are_updated_in_place_not_doubled(home: Home) -> None:
    home.hooks("install", "copilot", argv=OTHER_TRAY)
    assert home.hooks("install", "copilot") == 0
    assert "updated notification:permission_prompt" in home.said
    assert "updated agentStop" in home.said
    document = read(copilot_file(home))
    assert document["hooks"] == {
        "notification": NOTIFICATIONS,
        "agentStop": [copilot_hook("agentStop")],
    }


# Gemini CLI and Qwen Code: "hooks" in the user's settings.json.


def test_gemini_settings_keep_everything_of_the_user_s(home: Home) -> None:
    path = home.home / ".gemini" / "settings.json"
    path.parent.mkdir()
    original: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": {
            "Notification": [
                {"matcher": "ToolPermission", "hooks": [{"type": "command", "command": "say hi"}]}
            ],
            "BeforeTool": [{"hooks": [{"type": "command", "command": "audit"}]}],
        },
    }
    path.write_text(json.dumps(original))
    path.chmod(0o640)
    assert home.hooks("install", "gemini") == 0
    document = read(path)
    assert document["security"] == original["security"]
    assert document["hooks"]["BeforeTool"] == original["hooks"]["BeforeTool"]
    assert document["hooks"]["Notification"] == [
        original["hooks"]["Notification"][0],
        {
            "hooks": [
                {
                    "name": "tray",
                    "type": "command",
                    "command": command(TRAY, "gemini", "Notification"),
                    "timeout": 5000,  # Gemini's timeouts are in milliseconds
                }
            ]
        },
    ]
    assert document["hooks"]["AfterAgent"][0]["hooks"][0]["command"] == command(
        TRAY, "gemini", "AfterAgent"
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert home.hooks("remove", "gemini") == 0
    assert read(path) == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_hook_the_user_added_to_tray_s_group_stays(home: Home) -> None:
    home.hooks("install", "gemini")
    path = home.home / ".gemini" / "settings.json"
    document = read(path)
    document["hooks"]["AfterAgent"][0]["hooks"].append({"type": "command", "command": "mine"})
    path.write_text(json.dumps(document))
    home.hooks("remove", "gemini")
    assert read(path) == {
        "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "mine"}]}]}
    }


def test_gemini_home_and_a_note_when_its_hooks_are_off(home: Home) -> None:
    home.environ["GEMINI_CLI_HOME"] = str(home.root / "g")
    path = home.root / "g" / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"hooksConfig": {"enabled": false}}')
    assert home.hooks("install", "gemini") == 0
    assert "note: hooksConfig.enabled is false" in home.said
    assert read(path)["hooksConfig"] == {"enabled": False}


def test_qwen_code_timeouts_are_seconds_and_qwen_home_is_honoured(home: Home) -> None:
    home.environ["QWEN_HOME"] = str(home.root / "q")
    assert home.hooks("install", "qwen-code") == 0
    document = read(home.root / "q" / "settings.json")
    (group,) = document["hooks"]["PermissionRequest"]
    assert group["hooks"][0]["timeout"] == 5
    assert group["hooks"][0]["command"] == command(TRAY, "qwen-code", "PermissionRequest")


def test_a_subtype_is_a_group_s_matcher_in_gemini_s_shape(home: Home) -> None:
    home.rules("gemini", rules("Gemini", ("Notification:ToolPermission", "blocked")))
    path = home.home / ".gemini" / "settings.json"
    path.parent.mkdir()
    mine = {"matcher": "ToolPermission", "hooks": [{"type": "command", "command": "say hi"}]}
    path.write_text(json.dumps({"hooks": {"Notification": [mine]}}))
    assert home.hooks("install", "gemini") == 0
    assert read(path)["hooks"]["Notification"] == [
        mine,
        {
            "matcher": "ToolPermission",
            "hooks": [
                {
                    "name": "tray",
                    "type": "command",
                    "command": command(TRAY, "gemini", "Notification:ToolPermission"),
                    "timeout": 5000,
                }
            ],
        },
    ]
    # The user's hook joins tray's group: the group's matcher cannot change for tray's
    # sake, so tray's hook moves to a group of its own.
    document = read(path)
    document["hooks"]["Notification"][1]["matcher"] = "*"
    document["hooks"]["Notification"][1]["hooks"].append({"type": "command", "command": "x"})
    path.write_text(json.dumps(document))
    assert home.hooks("install", "gemini") == 0
    assert "updated Notification:ToolPermission" in home.said
    groups = read(path)["hooks"]["Notification"]
    assert groups[1] == {"matcher": "*", "hooks": [{"type": "command", "command": "x"}]}
    assert groups[2]["matcher"] == "ToolPermission"
    assert len(groups) == 3


def test_a_symbolic_link_to_the_settings_is_followed_and_kept(home: Home) -> None:
    target = home.root / "dotfiles" / "settings.json"
    target.parent.mkdir()
    target.write_text('{"theme": "dark"}')
    link = home.home / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)
    home.hooks("install", "gemini")
    assert link.is_symlink()
    assert read(target)["theme"] == "dark"
    assert "Notification" in read(target)["hooks"]


@pytest.mark.parametrize("action", ["install", "remove"])
@pytest.mark.parametrize(
    "text",
    [
        '{"theme": "dark",}',
        "// comment\n{}",
        "[1]",
        '{"hooks": []}',
        '{"hooks": {"Notification": 3}}',
    ],
)
def test_a_settings_file_tray_cannot_read_is_one_line_and_left_alone(
    home: Home, action: str, text: str
) -> None:
    path = home.home / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    status = home.hooks(action, "gemini")
    if action == "remove" and text == '{"hooks": {"Notification": 3}}':
        assert status == 0  # nothing of tray's to take out of it
    else:
        assert status == 1
        (line,) = home.error.splitlines()
        assert line.startswith(f"tray hooks: {path}: ")
        assert line.endswith("left as it is")
    assert path.read_text() == text
    assert os.listdir(path.parent) == ["settings.json"]  # no temporary file left


# opencode: a plugin file of tray's own.


def test_opencode_gets_a_plugin_that_remove_deletes(home: Home) -> None:
    path = home.config / "opencode" / "plugins" / "tray.js"
    assert home.hooks("install", "opencode") == 0
    text = path.read_text()
    assert text.splitlines()[0] == MARK
    assert json.dumps(TRAY) in text
    assert str(path) in home.said
    assert home.hooks("install", "opencode") == 0
    assert "nothing changed" in home.said
    assert home.hooks("remove", "opencode") == 0
    assert not path.exists()


def test_the_opencode_plugin_carries_the_rules_names_and_an_older_one_is_updated(
    home: Home,
) -> None:
    home.rules(
        "opencode",
        rules(
            "Opencode",
            ("session.status:busy", "working"),
            ("session.idle", "done"),
            ("permission.replied:reject", "working"),
        ),
    )
    assert home.hooks("install", "opencode") == 0
    assert "not installed: permission.replied:reject: tray's plugin knows no subtype" in (home.said)
    path = home.config / "opencode" / "plugins" / "tray.js"
    new = path.read_bytes()
    assert new == render(TRAY, ["session.status:busy", "session.idle"])
    assert b'"events": ["session.status:busy", "session.idle"]' in new
    assert b'"subtypes": {"session.status": ["status", "type"]}' in new
    # The first installer's plugin passed the event's properties alone.
    older = new.replace(b"JSON.stringify(event)", b"JSON.stringify(event.properties ?? {})")
    assert older != new
    path.write_bytes(older)
    assert home.hooks("list", "opencode") == 0
    assert "not what this tray would install" in home.said
    assert path.read_bytes() == older  # list writes nothing
    assert home.hooks("install", "opencode") == 0
    assert "updated session.status:busy" in home.said
    assert "updated session.idle" in home.said
    assert path.read_bytes() == new
    assert home.hooks("install", "opencode") == 0
    assert "nothing changed" in home.said


def test_opencode_s_folder_is_xdg_config_home_else_dot_config(tmp_path: Path) -> None:
    plugin = OpencodePlugin()
    assert plugin.path({}, tmp_path) == tmp_path / ".config" / "opencode" / "plugins" / "tray.js"
    assert plugin.path({"XDG_CONFIG_HOME": "/x/c"}, tmp_path) == Path(
        "/x/c/opencode/plugins/tray.js"
    )
    # A relative one is no XDG folder (the spec says to ignore it).
    assert plugin.path({"XDG_CONFIG_HOME": "c"}, tmp_path).parent.parent.parent == (
        tmp_path / ".config"
    )


def test_a_tray_js_of_the_user_s_is_never_touched(home: Home) -> None:
    path = home.config / "opencode" / "plugins" / "tray.js"
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({});\n")
    assert home.hooks("install", "opencode") == 1
    assert "not tray's plugin" in home.error
    assert home.hooks("remove", "opencode") == 0
    assert "left as it is" in home.said
    assert path.read_text() == "export const Mine = async () => ({});\n"


# list, and the command line.


def test_list_says_what_is_installed_where(home: Home) -> None:
    home.hooks("install", "copilot")
    home.hooks("install", "opencode", argv=OTHER_TRAY)
    bad = home.home / ".qwen" / "settings.json"
    bad.parent.mkdir()
    bad.write_text("{")
    assert home.hooks("list") == 1
    lines = home.said.splitlines()
    assert lines[0] == (
        "copilot: notification:permission_prompt, notification:elicitation_dialog, agentStop "
        f"({home.home}/.copilot/hooks/tray.json)"
    )
    assert lines[1] == f"gemini: not installed ({home.home}/.gemini/settings.json)"
    assert lines[2].startswith("opencode: permission.asked, not what this tray would install")
    assert lines[3].startswith(f"qwen-code: {bad}: not valid JSON")


def test_the_command_line(tray_home: Tray) -> None:
    result = tray_home.run("hooks", "install", "copilot")
    # The shipped rules may or may not name Copilot's events yet; either way one answer.
    assert result.returncode in (0, 1), result.stderr
    result = tray_home.run("hooks", "install")
    assert result.returncode == 2
    assert result.stderr.startswith("tray hooks install: missing AGENT")
    result = tray_home.run("hooks", "install", "claude-code")
    assert result.returncode == 2
    assert "tray has them for copilot, gemini, opencode or qwen-code" in result.stderr
    result = tray_home.run("hooks", "frob")
    assert result.returncode == 2
    result = tray_home.run("hooks")
    assert result.returncode == 0, result.stderr
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == [
        "copilot",
        "gemini",
        "opencode",
        "qwen-code",
    ]


def test_main_reports_a_bad_agent_as_usage(tmp_path: Path) -> None:
    stderr = io.StringIO()
    env = Environment(environ={"HOME": str(tmp_path)}, stdout=io.StringIO(), stderr=stderr)
    assert main(["hooks", "remove", "aider"], env) == 2
    assert stderr.getvalue().startswith("tray hooks: no hooks for 'aider'")
