"""Shell integration marks, OSC 133 and OSC 633: where prompts and commands start and end,
and what ran. :class:`CommandTracker` turns the marks into finished commands.

Untrusted, as everything in :mod:`tray.protocol.attention`: text is decoded as UTF-8 with
replacement and cut to a sane length, and nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from tray.protocol.attention import clip_text, percent_decode

MarkKind = Literal["A", "B", "C", "D", "E"]

MAX_CMDLINE: Final = 2048


@dataclass(frozen=True, slots=True)
class PromptMark:
    """A shell integration mark, from OSC 133 or OSC 633.

    ``A`` a prompt starts, ``B`` the prompt ends, ``C`` a command starts, ``D`` it
    finished (``exit_status`` when the shell said), ``E`` the command line of the
    command about to start or running (OSC 633 only). ``cmdline`` comes with ``C`` (when
    the shell sent one) and with ``E``.
    """

    kind: MarkKind
    exit_status: int | None = None
    cmdline: str | None = None


@dataclass(frozen=True, slots=True)
class FinishedCommand:
    """A command a :class:`CommandTracker` saw start (``C``) and finish (``D``)."""

    cmdline: str | None
    exit_status: int | None
    started_at: float
    ended_at: float

    @property
    def duration(self) -> float:
        return max(0.0, self.ended_at - self.started_at)


def _cmdline(raw: bytes) -> str | None:
    return clip_text(raw, MAX_CMDLINE) or None


# --- OSC 133 and OSC 633 ------------------------------------------------------------------

# At most ten digits, so int() is never fed a huge number.
_EXIT_STATUS: Final = re.compile(rb"-?[0-9]{1,10}")
_MARK_KINDS: Final[dict[bytes, MarkKind]] = {b"A": "A", b"B": "B", b"C": "C", b"D": "D"}
# Inside bash's ``$'...'``, the escapes printf %q produces, and a few more.
_ANSI_C_ESCAPES: Final = {
    ord("n"): b"\n",
    ord("t"): b"\t",
    ord("r"): b"\r",
    ord("a"): b"\a",
    ord("b"): b"\b",
    ord("e"): b"\x1b",
    ord("E"): b"\x1b",
    ord("f"): b"\f",
    ord("v"): b"\v",
}
_OCTAL: Final = frozenset(b"01234567")
_HEX_DIGITS: Final = frozenset(b"0123456789abcdefABCDEF")


def _split_mark(payload: bytes) -> tuple[MarkKind, bytes] | None:
    """The mark's letter and its options; the letter stands alone or before ``;``."""
    letter, _, options = payload.partition(b";")
    kind = _MARK_KINDS.get(letter)
    return None if kind is None else (kind, options)


def _exit_status(options: bytes) -> int | None:
    first = options.partition(b";")[0]
    return int(first) if _EXIT_STATUS.fullmatch(first) is not None else None


def _ansi_c_unquote(text: bytes, start: int, out: bytearray) -> int:
    """Decode a ``$'...'`` body from ``start``; returns the index after its closing quote."""
    pos = start
    while pos < len(text):
        byte = text[pos]
        if byte == ord("'"):
            return pos + 1
        if byte != ord("\\") or pos + 1 == len(text):
            out.append(byte)
            pos += 1
            continue
        escape = text[pos + 1]
        pos += 2
        if escape in _ANSI_C_ESCAPES:
            out += _ANSI_C_ESCAPES[escape]
        elif escape == ord("x"):
            digits = bytearray()
            while pos < len(text) and len(digits) < 2 and text[pos] in _HEX_DIGITS:
                digits.append(text[pos])
                pos += 1
            out += bytes([int(digits, 16)]) if digits else b"\\x"
        elif escape in _OCTAL:
            digits = bytearray([escape])
            while pos < len(text) and len(digits) < 3 and text[pos] in _OCTAL:
                digits.append(text[pos])
                pos += 1
            out.append(int(digits, 8) & 0xFF)
        else:
            out.append(escape)  # \\ \' \" and anything unknown stand for themselves
    return pos


def _shell_unquote(text: bytes) -> bytes:
    """Undo the quoting of ``printf %q`` (backslashes, ``'...'`` and ``$'...'``)."""
    out = bytearray()
    pos = 0
    while pos < len(text):
        byte = text[pos]
        if byte == ord("\\") and pos + 1 < len(text):
            out.append(text[pos + 1])
            pos += 2
        elif text.startswith(b"$'", pos):
            pos = _ansi_c_unquote(text, pos + 2, out)
        elif byte == ord("'"):
            end = text.find(b"'", pos + 1)
            end = len(text) if end < 0 else end
            out += text[pos + 1 : end]
            pos = end + 1
        else:
            out.append(byte)
            pos += 1
    return bytes(out)


def _c_cmdline(options: bytes) -> str | None:
    """The command line a ``C`` mark carries, if any."""
    rest = options
    while rest:
        option, _, after = rest.partition(b";")
        if option.startswith(b"cmdline="):
            # printf %q leaves ";" alone inside $'...', so the option runs to the end:
            # every shell integration sends it last.
            return _cmdline(_shell_unquote(rest[len(b"cmdline=") :]))
        if option.startswith(b"cmdline_url="):
            decoded = percent_decode(option[len(b"cmdline_url=") :])
            return None if decoded is None else _cmdline(decoded)
        rest = after
    return None


