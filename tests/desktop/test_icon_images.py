"""The tray artwork: one distinct image per state, readable by shape alone, with a badge."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any, get_args

import pytest
from PIL import Image, ImageChops

from tray.core.view.overview import IconState
from tray.desktop import icon_images as icons
from tray.desktop.icon_images import ARTWORK_SIZES, BADGE_FROM, icon_image
from tray.protocol.state import State

STATES: tuple[IconState, ...] = get_args(IconState)


def _pixels(image: Image.Image) -> list[tuple[int, ...]]:
    data, bands = image.tobytes(), len(image.getbands())
    return [tuple(data[i : i + bands]) for i in range(0, len(data), bands)]


def _differing_pixels(a: Image.Image, b: Image.Image) -> int:
    diff = ImageChops.difference(a.convert("RGBA"), b.convert("RGBA"))
    return sum(1 for pixel in _pixels(diff) if max(pixel) > 32)


def _shape(image: Image.Image) -> Image.Image:
    """The silhouette: alpha thresholded, so colour plays no part."""
    return image.getchannel("A").point(lambda a: 255 if a >= 128 else 0)


def _mask_difference(a: Image.Image, b: Image.Image) -> float:
    diff = ImageChops.difference(_shape(a), _shape(b))
    return sum(1 for (value,) in _pixels(diff) if value) / (a.width * a.height)


def test_every_state_has_artwork_of_every_size_in_both_variants() -> None:
    for state, size, template in itertools.product(STATES, ARTWORK_SIZES, (False, True)):
        image = icon_image(state, size=size, template=template)
        assert image.mode == "RGBA"
        assert image.size == (size, size)
        # Not blank, not a full square: there is a shape on transparency.
        alpha = image.getchannel("A")
        lo, hi = alpha.getextrema()
        assert (lo, hi) == (0, 255), (state, size, template)


@pytest.mark.parametrize("size", ARTWORK_SIZES)
@pytest.mark.parametrize("template", [False, True])
def test_states_differ_in_shape_not_only_colour(size: int, template: bool) -> None:
    for a, b in itertools.combinations(STATES, 2):
        share = _mask_difference(
            icon_image(a, size=size, template=template),
            icon_image(b, size=size, template=template),
        )
        # At least a twentieth of the square changes between any two silhouettes.
        assert share > 0.05, (a, b, size, template, share)


def test_colour_variants_differ_per_state() -> None:
    for a, b in itertools.combinations(STATES, 2):
        assert _differing_pixels(icon_image(a), icon_image(b)) > 200, (a, b)


def test_template_variants_are_black_on_transparent() -> None:
    for state in STATES:
        image = icon_image(state, size=32, template=True)
        seen = {pixel[:3] for pixel in _pixels(image) if pixel[3] > 0}
        assert seen == {(0, 0, 0)}, state
        coloured = icon_image(state, size=32)
        assert any(pixel[:3] != (0, 0, 0) for pixel in _pixels(coloured) if pixel[3] > 0)


@pytest.mark.parametrize("size", ARTWORK_SIZES)
@pytest.mark.parametrize("template", [False, True])
def test_badge_shows_from_two_blocked_sessions(size: int, template: bool) -> None:
    plain = icon_image(State.BLOCKED, 0, size, template)
    assert icon_image(State.BLOCKED, 1, size, template).tobytes() == plain.tobytes()
    badged = [icon_image(State.BLOCKED, count, size, template) for count in (2, 3, 7, 12)]
    for image in badged:
        assert image.size == (size, size)
        assert _differing_pixels(image, plain) >= size  # a visible disc, not a speck
    # Each number draws differently.
    for a, b in itertools.combinations(badged, 2):
        assert _differing_pixels(a, b) > 0


def test_badge_sits_in_the_lower_right_corner() -> None:
    size = 64
    plain = icon_image(State.BLOCKED, 0, size)
    badged = icon_image(State.BLOCKED, BADGE_FROM, size)
    diff = ImageChops.difference(plain, badged).convert("L").point(lambda v: 255 if v else 0)
    box = diff.getbbox()
    assert box is not None
    left, top, right, bottom = box
    assert left >= size // 3 and top >= size // 3
    assert right == size and bottom == size


def test_many_blocked_sessions_share_one_badge() -> None:
    assert icon_image(State.BLOCKED, 10).tobytes() == icon_image(State.BLOCKED, 99).tobytes()
    assert icon_image(State.BLOCKED, 9).tobytes() != icon_image(State.BLOCKED, 10).tobytes()


def test_count_is_ignored_unless_blocked() -> None:
    for state in STATES:
        if state != State.BLOCKED:
            assert icon_image(state, 5).tobytes() == icon_image(state, 0).tobytes()


def test_other_sizes_are_scaled_from_the_next_larger_artwork() -> None:
    for size in (12, 24, 48, 128):
        image = icon_image(State.DONE, size=size)
        assert image.size == (size, size)
    assert icon_image(State.BLOCKED, 3, size=24).size == (24, 24)
    with pytest.raises(ValueError, match="size"):
        icon_image(State.DONE, size=0)


def test_images_are_cached() -> None:
    assert icon_image(State.WORKING, 0, 22) is icon_image(State.WORKING, 0, 22)
    assert icon_image(State.BLOCKED, 4, 22, True) is icon_image(State.BLOCKED, 4, 22, True)


def _draw_module() -> Any:
    path = Path(__file__).resolve().parents[2] / "icons" / "draw.py"
    spec = importlib.util.spec_from_file_location("icons_draw", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pngs_are_what_draw_py_draws() -> None:
    """Nobody edited a PNG by hand, and nobody forgot to rerun icons/draw.py."""
    draw = _draw_module()
    assert set(draw.STATES) == set(STATES)
    assert tuple(draw.SIZES) == ARTWORK_SIZES
    folder = Path(__file__).resolve().parents[2] / "icons"
    for state, size, template in itertools.product(STATES, ARTWORK_SIZES, (False, True)):
        drawn = draw.render(state, size, template)
        with Image.open(folder / draw.file_name(state, size, template)) as stored:
            diff = ImageChops.difference(drawn, stored.convert("RGBA"))
        # A resampler that rounds differently may move a channel by a step or two.
        assert max(max(pixel) for pixel in _pixels(diff)) <= 2, (state, size, template)


def test_artwork_is_found_in_the_checkout_when_not_installed() -> None:
    folder = icons.artwork_folder()
    assert folder.joinpath("template-error-64.png").is_file()
