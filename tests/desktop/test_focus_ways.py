"""Each terminal's way, from recorded variables to the exact argv and D-Bus calls.

WezTerm, Konsole, Ptyxis and KWin are not in Debian 12 (or do not run headless here), so
their tools are fakes: small shell scripts named like the real ones, on a PATH of their
own, that record every argument they get and answer what the real ones would. Their
D-Bus services are one fake peer on a real private bus, which a monitor watches, so
every call tray makes there is seen, whatever name it is made on
(:mod:`helpers.desktop_fake_bus`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbus_fast import Variant
from helpers.desktop_fake_bus import FakeBusPeer
from helpers.desktop_services import start_bus, stop_process

from tray.base.check import Check
from tray.desktop.focus import check_focus, focus_plan, focus_session
from tray.desktop.focus.gnome_terminal import ENABLE_COMMAND
from tray.desktop.focus.kitty import HOW_TO_ENABLE
from tray.desktop.focus.kwin import script
from tray.state.liveness import process_start_token

_FAKE = """#!/bin/sh
{{ printf '%s\\037' "${{0##*/}}" "$@"; printf '\\036'; }} >> "{calls}"
case "${{0##*/}} $*" in
  wezterm*) printf 'socket=%s' "$WEZTERM_UNIX_SOCKET" >> "{calls}.env" ;;
  "xdotool search"*) echo "$FAKE_WINDOWS" ;;
esac
"""
TOOLS = ("kitty", "wezterm", "xdotool", "tmux")
# The terminals' services the fake peer stands in for.
NAMES = ("org.kde.konsole-4242", "org.kde.KWin", "org.gnome.Ptyxis")


def _metas(body: list[Any]) -> tuple[str, list[Any]]:
    """GNOME Terminal's GetResultMetas: a description of each result it was asked for."""
    return "aa{sv}", [[{"id": Variant("s", result)} for result in body[0]]]


class Fakes:
    """The fake tools on a PATH of their own, and the fake D-Bus peer on a private bus."""

    def __init__(self, directory: Path) -> None:
        self.bin = directory / "bin"
        self.bin.mkdir()
        self.calls_file = directory / "calls"
        for tool in TOOLS:
            path = self.bin / tool
            path.write_text(_FAKE.format(calls=self.calls_file))
            path.chmod(0o755)
        self._bus, address = start_bus(directory / "bus")
        try:
            self.peer = FakeBusPeer(
                address, NAMES, {"GetResultMetas": _metas, "loadScript": lambda _b: ("i", [7])}
            )
        except BaseException:
            stop_process(self._bus)
            raise
        self.env = {
            "PATH": str(self.bin),
            "DISPLAY": ":5",
            "FAKE_WINDOWS": "4194305",
            "DBUS_SESSION_BUS_ADDRESS": address,
        }

    def calls(self) -> list[list[str]]:
        """The tools run, each as [tool, *argv]."""
        if not self.calls_file.exists():
            return []
        records = self.calls_file.read_text().split("\x1e")
        return [record.split("\x1f")[:-1] for record in records if record]

    def dbus(self) -> list[list[Any]]:
        """D-Bus calls as [destination, path, interface.method, *arguments]."""
        return self.peer.calls()

    def forget(self) -> None:
        self.calls_file.unlink(missing_ok=True)
        self.peer.forget()

    def close(self) -> None:
        self.peer.stop()
        stop_process(self._bus)


@pytest.fixture
def fakes(tmp_path: Path) -> Iterator[Fakes]:
    made = Fakes(tmp_path)
    try:
        yield made
    finally:
        made.close()


def _me() -> dict[str, str]:
    """A terminal process that is certainly alive: this test process."""
    return {
        "terminal_pid": str(os.getpid()),
        "terminal_start": process_start_token(os.getpid()) or "",
    }


UUID = "48d1d159-7cc3-4a7b-b32e-c9b9f6b6f58a"


def gnome(fakes: Fakes) -> dict[str, str]:
    """A GNOME Terminal tab whose terminal server is the fake peer (by its unique name,
    as GNOME Terminal records its own)."""
    return {
        "GNOME_TERMINAL_SCREEN": "/org/gnome/Terminal/screen/" + UUID.replace("-", "_"),
        "GNOME_TERMINAL_SERVICE": fakes.peer.unique_name,
    }


