"""Reading and driving the test X server: windows, pixels, clicks and keys.

Shared by the desktop tests that look at the tray icon and its menu.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from PIL import Image, ImageChops, ImageGrab
from Xlib import X
from Xlib import display as xdisplay
from Xlib import error as xerror

from helpers.desktop_services import base_env
from helpers.waiting import wait_for
from tray.core.view.overview import IconState
from tray.desktop.icon_images import icon_image

TIMEOUT = 20.0


@dataclass(frozen=True)
class Box:
    left: int
    top: int
    width: int
    height: int

    @property
    def right(self) -> int:
        return self.left + self.width

    @property
    def bottom(self) -> int:
        return self.top + self.height

    @property
    def centre(self) -> tuple[int, int]:
        return self.left + self.width // 2, self.top + self.height // 2


def _viewable_toplevels(display: str) -> list[tuple[Any, Box, bool]]:
    """Every mapped top-level window: (window, box, override_redirect)."""
    connection = xdisplay.Display(display)
    try:
        found = []
        for window in connection.screen().root.query_tree().children:
            try:
                attributes = window.get_attributes()
                if attributes.map_state != X.IsViewable:
                    continue
                geometry = window.get_geometry()
                wm_class = window.get_wm_class()
            except (xerror.BadWindow, xerror.BadDrawable):
                continue  # destroyed since the listing: menus come and go
            box = Box(geometry.x, geometry.y, geometry.width, geometry.height)
            found.append((wm_class, box, bool(attributes.override_redirect)))
        return found
    finally:
        connection.close()


def tray_box(display: str, wm_class: tuple[str, str]) -> Box | None:
    """The tray's own window: trayer's panel, or the SNI host's bar."""
    boxes = [box for cls, box, _ in _viewable_toplevels(display) if cls == wm_class]
    return max(boxes, key=lambda box: box.width * box.height, default=None)


# dunst's popups are override-redirect windows too, and tray's are as tall as a menu.
_NOT_MENUS = frozenset({("Dunst", "Dunst")})


def menu_boxes(display: str) -> list[Box]:
    """Open popup menus: override-redirect windows too tall to be a tooltip (and not a
    notification)."""
    return [
        box
        for wm_class, box, popup in _viewable_toplevels(display)
        if popup and box.height >= 60 and wm_class not in _NOT_MENUS
    ]


def grab(display: str, box: Box) -> Image.Image:
    shot = ImageGrab.grab(xdisplay=display)
    return shot.crop((box.left, box.top, box.right, box.bottom)).convert("RGB")


def colour_count(image: Image.Image, colour: tuple[int, int, int], tolerance: int = 60) -> int:
    """Pixels within ``tolerance`` (summed over channels) of ``colour``."""
    data = image.tobytes()
    count = 0
    for i in range(0, len(data), 3):
        if (
            abs(data[i] - colour[0]) + abs(data[i + 1] - colour[1]) + abs(data[i + 2] - colour[2])
            <= tolerance
        ):
            count += 1
    return count


def main_colour(state: IconState) -> tuple[int, int, int]:
    """The state's dominant colour, read from the artwork itself."""
    image = icon_image(state, size=64)
    colours = image.getcolors(64 * 64)
    assert colours is not None
    _, best = max((n, rgba) for n, rgba in colours if isinstance(rgba, tuple) and rgba[3] == 255)
    assert isinstance(best, tuple)
    return best[0], best[1], best[2]


def icon_box(display: str, tray: tuple[str, str]) -> Box:
    """Where our icon is drawn: the part of the tray unlike the tray's own colour."""

    def find() -> Box | None:
        box = tray_box(display, tray)
        if box is None:
            return None
        shot = grab(display, box)
        colours = shot.getcolors(shot.width * shot.height) or []
        background = max(colours, default=(0, (0, 0, 0)))[1]
        assert isinstance(background, tuple)
        diff = ImageChops.difference(shot, Image.new("RGB", shot.size, background))
        found = diff.convert("L").point(lambda v: 255 if v > 40 else 0).getbbox()
        if found is None:
            return None
        left, top, right, bottom = found
        return Box(box.left + left, box.top + top, right - left, bottom - top)

    found = wait_for(find, TIMEOUT, what=f"our icon in the {tray} window")
    assert found is not None
    return found


def xdotool(display: str, *args: str) -> None:
    subprocess.run(
        ["xdotool", *args],
        env=base_env(DISPLAY=display),
        check=True,
        timeout=10,
        capture_output=True,
    )


def click(display: str, point: tuple[int, int], button: int) -> None:
    xdotool(display, "mousemove", str(point[0]), str(point[1]), "click", str(button))


def open_menu(display: str, at: tuple[int, int], button: int) -> list[Box]:
    """Click the icon and wait for its menu; pressed again if the first click is lost."""

    def opened() -> list[Box]:
        return menu_boxes(display)

    assert opened() == []
    click(display, at, button)
    return wait_for(opened, TIMEOUT, what="the tray menu to open")


# WM_CLASS of trayer's panel and of the SNI host's bar.
TRAYER = ("panel", "trayer")
SNI_HOST = ("gtk-sni-tray-standalone", "Gtk-sni-tray-standalone")
