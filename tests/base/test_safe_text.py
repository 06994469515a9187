"""Text from reports, made safe for menus and notification bodies."""

from __future__ import annotations

import html
import re
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tray.base.safe_text as text_module
from tray.base.safe_text import (
    ELLIPSIS,
    INVISIBLE,
    cells,
    char_cells,
    clean_text,
    cut,
    escape_markup,
    format_age,
    format_duration,
)

# The protocol's list, spelled out independently of the module under test.
LISTED = [
    *range(0x202A, 0x202E + 1),
    *range(0x2066, 0x2069 + 1),
    0x200E,
    0x200F,
    0x061C,
    *range(0x200B, 0x200D + 1),
    0x2060,
    0xFEFF,
    0x00AD,
]
CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
HOSTILE = [chr(c) for c in LISTED + CONTROLS] + ["\u2028", "\u2029", "\U000e0041", "\ud800"]

hostile_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(HOSTILE),
        st.sampled_from("ab <>&;\"' é中🙂"),
        st.characters(),
    ),
    max_size=80,
)


def is_forbidden(char: str) -> bool:
    return ord(char) in LISTED or unicodedata.category(char) in ("Cc", "Cf", "Cs")


def test_invisible_matches_the_protocol_list() -> None:
    assert {ord(c) for c in INVISIBLE} == set(LISTED)


@pytest.mark.parametrize("code", LISTED)
def test_each_listed_code_point_is_removed(code: int) -> None:
    assert clean_text(f"a{chr(code)}b") == "ab"


@pytest.mark.parametrize("code", [c for c in CONTROLS if not chr(c).isspace()])
def test_each_non_space_control_is_removed(code: int) -> None:
    assert clean_text(f"a{chr(code)}b") == "ab"


@pytest.mark.parametrize("code", [c for c in CONTROLS if chr(c).isspace()])
def test_each_space_control_separates_words(code: int) -> None:
    assert clean_text(f"a{chr(code)}b") == "a b"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("approve Bash: touch notes.txt", "approve Bash: touch notes.txt"),
        ("line one\nline two\r\n\tthree", "line one line two three"),
        ("  padded  ", "padded"),
        ("a\u2028b\u2029c", "a b c"),
        # A right-to-left override that would show "txt.exe" as "exe.txt".
        ("invoice\u202etxt.exe", "invoicetxt.exe"),
        ("rm -rf /\u200b\u200b", "rm -rf /"),
        ("tag\U000e0041\U000e007fs", "tags"),
        ("\x1b[31mred\x1b[0m", "[31mred[0m"),
        ("a \u200b b", "a b"),
        ("", ""),
        ("\u200b\u200f", ""),
        ("é中🙂 stays", "é中🙂 stays"),
    ],
)
def test_clean_text_examples(raw: str, clean: str) -> None:
    assert clean_text(raw) == clean


@given(hostile_text)
def test_clean_text_leaves_nothing_forbidden(raw: str) -> None:
    out = clean_text(raw)
    assert not any(is_forbidden(c) for c in out)
    assert "\n" not in out and "\r" not in out
    assert "  " not in out
    assert out == out.strip()


@given(hostile_text | st.text())
def test_the_fast_paths_agree_with_the_careful_one(raw: str) -> None:
    """ASCII and printable text take shortcuts; every text comes out as the per-character
    filter would leave it."""
    assert clean_text(raw) == " ".join(
        "".join(c for c in raw if c.isspace() or not is_forbidden(c)).split()
    )


@given(hostile_text)
def test_clean_text_is_idempotent(raw: str) -> None:
    once = clean_text(raw)
    assert clean_text(once) == once


@given(st.text(alphabet=st.sampled_from("ab中🙂.:/-_"), max_size=40))
def test_clean_text_keeps_ordinary_text(raw: str) -> None:
    assert clean_text(raw) == raw


def test_every_code_point_is_either_kept_or_forbidden() -> None:
    # Exhaustive over Unicode: a kept character is never one that must go.
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        out = clean_text(char)
        if is_forbidden(char) or char.isspace():
            assert out == "", hex(code)
        else:
            assert out == char, hex(code)


ENTITY = re.compile(r"&(amp|lt|gt|quot|apos);")


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("a < b", "a &lt; b"),
        ("<b>bold</b>", "&lt;b&gt;bold&lt;/b&gt;"),
        ("Tom & Jerry", "Tom &amp; Jerry"),
        ("&amp;", "&amp;amp;"),
        ('say "hi" it\'s', "say &quot;hi&quot; it&apos;s"),
        ('<a href="x">', "&lt;a href=&quot;x&quot;&gt;"),
        ("plain", "plain"),
    ],
)
def test_escape_markup_examples(raw: str, escaped: str) -> None:
    assert escape_markup(raw) == escaped


