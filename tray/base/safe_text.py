"""Pure: untrusted report text made safe and short for menus, notifications, tables."""

from __future__ import annotations

import re
import unicodedata
from typing import Final

# protocol.md (Security) names these: bidirectional overrides and invisible formatting
# that can make a message look like something it is not.
INVISIBLE: Final = frozenset(
    {
        *map(chr, range(0x202A, 0x202F)),
        *map(chr, range(0x2066, 0x206A)),
        "\u200e",
        "\u200f",
        "\u061c",
        *map(chr, range(0x200B, 0x200E)),
        "\u2060",
        "\ufeff",
        "\u00ad",
    }
)

# Every one of INVISIBLE is a format character (Cf); dropping the whole category also
# catches tag characters and interlinear annotations, which hide text just as well.
# Cc is the control characters; Cs is lone surrogates, which no D-Bus message can carry.
_DROPPED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs"})

ELLIPSIS: Final = "\u2026"

# Only the five entities every notification server knows: GNOME Shell and its
# descendants re-escape any other "&", numeric references included.
_MARKUP_ENTITIES: Final = {
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
    ord('"'): "&quot;",
    ord("'"): "&apos;",
}


def _kept(char: str) -> bool:
    # Whitespace controls (tab, newline, ...) survive here so they can become spaces.
    if char.isspace():
        return True
    return char not in INVISIBLE and unicodedata.category(char) not in _DROPPED_CATEGORIES


# The ASCII characters _kept drops (controls that are not whitespace), for a fast path:
# ASCII text, the common case, is cleaned by str methods instead of a call per character.
_ASCII_DROPPED: Final = {code: None for code in range(128) if not _kept(chr(code))}


def clean_text(text: str) -> str:
    """One line of visible text: invisible formatting and controls gone, whitespace
    runs collapsed to a single space, no space at either end."""
    if text.isascii():
        return " ".join(text.translate(_ASCII_DROPPED).split())
    if text.isprintable():
        # Printable holds no format (Cf), control (Cc) or surrogate (Cs) character, and no
        # whitespace but the ASCII space: nothing to drop, one pass instead of a call per
        # character (agents' titles, the common non-ASCII text, are like this).
        return " ".join(text.split())
    return _clean_text_slow(text)


def _clean_text_slow(text: str) -> str:
    return " ".join("".join(filter(_kept, text)).split())


def escape_markup(text: str) -> str:
    """Text for a freedesktop notification body, which servers read as markup."""
    return text.translate(_MARKUP_ENTITIES)


def char_cells(char: str) -> int:
    """Terminal cells a character takes: 0 for combining marks, 2 for wide ones."""
    # No ASCII character is combining or wide (ord raises, as unicodedata would, for
    # anything but one character).
    if ord(char) < 128:
        return 1
    return _char_cells_slow(char)


def _char_cells_slow(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cells(text: str) -> int:
    if text.isascii():
        return len(text)  # one cell each, as char_cells says
    # Mostly ASCII even so (a "·" between words): only the rest are looked up.
    rest = "".join(_NOT_ASCII.findall(text))
    return len(text) - len(rest) + sum(map(_char_cells_slow, rest))


_NOT_ASCII: Final = re.compile("[^\x00-\x7f]+")


def pad(text: str, width: int) -> str:
    """``text`` followed by spaces up to ``width`` cells."""
    return text + " " * (width - cells(text))


def cut(text: str, width: int) -> str:
    """At most ``width`` cells (wide characters count two); a cut one ends in an
    ellipsis."""
    if width <= 0:
        return ""
    if text.isascii():
        # One cell per character: the loop below would keep the first width - 1.
        return text if len(text) <= width else text[: width - 1].rstrip() + ELLIPSIS
    return _cut_slow(text, width)


def _cut_slow(text: str, width: int) -> str:
    if width <= 0:
        return ""
    if sum(map(_char_cells_slow, text)) <= width:
        return text
    kept: list[str] = []
    used = 0
    for char in text:
        size = _char_cells_slow(char)
        if used + size > width - 1:
            break
        kept.append(char)
        used += size
    return "".join(kept).rstrip() + ELLIPSIS


_UNITS: Final = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def format_age(seconds: float) -> str:
    """The largest whole unit: "12s", "3m", "2h", "1d"."""
    whole = max(0, int(seconds))
    for name, size in _UNITS:
        if whole >= size:
            return f"{whole // size}{name}"
    return "0s"


def format_duration(seconds: float) -> str:
    """Two units at most, for how long a run took: "45s", "3m 12s", "2h 5m", "1d 3h"."""
    whole = max(0, int(seconds))
    for index, (name, size) in enumerate(_UNITS[:-1]):
        if whole >= size:
            smaller, smaller_size = _UNITS[index + 1]
            rest = (whole % size) // smaller_size
            return f"{whole // size}{name}" + (f" {rest}{smaller}" if rest else "")
    return f"{whole}s"
