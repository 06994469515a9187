"""A fake D-Bus peer on a real private bus, and a monitor that sees every call made there.

For the focus ways whose programs are not in Debian 12 or cannot run headless (Konsole,
KWin, Ptyxis), and for GNOME Terminal's failure paths: :class:`FakeBusPeer` owns the
names a test gives it, answers each call from a table (an empty reply by default, an
UnknownMethod error for the members it is told to refuse), and a monitor connection
(``BecomeMonitor``) writes down every method call the other connections make, whatever
its destination, so a call to a name nobody owns is seen too.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable
from typing import Any

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

from helpers.desktop_services import TOOL_TIMEOUT

Reply = Callable[[list[Any]], tuple[str, list[Any]]]
BUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")
# What the peer sends itself, once all earlier calls are routed: the monitor's barrier.
_MARK = "FakeBusPeerMark"


def plain(value: Any) -> Any:
    """A body value with its Variants unwrapped, for comparing with plain Python."""
    if isinstance(value, Variant):
        return plain(value.value)
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


class FakeBusPeer:
    """Owns ``names`` on the bus at ``address``; ``replies`` maps a member to its reply."""

    def __init__(
        self, address: str, names: Iterable[str] = (), replies: dict[str, Reply] | None = None
    ) -> None:
        self.replies = dict(replies or {})
        self.refuse: set[str] = set()
        self._seen: list[list[Any]] = []
        self._lock = threading.Lock()
        self._marks = 0
        self._marked = threading.Condition(self._lock)
        self._loop = asyncio.new_event_loop()
        self._peer: MessageBus | None = None
        self._monitor: MessageBus | None = None
        self.unique_name = ""
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(address, tuple(names), ready), daemon=True
        )
        self._thread.start()
        assert ready.wait(TOOL_TIMEOUT), "the fake bus peer did not start"

    def _run(self, address: str, names: tuple[str, ...], ready: threading.Event) -> None:
        async def main() -> None:
            peer = await MessageBus(bus_address=address).connect()
            peer.add_message_handler(self._answer)
            for name in names:
                await peer.request_name(name)
            monitor = await MessageBus(bus_address=address).connect()
            await monitor.call(
                Message(
                    destination=BUS[0],
                    path=BUS[1],
                    interface="org.freedesktop.DBus.Monitoring",
                    member="BecomeMonitor",
                    signature="asu",
                    body=[["type='method_call'"], 0],
                )
            )
            monitor.add_message_handler(self._note)
            self._peer, self._monitor = peer, monitor
            self.unique_name = peer.unique_name or ""
            ready.set()
            await peer.wait_for_disconnect()  # type: ignore[no-untyped-call]

        # A disconnect at teardown ends main() with an error; nothing to report.
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(main())

    def _answer(self, message: Message) -> Message | bool | None:
        if message.message_type != MessageType.METHOD_CALL:
            return None
        member = message.member or ""
        if member == _MARK:
            return True  # handled, with no reply: a mark expects none
        if member in self.refuse:
            return Message.new_error(
                message, "org.freedesktop.DBus.Error.UnknownMethod", f"no such method {member}"
            )
        reply = self.replies.get(member)
        signature, body = reply(list(message.body)) if reply is not None else ("", [])
        return Message.new_method_return(message, signature, body)

    def _note(self, message: Message) -> bool:
        if message.message_type != MessageType.METHOD_CALL:
            return True
        with self._lock:
            if message.member == _MARK:
                self._marks += 1
                self._marked.notify_all()
            elif message.sender != self.unique_name and message.member != "Hello":
                self._seen.append(
                    [
                        message.destination,
                        message.path,
                        f"{message.interface}.{message.member}",
                        *(plain(value) for value in message.body),
                    ]
                )
        return True

    def calls(self) -> list[list[Any]]:
        """Every method call made on the bus so far by others than this peer, as
        [destination, path, interface.member, *body]: all of them, since the monitor is
        shown a mark sent after them and waited for."""
        with self._lock:
            wanted = self._marks + 1

        def mark() -> None:
            assert self._peer is not None
            self._peer.send(
                Message(
                    destination=self.unique_name,
                    path="/",
                    interface="org.tray.Test",
                    member=_MARK,
                    flags=1,  # NO_REPLY_EXPECTED
                )
            )

        self._loop.call_soon_threadsafe(mark)
        with self._lock:
            assert self._marked.wait_for(lambda: self._marks >= wanted, TOOL_TIMEOUT)
            return list(self._seen)

    def signal(
        self, path: str, interface: str, member: str, signature: str, body: list[object]
    ) -> None:
        """Emit a signal from this peer."""

        def send() -> None:
            assert self._peer is not None
            self._peer.send(Message.new_signal(path, interface, member, signature, body))

        self._loop.call_soon_threadsafe(send)

    def forget(self) -> None:
        """Start the record anew (after :meth:`calls`, so nothing earlier comes later)."""
        self.calls()
        with self._lock:
            self._seen.clear()

    def stop(self) -> None:
        def close() -> None:
            for bus in (self._monitor, self._peer):
                if bus is not None:
                    bus.disconnect()

        self._loop.call_soon_threadsafe(close)
        self._thread.join(TOOL_TIMEOUT)