def test_gnome_terminal_asks_for_the_uuid_then_activates_it(fakes: Fakes) -> None:
    result = focus_session(gnome(fakes), env=fakes.env)
    assert result.ok, result.message
    provider = [
        "org.gnome.Shell.SearchProvider2." + m for m in ("GetResultMetas", "ActivateResult")
    ]
    server = fakes.peer.unique_name
    assert fakes.dbus() == [
        [server, "/org/gnome/Terminal/SearchProvider", provider[0], [UUID]],
        [server, "/org/gnome/Terminal/SearchProvider", provider[1], UUID, [], 0],
    ]


def test_gnome_terminal_with_the_tab_closed_says_so(fakes: Fakes) -> None:
    fakes.peer.replies["GetResultMetas"] = lambda _body: ("aa{sv}", [[]])
    result = focus_session(gnome(fakes), env=fakes.env)
    assert (result.ok, result.message) == (False, "GNOME Terminal: the session's tab is closed")
    assert [call[2].rsplit(".", 1)[1] for call in fakes.dbus()] == ["GetResultMetas"]


def test_gnome_terminal_without_provider_raises_its_one_window(fakes: Fakes) -> None:
    fakes.peer.refuse.add("GetResultMetas")
    result = focus_session({**gnome(fakes), **_me()}, env=fakes.env)
    assert result.ok, result.message
    assert ENABLE_COMMAND in result.message and "restart GNOME Terminal" in result.message
    xdotool = [call[1:] for call in fakes.calls() if call[0] == "xdotool"]
    assert xdotool == [
        ["search", "--onlyvisible", "--pid", str(os.getpid())],
        ["windowactivate", "--sync", "4194305"],
    ]


def test_gnome_terminal_without_provider_and_two_windows_guesses_none(fakes: Fakes) -> None:
    fakes.peer.refuse.add("GetResultMetas")
    env = {**fakes.env, "FAKE_WINDOWS": "4194305 4194400"}
    result = focus_session({**gnome(fakes), **_me()}, env=env)
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
    assert fakes.dbus() == [
        ["org.kde.konsole-4242", "/Windows/2", "org.kde.konsole.Window.setCurrentSession", 5]
    ]
    assert fakes.calls()[-1] == ["xdotool", "windowactivate", "--sync", "4194305"]


def test_konsole_on_kde_wayland_raises_through_kwin(fakes: Fakes) -> None:
    env = {**fakes.env, "WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "KDE"}
    result = focus_session({**KONSOLE, **_me()}, env=env)
    assert result.ok, result.message
    calls = fakes.dbus()
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
    assert calls[2][3:] == ["tray-focus"]
    path, plugin = calls[3][3:]
    assert plugin == "tray-focus"
    assert path.startswith("/") and path.endswith("/focus.js")


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
    assert fakes.dbus() == [
        ["org.freedesktop.DBus", "/org/freedesktop/DBus",
         "org.freedesktop.DBus.NameHasOwner", "org.gnome.Ptyxis"],
        ["org.gnome.Ptyxis", "/org/gnome/Ptyxis", "org.freedesktop.Application.Activate",
         {"activation-token": "tok_1:2", "desktop-startup-id": "tok_1:2"}],
    ]  # fmt: skip


def test_a_bad_activation_token_is_not_passed_on(fakes: Fakes) -> None:
    env = {**fakes.env, "WAYLAND_DISPLAY": "wayland-0"}
    focus_session({"PTYXIS_VERSION": "47.5"}, env=env, activation_token=BAD_TOKEN)
    assert fakes.dbus() == []


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
    assert check == Check("warn", "focus", f"kitty: remote control is off: {HOW_TO_ENABLE}")
    assert "allow_remote_control" in check.found and "listen_on" in check.found


def test_check_focus_asks_gnome_terminal_whether_its_provider_is_on(fakes: Fakes) -> None:
    assert check_focus({**gnome(fakes), **fakes.env}) == Check("ok", "focus", "GNOME Terminal tab")
    fakes.peer.refuse.add("GetResultMetas")
    off = check_focus({**gnome(fakes), **fakes.env})
    assert not off.ok
    assert ENABLE_COMMAND in off.found and "restart GNOME Terminal" in off.found
