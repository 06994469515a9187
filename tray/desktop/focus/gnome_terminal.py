"""GNOME Terminal: the session's tab, through the server's search provider.

``ActivateResult`` with the screen's UUID selects the tab and presents its window; it
reports no failure whatever it is given, so ``GetResultMetas`` is asked first whether
the server knows that UUID. GNOME Terminal 3.46 and later export the provider only when
``shell-integration-enabled`` is on, and read it when the server starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from . import x11
from ._dbus import DBusError, call
from ._tools import UNIQUE_NAME, FocusResult, Step, quoted

PROVIDER_PATH = "/org/gnome/Terminal/SearchProvider"
PROVIDER = "org.gnome.Shell.SearchProvider2"
WELL_KNOWN = "org.gnome.Terminal"
ENABLE_COMMAND = "gsettings set org.gnome.Terminal.Legacy.Settings shell-integration-enabled true"
PROVIDER_OFF = (
    "GNOME Terminal's search provider is off, so the tab cannot be selected: run "
    f"`{ENABLE_COMMAND}`, then restart GNOME Terminal"
)

# The screen's object path; its last part is the UUID with "_" for "-".
_SCREEN = re.compile(
    r"/org/gnome/Terminal/screen/"
    r"([0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12})"
)


def plan(terminal: Mapping[str, str], env: Mapping[str, str]) -> Step | str | None:
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
    return Step("GNOME Terminal tab", lambda app_env: _activate(service, uuid, fallback, app_env))


def _activate(
    service: str, uuid: str, fallback: Step | str | None, env: Mapping[str, str]
) -> FocusResult:
    try:
        metas = call(service, PROVIDER_PATH, f"{PROVIDER}.GetResultMetas", [f"['{uuid}']"], env)
    except DBusError as error:
        if error.missing:
            return _raise_window(fallback, env)
        if error.gone:
            return FocusResult(False, "GNOME Terminal: the session's terminal server has exited")
        return FocusResult(False, f"GNOME Terminal did not answer: {error}")
    if f"'{uuid}'" not in metas:
        return FocusResult(False, "GNOME Terminal: the session's tab is closed")
    try:
        call(service, PROVIDER_PATH, f"{PROVIDER}.ActivateResult", [uuid, "[]", "0"], env)
    except DBusError as error:
        return FocusResult(False, f"GNOME Terminal could not select the tab: {error}")
    return FocusResult(True, "selected the GNOME Terminal tab")


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
        reply = call(service, PROVIDER_PATH, f"{PROVIDER}.GetResultMetas", ["['-']"], env)
    except DBusError as error:
        return False if error.missing else None
    return reply.startswith("(")
