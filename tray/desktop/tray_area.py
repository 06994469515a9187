"""The desktop's tray area: is there one to show the icon in? An XEmbed tray (the
``_NET_SYSTEM_TRAY_Sn`` selection has an owner) or a StatusNotifierItem host (a watcher
on the session bus). (Not :mod:`tray.desktop.tray_icon`, the icon shown in it.)

``tray doctor`` asks in a child process (:mod:`tray.desktop.probes`); the app, whose
display already works, asks with :class:`TrayAreaLook`, in-process, on one X connection
it keeps between looks and the bus loop's session connection, since it looks again
every few seconds while there is none.

Which pystray backend the app asks for is decided here too (:func:`app_backend`), so that
``tray doctor`` names the one the app will use.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Mapping
from typing import Any, Final

from tray.base.check import Check
from tray.desktop.bus import BUS_TIMEOUT, SNI_WATCHER, BusFacts, describe, name_has_owner
from tray.desktop.bus_loop import BusLoop, attach
from tray.desktop.probes import GTK_FIX, has_desktop_services

# Backends that show the icon only in an XEmbed tray.
XEMBED_ONLY: Final = frozenset({"xorg", "gtk"})
# What the app asks pystray for when only an XEmbed tray is there.
XEMBED_BACKEND: Final = "gtk"


def xembed_owner(x_facts: dict[str, Any] | None) -> int | None:
    """The window that owns the XEmbed tray selection, if one does."""
    owner = x_facts.get("owner") if x_facts is not None else None
    return owner if isinstance(owner, int) and owner != 0 else None


def app_backend(
    environ: Mapping[str, str], x_facts: dict[str, Any] | None, bus: BusFacts
) -> str | None:
    """The backend the app asks pystray for, or None to take pystray's own choice.

    pystray prefers appindicator. Without a StatusNotifierItem host, AppIndicator falls
    back to a GtkStatusIcon in the XEmbed tray, and under load about one start in ten
    left no icon in trayer for good (most likely the tray got a dock request for a window
    that the fallback had already hidden and dropped). pystray's gtk backend makes one
    GtkStatusIcon, and docked every time in the same runs. So with an XEmbed tray
    and no StatusNotifierItem host (a bus that cannot be asked has none to offer), the app
    asks for gtk. With no tray at all it keeps appindicator, which can still use a host of
    either kind that comes later. A PYSTRAY_BACKEND the user set is always theirs.
    """
    if environ.get("PYSTRAY_BACKEND") or not has_desktop_services():
        return None
    if xembed_owner(x_facts) is None or bus.watcher:
        return None
    return XEMBED_BACKEND


def check_tray_area(x_facts: dict[str, Any] | None, bus: BusFacts, backend: str | None) -> Check:
    if not has_desktop_services():
        return Check("ok", "tray host", f"the system's own on {sys.platform}")
    owner = xembed_owner(x_facts)
    xembed = owner is not None
    areas = []
    if bus.watcher:
        areas.append(f"StatusNotifierItem host ({SNI_WATCHER})")
    if owner is not None and x_facts is not None:
        areas.append(f"XEmbed tray ({x_facts['selection']} owned by window {owner:#x})")
    if not areas:
        if bus.error:
            sni = f"cannot ask the session bus for a {SNI_WATCHER} ({bus.error})"
        else:
            sni = f"no {SNI_WATCHER} on the session bus"
        xembed_part = "no XEmbed tray"
        if x_facts is None or "error" in x_facts:
            xembed_part += " (no X display to look on)"
        found = f"none: {sni}, and {xembed_part}"
        return Check(
            "FAIL",
            "tray host",
            found,
            "run a panel with a system tray (your desktop's panel, or trayer); on GNOME, "
            "enable the AppIndicator extension",
        )
    if backend in XEMBED_ONLY and not xembed:
        return Check(
            "FAIL",
            "tray host",
            f"only a {areas[0]}, which the {backend} backend cannot use",
            f"{GTK_FIX}: AppIndicator speaks StatusNotifierItem",
        )
    return Check("ok", "tray host", " and ".join(areas))


def backend_for_tray(environ: Mapping[str, str]) -> str | None:
    """:func:`app_backend` for the trays there are now, asked once."""
    look = TrayAreaLook(environ)
    try:
        return look.backend()
    finally:
        look.close()


class TrayAreaLook:
    """Looks for a tray area without a child process or a new connection per look:
    one X connection, opened at the first look and kept until :meth:`close`, and the
    bus loop's session connection. Connecting to a broken X server can hang: use it where pystray,
    which connects to the same display, would hang as well."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self._display: Any = None
        self._selection: tuple[str, Any] | None = None
        self._bus: BusLoop | None = None

    def check(self, backend: str | None) -> Check:
        if not has_desktop_services():
            return check_tray_area(None, BusFacts(), backend)
        return check_tray_area(self.x_facts(), self.bus_facts(), backend)

    async def check_on_loop(self, backend: str | None) -> Check:
        """:meth:`check`, awaited on the bus loop itself, where :meth:`check` would wait
        on its own thread. The X look stays a plain call: one round trip on a display
        the app already shows its icon on."""
        if not has_desktop_services():
            return check_tray_area(None, BusFacts(), backend)
        x_facts = self.x_facts()
        return check_tray_area(x_facts, await self._bus_facts_on_loop(), backend)

    def backend(self) -> str | None:
        """:func:`app_backend` for this look's environment, looked at now. Only what can
        change the answer is asked: no display with PYSTRAY_BACKEND set, no bus without
        an XEmbed tray."""
        x_facts = None if self._environ.get("PYSTRAY_BACKEND") else self.x_facts()
        bus = self.bus_facts() if xembed_owner(x_facts) is not None else BusFacts()
        return app_backend(self._environ, x_facts, bus)

    def x_facts(self) -> dict[str, Any] | None:
        """The tray selection and its owner, {"error": ...}, or None without DISPLAY."""
        name = self._environ.get("DISPLAY")
        if not name:
            return None
        try:
            if self._display is None:
                from Xlib import display  # noqa: PLC0415  (X11 only)

                self._display = display.Display(name)
                selection = f"_NET_SYSTEM_TRAY_S{self._display.get_default_screen()}"
                self._selection = (selection, self._display.intern_atom(selection))
            assert self._selection is not None
            selection, atom = self._selection
            owner = self._display.get_selection_owner(atom)
            return {"selection": selection, "owner": owner if isinstance(owner, int) else owner.id}
        except Exception as error:  # a broken connection: the next look opens a new one
            self._close_display()
            return {"error": f"{type(error).__name__}: {error}"}

    def bus_facts(self) -> BusFacts:
        """Whether a StatusNotifierItem watcher is on the session bus; from any thread
        but the bus loop's."""
        if not self._environ.get("DBUS_SESSION_BUS_ADDRESS"):
            return BusFacts(error="DBUS_SESSION_BUS_ADDRESS is not set")
        if self._bus is None:
            self._bus = attach(self._environ)
        try:
            # The look bounds itself by BUS_TIMEOUT; this bound is for a loop that is stuck.
            return self._bus.run(self._bus_facts_on_loop(), 2 * BUS_TIMEOUT)
        except TimeoutError:
            return BusFacts(error=f"the bus loop did not answer within {2 * BUS_TIMEOUT:.0f} s")

    async def _bus_facts_on_loop(self) -> BusFacts:
        if not self._environ.get("DBUS_SESSION_BUS_ADDRESS"):
            return BusFacts(error="DBUS_SESSION_BUS_ADDRESS is not set")
        if self._bus is None:
            self._bus = attach(self._environ)
        try:
            return await asyncio.wait_for(_ask_watcher(self._bus), BUS_TIMEOUT)
        except TimeoutError:
            return BusFacts(error=f"the session bus did not answer within {BUS_TIMEOUT:.0f} s")
        except Exception as error:  # any failure to ask means the same to the user
            return BusFacts(error=describe(error))

    def close(self) -> None:
        self._close_display()
        bus, self._bus = self._bus, None
        if bus is not None:
            bus.detach()

    def _close_display(self) -> None:
        if self._display is not None:
            with contextlib.suppress(Exception):
                self._display.close()
            self._display = None
            self._selection = None


async def _ask_watcher(loop: BusLoop) -> BusFacts:
    bus = await loop.session()
    if bus is None:
        return BusFacts(error=loop.session_error)
    return BusFacts(watcher=await name_has_owner(bus, SNI_WATCHER))
