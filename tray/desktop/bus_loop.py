"""The one D-Bus loop: one asyncio loop on one daemon thread, and on it one dbus-fast
connection to the session bus and one to the system bus, each made when first asked for
and kept until the loop closes.

Everything of tray's that speaks D-Bus runs here: the notifier (desktop-notifier too,
which keeps a connection of its own on this loop), the idle and lock sources, the tray
area's watcher probe, and focus. Work made on another thread is handed over with
:meth:`BusLoop.run` and a timeout, so no caller waits on the bus for ever, and nothing
else runs an asyncio loop.

The loops are shared by bus address: :func:`attach` hands every part that asks for the
same session and system buses the same loop, started by the first and closed when the
last detaches. ``tray app`` attaches first and detaches last, so its parts all share
one; a command (``tray doctor``) gets one for its run the same way.

Linux only; dbus-fast is imported when a connection is made.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine, Iterator, Mapping
from typing import Any, Final, TypeVar

from tray.base.safe_text import clean_text

T = TypeVar("T")

SYSTEM_BUS: Final = "unix:path=/var/run/dbus/system_bus_socket"
CLOSE_TIMEOUT: Final = 5.0
# A call of the idle watch or focus, and a connection to a bus: a source or a terminal
# that does not answer within this counts as none.
CALL_TIMEOUT: Final = 3.0


def describe(error: BaseException) -> str:
    """An error as one clean line for the user."""
    if isinstance(error, OSError) and error.strerror:
        return clean_text(error.strerror)
    return clean_text(str(error) or type(error).__name__)


class BusLoop:
    """One loop thread and its two connections; made by :func:`attach`."""

    def __init__(self, environ: Mapping[str, str], key: tuple[str, str]) -> None:
        self._environ = dict(environ)
        self._key = key
        self._users = 0
        self._buses: dict[str, Any] = {}
        # Why the latest connection failed, for a caller's one line.
        self.session_error: str | None = None
        self._loop = asyncio.new_event_loop()
        # Made on the loop: two parts asking at once get the same connection.
        self._connecting: asyncio.Lock | None = None
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="tray-bus")
        self._thread.daemon = True
        self._thread.start()
        ready.wait()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def on_loop(self) -> bool:
        """Whether the caller runs on this loop's thread (where :meth:`run` would wait
        on itself)."""
        return threading.current_thread() is self._thread

    def submit(self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``work`` on the loop; from any thread."""
        return asyncio.run_coroutine_threadsafe(work, self._loop)

    def run(self, work: Coroutine[Any, Any, T], timeout: float) -> T:
        """``work``'s result, from another thread; TimeoutError (the work cancelled)
        when it takes longer than ``timeout``."""
        if self.on_loop():
            work.close()
            raise RuntimeError("BusLoop.run called on the bus loop itself")
        future = self.submit(work)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer on the bus within {timeout:g} s") from None

    async def session(self) -> Any | None:
        """The session bus's connection (on the loop), or None when there is none to be
        had: no DBUS_SESSION_BUS_ADDRESS, or it cannot be reached (``session_error``
        says why)."""
        address = self._environ.get("DBUS_SESSION_BUS_ADDRESS")
        if not address:
            self.session_error = "DBUS_SESSION_BUS_ADDRESS is not set"
            return None
        return await self._connection("session", address)

    async def system(self) -> Any | None:
        """The system bus's connection (on the loop), or None."""
        return await self._connection(
            "system", self._environ.get("DBUS_SYSTEM_BUS_ADDRESS", SYSTEM_BUS)
        )

    async def _connection(self, kind: str, address: str) -> Any | None:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            bus = self._buses.get(kind)
            if bus is not None and bus.connected:
                return bus
            from dbus_fast.aio import MessageBus  # noqa: PLC0415  (Linux only)

            try:
                bus = await asyncio.wait_for(
                    MessageBus(bus_address=address).connect(), CALL_TIMEOUT
                )
            except TimeoutError:
                self._note(kind, f"the {kind} bus did not answer within {CALL_TIMEOUT:g} s")
                return None
            except Exception as error:  # any failure to reach a bus means "no bus here"
                self._note(kind, describe(error))
                return None
            self._buses[kind] = bus
            if kind == "session":
                self.session_error = None
            return bus

    def _note(self, kind: str, error: str) -> None:
        self._buses.pop(kind, None)
        if kind == "session":
            self.session_error = error

    def detach(self) -> None:
        """One user is done with the loop; the last closes it."""
        with _LOCK:
            self._users -= 1
            if self._users > 0:
                return
            if _SHARED.get(self._key) is self:
                del _SHARED[self._key]
        self._close()

    def _close(self) -> None:
        def finish() -> None:
            for bus in self._buses.values():
                with contextlib.suppress(Exception):
                    bus.disconnect()
            self._buses.clear()
            self._loop.stop()

        with contextlib.suppress(RuntimeError):  # closed already
            self._loop.call_soon_threadsafe(finish)
        if not self.on_loop():  # from the loop itself: it ends once this returns
            self._thread.join(CLOSE_TIMEOUT)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        ready.set()
        try:
            self._loop.run_forever()
            # What was still waiting (a notification, a look) ends with the loop.
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        finally:
            self._loop.close()


_LOCK = threading.Lock()
_SHARED: dict[tuple[str, str], BusLoop] = {}


def attach(environ: Mapping[str, str]) -> BusLoop:
    """The loop for ``environ``'s session and system buses, started if none runs yet;
    :meth:`BusLoop.detach` once done with it."""
    key = (
        environ.get("DBUS_SESSION_BUS_ADDRESS", ""),
        environ.get("DBUS_SYSTEM_BUS_ADDRESS", SYSTEM_BUS),
    )
    with _LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = BusLoop(environ, key)
        shared._users += 1  # the registry and the loop are one idea
        return shared


@contextlib.contextmanager
def attached(environ: Mapping[str, str]) -> Iterator[BusLoop]:
    """:func:`attach` for the block: ``tray app`` holds its loop so for its whole run."""
    shared = attach(environ)
    try:
        yield shared
    finally:
        shared.detach()


__all__ = ["CALL_TIMEOUT", "BusLoop", "attach", "attached", "describe"]
