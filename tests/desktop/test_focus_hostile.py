"""Hostile values in a session's ``terminal`` never reach a tool: whatever a state file
holds, every tool run is one of the fixed ones, each argument is a fixed word or a value
of a strict shape, and D-Bus is called only on the terminals' own names, with values of
strict shapes (every call on the bus is seen: :mod:`helpers.desktop_fake_bus`)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from desktop.test_focus_ways import TOOLS, Fakes
from tray.desktop.bus_loop import attached
from tray.desktop.focus import focus_session
from tray.state.liveness import process_start_token
from tray.terminal.variables import TERMINAL_VARIABLES

FLAGS = {
    "-S", "-t", "--to", "--match", "--pane-id", "--sync", "--onlyvisible", "--pid",
}  # fmt: skip
DESTINATIONS = re.compile(
    r":[0-9]{1,6}\.[0-9]{1,9}|org\.gnome\.Terminal|org\.kde\.konsole(-[0-9]{1,9})?"
    r"|org\.kde\.KWin|org\.gnome\.Ptyxis|org\.freedesktop\.DBus"
)
# A string argument of a D-Bus call: a UUID, a path of ours, a fixed word, a token.
DBUS_TEXT = re.compile(r"[0-9a-f-]{36}|/[A-Za-z0-9_./-]{1,300}|tray-focus|org\.gnome\.Ptyxis|-")
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_.:/+=-]{1,200}")

# Almost right values, with something added: the shapes a forger would try.
NEAR_MISSES = [
    "%1; touch /tmp/owned", "$(reboot)", "-t%1", "%1\n", "1 --help", "--to=unix:/x",
    ":1.42'", "org.gnome.Terminal -x", "/Sessions/1 2", "/Windows/1'", "unix:@x y",
    "tcp:evil.example:1", "/org/gnome/Terminal/screen/x'];", "0x400001", "-5",
    "48d1d159-7cc3-4a7b-b32e-c9b9f6b6f58a']", "org.kde.KWin", "/tmp/s\x00", "/tmp/s\x1b[",
]  # fmt: skip
VALID = [
    "/tmp/x,y/sock,77,3", "%12", "/org/gnome/Terminal/screen/48d1d159_7cc3_4a7b_b32e_c9b9f6b6f58a",
    ":1.42", "3", "unix:@kitty", "/tmp/wez", "org.kde.konsole-7", "/Sessions/2",
    "/Windows/1", "47.5", "4194305", ":5", "wayland-0",
]  # fmt: skip
values = st.one_of(st.sampled_from(NEAR_MISSES), st.sampled_from(VALID), st.text(max_size=40))
KEYS = [*TERMINAL_VARIABLES, "terminal_pid", "terminal_start"]
# Whole, valid records of each terminal, for hostile values to be put into one by one.
BASES = [
    {"TMUX": "/tmp/x,y/sock,77,3", "TMUX_PANE": "%12", "WINDOWID": "4194305"},
    {"GNOME_TERMINAL_SCREEN": "/org/gnome/Terminal/screen/48d1d159_7cc3_4a7b_b32e_c9b9f6b6f58a",
     "GNOME_TERMINAL_SERVICE": ":1.42"},
    {"KITTY_WINDOW_ID": "3", "KITTY_LISTEN_ON": "unix:@kitty"},
    {"WEZTERM_PANE": "3", "WEZTERM_UNIX_SOCKET": "/tmp/wez", "WINDOWID": "4194305"},
    {"KONSOLE_DBUS_SERVICE": "org.kde.konsole-7", "KONSOLE_DBUS_SESSION": "/Sessions/2",
     "KONSOLE_DBUS_WINDOW": "/Windows/1", "DISPLAY": ":5"},
    {"PTYXIS_VERSION": "47.5", "terminal_pid": str(os.getpid()),
     "terminal_start": process_start_token(os.getpid()) or ""},
]  # fmt: skip
terminals = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), values, max_size=8),
    st.builds(
        lambda base, changes: {**base, **changes},
        st.sampled_from(BASES),
        st.dictionaries(st.sampled_from(KEYS), values, min_size=1, max_size=2),
    ),
)


def _check(call: list[str]) -> None:
    tool, *args = call
    assert tool in TOOLS
    for arg in args:
        assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in arg), call
        assert not arg.startswith("-") or arg in FLAGS, call


def _check_dbus(call: list[Any]) -> None:
    destination, _path, _method, *args = call
    assert DESTINATIONS.fullmatch(destination), call
    for arg in args:
        _check_value(arg, call)


def _check_value(value: Any, call: list[Any]) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, str, list, dict)):
        raise AssertionError(f"an argument of an odd type: {call}")
    if isinstance(value, int):
        assert 0 <= value < 10**9, call
    elif isinstance(value, str):
        assert DBUS_TEXT.fullmatch(value), call
    elif isinstance(value, list):
        for item in value:
            _check_value(item, call)
    else:
        assert set(value) == {"activation-token", "desktop-startup-id"}, call
        assert all(TOKEN_SHAPE.fullmatch(token) for token in value.values()), call


@pytest.fixture(scope="module")
def module_fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fakes]:
    """One private bus and fake peer for every example; each starts with a clean record.
    The bus loop is held for the module, so the examples share its connection, as the
    app's focus calls do."""
    fakes = Fakes(tmp_path_factory.mktemp("hostile"))
    try:
        with attached(fakes.env):
            yield fakes
    finally:
        fakes.close()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(terminal=terminals, token=st.one_of(st.none(), values))
def test_hostile_terminal_facts_never_reach_a_tool(
    module_fakes: Fakes, terminal: dict[str, str], token: str | None
) -> None:
    fakes = module_fakes
    fakes.forget()
    for desktop in ({}, {"WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "KDE"}):
        result = focus_session(terminal, env={**fakes.env, **desktop}, activation_token=token)
        assert result.message
        assert "\n" not in result.message
    calls = fakes.calls()
    event(f"tools run: {min(len(calls), 3)}")
    for call in calls:
        _check(call)
    dbus = fakes.dbus()
    event(f"D-Bus calls: {min(len(dbus), 3)}")
    for dbus_call in dbus:
        _check_dbus(dbus_call)
