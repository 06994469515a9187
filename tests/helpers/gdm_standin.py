"""A fake GDM, standing in on a private system bus for the display manager GNOME Shell
looks for: without one the shell runs with no lock screen at all.

It owns ``org.gnome.DisplayManager`` and answers, on ``/org/gnome/DisplayManager/Manager``,
interface ``org.gnome.DisplayManager.Manager``, only what GNOME Shell 43 asks of it: the
``Version`` property (the shell offers locking only when GDM is new enough) and
``RegisterSession(a{sv})``. Nothing else of GDM is here: no greeter, no user switching.

Run as a process of its own (``python gdm_standin.py BUS_ADDRESS``), so it is stopped by
its pid like every other part of the test desktop. It writes one line to stdout per call
it answers, for a test that wants to see them, and ends when the bus goes away.
"""

from __future__ import annotations

import asyncio
import sys

from dbus_fast import Message, MessageType, Variant
from dbus_fast.aio import MessageBus

NAME = "org.gnome.DisplayManager"
PATH = "/org/gnome/DisplayManager/Manager"
INTERFACE = "org.gnome.DisplayManager.Manager"
PROPERTIES = "org.freedesktop.DBus.Properties"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"
# What the shell compares with the oldest GDM it can lock with (3.5.91).
VERSION = "43.0"

_INTROSPECTION = f"""<node>
  <interface name="{INTERFACE}">
    <method name="RegisterSession"><arg name="details" type="a{{sv}}" direction="in"/></method>
    <property name="Version" type="s" access="read"/>
  </interface>
</node>
"""


def _reply(message: Message) -> Message | None:
    """The answer to one call on the bus, or None for what this stand-in does not offer
    (dbus-fast then answers UnknownMethod)."""
    if message.message_type != MessageType.METHOD_CALL or message.path != PATH:
        return None
    call = (message.interface, message.member)
    if call == (INTERFACE, "RegisterSession"):
        return Message.new_method_return(message)
    if call == (PROPERTIES, "Get") and list(message.body) == [INTERFACE, "Version"]:
        return Message.new_method_return(message, "v", [Variant("s", VERSION)])
    if call == (PROPERTIES, "GetAll") and list(message.body) == [INTERFACE]:
        return Message.new_method_return(message, "a{sv}", [{"Version": Variant("s", VERSION)}])
    if call == (INTROSPECTABLE, "Introspect"):
        return Message.new_method_return(message, "s", [_INTROSPECTION])
    return None


def _answer(message: Message) -> Message | None:
    reply = _reply(message)
    if reply is not None:
        print(f"{message.interface}.{message.member}", flush=True)
    return reply


async def serve(address: str) -> None:
    bus = await MessageBus(bus_address=address).connect()
    bus.add_message_handler(_answer)
    await bus.request_name(NAME)
    await bus.wait_for_disconnect()  # type: ignore[no-untyped-call]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: gdm_standin.py BUS_ADDRESS", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(argv[1]))
    except (OSError, EOFError) as error:
        # The bus went away: the test desktop is being stopped.
        print(f"gdm stand-in: bus gone: {error}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
