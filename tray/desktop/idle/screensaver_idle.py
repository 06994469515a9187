"""``org.freedesktop.ScreenSaver.GetSessionIdleTime`` on the session bus: milliseconds
since the last input, as KDE's ksmserver answers it on X11 (from KIdleTime). It sends
no signal, so it is polled."""

from __future__ import annotations

from tray.desktop.bus import BusCallError, call_method

from ._source import Desk, PolledSource
from .screensaver_lock import SCREENSAVER, SCREENSAVER_PATHS


class ScreenSaverIdleTime(PolledSource):
    key = "screensaver-idle"
    name = "the screen saver's idle time (org.freedesktop.ScreenSaver)"

    async def idle_time(self, desk: Desk) -> float | None:
        bus = desk.session
        if bus is None:
            return None
        try:
            (millis,) = await call_method(
                bus, (SCREENSAVER, SCREENSAVER_PATHS[0], SCREENSAVER), "GetSessionIdleTime"
            )
        except (BusCallError, ValueError):
            return None
        return millis / 1000.0 if isinstance(millis, int) else None
