"""GNOME Terminal: the session's tab, through the server's search provider.

``ActivateResult`` with the screen's UUID selects the tab and presents its window; it
reports no failure whatever it is given, so ``GetResultMetas`` is asked first whether
the server knows that UUID. GNOME Terminal 3.46 and later export the provider only when
``shell-integration-enabled`` is on, and read it when the server starts.

On GNOME Shell's Wayland (measured on 43, GNOME Terminal a Wayland client) the provider
still selects the tab, but the window stays behind: mutter marks it as demanding
attention, and the shell shows its own notification "“<title>” is ready", whose click
brings the window forward. GNOME Shell 43's notification server hands over no
activation token on a click. Where a token comes, it goes to the server first as
GApplication platform data (``org.freedesktop.Application.Activate``): GTK keeps it for
the next window it presents, the provider's, and mutter then raises that window.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from . import x11
from ._dbus import DBusError, call
from ._tools import ACTIVATION_TOKEN, UNIQUE_NAME, FocusResult, Step, platform_data, quoted

PROVIDER_PATH = "/org/gnome/Terminal/SearchProvider"
APPLICATION_PATH = "/org/gnome/Terminal"
PROVIDER = "org.gnome.Shell.SearchProvider2"
WELL_KNOWN = "org.gnome.Terminal"
ENABLE_COMMAND = "gsettings set org.gnome.Terminal.Legacy.Settings shell-integration-enabled true"
PROVIDER_OFF = (
    "GNOME Terminal's search provider is off, so the tab cannot be selected: run "
    f"`{ENABLE_COMMAND}`, then restart GNOME Terminal"
)
# What GNOME Shell on Wayland leaves to the user: one clause, as the menu shows a
# message's parts ("; ") on lines of their own.
GNOME_WAYLAND_NOTE = (
    'GNOME Shell on Wayland keeps the window behind and shows "<tab title> is ready": '
    "click that notification to bring it forward"
)

# The screen's object path; its last part is the UUID with "_" for "-".
_SCREEN = re.compile(
    r"/org/gnome/Terminal/screen/"
    r"([0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12})"
)


def gnome_wayland(env: Mapping[str, str]) -> bool:
    """The app runs in a GNOME Shell Wayland session (Ubuntu's says "ubuntu:GNOME")."""
    desktops = env.get("XDG_CURRENT_DESKTOP", "").split(":")
    return bool(env.get("WAYLAND_DISPLAY")) and "GNOME" in desktops


def plan(
    terminal: Mapping[str, str], env: Mapping[str, str], token: str | None = None
) -> Step | str | None:
    if "GNOME_TERMINAL_SCREEN" not in terminal:
        return None
    screen = terminal["GNOME_TERMINAL_SCREEN"]
    match = _SCREEN.fullmatch(screen)
    if match is None:
        return f"GNOME Terminal: the recorded screen {quoted(screen)} is not a screen path"
    service = terminal.get("GNOME_TERMINAL_SERVICE", "")
    if not (UNIQUE_NAME.fullmatch(service) or service == WELL_KNOWN):
        return "GNOME Terminal: its service's bus name was not recorded"
    uuid = match.group(1).replace("_", "-")
    fallback = x11.plan_process(terminal, env, owner="GNOME Terminal")
    if token is not None and not ACTIVATION_TOKEN.fullmatch(token):
        token = None
    return Step(
        "GNOME Terminal tab",
        lambda app_env: _activate(service, uuid, fallback, token, app_env),
    )


def _activate(
    service: str,
    uuid: str,
    fallback: Step | str | None,
    token: str | None,
    env: Mapping[str, str],
) -> FocusResult:
    try:
        metas = call(service, PROVIDER_PATH, f"{PROVIDER}.GetResultMetas", "as", [[uuid]], env)
    except DBusError as error:
        if error.missing:
            return _raise_window(fallback, env)
        if error.gone:
            return FocusResult(False, "GNOME Terminal: the session's terminal server has exited")
        return FocusResult(False, f"GNOME Terminal did not answer: {error}")
    if not _knows(metas, uuid):
        return FocusResult(False, "GNOME Terminal: the session's tab is closed")
    handed = token is not None and _hand_token(service, token, env)
    try:
        call(service, PROVIDER_PATH, f"{PROVIDER}.ActivateResult", "sasu", [uuid, [], 0], env)
    except DBusError as error:
        return FocusResult(False, f"GNOME Terminal could not select the tab: {error}")
    if handed:
        return FocusResult(True, "selected the GNOME Terminal tab, with an activation token")
    if gnome_wayland(env):
        return FocusResult(
            True, f"selected the GNOME Terminal tab; {GNOME_WAYLAND_NOTE}", partial=True
        )
    return FocusResult(True, "selected the GNOME Terminal tab")


def _knows(metas: list[object], uuid: str) -> bool:
    """Whether GetResultMetas's reply (``aa{sv}``) describes the screen ``uuid``: the
    server leaves out a result it does not know."""
    results = metas[0] if len(metas) == 1 and isinstance(metas[0], list) else []
    for meta in results:
        found = meta.get("id") if isinstance(meta, dict) else None
        if getattr(found, "value", None) == uuid:
            return True
    return False


def _hand_token(service: str, token: str, env: Mapping[str, str]) -> bool:
    """Give the server the click's token for the window it presents next. A server
    whose application object is elsewhere (another --app-id) goes on without it."""
    try:
        call(
            service, APPLICATION_PATH, "org.freedesktop.Application.Activate", "a{sv}",
            [platform_data(token)], env,
        )  # fmt: skip
    except DBusError:
        return False
    return True


def _raise_window(fallback: Step | str | None, env: Mapping[str, str]) -> FocusResult:
    """The provider is off: raise the window when the server has exactly one."""
    if not isinstance(fallback, Step):
        return FocusResult(False, PROVIDER_OFF)
    raised = fallback.act(env)
    if not raised.ok:
        return FocusResult(False, f"{PROVIDER_OFF}; {raised.message}")
    return FocusResult(True, f"{raised.message}; {PROVIDER_OFF}", partial=True)


def provider_enabled(service: str, env: Mapping[str, str]) -> bool | None:
    """Whether the server exports its search provider (None: could not ask)."""
    try:
        call(service, PROVIDER_PATH, f"{PROVIDER}.GetResultMetas", "as", [["-"]], env)
    except DBusError as error:
        return False if error.missing else None
    return True
