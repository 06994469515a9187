"""Konsole: the session's tab, through the window object of its D-Bus service.

``org.kde.konsole.Window.setCurrentSession`` selects the tab; it does not raise the
window, so the window way (WINDOWID on X11, KWin on Wayland) follows it.

On Plasma's Wayland, KWin finds a Konsole window by its process, and one process may
have several windows with nothing to tell KWin which holds the tab; then the result says
so (measured on Konsole 22.12: the tab is selected, the window stays where it is).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from . import kwin
from ._dbus import DBusError, call
from ._tools import UNIQUE_NAME, FocusResult, Step

_SERVICE = re.compile(r"org\.kde\.konsole(-[0-9]{1,9})?")
_SESSION = re.compile(r"/Sessions/([0-9]{1,6})")
_WINDOW = re.compile(r"/Windows/[0-9]{1,6}")
_WINDOW_NODE = re.compile(r'<node name="[0-9]{1,6}"')
WINDOW_INTERFACE = "org.kde.konsole.Window"


def plan(terminal: Mapping[str, str]) -> Step | str | None:
    if "KONSOLE_DBUS_SESSION" not in terminal:
        return None
    service = terminal.get("KONSOLE_DBUS_SERVICE", "")
    if not (UNIQUE_NAME.fullmatch(service) or _SERVICE.fullmatch(service)):
        return "Konsole: its D-Bus service was not recorded"
    session = _SESSION.fullmatch(terminal["KONSOLE_DBUS_SESSION"])
    window = terminal.get("KONSOLE_DBUS_WINDOW", "")
    if session is None or not _WINDOW.fullmatch(window):
        # Konsole before 21.08 sets no KONSOLE_DBUS_WINDOW.
        return "Konsole: the session's tab or window was not recorded"
    number = session.group(1)
    return Step("Konsole tab", lambda env: _select(service, window, number, env))


def _select(service: str, window: str, session: str, env: Mapping[str, str]) -> FocusResult:
    try:
        call(service, window, f"{WINDOW_INTERFACE}.setCurrentSession", "i", [int(session)], env)
    except DBusError as error:
        if error.gone:
            return FocusResult(False, "Konsole: the session's Konsole has exited")
        return FocusResult(False, f"Konsole could not select the tab: {error}")
    selected = f"selected Konsole tab {session}"
    windows = _window_count(service, env) if kwin.is_kde_wayland(env) else 1
    if windows > 1:
        return FocusResult(
            True,
            f"{selected}; Konsole has {windows} windows open, and KWin cannot be told which "
            "one holds the tab, so it may stay behind",
            partial=True,
        )
    return FocusResult(True, selected)


def _window_count(service: str, env: Mapping[str, str]) -> int:
    """How many windows the Konsole of ``service`` has (its /Windows/N objects)."""
    try:
        reply = call(
            service, "/Windows", "org.freedesktop.DBus.Introspectable.Introspect", "", [], env
        )
    except DBusError:
        return 0
    xml = reply[0] if reply and isinstance(reply[0], str) else ""
    return len(_WINDOW_NODE.findall(xml))