def parse_osc133(payload: bytes) -> PromptMark | None:
    r"""``A``, ``B``, ``C`` (maybe with ``cmdline=`` or ``cmdline_url=``) and ``D[;STATUS]``.

    Options such as ``aid=``, ``click_events=1``, ``special_key=1`` and ``redraw=0`` may
    follow any of them and are ignored.

    >>> parse_osc133(b"A;aid=42;click_events=1")
    PromptMark(kind='A', exit_status=None, cmdline=None)
    >>> parse_osc133(b"C;cmdline=make\\ test")
    PromptMark(kind='C', exit_status=None, cmdline='make test')
    >>> parse_osc133(b"D;1")
    PromptMark(kind='D', exit_status=1, cmdline=None)
    >>> parse_osc133(b"Z") is None
    True
    """
    return _shared_mark(payload, with_cmdline=True)


def _shared_mark(payload: bytes, *, with_cmdline: bool) -> PromptMark | None:
    """``A``, ``B``, ``C`` or ``D``, the marks OSC 133 and 633 share; only 133's ``C``
    carries the command line (633 sends it in an ``E`` of its own)."""
    split = _split_mark(payload)
    if split is None:
        return None
    kind, options = split
    if kind == "C" and with_cmdline:
        return PromptMark("C", cmdline=_c_cmdline(options))
    if kind == "D":
        return PromptMark("D", exit_status=_exit_status(options))
    return PromptMark(kind)


def _vscode_unescape(text: bytes) -> bytes:
    """VS Code writes ``\\xAB`` for a byte and ``\\\\`` for a backslash."""
    out = bytearray()
    pos = 0
    while pos < len(text):
        byte = text[pos]
        if byte == ord("\\"):
            if text.startswith(b"\\\\", pos):
                out.append(byte)
                pos += 2
                continue
            hex_digits = text[pos + 2 : pos + 4]
            if (
                text[pos + 1 : pos + 2] in (b"x", b"X")
                and len(hex_digits) == 2
                and all(digit in _HEX_DIGITS for digit in hex_digits)
            ):
                out.append(int(hex_digits, 16))
                pos += 4
                continue
        out.append(byte)
        pos += 1
    return bytes(out)


def parse_osc633(payload: bytes) -> PromptMark | None:
    r"""VS Code's marks: ``A``, ``B``, ``C``, ``D[;STATUS]`` and ``E;CMDLINE[;NONCE]``.

    >>> parse_osc633(b"E;echo a\\x3bb;nonce")
    PromptMark(kind='E', exit_status=None, cmdline='echo a;b')
    >>> parse_osc633(b"D")
    PromptMark(kind='D', exit_status=None, cmdline=None)
    """
    if payload.startswith(b"E;") or payload == b"E":
        # Semicolons inside the command line are escaped, so the first one left ends it.
        cmdline = payload[2:].partition(b";")[0]
        return PromptMark("E", cmdline=_cmdline(_vscode_unescape(cmdline)))
    return _shared_mark(payload, with_cmdline=False)


class CommandTracker:
    """Follows the marks of one shell; a ``D`` after a ``C`` is a command that finished.

    Times come in with each mark, so this is pure.

    >>> tracker = CommandTracker()
    >>> tracker.feed(parse_osc133(b"C;cmdline=make"), now=10.0) is None
    True
    >>> finished = tracker.feed(parse_osc133(b"D;2"), now=52.5)
    >>> finished
    FinishedCommand(cmdline='make', exit_status=2, started_at=10.0, ended_at=52.5)
    >>> finished.duration
    42.5

    A ``D`` with no ``C`` before it is Enter on an empty line:

    >>> tracker.feed(parse_osc133(b"D;0"), now=60.0) is None
    True
    """

    __slots__ = ("_cmdline", "_next_cmdline", "_started_at")

    def __init__(self) -> None:
        self._started_at: float | None = None
        self._cmdline: str | None = None
        self._next_cmdline: str | None = None  # from an E before its C

    @property
    def running(self) -> bool:
        return self._started_at is not None

    def feed(self, mark: PromptMark, now: float) -> FinishedCommand | None:
        if mark.kind == "A":
            # A new prompt without a D: the command's end was not seen, so nothing is
            # known about how it ended.
            self._started_at = None
            self._cmdline = self._next_cmdline = None
        elif mark.kind == "E":
            if self._started_at is None:
                self._next_cmdline = mark.cmdline
            else:
                self._cmdline = mark.cmdline
        elif mark.kind == "C":
            self._started_at = now
            self._cmdline = mark.cmdline if mark.cmdline is not None else self._next_cmdline
            self._next_cmdline = None
        elif mark.kind == "D":
            started_at = self._started_at
            cmdline = self._cmdline
            self._started_at = None
            self._cmdline = self._next_cmdline = None
            # A D with no C before it: the person pressed Enter on an empty line.
            if started_at is not None:
                return FinishedCommand(cmdline, mark.exit_status, started_at, now)
        return None


__all__ = [
    "MAX_CMDLINE",
    "CommandTracker",
    "FinishedCommand",
    "PromptMark",
    "parse_osc133",
    "parse_osc633",
]
