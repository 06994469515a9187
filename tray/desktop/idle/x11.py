"""X11's MIT-SCREEN-SAVER extension through python-xlib: milliseconds since the last
input on ``DISPLAY``. It sends no event tray could wait on here, so it is polled."""

from __future__ import annotations

import contextlib
from typing import Any

from ._source import Desk, PolledSource


class X11IdleTime(PolledSource):
    key = "x11"
    name = "X11 idle time (MIT-SCREEN-SAVER)"

    def __init__(self) -> None:
        # The connection, kept between polls; python-xlib has no types.
        self._display: Any = None

    async def idle_time(self, desk: Desk) -> float | None:
        """Seconds since the last input on the display, or None when it cannot tell; a
        lost connection is closed, and the next call opens a new one."""
        display_name = desk.env.get("DISPLAY")
        if not display_name:
            return None
        try:
            if self._display is None:
                from Xlib import display as xdisplay  # noqa: PLC0415 - X11 only

                connection = xdisplay.Display(display_name)
                if not connection.has_extension("MIT-SCREEN-SAVER"):
                    connection.close()
                    return None
                self._display = connection
            info = self._display.screen().root.screensaver_query_info()
            return float(info.idle) / 1000.0
        except Exception:  # python-xlib raises many kinds; all mean "lost"
            self.close()
            return None

    def close(self) -> None:
        connection, self._display = self._display, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()
