"""Each terminal's way, from recorded variables to the exact argv and D-Bus calls.

WezTerm, Konsole, Ptyxis and KWin are not in Debian 12 (or do not run headless here), so
their tools are fakes: small shell scripts named like the real ones, on a PATH of their
own, that record every argument they get and answer what the real ones would.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tray.desktop.focus import FocusCheck, check_focus, focus_plan, focus_session
from tray.desktop.focus.gnome_terminal import ENABLE_COMMAND
from tray.desktop.focus.kitty import HOW_TO_ENABLE
from tray.desktop.focus.kwin import script
from tray.state.store import process_start_token

_FAKE = """#!/bin/sh
{{ printf '%s\\037' "${{0##*/}}" "$@"; printf '\\036'; }} >> "{calls}"
for last; do :; done
case "${{0##*/}} $*" in
  wezterm*) printf 'socket=%s' "$WEZTERM_UNIX_SOCKET" >> "{calls}.env" ;;
  gdbus*"$FAKE_GDBUS_FAIL"*)
    if [ -n "$FAKE_GDBUS_FAIL" ]; then
      echo "Error: GDBus.Error:org.freedesktop.DBus.Error.UnknownMethod: no such" >&2
      exit 1
    fi ;;
esac
case "${{0##*/}} $*" in
  *GetResultMetas*) printf "([{{'id': <%s>}}],)\\n" "$last" ;;
  *loadScript*) echo "(7,)" ;;
  *NameHasOwner*) echo "(true,)" ;;
  gdbus*) echo "()" ;;
  "xdotool search"*) echo "$FAKE_WINDOWS" ;;
