"""``org.freedesktop.ScreenSaver``'s ``GetActive`` and its ``ActiveChanged`` signal on
the session bus: whether the screen saver (and so the lock) is on, where logind does
not say."""

from __future__ import annotations

from dbus_fast import Message

from tray.desktop.bus import BusCallError, call_method, subscribe

from ._source import Desk, Source

SCREENSAVER = "org.freedesktop.ScreenSaver"
# KDE answers on both paths; others on the first only.
SCREENSAVER_PATHS = ("/org/freedesktop/ScreenSaver", "/ScreenSaver")


class ScreenSaverLock(Source):
    key = "screensaver-lock"
    name = "the screen saver's lock (org.freedesktop.ScreenSaver)"
    kind = "lock"

    async def follow(self, desk: Desk) -> bool:
        bus = desk.session
        if bus is None:
            return False
        for path in SCREENSAVER_PATHS:
            try:
                (active,) = await call_method(bus, (SCREENSAVER, path, SCREENSAVER), "GetActive")
            except (BusCallError, ValueError):
                continue
            if not isinstance(active, bool):
                continue

            def changed(message: Message) -> None:
                (value,) = message.body
                if isinstance(value, bool):
                    desk.locked(value)

            try:
                await subscribe(
                    bus,
                    {"sender": SCREENSAVER, "path": path, "interface": SCREENSAVER,
                     "member": "ActiveChanged"},
                    changed,
                )  # fmt: skip
            except BusCallError:
                return False
            desk.locked(active)
            return True
        return False
