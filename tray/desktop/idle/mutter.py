"""GNOME's ``org.gnome.Mutter.IdleMonitor`` on the session bus, also on Wayland: an idle
watch fires when the idle time passes ``after``, and a user-active watch at the next
input, so nothing is polled."""

from __future__ import annotations

from dbus_fast import Message
from dbus_fast.aio import MessageBus

from tray.desktop.bus import BusCallError, call_method

from ._source import Desk, Source

MUTTER = "org.gnome.Mutter.IdleMonitor"
MUTTER_PATH = "/org/gnome/Mutter/IdleMonitor/Core"
_TARGET = (MUTTER, MUTTER_PATH, MUTTER)


class MutterIdleMonitor(Source):
    key = "mutter"
    name = "GNOME's idle monitor"
    kind = "idle"

    def __init__(self) -> None:
        # The numbers mutter gave our watches: "idle", and the latest "active".
        self._watches: dict[str, int] = {}

    async def follow(self, desk: Desk) -> bool:
        bus = desk.session
        if bus is None:
            return False
        try:
            (idle_ms,) = await call_method(bus, _TARGET, "GetIdletime")
        except (BusCallError, ValueError):
            return False
        if not isinstance(idle_ms, int):
            return False

        def fired(message: Message) -> None:
            (watch,) = message.body
            if watch == self._watches.get("idle"):
                desk.idle_edge(True)
                # A user-active watch fires once, so each absence adds its own.
                desk.spawn(self._watch_active(bus), self.name)
            elif watch == self._watches.get("active"):
                desk.idle_edge(False)

        try:
            await desk.subscribe(
                bus,
                {"sender": MUTTER, "path": MUTTER_PATH, "interface": MUTTER,
                 "member": "WatchFired"},
                fired,
            )  # fmt: skip
            # An idle watch fires each time the idle time passes its interval.
            interval = max(1, round(desk.after * 1000))
            self._watches["idle"] = _number(
                await call_method(bus, _TARGET, "AddIdleWatch", "t", [interval])
            )
            if idle_ms >= desk.after * 1000:
                desk.idle_edge(True)
                await self._watch_active(bus)
        except BusCallError:
            return False
        return True

    async def _watch_active(self, bus: MessageBus) -> None:
        self._watches["active"] = _number(await call_method(bus, _TARGET, "AddUserActiveWatch"))


def _number(body: list[object]) -> int:
    if len(body) != 1 or not isinstance(body[0], int):
        raise BusCallError("an answer that is not a number")
    return body[0]