esac
"""
TOOLS = ("gdbus", "kitty", "wezterm", "xdotool", "tmux")


class Fakes:
    def __init__(self, directory: Path) -> None:
        self.bin = directory / "bin"
        self.bin.mkdir()
        self.calls_file = directory / "calls"
        for tool in TOOLS:
            path = self.bin / tool
            path.write_text(_FAKE.format(calls=self.calls_file))
            path.chmod(0o755)
        self.env = {"PATH": str(self.bin), "DISPLAY": ":5", "FAKE_WINDOWS": "4194305"}

    def calls(self) -> list[list[str]]:
        if not self.calls_file.exists():
            return []
        records = self.calls_file.read_text().split("\x1e")
        return [record.split("\x1f")[:-1] for record in records if record]

    def gdbus(self) -> list[list[str]]:
        """gdbus calls as [dest, path, method, *args]."""
        found = []
        for call in self.calls():
            if call[0] == "gdbus":
                assert call[1:5] == ["call", "--session", "--timeout", "3"]
                assert (call[5], call[7], call[9]) == ("--dest", "--object-path", "--method")
                found.append([call[6], call[8], call[10], *call[11:]])
        return found


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    return Fakes(tmp_path)


def _me() -> dict[str, str]:
    """A terminal process that is certainly alive: this test process."""
    return {
        "terminal_pid": str(os.getpid()),
        "terminal_start": process_start_token(os.getpid()) or "",
    }


UUID = "48d1d159-7cc3-4a7b-b32e-c9b9f6b6f58a"
GNOME = {
    "GNOME_TERMINAL_SCREEN": "/org/gnome/Terminal/screen/" + UUID.replace("-", "_"),
    "GNOME_TERMINAL_SERVICE": ":1.42",
}


def test_gnome_terminal_asks_for_the_uuid_then_activates_it(fakes: Fakes) -> None:
    result = focus_session(GNOME, env=fakes.env)
    assert result.ok, result.message
    provider = [
        "org.gnome.Shell.SearchProvider2." + m for m in ("GetResultMetas", "ActivateResult")
    ]
    assert fakes.gdbus() == [
        [":1.42", "/org/gnome/Terminal/SearchProvider", provider[0], f"['{UUID}']"],
        [":1.42", "/org/gnome/Terminal/SearchProvider", provider[1], UUID, "[]", "0"],
    ]


def test_gnome_terminal_without_provider_raises_its_one_window(fakes: Fakes) -> None:
    env = {**fakes.env, "FAKE_GDBUS_FAIL": "GetResultMetas"}
    result = focus_session({**GNOME, **_me()}, env=env)
    assert result.ok, result.message
    assert ENABLE_COMMAND in result.message and "restart GNOME Terminal" in result.message
    xdotool = [call[1:] for call in fakes.calls() if call[0] == "xdotool"]
    assert xdotool == [
        ["search", "--onlyvisible", "--pid", str(os.getpid())],
        ["windowactivate", "--sync", "4194305"],
    ]


def test_gnome_terminal_without_provider_and_two_windows_guesses_none(fakes: Fakes) -> None:
    env = {**fakes.env, "FAKE_GDBUS_FAIL": "GetResultMetas", "FAKE_WINDOWS": "4194305 4194400"}
    result = focus_session({**GNOME, **_me()}, env=env)
    assert not result.ok
    assert "has 2 windows open" in result.message
    assert not [call for call in fakes.calls() if call[:2] == ["xdotool", "windowactivate"]]


def test_kitty_focus_window_argv(fakes: Fakes) -> None:
    terminal = {"KITTY_WINDOW_ID": "3", "KITTY_LISTEN_ON": "unix:@mykitty", "WINDOWID": "77"}
    result = focus_session(terminal, env=fakes.env)
    assert result.ok, result.message
    # focus-window raises the OS window too: WINDOWID is not needed then.
    assert [call[1:] for call in fakes.calls()] == [
        ["@", "--to", "unix:@mykitty", "focus-window", "--match", "id:3"]
    ]


def test_wezterm_activates_the_pane_then_raises_the_window(fakes: Fakes) -> None:
    terminal = {"WEZTERM_PANE": "12", "WEZTERM_UNIX_SOCKET": "/run/user/1/wezterm/gui-sock-9",
                "WINDOWID": "4194305"}  # fmt: skip
    _, reason = focus_plan(terminal, fakes.env)
    assert reason == "WezTerm pane 12, then X11 window 4194305"
    result = focus_session(terminal, env=fakes.env)
    assert result.ok, result.message
    assert fakes.calls() == [
        ["wezterm", "cli", "activate-pane", "--pane-id", "12"],
        ["xdotool", "windowactivate", "--sync", "4194305"],
    ]
    assert Path(f"{fakes.calls_file}.env").read_text() == "socket=/run/user/1/wezterm/gui-sock-9"


KONSOLE = {
    "KONSOLE_DBUS_SERVICE": "org.kde.konsole-4242",
    "KONSOLE_DBUS_SESSION": "/Sessions/5",
    "KONSOLE_DBUS_WINDOW": "/Windows/2",
}


def test_konsole_selects_the_tab_then_its_window(fakes: Fakes) -> None:
    result = focus_session({**KONSOLE, "WINDOWID": "4194305"}, env=fakes.env)
    assert result.ok, result.message
    assert fakes.gdbus() == [
        ["org.kde.konsole-4242", "/Windows/2", "org.kde.konsole.Window.setCurrentSession", "5"]
    ]
    assert fakes.calls()[-1] == ["xdotool", "windowactivate", "--sync", "4194305"]


def test_konsole_on_kde_wayland_raises_through_kwin(fakes: Fakes) -> None:
    env = {**fakes.env, "WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "KDE"}
    result = focus_session({**KONSOLE, **_me()}, env=env)
    assert result.ok, result.message
    calls = fakes.gdbus()
    assert calls[0][2] == "org.kde.konsole.Window.setCurrentSession"
    # How many windows Konsole has: KWin finds its window by the process.
    assert calls[1] == [
        "org.kde.konsole-4242",
        "/Windows",
        "org.freedesktop.DBus.Introspectable.Introspect",
    ]
    assert [call[:3] for call in calls[2:]] == [
        ["org.kde.KWin", "/Scripting", "org.kde.kwin.Scripting.unloadScript"],
        ["org.kde.KWin", "/Scripting", "org.kde.kwin.Scripting.loadScript"],
        ["org.kde.KWin", "/Scripting/Script7", "org.kde.kwin.Script.run"],
        ["org.kde.KWin", "/Scripting", "org.kde.kwin.Scripting.unloadScript"],
    ]
    path, plugin = calls[3][3:]
    assert plugin == "'tray-focus'"
    assert path.startswith("'/") and path.endswith("/focus.js'")


def test_the_kwin_script_holds_only_the_pids() -> None:
    text = script([4242, 17])
    assert "var pids = [4242, 17];" in text
    assert "workspace.activeWindow = w;" in text


def test_ptyxis_on_x11_raises_its_window_and_says_the_tab_is_not_chosen(fakes: Fakes) -> None:
    terminal = {"PTYXIS_VERSION": "47.5", **_me()}
    way, reason = focus_plan(terminal, fakes.env)
    assert way is not None
    assert "Ptyxis tells a tab no id" in reason
    result = focus_session(terminal, env=fakes.env)
    assert result.ok, result.message
    assert fakes.calls()[-1] == ["xdotool", "windowactivate", "--sync", "4194305"]


TOKEN = "tok_1:2"  # noqa: S105 - an activation token, no secret
BAD_TOKEN = "x'>, 'y': <'z"  # noqa: S105


def test_ptyxis_on_wayland_is_presented_with_the_activation_token(fakes: Fakes) -> None:
    env = {**fakes.env, "WAYLAND_DISPLAY": "wayland-0"}
    result = focus_session({"PTYXIS_VERSION": "47.5"}, env=env, activation_token=TOKEN)
    assert result.ok, result.message
    assert fakes.gdbus() == [
        ["org.freedesktop.DBus", "/org/freedesktop/DBus",
         "org.freedesktop.DBus.NameHasOwner", "org.gnome.Ptyxis"],
        ["org.gnome.Ptyxis", "/org/gnome/Ptyxis", "org.freedesktop.Application.Activate",
         "{'activation-token': <'tok_1:2'>, 'desktop-startup-id': <'tok_1:2'>}"],
    ]  # fmt: skip


def test_a_bad_activation_token_is_not_passed_on(fakes: Fakes) -> None:
    env = {**fakes.env, "WAYLAND_DISPLAY": "wayland-0"}
    focus_session({"PTYXIS_VERSION": "47.5"}, env=env, activation_token=BAD_TOKEN)
    assert fakes.gdbus() == []


@pytest.mark.parametrize(
    ("terminal", "env", "reason"),
    [
        ({"KITTY_WINDOW_ID": "1"}, {}, "kitty: remote control is off"),
        ({"WEZTERM_PANE": "1"}, {}, "WezTerm: its socket was not recorded for this session"),
        ({"KONSOLE_DBUS_SESSION": "/Sessions/1"}, {},
         "Konsole: its D-Bus service was not recorded"),
        ({"GNOME_TERMINAL_SCREEN": "/x"}, {},
         "GNOME Terminal: the recorded screen '/x' is not a screen path"),
        ({"terminal_pid": "99", "terminal_start": "1"}, {"WAYLAND_DISPLAY": "w"},
         "this Wayland desktop lets no program raise another's window"),
        ({}, {}, "no tmux pane, terminal tab or window recorded for this session"),
    ],
)  # fmt: skip
def test_focus_plan_gives_a_short_reason(
    terminal: dict[str, str], env: dict[str, str], reason: str
) -> None:
    assert focus_plan(terminal, env) == (None, reason)


def test_a_reused_terminal_pid_is_not_focused(fakes: Fakes) -> None:
    terminal = {"terminal_pid": str(os.getpid()), "terminal_start": "1"}
    result = focus_session(terminal, env=fakes.env)
    assert (result.ok, result.message) == (False, f"the terminal process {os.getpid()} has exited")
    assert fakes.calls() == []


def test_check_focus_names_the_kitty_settings() -> None:
    check = check_focus({"KITTY_WINDOW_ID": "1", "PATH": "/nonexistent"})
    assert check == FocusCheck(False, f"kitty: remote control is off: {HOW_TO_ENABLE}")
    assert "allow_remote_control" in check.text and "listen_on" in check.text


def test_check_focus_asks_gnome_terminal_whether_its_provider_is_on(fakes: Fakes) -> None:
    assert check_focus({**GNOME, **fakes.env}) == FocusCheck(True, "GNOME Terminal tab")
    off = check_focus({**GNOME, **fakes.env, "FAKE_GDBUS_FAIL": "GetResultMetas"})
    assert not off.ok
    assert ENABLE_COMMAND in off.text and "restart GNOME Terminal" in off.text
