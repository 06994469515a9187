"""logind's ``LockedHint`` on the system bus: whether this login session's screen is
locked. Lockers that tell logind (GNOME, KDE, light-locker, ...) set it; it changes by
``PropertiesChanged``."""

from __future__ import annotations

from dbus_fast import Message, Variant

from tray.desktop.bus import BusCallError, call_method

from ._source import Desk, Source

LOGIND = "org.freedesktop.login1"
LOGIND_PATH = "/org/freedesktop/login1"
SESSION = f"{LOGIND}.Session"
PROPERTIES = "org.freedesktop.DBus.Properties"


class LockedHint(Source):
    key = "logind"
    name = "logind's LockedHint"
    kind = "lock"

    async def follow(self, desk: Desk) -> bool:
        bus = desk.system
        if bus is None:
            return False
        # Without XDG_SESSION_ID, logind picks the caller's own session.
        session_id = desk.env.get("XDG_SESSION_ID") or "auto"
        try:
            (path,) = await call_method(
                bus, (LOGIND, LOGIND_PATH, f"{LOGIND}.Manager"), "GetSession", "s", [session_id]
            )
            assert isinstance(path, str)
            (hint,) = await call_method(
                bus, (LOGIND, path, PROPERTIES), "Get", "ss", [SESSION, "LockedHint"]
            )
        except (BusCallError, ValueError, AssertionError):
            return False
        if not isinstance(hint, Variant) or not isinstance(hint.value, bool):
            return False

        def changed(message: Message) -> None:
            interface, values, _ = message.body
            if interface != SESSION or "LockedHint" not in values:
                return
            value = values["LockedHint"].value
            if isinstance(value, bool):
                desk.locked(value)

        try:
            await desk.subscribe(
                bus,
                {"sender": LOGIND, "path": path, "interface": PROPERTIES,
                 "member": "PropertiesChanged"},
                changed,
            )  # fmt: skip
        except BusCallError:
            return False
        desk.locked(hint.value)
        return True
