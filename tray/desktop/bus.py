"""D-Bus, for the app and for ``tray doctor``: the notification server's calls, and the
plain calls and signal subscriptions that the idle and lock watch
(:mod:`tray.desktop.idle`) and focus (:mod:`tray.desktop.focus`) make, all on the
connections of the one bus loop (:mod:`tray.desktop.bus_loop`).

Linux only; dbus-fast is imported when a call is made, so nothing pays for it before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tray.base.safe_text import clean_text
from tray.desktop.bus_loop import CALL_TIMEOUT, BusLoop, attach, describe

NOTIFICATIONS: Final = "org.freedesktop.Notifications"
NOTIFICATIONS_PATH: Final = "/org/freedesktop/Notifications"
SNI_WATCHER: Final = "org.kde.StatusNotifierWatcher"
BUS_TIMEOUT: Final = 5.0
# How long a server started by D-Bus activation may take to claim its name.
ACTIVATION_TIMEOUT: Final = 10.0
BUS_ITSELF: Final = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")


class BusCallError(Exception):
    """A D-Bus call answered with an error."""


def method_call(
    target: tuple[str, str, str], member: str, signature: str = "", body: Sequence[Any] = ()
) -> Any:
    """The message that calls ``member`` on ``target`` (destination, path, interface)."""
    from dbus_fast import Message  # noqa: PLC0415  (Linux only)

    destination, path, interface = target
    return Message(
        destination=destination,
        path=path,
        interface=interface,
        member=member,
        signature=signature,
        body=list(body),
    )


async def call(
    bus: Any,
    member: str,
    signature: str = "",
    body: list[Any] | None = None,
    destination: str | None = None,
) -> list[Any]:
    """Call ``member`` on the bus itself, or, with ``destination``, on the notification
    server that owns that unique name; the reply's body, or :class:`BusCallError`."""
    from dbus_fast import MessageType  # noqa: PLC0415  (Linux only)

    target = BUS_ITSELF if destination is None else (destination, NOTIFICATIONS_PATH, NOTIFICATIONS)
    reply = await bus.call(method_call(target, member, signature, body or ()))
    if reply.message_type is MessageType.ERROR:
        detail = reply.body[0] if reply.body else ""
        raise BusCallError(clean_text(f"{reply.error_name}: {detail}"))
    return list(reply.body)


async def call_method(  # noqa: PLR0917 - a D-Bus call's own parts, in their order
    bus: Any,
    target: tuple[str, str, str],
    member: str,
    signature: str = "",
    body: list[Any] | None = None,
    timeout: float = CALL_TIMEOUT,
) -> list[Any]:
    """Call ``member`` on ``target`` (destination, path, interface) within ``timeout``;
    the reply's body. An error reply, no reply in time and a lost connection all raise
    :class:`BusCallError`: to a caller that tries sources in turn, they mean the same."""
    from dbus_fast import MessageType  # noqa: PLC0415  (Linux only)

    message = method_call(target, member, signature, body or ())
    try:
        reply = await asyncio.wait_for(bus.call(message), timeout)
    except (TimeoutError, OSError, EOFError) as error:
        raise BusCallError(f"{member}: {type(error).__name__}") from None
    if reply is None or reply.message_type is MessageType.ERROR:
        raise BusCallError(clean_text(f"{member}: {reply.error_name if reply else 'no reply'}"))
    return list(reply.body)


class Subscription:
    """A handler on a shared connection and its match rule, until :meth:`cancel`."""

    def __init__(self, bus: Any, text: str, handler: Callable[[Any], None]) -> None:
        self._bus = bus
        self._text = text
        self._handler: Callable[[Any], None] | None = handler

    def cancel(self) -> None:
        """Stop receiving (on the connection's loop): the connection outlives its users."""
        handler, self._handler = self._handler, None
        if handler is None:
            return
        from dbus_fast import Message, MessageFlag  # noqa: PLC0415  (Linux only)

        self._bus.remove_message_handler(handler)
        if self._bus.connected:
            destination, path, interface = BUS_ITSELF
            self._bus.send(
                Message(
                    destination=destination,
                    path=path,
                    interface=interface,
                    member="RemoveMatch",
                    signature="s",
                    body=[self._text],
                    flags=MessageFlag.NO_REPLY_EXPECTED,
                )
            )


