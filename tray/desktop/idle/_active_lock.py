"""What the screen savers' lock sources share: a ``GetActive() -> b`` method and an
``ActiveChanged(b)`` signal on the session bus. ``org.freedesktop.ScreenSaver``
(:mod:`.screensaver_lock`) and GNOME's ``org.gnome.ScreenSaver``
(:mod:`.gnome_screensaver`) differ only in their bus names, paths and interface, and in
whether D-Bus may start a server to answer."""

from __future__ import annotations

from typing import ClassVar

from dbus_fast import Message
from dbus_fast.aio import MessageBus

from tray.desktop.bus import BUS_ITSELF, BusCallError, call_method

from ._source import Desk, Kind, Source


class ActiveLockSource(Source):
    """A lock source told by ``GetActive`` and ``ActiveChanged`` of ``interface``: each
    of ``names`` is asked on each of ``paths``, and the first that answers is followed.
    With ``running_only``, a name nobody owns yet is passed over, not started by D-Bus
    activation."""

    kind: ClassVar[Kind] = "lock"
    interface: ClassVar[str]
    names: ClassVar[tuple[str, ...]]
    paths: ClassVar[tuple[str, ...]]
    running_only: ClassVar[bool] = False

    async def follow(self, desk: Desk) -> bool:
        bus = desk.session
        if bus is None:
            return False
        for name in self.names:
            if self.running_only and not await _has_owner(bus, name):
                continue
            for path in self.paths:
                target = (name, path, self.interface)
                try:
                    (active,) = await call_method(bus, target, "GetActive")
                except (BusCallError, ValueError):
                    continue
                if isinstance(active, bool):
                    return await self._subscribe(desk, bus, target, active)
        return False

    @staticmethod
    async def _subscribe(
        desk: Desk, bus: MessageBus, target: tuple[str, str, str], active: bool
    ) -> bool:
        def changed(message: Message) -> None:
            # A peer may send any body: only one boolean is a lock or an unlock.
            if len(message.body) == 1 and isinstance(message.body[0], bool):
                desk.locked(message.body[0])

        name, path, interface = target
        try:
            await desk.subscribe(
                bus,
                {"sender": name, "path": path, "interface": interface,
                 "member": "ActiveChanged"},
                changed,
            )  # fmt: skip
        except BusCallError:
            return False
        desk.locked(active)
        return True


async def _has_owner(bus: MessageBus, name: str) -> bool:
    try:
        (owned,) = await call_method(bus, BUS_ITSELF, "NameHasOwner", "s", [name])
    except (BusCallError, ValueError):
        return False
    return owned is True
