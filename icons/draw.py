"""Regenerate the tray artwork in this folder: `python icons/draw.py`.

Every shape is drawn on a canvas four times the target size and scaled down with
LANCZOS, so edges stay smooth at 16 px. Shapes are defined on a 64-unit grid; strokes
get relatively heavier as the size shrinks, so a 16 px icon keeps lines about two
pixels wide.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw

STATES = ("calm", "working", "done", "error", "blocked")
SIZES = (16, 22, 32, 64)
OVERSAMPLE = 4
GRID = 64

# Colours chosen to stay distinct for the common colour-vision deficiencies when
# combined with the shapes; the shapes alone carry the meaning.
COLOURS = {
    "calm": (138, 143, 152),
    "working": (47, 129, 247),
    "done": (46, 160, 67),
    "error": (215, 58, 73),
    "blocked": (227, 160, 8),
}
# Glyph drawn inside a filled shape: white reads on green and red, near-black on amber
# (the way warning signs are printed).
GLYPH_COLOURS = {
    "done": (255, 255, 255),
    "error": (255, 255, 255),
    "blocked": (31, 27, 20),
}

# Stroke width in grid units by target size: thin lines vanish at 16 px.
STROKE = {16: 9.0, 22: 8.0, 32: 7.0, 64: 6.0}

Point = tuple[float, float]
Painter = Callable[[ImageDraw.ImageDraw, float, float], None]


def _scale(points: list[Point], unit: float) -> list[Point]:
    return [(x * unit, y * unit) for x, y in points]


def _round_line(draw: ImageDraw.ImageDraw, points: list[Point], width: float) -> None:
    """A polyline with round caps and joints, as a pen would draw it."""
    draw.line(points, fill=255, width=round(width), joint="curve")
    radius = width / 2
    for x, y in points:
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=255)


def _ring(draw: ImageDraw.ImageDraw, unit: float, stroke: float) -> None:
    outer = (GRID / 2 - 3) * unit
    centre = GRID / 2 * unit
    box = (centre - outer, centre - outer, centre + outer, centre + outer)
    draw.ellipse(box, outline=255, width=round(stroke * unit))


def _working(draw: ImageDraw.ImageDraw, unit: float, stroke: float) -> None:
    """A spinner: an open arc with a dot in the middle, never a closed ring."""
    centre = GRID / 2 * unit
    width = stroke * unit
    radius = (GRID / 2 - 3) * unit - width / 2  # centre line of the stroke
    box = (centre - radius - width / 2, centre - radius - width / 2)
    box_end = (centre + radius + width / 2, centre + radius + width / 2)
    start, end = -60.0, 210.0  # degrees, clockwise from 3 o'clock; gap at top right
    draw.arc((*box, *box_end), start=start, end=end, fill=255, width=round(width))
    for angle in (start, end):
        x = centre + radius * math.cos(math.radians(angle))
        y = centre + radius * math.sin(math.radians(angle))
        draw.ellipse((x - width / 2, y - width / 2, x + width / 2, y + width / 2), fill=255)
    dot = max(stroke * 0.85, 6.5) * unit
    draw.ellipse((centre - dot, centre - dot, centre + dot, centre + dot), fill=255)


def _disc(draw: ImageDraw.ImageDraw, unit: float, _stroke: float) -> None:
    margin = 2 * unit
    draw.ellipse((margin, margin, GRID * unit - margin, GRID * unit - margin), fill=255)


def _rounded_square(draw: ImageDraw.ImageDraw, unit: float, _stroke: float) -> None:
    margin = 4 * unit
    draw.rounded_rectangle(
        (margin, margin, GRID * unit - margin, GRID * unit - margin), radius=11 * unit, fill=255
    )


def _triangle(draw: ImageDraw.ImageDraw, unit: float, _stroke: float) -> None:
    # A polygon with a thick round outline gives a triangle with soft corners.
    corner = 6 * unit
    points = _scale([(32, 7), (58, 54), (6, 54)], unit)
    draw.polygon(points, fill=255)
    _round_line(draw, [*points, points[0]], 2 * corner)


def _check(draw: ImageDraw.ImageDraw, unit: float, stroke: float) -> None:
    _round_line(draw, _scale([(18, 33), (28, 43), (46, 22)], unit), stroke * unit * 1.05)


def _cross(draw: ImageDraw.ImageDraw, unit: float, stroke: float) -> None:
    _round_line(draw, _scale([(22, 22), (42, 42)], unit), stroke * unit * 1.05)
    _round_line(draw, _scale([(42, 22), (22, 42)], unit), stroke * unit * 1.05)


def _exclamation(draw: ImageDraw.ImageDraw, unit: float, stroke: float) -> None:
    # Keep about one pixel of gap between bar and dot even at 16 px.
    width = stroke * unit
    _round_line(draw, _scale([(32, 22), (32, 34)], unit), width)
    dot = width * 0.6
    x, y = 32 * unit, 48 * unit
    draw.ellipse((x - dot, y - dot, x + dot, y + dot), fill=255)


# state -> (outer shape, glyph cut out of it or None)
SHAPES: dict[str, tuple[Painter, Painter | None]] = {
    "calm": (_ring, None),
    "working": (_working, None),
    "done": (_disc, _check),
    "error": (_rounded_square, _cross),
    "blocked": (_triangle, _exclamation),
}


def _masks(state: str, size: int) -> tuple[Image.Image, Image.Image]:
    """The shape's and the glyph's coverage, at the oversampled size."""
    canvas = size * OVERSAMPLE
    unit = canvas / GRID
    stroke = STROKE[size]
    shape_painter, glyph_painter = SHAPES[state]
    shape = Image.new("L", (canvas, canvas), 0)
    shape_painter(ImageDraw.Draw(shape), unit, stroke)
    glyph = Image.new("L", (canvas, canvas), 0)
    if glyph_painter is not None:
        glyph_painter(ImageDraw.Draw(glyph), unit, stroke)
    return shape, glyph


def render(state: str, size: int, template: bool) -> Image.Image:
    shape, glyph = _masks(state, size)
    canvas = shape.size
    if template:
        # Template images are read by alpha alone, so the glyph becomes a hole.
        black = Image.new("RGBA", canvas, (0, 0, 0, 0))
        alpha = Image.composite(Image.new("L", canvas, 0), shape, glyph)
        black.putalpha(alpha)
        big = black
    else:
        big = Image.new("RGBA", canvas, (*COLOURS[state], 0))
        big.putalpha(shape)
        if state in GLYPH_COLOURS:
            ink = Image.new("RGBA", canvas, (*GLYPH_COLOURS[state], 255))
            big = Image.composite(ink, big, glyph)
    return big.resize((size, size), Image.Resampling.LANCZOS)


def file_name(state: str, size: int, template: bool) -> str:
    return f"{'template-' if template else ''}{state}-{size}.png"


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for state in STATES:
        for size in SIZES:
            for template in (False, True):
                # optimize keeps the files small; no metadata keeps them reproducible.
                render(state, size, template).save(
                    folder / file_name(state, size, template), optimize=True
                )


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