async def subscribe(
    bus: Any, rule: Mapping[str, str], handler: Callable[[Any], None]
) -> Subscription:
    """Receive the signals that match ``rule`` (sender, path, interface, member): a match
    rule on the bus, and a handler that checks each message against the rule again, as
    one connection carries every subscription's signals."""
    from dbus_fast import MessageType  # noqa: PLC0415  (Linux only)

    text = ",".join(f"{key}='{value}'" for key, value in {"type": "signal", **rule}.items())
    await call_method(bus, BUS_ITSELF, "AddMatch", "s", [text])

    def filtered(message: Any) -> None:
        if message.message_type != MessageType.SIGNAL:
            return
        if message.path != rule.get("path", message.path):
            return
        if message.member != rule.get("member", message.member):
            return
        if message.interface != rule.get("interface", message.interface):
            return
        handler(message)

    bus.add_message_handler(filtered)
    return Subscription(bus, text, filtered)


async def name_has_owner(bus: Any, name: str) -> bool:
    return bool((await call(bus, "NameHasOwner", "s", [name]))[0])


async def name_owner(bus: Any, name: str) -> str | None:
    """The unique name that owns ``name``, or None when nobody does."""
    try:
        return str((await call(bus, "GetNameOwner", "s", [name]))[0])
    except BusCallError:
        return None


async def activate(bus: Any, name: str) -> bool:
    """Ask the bus to start a server it knows how to start (D-Bus activation)."""
    try:
        await asyncio.wait_for(call(bus, "StartServiceByName", "su", [name, 0]), ACTIVATION_TIMEOUT)
    except (TimeoutError, BusCallError):
        return False
    return True


async def capabilities(bus: Any, owner: str) -> list[str]:
    """The notification server's capabilities (``body-markup``, ``actions``, ...)."""
    return [str(name) for name in (await call(bus, "GetCapabilities", destination=owner))[0]]


@dataclass(frozen=True, slots=True)
class BusFacts:
    error: str | None = None  # the bus itself cannot be reached
    watcher: bool = False
    server: tuple[str, str, str, str] | None = None  # name, vendor, version, spec version
    capabilities: tuple[str, ...] | None = None
    server_error: str | None = None
    activatable: bool = False


def bus_facts(environ: Mapping[str, str]) -> BusFacts:
    """What the session bus has: a StatusNotifierItem host, a notification server."""
    if not environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return BusFacts(error="DBUS_SESSION_BUS_ADDRESS is not set")
    loop = attach(environ)
    try:
        return loop.run(_ask_bus(loop), BUS_TIMEOUT)
    except TimeoutError:
        return BusFacts(error=f"the session bus did not answer within {BUS_TIMEOUT:.0f} s")
    except Exception as error:  # any failure to ask means the same to the user
        return BusFacts(error=describe(error))
    finally:
        loop.detach()


async def _ask_bus(loop: BusLoop) -> BusFacts:
    bus = await loop.session()
    if bus is None:
        return BusFacts(error=loop.session_error)
    watcher = await name_has_owner(bus, SNI_WATCHER)
    try:
        owner = str((await call(bus, "GetNameOwner", "s", [NOTIFICATIONS]))[0])
    except BusCallError:
        names = (await call(bus, "ListActivatableNames"))[0]
        return BusFacts(watcher=watcher, activatable=NOTIFICATIONS in names)
    try:
        info = await call(bus, "GetServerInformation", destination=owner)
        found = await capabilities(bus, owner)
    except BusCallError as error:
        return BusFacts(watcher=watcher, server_error=str(error))
    name, vendor, version, spec = (clean_text(str(part)) for part in [*info, "", "", ""][:4])
    return BusFacts(
        watcher=watcher,
        server=(name, vendor, version, spec),
        capabilities=tuple(clean_text(name) for name in found),
    )


# describe and CALL_TIMEOUT are the bus loop's, named here too for the callers.
__all__ = [
    "ACTIVATION_TIMEOUT",
    "BUS_ITSELF",
    "BUS_TIMEOUT",
    "CALL_TIMEOUT",
    "NOTIFICATIONS",
    "NOTIFICATIONS_PATH",
    "SNI_WATCHER",
    "BusCallError",
    "BusFacts",
    "Subscription",
    "activate",
    "bus_facts",
    "call",
    "call_method",
    "capabilities",
    "describe",
    "name_has_owner",
    "name_owner",
    "subscribe",
]
