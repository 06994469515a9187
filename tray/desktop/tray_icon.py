"""The pystray adapter: tray's icon, shown with whichever backend pystray picks, in the
desktop's tray area (which :mod:`tray.desktop.tray_area` looks for).

pystray chooses its backend from PYSTRAY_BACKEND (else appindicator, gtk, xorg in that
order) when it is first imported, so the import happens here, lazily: without a
display it raises an Xlib error rather than ImportError. The app may ask for a backend
of its own choosing (:func:`load_pystray`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from PIL import Image

from tray.core.view.overview import IconState, Overview
from tray.desktop.icon_images import icon_image
from tray.desktop.pystray_icons import robust_icon_class

log = logging.getLogger(__name__)

DEFAULT_SIZE = 64
# Seconds between checks on the xorg icon's slot; doubled after every miss.
DOCK_CHECK_FIRST = 0.1
DOCK_CHECK_MAX = 8.0
# When the tray's own colour cannot be read, a neutral grey looks least wrong.
FALLBACK_BACKGROUND = (128, 128, 128)


class TrayUnavailableError(RuntimeError):
    """No tray icon can be shown in this environment."""


class NoDisplayError(TrayUnavailableError):
    """No usable display, or no pystray backend for it."""


def load_pystray(backend: str | None = None) -> ModuleType:
    """Import pystray, turning "no display" into :class:`NoDisplayError`.

    ``backend`` (see :func:`tray.desktop.tray_area.app_backend`) is asked for when
    PYSTRAY_BACKEND is unset; where it cannot load, pystray chooses as it would alone.

    pystray connects to the display while importing. Without one that raises an
    Xlib error, not ImportError, and an odd DISPLAY can raise anything (":65000"
    overflows a port number): whatever the import raises means no icon can be shown.
    """
    try:
        return _import_pystray(backend)
    except ImportError as error:
        raise NoDisplayError(f"cannot show a tray icon: {error}") from error
    except Exception as error:
        detail = str(error) or type(error).__name__
        if not type(error).__module__.startswith("Xlib"):
            detail = f"{type(error).__name__}: {detail}"
        raise NoDisplayError(f"cannot show a tray icon: no usable X display ({detail})") from error


def _import_pystray(backend: str | None) -> ModuleType:
    # pystray reads PYSTRAY_BACKEND once, while it is first imported; set only for that
    # moment, it never reaches the programs the app starts.
    if backend is not None and "PYSTRAY_BACKEND" not in os.environ:
        os.environ["PYSTRAY_BACKEND"] = backend
        try:
            import pystray  # noqa: PLC0415  (lazy: importing it needs a display)
        except ImportError as error:
            log.info("the %s tray backend cannot load (%s); pystray chooses", backend, error)
        else:
            chosen: ModuleType = pystray
            return chosen
        finally:
            del os.environ["PYSTRAY_BACKEND"]
    import pystray  # noqa: PLC0415

    module: ModuleType = pystray
    return module


@dataclass(frozen=True, slots=True)
class XorgSlot:
    """The place an XEmbed tray gave the xorg icon."""

    width: int
    height: int
    background: tuple[int, int, int]
    tray_window: int  # the tray's top-level window, whose colour ``background`` is


def _rgb_image(window: Any, width: int, height: int) -> Image.Image:
    import Xlib.X  # noqa: PLC0415  (only on X11)

    reply = window.get_image(0, 0, width, height, Xlib.X.ZPixmap, 0xFFFFFFFF)
    # A 24-bit TrueColor visual delivers 32-bit little-endian pixels.
    return Image.frombytes("RGB", (width, height), reply.data, "raw", "BGRX")


def xorg_slot(connection: Any, window_id: int, previous: XorgSlot | None = None) -> XorgSlot | None:
    """Where the xorg backend's window sits, or None while it is not docked.

    An XEmbed icon window stays unmapped until a tray embeds and maps it, so
    "viewable and not a child of the root" means "docked". The tray's colour is read
    around the icon, in the tray's top-level window, because the xorg backend draws
    an opaque picture and cannot show the tray through transparent pixels.

    ``connection`` is an Xlib display of our own: pystray's connection is not safe
    to share between threads (requests can stay unsent). The colour is read again
    only when the tray or the slot changed since ``previous``: it means copying the
    whole tray window.
    """
    import Xlib.X  # noqa: PLC0415  (only on X11)

    window = connection.create_resource_object("window", window_id)
    root = connection.screen().root
    if window.get_attributes().map_state != Xlib.X.IsViewable:
        return None
    top = window
    while (parent := top.query_tree().parent) and parent.id != root.id:
        top = parent
    if top.id == window.id:
        return None
    ours = window.get_geometry()
    width, height = int(ours.width), int(ours.height)
    if previous is not None and (previous.tray_window, previous.width, previous.height) == (
        int(top.id),
        width,
        height,
    ):
        return previous
    background = FALLBACK_BACKGROUND
    try:
        frame = top.get_geometry()
        origin = window.translate_coords(top, 0, 0)
        left, upper = -int(origin.x), -int(origin.y)  # our origin inside ``top``
        picture = _rgb_image(top, int(frame.width), int(frame.height))
        around = Counter(
            picture.getpixel((x, y))
            for x in range(picture.width)
            for y in range(picture.height)
            if not (left <= x < left + width and upper <= y < upper + height)
        )
        if around:
            colour = around.most_common(1)[0][0]
            assert isinstance(colour, tuple)
            background = (int(colour[0]), int(colour[1]), int(colour[2]))
    except Exception as error:
        log.debug("cannot read the tray's colour: %s", error)
    return XorgSlot(width, height, background, int(top.id))


def fit_to_slot(image: Image.Image, slot: XorgSlot) -> Image.Image:
    """``image`` centred on the slot's exact size, flattened on the tray's colour.

    The xorg backend stretches whatever it gets to its window and drops alpha.
    """
    canvas = Image.new("RGB", (slot.width, slot.height), slot.background)
    canvas.paste(image, ((slot.width - image.width) // 2, (slot.height - image.height) // 2), image)
    return canvas


class TrayIcon:
    """One pystray icon: created now, shown by :meth:`run`, updated by :meth:`apply`.

    ``on_ready`` is called once the icon has been asked to show itself, from a helper
    thread, before the ``setup`` callable given to :meth:`run`. ``backend`` is the pystray
    backend to ask for (None: pystray's own choice; see :func:`load_pystray`).
    """

    def __init__(
        self, name: str, on_ready: Callable[[], None] | None = None, backend: str | None = None
    ) -> None:
        pystray = load_pystray(backend)
        self._on_ready = on_ready
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._stopped = False
        self._state: tuple[IconState, int] = ("calm", 0)
        self._tooltip: str | None = None
        self._handovers: Counter[str] = Counter()
        self._slot: XorgSlot | None = None
        self._icon: Any = robust_icon_class(pystray.Icon)(name, icon=self._picture(), title=name)

    @property
    def icon(self) -> Any:
        """The pystray.Icon, for tests and backend-specific needs."""
        return self._icon

    def backend_name(self) -> str:
        """ "xorg", "gtk", "appindicator", "darwin", "win32" or "dummy"."""
        for cls in type(self._icon).__mro__:
            module = cls.__module__
            if module.startswith("pystray._") and module != "pystray._base":
                return module.removeprefix("pystray._")
        return type(self._icon).__module__

    def apply(self, overview: Overview, menu: Any | None) -> None:
        """Show ``overview``, and ``menu`` unless it is None; callable from any thread.

        Only what looks different goes to the backend: every hand-over makes it redraw,
        re-encode or re-export (the appindicator backend writes a PNG for an image; a
        menu is rebuilt and re-published whole unless only its words changed, see
        :mod:`tray.desktop.gtk_menu`). A menu of None keeps the one shown; the caller
        decides when a menu is worth sending.

        On macOS, AppKit objects may only change on the main thread, so the change is
        handed to the main loop there; the Linux backends take it from any thread.
        """
        if sys.platform == "darwin":
            from PyObjCTools import AppHelper  # type: ignore[import-not-found]  # noqa: PLC0415

            AppHelper.callAfter(self._apply_now, overview, menu)
        else:
            self._apply_now(overview, menu)

    def _apply_now(self, overview: Overview, menu: Any | None) -> None:
        state = (overview.icon_state, overview.blocked_count)
        with self._lock:
            handed: list[str] = []
            if state != self._state:
                self._state = state
                self._icon.icon = self._picture()
                handed.append("icon")
            if overview.tooltip != self._tooltip:
                self._tooltip = overview.tooltip
                self._icon.title = overview.tooltip
                self._set_tooltip(overview.tooltip)
                handed.append("tooltip")
            if menu is not None:
                self._icon.menu = menu
                handed.append("menu")
            self._handovers.update(handed)
            if "icon" in handed:
                self._push_xorg_requests()
        if handed:
            log.debug("handed to the tray: %s", ", ".join(handed))

    @property
    def handovers(self) -> dict[str, int]:
        """How many times the icon, the tooltip and the menu went to the backend."""
        with self._lock:
            return dict(self._handovers)

    def reshow(self) -> None:
        """Hide and show the icon, so the backend looks for a tray area again.

        The xorg backend keeps re-sending its dock request by itself.
        """
        if self.backend_name() == "xorg" or not self._ready.is_set():
            return
        self._icon.visible = False
        self._icon.visible = True

    def run(self, setup: Callable[[], None] | None = None) -> None:
        """Show the icon and handle its events until :meth:`stop`; main thread only.

        ``setup`` runs in a helper thread once the icon is shown; it should return
        soon (start threads), because stopping waits a few seconds for it.
        """
        self._icon.run(setup=lambda _icon: self._started(setup))

    def stop(self) -> None:
        """End :meth:`run`; safe from any thread, twice, or before the loop started."""
        self._stopping.set()
        if self._ready.is_set():
            self._stop_icon()

    def _stop_icon(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._icon.stop()

    def _push_xorg_requests(self) -> None:
        """Make sure the xorg event thread's drawing reaches the X server now.

        It draws a new image without flushing; the requests go out when it next waits
        for events, unless another thread is sending at that moment (see
        :func:`_xorg_icon_class`). A round trip from here sends them.
        """
        if self.backend_name() != "xorg":
            return
        try:
            self._icon._display.sync()
        except Exception as error:  # the connection is closed: nothing is pending
            log.debug("no sync with the X server: %s", error)

    def _started(self, setup: Callable[[], None] | None) -> None:
        self._icon.visible = True
        self._ready.set()
        if self._stopping.is_set():
            # stop() came before the loop was ready, when pystray would ignore it.
            self._stop_icon()
            return
        if self.backend_name() == "xorg":
            threading.Thread(target=self._watch_slot, name="tray-dock", daemon=True).start()
        if self._on_ready is not None:
            self._on_ready()
        if setup is not None:
            setup()

    def _picture(self) -> Image.Image:
        state, count = self._state
        if self._slot is None:
            return icon_image(state, count, size=DEFAULT_SIZE)
        size = min(self._slot.width, self._slot.height)
        return fit_to_slot(icon_image(state, count, size=size), self._slot)

    def _watch_slot(self) -> None:
        """Keep the xorg icon docked, and drawn for the slot it got.

        The xorg backend sends its dock request once, and now and then the tray misses
        it (about one start in 10 to 40 under trayer): the icon never appears. Setting
        the image again re-sends the request.
        """
        import Xlib.display  # noqa: PLC0415  (only on X11)

        try:
            connection = Xlib.display.Display()
            window_id = int(self._icon._window.id)
        except Exception as error:
            log.warning("cannot watch the tray icon's docking: %s", error)
            return
        try:
            self._watch_slot_with(connection, window_id)
        finally:
            connection.close()

    def _watch_slot_with(self, connection: Any, window_id: int) -> None:
        delay = DOCK_CHECK_FIRST
        misses = 0
        while not self._stopping.wait(delay):
            try:
                slot = xorg_slot(connection, window_id, self._slot)
            except Exception as error:
                # The window is gone (stopping) or pystray changed its insides.
                log.debug("cannot inspect the xorg icon: %s", error)
                return
            with self._lock:
                if self._stopping.is_set():
                    return
                if slot is None:
                    # Without any tray this repeats every few seconds: say it once.
                    misses += 1
                    level = logging.INFO if misses == 1 else logging.DEBUG
                    log.log(level, "tray icon not docked yet; asking the tray again")
                    delay = min(delay * 2, DOCK_CHECK_MAX)
                elif slot != self._slot:
                    misses = 0
                    delay = DOCK_CHECK_MAX
                else:
                    continue
                self._slot = slot
                self._icon.icon = self._picture()
                self._push_xorg_requests()

    def _set_tooltip(self, text: str) -> None:
        """pystray's gtk backend sets only the status icon's title, which no tray shows."""
        status_icon = getattr(self._icon, "_status_icon", None)
        if status_icon is None:
            return
        from gi.repository import GLib  # noqa: PLC0415  (present with the gtk backend)

        def set_text() -> bool:
            status_icon.set_tooltip_text(text)
            return False  # run once

        GLib.idle_add(set_text)
