"""pystray's Icon classes with the fixes each backend needs (:func:`robust_icon_class`):
the gtk and appindicator ones independent of a notification server, their menu changed
in place (:mod:`tray.desktop.gtk_menu`) and never left passive; the xorg one safe to
change from another thread."""

from __future__ import annotations

import logging
from typing import Any

from tray.desktop.gtk_menu import GtkMenus

# These classes override and call private methods of pystray, read from one release:
# pyproject.toml pins pystray==0.19.5, and tests/project/test_dependencies.py checks
# every private name used here against the installed pystray.

log = logging.getLogger(__name__)


def _gtk_icon_class(base: type[Any]) -> type[Any]:
    """The gtk/appindicator Icon class, made independent of a notification server.

    These backends open a proxy to org.freedesktop.Notifications when they start and
    close their last notification when they stop. We never use pystray's
    notifications, yet with no session bus the start raises (and leaves pystray's
    setup thread waiting forever), and with no notification server the stop raises
    out of ``run()``.
    """

    class GtkIcon(base):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # Before pystray's own setup, which may already ask for the menu.
            self._menus = GtkMenus(self)
            # pystray's appindicator _show reads it; only its own _update_menu, which
            # ours replaces, would have set it (see _create_default_menu).
            self._menu_handle: Any = None
            super().__init__(*args, **kwargs)

        def _update_menu(self) -> None:
            # pystray's would build a whole new Gtk.Menu; see tray.desktop.gtk_menu.
            from gi.repository import GLib  # noqa: PLC0415  (present with these backends)

            GLib.idle_add(self._show_menu)

        def _show_menu(self) -> bool:
            """Show the current menu, on the GTK thread; returns False to run once."""
            for attempt in range(2):
                # One look: the worker may hand a new menu meanwhile (see
                # _create_default_menu).
                menu = self.menu
                try:
                    handle, new = self._menus.show(menu)
                    if new:
                        self._hand_menu(handle, menu)
                    break
                except Exception:
                    log.exception("cannot update the tray menu")
                    # Half changed, the shown menu is in doubt: build it anew, once.
                    self._menus.forget()
                    if attempt:
                        break
            return False

        def _hand_menu(self, handle: Any, menu: Any) -> None:
            if not hasattr(self, "_appindicator"):
                self._menu_handle = handle  # None: no menu
                return
            if handle is None:
                items = None if menu is None else tuple(menu.items)
                if items is not None and not any(item.default for item in items):
                    # No default item either: pystray's update fails quietly here,
                    # and the menu shown stays.
                    log.debug("the menu shows nothing and has no default item")
                    return
                # An indicator needs a menu: pystray's shows the default item alone.
                handle = self._default_menu(items)
            self._menu_handle = handle
            self._appindicator.set_menu(handle)

        def _create_default_menu(self) -> Any:
            """The menu of the default item alone, for pystray's appindicator _show; an
            empty one when the menu has no default item. Not pystray's own, which raised
            StopIteration out of both.

            pystray's _show gives the indicator ``_menu_handle`` or this. It runs on the
            GTK thread, where an error is swallowed and the rest of _show skipped: the
            icon stayed passive, registered but never shown. Seen on GNOME Shell, about
            one start in five under load, when the icon was shown before the first menu
            was handed (then with no ``_menu_handle`` at all). The real menu replaces
            this one once built.
            """
            menu = self.menu
            return self._default_menu(None if menu is None else tuple(menu.items))

        def _default_menu(self, items: tuple[Any, ...] | None) -> Any:
            """A Gtk.Menu of the default item among ``items`` (the menu's, read once), or
            pystray's item named after the icon when there is no menu at all.

            Read once, because the worker hands the icon a new menu at any time, and a
            dynamic menu's items are made anew at each look: pystray's own looked twice
            (whether there is a default, then which), and a menu handed in between,
            without one, made it raise StopIteration. Seen once in a whole make test,
            as the demo's prompt arrived.
            """
            import pystray  # noqa: PLC0415  (loaded: this class is built on it)
            from gi.repository import Gtk  # noqa: PLC0415  (present with these backends)

            shown = Gtk.Menu.new()
            if items is None:
                shown.append(self._create_menu_item(pystray.MenuItem(self.name, lambda _: None)))
            else:
                default = next((item for item in items if item.default), None)
                if default is not None:
                    shown.append(self._create_menu_item(default))
            shown.show_all()
            return shown

        def _on_status_icon_activate(self, status_icon: Any) -> None:
            # The gtk backend's left click runs the menu's default item (focus the most
            # urgent session), and without one it did nothing: it opens the menu then,
            # as AppIndicator's own status icon does.
            menu = self.menu
            if menu is not None and any(item.default for item in menu.items):
                self()
            else:
                self._on_status_icon_popup_menu(status_icon, 1, 0)

        def _initialize(self) -> None:
            try:
                super()._initialize()
            except Exception as error:
                if self._running:  # failed after the loop was marked ready: a real error
                    raise
                log.info("no D-Bus session bus (%s); the tray icon works without it", error)
                self._notifier = None
                self._mark_ready()

        def _finalize(self) -> None:
            try:
                super()._finalize()
            except Exception as error:
                log.debug("ignoring error from pystray shutdown: %s", error)

    return GtkIcon


def _xorg_icon_class(base: type[Any]) -> type[Any]:
    """The xorg Icon class, with every flush made a round trip.

    Changes made from another thread (new image, title, stop) are client messages
    to the icon's event thread, each followed by a flush on the shared connection.
    python-xlib 0.33's flush is not safe between threads: when the event thread
    queues requests (drawing) while another thread flushes, the flushing thread can
    loop for ever holding the receiving role, and the event thread sleeps waiting
    for it (seen under load: the updating thread spinning in flush, the event thread
    waiting for events). Its flush can also return with requests unsent, so a
    destroyed window stayed on screen and run() never returned. A round trip has
    neither problem: it returns once the server answered, so all went out.
    """

    class XorgIcon(base):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # An instance attribute shadows Display.flush for pystray's calls only.
            self._display.flush = self._display.sync

    return XorgIcon


def robust_icon_class(base: type[Any]) -> type[Any]:
    """pystray's Icon class for the chosen backend, with the fixes that backend needs."""
    if hasattr(base, "_finalize") and hasattr(base, "_initialize"):
        cls = _gtk_icon_class(base)
    elif hasattr(base, "_rewrite_implementation"):
        cls = _xorg_icon_class(base)
    else:
        return base
    cls.__name__ = base.__name__
    cls.__qualname__ = base.__qualname__
    return cls
