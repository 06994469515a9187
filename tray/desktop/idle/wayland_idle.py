"""The compositor's own idle notice on Wayland, ``ext_idle_notifier_v1``: an idle
notification with ``after`` as its timeout says ``idled`` when there was no input that
long, and ``resumed`` at the next input, so nothing is polled.

KWin (KDE Plasma 5.27 and later) offers it, and so do other compositors; on Plasma's
Wayland it is the one way to tell, since ``org.freedesktop.ScreenSaver`` answers
``GetSessionIdleTime`` with NotSupported there. The connection is this source's own,
read by the monitor's event loop (:meth:`asyncio.AbstractEventLoop.add_reader`).
"""

from __future__ import annotations

import asyncio

from tray.desktop.bus import CALL_TIMEOUT
from tray.desktop.wayland_wire import WL_SEAT, Interface, WaylandConnection, WaylandError

from ._source import Desk, Source

IDLE_NOTIFIER = Interface(
    "ext_idle_notifier_v1", {"destroy": (0, ""), "get_idle_notification": (1, "nuo")}
)
IDLE_NOTIFICATION = Interface(
    "ext_idle_notification_v1", {"destroy": (0, "")}, {0: ("idled", ""), 1: ("resumed", "")}
)
# The protocol's timeout is a uint32 of milliseconds.
MAX_TIMEOUT_MS = 0xFFFFFFFF


class WaylandIdleNotifier(Source):
    key = "wayland-idle"
    name = "the compositor's idle notice (Wayland ext_idle_notifier_v1)"
    kind = "idle"

    def __init__(self) -> None:
        self._connection: WaylandConnection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fd = -1
        # What follow waits on (a roundtrip's answer); a broken connection fails it.
        self._waiting: asyncio.Future[None] | None = None
        self._following = False

    async def follow(self, desk: Desk) -> bool:
        if not desk.env.get("WAYLAND_DISPLAY"):
            return False
        try:
            connection = WaylandConnection.connect(desk.env)
        except WaylandError as error:
            desk.log.info("%s: %s", self.name, error)
            return False
        self._connection = connection
        self._loop = asyncio.get_running_loop()
        self._fd = connection.fileno()

        def readable() -> None:
            try:
                connection.read_available()
            except WaylandError as error:
                self._stop_reading()
                if self._waiting is not None and not self._waiting.done():
                    self._waiting.set_exception(error)
                if self._following:
                    # The compositor went away or broke the protocol: present, which
                    # forwards nothing, as when a polled source is lost.
                    desk.log.warning("%s: %s", self.name, error)
                    desk.idle_edge(False)

        self._loop.add_reader(self._fd, readable)
        try:
            await self._roundtrip(connection)
            if connection.find(IDLE_NOTIFIER.name) is None or connection.find(WL_SEAT.name) is None:
                self.close()
                return False
            timeout_ms = min(MAX_TIMEOUT_MS, max(1, round(desk.after * 1000)))
            seat = connection.bind(WL_SEAT, 1)
            notification = connection.bind(IDLE_NOTIFIER, 1).request(
                "get_idle_notification", timeout_ms, seat.id, new=IDLE_NOTIFICATION
            )
            assert notification is not None
            notification.handler = lambda event, _args: desk.idle_edge(event == "idled")
            # A protocol error (a seat the compositor refuses, say) comes before this.
            await self._roundtrip(connection)
        except WaylandError as error:
            desk.log.info("%s: %s", self.name, error)
            self.close()
            return False
        self._following = True
        return True

    async def _roundtrip(self, connection: WaylandConnection) -> None:
        """Wait until the compositor has handled everything sent so far."""
        assert self._loop is not None
        done: asyncio.Future[None] = self._loop.create_future()
        self._waiting = done

        def finished(_event: str, _args: object) -> None:
            if not done.done():
                done.set_result(None)

        connection.sync().handler = finished
        try:
            await asyncio.wait_for(done, CALL_TIMEOUT)
        except TimeoutError:
            raise WaylandError("the Wayland compositor did not answer in time") from None
        finally:
            self._waiting = None

    def _stop_reading(self) -> None:
        # Before the socket closes, so that the loop never watches a closed number.
        if self._loop is not None and self._fd >= 0 and not self._loop.is_closed():
            self._loop.remove_reader(self._fd)
        self._fd = -1
        if self._connection is not None:
            self._connection.close()

    def close(self) -> None:
        self._following = False
        self._stop_reading()
