"""Icon state to image: the artwork from icons/, plus a count badge for blocked sessions."""

from __future__ import annotations

import functools
import importlib.resources
from importlib.resources.abc import Traversable
from pathlib import Path

from PIL import Image, ImageDraw

from tray.core.view.overview import IconState
from tray.protocol.state import State

ARTWORK_SIZES = (16, 22, 32, 64)
# The package the PNGs are installed as (pyproject maps the top-level icons/ onto it).
ARTWORK_PACKAGE = "tray.artwork"
# One blocked session shows a clean "!"; the number only helps from two on.
BADGE_FROM = 2
_OVERSAMPLE = 4
_BADGE_COLOUR = (200, 30, 45, 255)
_BADGE_INK = (255, 255, 255, 255)


class MissingArtworkError(RuntimeError):
    """The icon PNGs are neither installed with the package nor in a checkout."""


def _checkout_folder() -> Path:
    return Path(__file__).resolve().parents[2] / "icons"


@functools.cache
def artwork_folder() -> Traversable:
    """Where the PNGs are: installed package data first, then the repository's icons/."""
    probe = "calm-16.png"
    # Through the regular package ``tray``, not ``files(ARTWORK_PACKAGE)``: the artwork
    # folder has no __init__.py, and importlib.resources cannot open such a namespace
    # package inside a zip (NotADirectoryError: "MultiplexedPath only supports
    # directories"), where ``tray``'s own files() is a zipfile.Path.
    installed = importlib.resources.files("tray").joinpath(ARTWORK_PACKAGE.partition(".")[2])
    if installed.joinpath(probe).is_file():
        return installed
    checkout = _checkout_folder()
    if checkout.joinpath(probe).is_file():
        return checkout
    raise MissingArtworkError(
        f"tray icon artwork not found (looked in package {ARTWORK_PACKAGE} and {checkout})"
    )


def _artwork_size(size: int) -> int:
    """The drawn size to scale from: the smallest one not smaller than asked for."""
    return next((drawn for drawn in ARTWORK_SIZES if drawn >= size), ARTWORK_SIZES[-1])


@functools.cache
def _artwork(state: IconState, size: int, template: bool) -> Image.Image:
    name = f"{'template-' if template else ''}{state}-{size}.png"
    with artwork_folder().joinpath(name).open("rb") as stream:
        image = Image.open(stream)
        image.load()
    return image.convert("RGBA")


# Badge digits as pen strokes on a 3 x 5 grid, like a seven-segment display: at 16 px
# each stroke lands on whole pixels (crisp), and larger sizes draw the same strokes
# smoothly. Shipping our own strokes avoids depending on whatever fonts are installed.
_GLYPHS: dict[str, tuple[tuple[tuple[int, int], ...], ...]] = {
    "0": (((0, 0), (2, 0), (2, 4), (0, 4), (0, 0)),),
    "1": (((0, 1), (1, 0), (1, 4)), ((0, 4), (2, 4))),
    "2": (((0, 0), (2, 0), (2, 2), (0, 2), (0, 4), (2, 4)),),
    "3": (((0, 0), (2, 0), (2, 4), (0, 4)), ((1, 2), (2, 2))),
    "4": (((0, 0), (0, 2), (2, 2)), ((2, 0), (2, 4))),
    "5": (((2, 0), (0, 0), (0, 2), (2, 2), (2, 4), (0, 4)),),
    "6": (((2, 0), (0, 0), (0, 4), (2, 4), (2, 2), (0, 2)),),
    "7": (((0, 0), (2, 0), (2, 4)),),
    "8": (((0, 0), (2, 0), (2, 4), (0, 4), (0, 0)), ((0, 2), (2, 2))),
    "9": (((2, 2), (0, 2), (0, 0), (2, 0), (2, 4), (0, 4)),),
    "+": (((1, 1), (1, 3)), ((0, 2), (2, 2))),
}
_GLYPH_WIDTH, _GLYPH_HEIGHT, _GLYPH_GAP = 3, 5, 1
# Below this size strokes are drawn one pixel wide on the pixel grid.
_PIXEL_DIGITS_BELOW = 28


def _badge_text(count: int) -> str:
    return str(count) if count <= 9 else "9+"


def _text_cells(text: str) -> int:
    return len(text) * _GLYPH_WIDTH + (len(text) - 1) * _GLYPH_GAP


