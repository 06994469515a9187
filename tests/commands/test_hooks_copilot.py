"""``tray hooks`` and Copilot CLI's hooks file: the events that must never be installed,
and an older layout of tray's hooks brought up to date in place, on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.hook_homes import (
    NOTIFICATIONS,
    TRAY,
    Home,
    command,
    copilot_file,
    copilot_hook,
    make_home,
    read,
    rules,
)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return make_home(tmp_path)


# Fail-closed events: never installed, whatever the rules say.


@pytest.mark.parametrize("event", ["permissionRequest", "preToolUse"])
def test_copilot_s_fail_closed_events_are_never_installed(home: Home, event: str) -> None:
    home.rules("copilot", rules("Copilot", (event, "blocked"), ("agentStop", "done")))
    assert home.hooks("install", "copilot") == 0
    assert list(read(copilot_file(home))["hooks"]) == ["agentStop"]
    assert f"not installed: {event}: Copilot CLI denies every tool call" in home.said
    # Not a stale install either: list and a second install agree.
    assert home.hooks("list", "copilot") == 0
    assert "not what this tray would install" not in home.said
    home.rules("copilot", rules("Copilot", (event, "blocked")))
    assert home.hooks("install", "copilot") == 1
    assert f"not installed: {event}" in home.said
    assert "removed agentStop (no longer in the rules)" in home.said
    assert home.error == "tray hooks: the rules for Copilot name no hook event tray installs\n"
    assert not copilot_file(home).exists()


# An older layout of tray's hooks is brought up to date in place.


def test_an_older_copilot_install_is_updated_in_place(home: Home) -> None:
    path = copilot_file(home)
    path.parent.mkdir(parents=True)
    mine = {"type": "command", "bash": "audit-log", "timeoutSec": 3}
    # What the first installer wrote: each event name a key, permissionRequest with them.
    older = {
        "version": 1,
        "hooks": {
            "permissionRequest": [copilot_hook("permissionRequest")],
            "notification:permission_prompt": [copilot_hook("notification:permission_prompt")],
            "agentStop": [mine, copilot_hook("agentStop")],
        },
    }
    path.write_text(json.dumps(older))
    assert home.hooks("list", "copilot") == 0
    assert "not what this tray would install: run 'tray hooks install copilot'" in home.said
    assert home.hooks("install", "copilot") == 0
    assert read(path) == {
        "version": 1,
        "hooks": {"agentStop": [mine, copilot_hook("agentStop")], "notification": NOTIFICATIONS},
    }
    said = home.said.splitlines()
    assert (
        "  updated notification:permission_prompt: "
        + command(TRAY, "copilot", "notification:permission_prompt")
        in said
    )
    assert (
        "  added   notification:elicitation_dialog: "
        + command(TRAY, "copilot", "notification:elicitation_dialog")
        in said
    )
    assert "  removed permissionRequest (no longer in the rules)" in said
    assert not any("agentStop" in line for line in said)
    before = path.read_bytes()
    assert home.hooks("install", "copilot") == 0
    assert "nothing changed" in home.said
    assert path.read_bytes() == before
    assert home.hooks("list", "copilot") == 0
    assert home.said == (
        "copilot: agentStop, notification:permission_prompt, notification:elicitation_dialog "
        f"({path})\n"
    )


def test_a_hook_of_tray_s_with_a_wrong_matcher_is_set_right_where_it_is(home: Home) -> None:
    path = copilot_file(home)
    path.parent.mkdir(parents=True)
    wrong = copilot_hook("notification:permission_prompt", "elicitation_dialog")
    loose = copilot_hook("agentStop", "anything")
    doubled = copilot_hook("notification:elicitation_dialog", "elicitation_dialog")
    hooks = {"notification": [wrong, doubled, dict(doubled)], "agentStop": [loose]}
    path.write_text(json.dumps({"version": 1, "hooks": hooks}))
    assert home.hooks("install", "copilot") == 0
    assert read(path)["hooks"] == {
        "notification": NOTIFICATIONS,
        "agentStop": [copilot_hook("agentStop")],
    }
    for event in ("notification:permission_prompt", "notification:elicitation_dialog", "agentStop"):
        assert f"updated {event}" in home.said
    assert "added" not in home.said
