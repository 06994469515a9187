"""D-Bus method calls for the focus ways, on the bus loop's session connection
(:mod:`tray.desktop.bus_loop`), each with a timeout.

Every argument is a typed value that already passed a strict shape check (digits, hex
UUIDs, fixed words), and every name called is a terminal's own, so nothing recorded can
change what is called or on which name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from tray.base.safe_text import clean_text
from tray.desktop.bus import method_call
from tray.desktop.bus_loop import BusLoop, attach, describe

from ._tools import TOOL_TIMEOUT

# Errors meaning "this object or interface is not exported here" (as opposed to the
# name having no owner): GNOME Terminal with its search provider turned off.
_MISSING = ("UnknownMethod", "UnknownObject", "UnknownInterface", "No such interface")
_GONE = ("ServiceUnknown", "NameHasNoOwner", "was not provided by any .service files")
# The caller's wait: the call's own timeout, and a connection's beside it.
_WAIT = 2 * TOOL_TIMEOUT


class DBusError(Exception):
    def __init__(self, message: str, *, missing: bool = False, gone: bool = False) -> None:
        super().__init__(message)
        self.missing = missing
        self.gone = gone


def call(  # noqa: PLR0917 - a D-Bus call's own parts, in their order
    name: str,
    path: str,
    method: str,
    signature: str,
    body: Sequence[Any],
    env: Mapping[str, str],
) -> list[Any]:
    """Call ``method`` (interface.Member) on ``name``'s object ``path``; the reply's
    body, or DBusError saying why there is none. From any thread but the bus loop's."""
    interface, member = method.rsplit(".", 1)
    loop = attach(env)
    try:
        return loop.run(_call(loop, (name, path, interface), member, signature, body), _WAIT)
    except TimeoutError:
        raise DBusError(f"{member}: no answer within {_WAIT:.0f} s") from None
    finally:
        loop.detach()


async def _call(
    loop: BusLoop,
    target: tuple[str, str, str],
    member: str,
    signature: str,
    body: Sequence[Any],
) -> list[Any]:
    from dbus_fast import MessageType  # noqa: PLC0415  (Linux only)

    bus = await loop.session()
    if bus is None:
        raise DBusError(f"cannot reach the D-Bus session bus ({loop.session_error})")
    message = method_call(target, member, signature, body)
    try:
        reply = await asyncio.wait_for(bus.call(message), TOOL_TIMEOUT)
    except TimeoutError:
        raise DBusError(f"{member}: no answer within {TOOL_TIMEOUT:.0f} s") from None
    except (OSError, EOFError) as error:
        raise DBusError(f"{member}: {describe(error)}") from None
    if reply is None:
        raise DBusError(f"{member}: no reply")
    if reply.message_type is MessageType.ERROR:
        detail = reply.body[0] if reply.body and isinstance(reply.body[0], str) else ""
        why = clean_text(f"{reply.error_name}: {detail}")[:200]
        raise DBusError(
            why,
            missing=any(word in why for word in _MISSING),
            gone=any(word in why for word in _GONE),
        )
    return list(reply.body)


def has_owner(name: str, env: Mapping[str, str]) -> bool:
    try:
        reply = call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner", "s", [name], env,
        )  # fmt: skip
    except DBusError:
        return False
    return reply == [True]
