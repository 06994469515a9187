"""The processes connected to a private D-Bus bus, and stopping them by pid.

A bus with a servicedir starts services itself (dconf, GNOME Shell's gjs services, a
terminal server): they are children of no test, so the test desktop finds them through
the bus that started them (GetConnectionUnixProcessID) and stops them by their pids.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

from helpers.desktop_services import STOP_TIMEOUT, TOOL_TIMEOUT  # noqa: E402
from helpers.waiting import wait_for  # noqa: E402


def connect(address: str) -> Any:
    """A Gio.DBusConnection to the bus at ``address`` (close it with close_sync)."""
    return Gio.DBusConnection.new_for_address_sync(
        address,
        Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
        | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
        None,
        None,
    )


def client_pids(address: str, exclude: set[int]) -> list[int]:
    """The pids of the processes connected to the bus at ``address``, but ``exclude``;
    none when the bus is gone."""
    try:
        connection = connect(address)
    except GLib.Error:
        return []
    try:
        return sorted(set(_connections(connection).values()) - exclude)
    finally:
        connection.close_sync(None)


def _connections(connection: Any) -> dict[str, int]:
    """Each connection on the bus (its unique name) and its process, but ``connection``."""

    def bus(method: str, args: Any, reply: str) -> Any:
        return connection.call_sync(
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            method,
            args,
            GLib.VariantType(reply),
            Gio.DBusCallFlags.NONE,
            int(TOOL_TIMEOUT * 1000),
            None,
        ).unpack()

    found = {}
    (names,) = bus("ListNames", None, "(as)")
    for name in names:
        if not name.startswith(":") or name == connection.get_unique_name():
            continue
        try:
            (pid,) = bus("GetConnectionUnixProcessID", GLib.Variant("(s)", (name,)), "(u)")
        except GLib.Error:
            continue  # it left meanwhile
        found[name] = int(pid)
    return found


def stop_pids(pids: list[int]) -> None:
    """SIGTERM to each, then SIGKILL to those still running after STOP_TIMEOUT."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    with contextlib.suppress(AssertionError):
        wait_for(lambda: not any(alive(pid) for pid in pids), STOP_TIMEOUT, 0.05, "them to end")
    for pid in pids:
        if alive(pid):
            _signal(pid, signal.SIGKILL)


def _signal(pid: int, number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs. A zombie has ended: the services a bus starts are
    handed to pid 1, which in a container may never reap them."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # The state follows the command's closing parenthesis.
    return stat[stat.rindex(")") + 2 :][:1] not in ("Z", "X")


def connections_of(address: str, pid: int) -> list[str]:
    """The unique names of ``pid``'s connections to the bus at ``address``, besides the
    one this opens to ask."""
    connection = connect(address)
    try:
        return sorted(name for name, owner in _connections(connection).items() if owner == pid)
    finally:
        connection.close_sync(None)