def _stroke_text(
    draw: ImageDraw.ImageDraw,
    text: str,
    centre: tuple[float, float],
    cell: float,
    width: float,
) -> None:
    """Draw ``text`` centred on ``centre``, one grid cell being ``cell`` pixels.

    With ``cell == 1`` and ``width == 1`` the strokes fall on whole pixels.
    """
    left = centre[0] - (_text_cells(text) - 1) * cell / 2
    top = centre[1] - (_GLYPH_HEIGHT - 1) * cell / 2
    for index, char in enumerate(text):
        x0 = left + index * (_GLYPH_WIDTH + _GLYPH_GAP) * cell
        for stroke in _GLYPHS[char]:
            points = [(x0 + x * cell, top + y * cell) for x, y in stroke]
            if width <= 1:
                draw.line(points, fill=255, width=1)
                continue
            draw.line(points, fill=255, width=round(width), joint="curve")
            for x, y in points:
                r = width / 2
                draw.ellipse((x - r, y - r, x + r, y + r), fill=255)


def _badge_ink(text: str, size: int, centre_px: float, radius_px: float) -> Image.Image:
    """Coverage of the badge digits at the icon's own size."""
    if size < _PIXEL_DIGITS_BELOW:
        ink = Image.new("L", (size, size), 0)
        # Pixel centres sit at .5; the integer grid below addresses whole pixels.
        middle = centre_px - 0.5
        _stroke_text(ImageDraw.Draw(ink), text, (middle, middle), 1, 1)
        return ink
    canvas = size * _OVERSAMPLE
    ink = Image.new("L", (canvas, canvas), 0)
    height = radius_px * 2 * (0.52 if len(text) == 1 else 0.42) * _OVERSAMPLE
    cell = height / (_GLYPH_HEIGHT - 1)
    middle = centre_px * _OVERSAMPLE
    _stroke_text(ImageDraw.Draw(ink), text, (middle, middle), cell, cell * 0.8)
    return _shrink(ink, size)


def _badge_geometry(size: int) -> tuple[float, float]:
    """Badge radius and centre (both ways), in pixels of the icon.

    Small icons give the badge a bigger share so the digits keep whole pixels; the
    centre sits on a pixel centre so pixel digits come out symmetric.
    """
    if size >= _PIXEL_DIGITS_BELOW:
        return size * 0.25, size * 0.75
    radius = 4.5 if size < 20 else 5.5
    return radius, int(size - radius) + 0.5


def _draw_badge(base: Image.Image, count: int, template: bool) -> Image.Image:
    """The base image with a numbered disc in the lower right corner.

    The disc is drawn oversampled like the artwork, and a thin transparent moat
    separates it from the shape below so the two never merge into one blob.
    """
    size = base.width
    canvas = size * _OVERSAMPLE
    radius, centre = _badge_geometry(size)
    moat = max(0.75, size / 40)

    def disc(r: float) -> Image.Image:
        big = Image.new("L", (canvas, canvas), 0)
        c, r = centre * _OVERSAMPLE, r * _OVERSAMPLE
        ImageDraw.Draw(big).ellipse((c - r, c - r, c + r, c + r), fill=255)
        return _shrink(big, size)

    text = _badge_text(count)
    ink = _badge_ink(text, size, centre, radius)
    badge = disc(radius)

    result = base.copy()
    alpha = result.getchannel("A")
    alpha.paste(0, mask=disc(radius + moat))
    result.putalpha(alpha)
    if template:
        # Template images are read by alpha alone: the digits become holes.
        layer = Image.new("RGBA", (size, size), (0, 0, 0, 0))
        layer.putalpha(Image.composite(Image.new("L", (size, size), 0), badge, ink))
    else:
        layer = Image.composite(
            Image.new("RGBA", (size, size), _BADGE_INK),
            Image.new("RGBA", (size, size), _BADGE_COLOUR),
            ink,
        )
        layer.putalpha(badge)
    return Image.alpha_composite(result, layer)


def _shrink(mask: Image.Image, size: int) -> Image.Image:
    return mask.resize((size, size), Image.Resampling.LANCZOS)


@functools.cache
def _icon_image(state: IconState, count: int, size: int, template: bool) -> Image.Image:
    drawn = _artwork_size(size)
    image = _artwork(state, drawn, template)
    image = image.resize((size, size), Image.Resampling.LANCZOS) if drawn != size else image.copy()
    if state == State.BLOCKED and count >= BADGE_FROM:
        image = _draw_badge(image, count, template)
    return image


def icon_image(
    state: IconState, count: int = 0, size: int = 64, template: bool = False
) -> Image.Image:
    """The tray image for ``state``; ``count`` (blocked sessions) shows as a badge on blocked.

    Images are cached and shared: treat the result as read-only.
    """
    if size < 1:
        raise ValueError(f"icon size must be positive, not {size}")
    # Counts above nine all look alike, so they share one cache entry.
    shown = min(count, 10) if state == State.BLOCKED and count >= BADGE_FROM else 0
    return _icon_image(state, shown, size, template)
