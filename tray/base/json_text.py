"""JSON text from plain values, for the state files ``tray run`` writes.

``json`` imports ``re`` (and with it ``enum``), milliseconds of every ``tray run`` for a
writer that needs none of it. :func:`dumps` gives exactly what
``json.dumps(value, separators=(",", ":"))`` gives, character for character, so a file
reads the same whichever wrote it; reading stays with ``json.loads``, imported where a
file is read.
"""

from __future__ import annotations

from collections.abc import Callable

_INFINITY = float("inf")


class _Escapes(dict[int, str]):
    """What ``str.translate`` turns each character into, as json's ASCII-only writer does.

    Every ASCII character is in the table; the others (``__missing__``) become ``\\uXXXX``,
    those beyond the Basic Multilingual Plane as a surrogate pair. Not kept once made:
    which characters come is up to the programs, and the table would only grow.
    """

    def __missing__(self, code: int) -> str:
        if code < 0x10000:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


_ESCAPES = _Escapes({code: chr(code) for code in range(0x20, 0x7F)})
_ESCAPES.update({code: f"\\u{code:04x}" for code in (*range(0x20), 0x7F)})
_ESCAPES.update(
    {
        ord('"'): '\\"',
        ord("\\"): "\\\\",
        ord("\b"): "\\b",
        ord("\f"): "\\f",
        ord("\n"): "\\n",
        ord("\r"): "\\r",
        ord("\t"): "\\t",
    }
)


def string(text: str) -> str:
    """``text`` as a JSON string, quotes included, with only ASCII in it."""
    # Most strings are plain ASCII (ids, states, paths): for ASCII, printable means
    # space to tilde, the characters json writes as they are, bar these two.
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return f'"{text.translate(_ESCAPES)}"'


def _float(number: float) -> str:
    if number != number:  # noqa: PLR0124 - NaN is the one number unequal to itself
        return "NaN"
    if number == _INFINITY:
        return "Infinity"
    if number == -_INFINITY:
        return "-Infinity"
    return float.__repr__(number)


def _key(key: object) -> str:
    """A dict key as json writes it: a string as it is, the scalars it coerces as text."""
    if isinstance(key, str):
        return string(key)
    if isinstance(key, float):
        return f'"{_float(key)}"'
    if key is True:
        return '"true"'
    if key is False:
        return '"false"'
    if key is None:
        return '"null"'
    if isinstance(key, int):
        return f'"{int.__repr__(key)}"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _write(value: object, out: Callable[[str], object]) -> None:
    # The order of json's own checks: bool before int, str and its subclasses as str.
    if value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, str):
        out(string(value))
    elif isinstance(value, int):
        out(int.__repr__(value))
    elif isinstance(value, float):
        out(_float(value))
    elif isinstance(value, (list, tuple)):
        if not value:
            out("[]")
            return
        separator = "["
        for item in value:
            out(separator)
            _write(item, out)
            separator = ","
        out("]")
    elif isinstance(value, dict):
        if not value:
            out("{}")
            return
        separator = "{"
        for key, item in value.items():
            out(separator)
            out(_key(key))
            out(":")
            _write(item, out)
            separator = ","
        out("}")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: object) -> str:
    """``json.dumps(value, separators=(",", ":"))``, without importing json.

    Unlike json, a container that holds itself is not caught: it ends in RecursionError.
    """
    parts: list[str] = []
    _write(value, parts.append)
    return "".join(parts)


__all__ = ["dumps", "string"]
