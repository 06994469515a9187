"""D-Bus method calls for the focus ways, through ``gdbus call`` with a timeout.

Kept here until tray/desktop has its shared D-Bus helper. Every argument is GVariant
text built only from values that already passed a strict shape check (digits, hex
UUIDs, fixed words), so nothing recorded can change what is called or on which name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._tools import TOOL_TIMEOUT, find, run

# Errors meaning "this object or interface is not exported here" (as opposed to the
# name having no owner): GNOME Terminal with its search provider turned off.
_MISSING = ("UnknownMethod", "UnknownObject", "UnknownInterface", "No such interface")
_GONE = ("ServiceUnknown", "NameHasNoOwner", "was not provided by any .service files")


class DBusError(Exception):
    def __init__(self, message: str, *, missing: bool = False, gone: bool = False) -> None:
        super().__init__(message)
        self.missing = missing
        self.gone = gone


def call_argv(gdbus: str, name: str, path: str, method: str, args: Sequence[str]) -> list[str]:
    return [
        gdbus, "call", "--session", "--timeout", str(int(TOOL_TIMEOUT)),
        "--dest", name, "--object-path", path, "--method", method, *args,
    ]  # fmt: skip


def call(name: str, path: str, method: str, args: Sequence[str], env: Mapping[str, str]) -> str:
    """The reply as GVariant text; DBusError saying why when there is none."""
    gdbus = find("gdbus", env)
    if gdbus is None:
        raise DBusError("gdbus is not installed (package libglib2.0-bin)")
    why, output = run(call_argv(gdbus, name, path, method, args), env)
    if why is not None:
        raise DBusError(
            why.removeprefix("Error: ").removeprefix("GDBus.Error:"),
            missing=any(word in why for word in _MISSING),
            gone=any(word in why for word in _GONE),
        )
    return output.strip()


def has_owner(name: str, env: Mapping[str, str]) -> bool:
    try:
        reply = call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner", [name], env,
        )  # fmt: skip
    except DBusError:
        return False
    return reply == "(true,)"
