"""Plasma's notification popups, as a user sees them: where a popup is (KWin scripting
knows its window), and where its action buttons are (read from a screenshot).

A popup is a window of plasmashell that KWin marks ``notification`` (or
``criticalNotification``, for urgency 2). Its buttons sit in one row at its bottom,
right-aligned, in the order of the notification's actions, and Breeze draws them in a
lighter fill than the popup's background (measured on 5.27.5 with a fresh home: button
fill 248-252 grey, popup 209,213,215). So the lowest row of the popup that holds light
runs, each at least a few pixels wide, crosses every button; each run is one button.
That holds whatever the labels' widths and the fonts; it would not hold for a dark
colour scheme, which a fresh home does not have. The popup's background is translucent,
so a window right behind it shows through: Konsole's dark one and the wallpaper keep it
well under the buttons' fill, a white one might not.

Qt Quick may miss a click that comes at once into a window the pointer has just entered
(measured: most such clicks on a popup were lost); :func:`hover_button` waits until the
popup draws the hovered button, then a press is seen (16 of 16 measured).
"""

from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from helpers.plasma import Plasma
from helpers.plasma_input import FakePointer
from helpers.waiting import wait_for

# A pixel of a button's fill: every channel at least this (the popup's own is 209-215).
LIGHT = 240
# A light run narrower than this is an edge or a glyph's highlight, not a button.
MIN_BUTTON_WIDTH = 16
SETTLED_TIMEOUT = 20.0


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    width: int
    height: int

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2


def popups(plasma: Plasma) -> dict[str, Box]:
    """plasmashell's notification popups on screen, by KWin's internal id."""
    found = plasma.kwin_script(
        "var out = {};"
        " workspace.clientList().forEach(function (w) {"
        "  if (w.notification || w.criticalNotification) {"
        "   out[String(w.internalId)] = [w.x, w.y, w.width, w.height]; } });"
        " return out;"
    )
    assert isinstance(found, dict), found
    return {key: Box(*(int(v) for v in value)) for key, value in found.items()}


def _light(image: Image.Image, x: int, y: int) -> bool:
    pixel = image.getpixel((x, y))
    assert isinstance(pixel, tuple), pixel  # an RGB screenshot
    return min(pixel[:3]) >= LIGHT


def _runs(image: Image.Image, y: int, left: int, right: int) -> list[tuple[int, int]]:
    """The light runs (first x, last x) of row ``y`` between ``left`` and ``right``."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for x in range(left, right + 1):
        light = x < right and _light(image, x, y)
        if light and start is None:
            start = x
        elif not light and start is not None:
            if x - start >= MIN_BUTTON_WIDTH:
                runs.append((start, x - 1))
            start = None
    return runs


def buttons_in(image: Image.Image, popup: Box) -> list[Box]:
    """The popup's action buttons, left to right, found in a screenshot of the screen."""
    left, right = popup.x, popup.x + popup.width
    for y in range(popup.y + popup.height - 1, popup.y + popup.height // 3, -1):
        runs = _runs(image, y, left, right)
        if not runs:
            continue
        found = []
        for first, last in runs:
            # Up along the fill just inside the left border: text never reaches it.
            top = y
            while top > popup.y and _light(image, first + 2, top - 1):
                top -= 1
            found.append(Box(first, top, last - first + 1, y - top + 1))
        return found
    return []


def settled_buttons(plasma: Plasma, popup_id: str, count: int) -> tuple[Box, list[Box]]:
    """The popup and its ``count`` buttons, once two screenshots in a row agree (the
    popup slides in, and may move as others close)."""
    last: list[tuple[Box, list[Box]]] = []

    def steady() -> tuple[Box, list[Box]] | None:
        box = popups(plasma).get(popup_id)
        if box is None:
            return None
        seen = (box, buttons_in(plasma.screenshot(), box))
        stable = bool(last) and last[-1] == seen and len(seen[1]) == count
        last.append(seen)
        return seen if stable else None

    return wait_for(steady, SETTLED_TIMEOUT, 0.1, f"a popup with {count} buttons, settled")


def new_popup(plasma: Plasma, before: set[str]) -> str:
    """The id of a popup that was not among ``before``."""

    def appeared() -> str | None:
        return next((key for key in popups(plasma) if key not in before), None)

    return wait_for(appeared, SETTLED_TIMEOUT, 0.1, "a new notification popup")


def _pixels(image: Image.Image, box: Box) -> bytes:
    return image.crop((box.x, box.y, box.x + box.width, box.y + box.height)).tobytes()


def hover_button(plasma: Plasma, pointer: FakePointer, button: Box) -> None:
    """Bring the pointer onto ``button`` and wait until the popup draws it hovered:
    then its window has taken the pointer in, and a press there is seen (a click at
    once, into a window just entered, was mostly lost: see FakePointer.click)."""
    pointer.rest()
    plain = _pixels(plasma.screenshot(), button)
    pointer.move(*button.center)
    wait_for(
        lambda: _pixels(plasma.screenshot(), button) != plain,
        SETTLED_TIMEOUT,
        0.05,
        "the button to be drawn hovered",
    )