@given(hostile_text)
def test_escape_markup_leaves_no_live_markup(raw: str) -> None:
    out = escape_markup(raw)
    assert "<" not in out and ">" not in out
    assert '"' not in out and "'" not in out
    # Every ampersand starts one of the five entities every server knows.
    assert ENTITY.sub("", out).count("&") == 0
    assert html.unescape(out) == raw


@given(hostile_text)
def test_clean_then_escape_is_safe_and_one_line(raw: str) -> None:
    out = escape_markup(clean_text(raw))
    assert not any(is_forbidden(c) for c in out)
    assert "<" not in out and ">" not in out
    assert ENTITY.sub("", out).count("&") == 0


@pytest.mark.parametrize(
    ("text", "width", "result"),
    [
        ("short", 10, "short"),
        ("exactly10!", 10, "exactly10!"),
        ("approve Bash: touch notes.txt", 10, "approve B" + ELLIPSIS),
        ("two words here", 5, "two" + ELLIPSIS),
        ("abc", 1, ELLIPSIS),
        ("abc", 0, ""),
        ("abc", -3, ""),
        ("", 5, ""),
    ],
)
def test_cut_examples(text: str, width: int, result: str) -> None:
    assert cut(text, width) == result


@given(st.text(max_size=60), st.integers(min_value=-5, max_value=70))
def test_cut_fits_and_keeps_a_prefix(text: str, width: int) -> None:
    out = cut(text, width)
    assert cells(out) <= max(width, 0)
    if cells(text) <= width:
        assert out == text
    elif width > 0:
        assert out.endswith(ELLIPSIS)
        assert text.startswith(out[:-1])


@pytest.mark.parametrize(
    ("seconds", "age"),
    [
        (-4, "0s"),
        (0, "0s"),
        (0.9, "0s"),
        (12, "12s"),
        (59.99, "59s"),
        (60, "1m"),
        (180, "3m"),
        (3599, "59m"),
        (3600, "1h"),
        (7300, "2h"),
        (86399, "23h"),
        (86400, "1d"),
        (3 * 86400 + 5, "3d"),
    ],
)
def test_format_age(seconds: float, age: str) -> None:
    assert format_age(seconds) == age


@pytest.mark.parametrize(
    ("seconds", "duration"),
    [
        (-1, "0s"),
        (0, "0s"),
        (45, "45s"),
        (60, "1m"),
        (192, "3m 12s"),
        (3600, "1h"),
        (3600 + 5 * 60 + 7, "1h 5m"),
        (86400, "1d"),
        (86400 + 3 * 3600, "1d 3h"),
    ],
)
def test_format_duration(seconds: float, duration: str) -> None:
    assert format_duration(seconds) == duration


@given(st.floats(min_value=0, max_value=10**8, allow_nan=False))
def test_format_age_is_one_whole_unit(seconds: float) -> None:
    assert re.fullmatch(r"[0-9]+[smhd]", format_age(seconds))


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("安全な操作", 6, "安全…"),
        ("abc", 3, "abc"),
        ("abcd", 3, "ab…"),
        ("e\u0301te", 3, "e\u0301te"),
    ],
)
def test_cut_counts_terminal_cells(text: str, width: int, expected: str) -> None:
    assert cut(text, width) == expected


# The fast paths for ASCII text must answer exactly as the character-by-character ones.
# ASCII-heavy text (with controls and spaces) reaches the fast path; any text reaches both.
_ASCII = st.text(st.characters(max_codepoint=127))
_ANY = st.one_of(_ASCII, st.text())


@given(_ANY)
def test_fast_clean_text_equals_the_slow_one(text: str) -> None:
    assert clean_text(text) == text_module._clean_text_slow(text)


@given(_ANY, st.integers(min_value=-2, max_value=80))
def test_fast_cut_and_cells_equal_the_slow_ones(text: str, width: int) -> None:
    assert cut(text, width) == text_module._cut_slow(text, width)
    assert cells(text) == sum(map(text_module._char_cells_slow, text))


@pytest.mark.parametrize("code", range(0x180))
def test_fast_char_cells_equals_the_slow_one(code: int) -> None:
    assert char_cells(chr(code)) == text_module._char_cells_slow(chr(code))


def test_char_cells_wants_one_character() -> None:
    with pytest.raises(TypeError):
        char_cells("ab")
