"""Ptyxis: its window only. Ptyxis can focus a tab by its UUID (the app action
``focus-tab-by-uuid``), but puts no tab's UUID in the tab's environment (only
PTYXIS_VERSION and PTYXIS_PROFILE, the profile's), so the tab cannot be named.

On X11 its window is found by process; on Wayland it is presented through GApplication's
``org.freedesktop.Application.Activate`` with the notification server's activation
token, which is what lets a Wayland compositor raise it.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import x11
from ._dbus import DBusError, call, has_owner
from ._tools import ACTIVATION_TOKEN, FocusResult, Step, platform_data

BUS_NAME = "org.gnome.Ptyxis"
OBJECT = "/org/gnome/Ptyxis"
NO_TAB = "Ptyxis tells a tab no id of its own, so only its window is raised"


def applies(terminal: Mapping[str, str]) -> bool:
    return "PTYXIS_VERSION" in terminal


def plan(
    terminal: Mapping[str, str], env: Mapping[str, str], token: str | None
) -> Step | str | None:
    if not applies(terminal):
        return None
    if token is not None and ACTIVATION_TOKEN.fullmatch(token) and env.get("WAYLAND_DISPLAY"):
        return Step(
            "Ptyxis window, with an activation token", lambda app_env: _present(token, app_env)
        )
    return x11.plan_process(terminal, env, owner="Ptyxis")


def _present(token: str, env: Mapping[str, str]) -> FocusResult:
    # Activate would start Ptyxis if it were not running; it must already be.
    if not has_owner(BUS_NAME, env):
        return FocusResult(False, "Ptyxis is not running")
    try:
        call(
            BUS_NAME, OBJECT, "org.freedesktop.Application.Activate", "a{sv}",
            [platform_data(token)], env,
        )  # fmt: skip
    except DBusError as error:
        return FocusResult(False, f"Ptyxis could not be presented: {error}")
    return FocusResult(True, f"presented the Ptyxis window; {NO_TAB}")
