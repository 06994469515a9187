"""What the user's terminal sends to the program: the person's own input, or replies.

The launcher's stdin carries two kinds of bytes mixed together: what the person does
(keys, pastes, mouse clicks and scrolls) and what the terminal answers to the program's
queries (device attributes, cursor position, colours, modes, versions) or reports on its
own (focus, theme, size). Only the first kind means someone is at the keyboard, so only
it counts as typing. The bytes themselves always pass through unchanged: this module
only looks at them.

The classification is incremental and does not depend on where reads split the stream.
Memory is bounded: a string that never ends (an OSC, DCS or paste) is followed by state,
not collected.

Several shapes are ambiguous, and each is settled the way that keeps a person's keys
from being taken for replies:

- ``ESC [ I`` and ``ESC [ O`` are focus events only while the program has focus
  reporting on; otherwise they are Alt-[ followed by a letter.
- ``CSI row ; col R`` is a cursor position report only while the program has a query
  outstanding; otherwise it is a modified F3 key.
- A lone ESC (the Escape key, or the start of a sequence still on its way) is settled by
  :meth:`InputScanner.flush`, which the caller invokes when input has paused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

Focus = Literal["in", "out"]


@dataclass(frozen=True, slots=True)
class InputEvents:
    """What one chunk of input held: whether the person typed, and focus changes in order."""

    typing: bool
    focus: tuple[Focus, ...] = ()


NOTHING: Final = InputEvents(False)
TYPING: Final = InputEvents(True)

# A program that never reads its answers must not make later F3 presses vanish forever.
MAX_CURSOR_QUERIES: Final = 8
# xterm's DA1 answer is about 40 bytes; nothing we classify needs more than the start.
MAX_PARAMS: Final = 64
MAX_INTERMEDIATES: Final = 4

PASTE_START: Final = b"\x1b[200~"
PASTE_END: Final = b"\x1b[201~"

_ESC: Final = 0x1B
_BEL: Final = 0x07
_BACKSLASH: Final = 0x5C
_SEMICOLON: Final = 0x3B

(
    _GROUND,
    _ESCAPE,
    _CSI,
    _SS3,
    _OSC_HEAD,
    _DCS_HEAD,
    _APC_HEAD,
    _STRING,
    _STRING_ESCAPE,
    _MOUSE,
    _PASTE,
) = range(11)

# States in which the bytes so far may be a key the person pressed, or the start of a
# sequence that has not fully arrived; only a pause in the input can tell them apart.
_UNSETTLED: Final = frozenset({_ESCAPE, _CSI, _SS3, _OSC_HEAD, _DCS_HEAD, _APC_HEAD})

# Every C0 control made NUL and every other byte not, so one find() of NUL is a search for
# the first C0 control. bytes.translate() and find() run at memory speed: over a 2 KB
# reply, three times as fast as re's search for [\x00-\x1f].
_C0_TO_NUL: Final = bytes(0 if byte < 0x20 else 1 for byte in range(256))
_CURSOR_REPORT: Final = re.compile(rb"[0-9]+;[0-9]+")
# Keys never start their parameters with these; the terminal's answers do (DA1, DA2,
# DECXCPR, DECRPM, kitty's keyboard flags, the theme report, XTMODKEYS, XTSMGRAPHICS),
# and "=" is kept with them as no key uses it either.
_REPLY_MARKERS: Final = frozenset(b"?>=")
_SGR_MOUSE_MARKER: Final = ord("<")


def _find_c0(data: bytes, pos: int) -> int:
    """Where the first C0 control at or after ``pos`` is, or -1."""
    # Windows that grow fourfold: a control near ``pos`` (as in a reply, which is short)
    # costs a short window, and a search never costs more than a few times its distance.
    size = 64
    while pos < len(data):
        found = data[pos : pos + size].translate(_C0_TO_NUL).find(0)
        if found >= 0:
            return pos + found
        pos += size
        size *= 4
    return -1


class InputScanner:
    """Feed the terminal's input in chunks; learn whether each held the person's input.

    The launcher tells it two things about the program, from the program's output:
    :attr:`focus_reporting` (DEC mode 1004 is on) and :meth:`cursor_queried` (the
    program wrote ``CSI 6 n``).

    >>> scanner = InputScanner(focus_reporting=True)
    >>> scanner.feed(b"ls -l\\r")
    InputEvents(typing=True, focus=())
    >>> scanner.feed(b"\\x1b[?62;22c")  # the terminal's device attributes: no one typed
    InputEvents(typing=False, focus=())
    >>> scanner.feed(b"\\x1b[O\\x1b[I")  # focus out and back in
    InputEvents(typing=False, focus=('out', 'in'))

    ``CSI 5 ; 1 R`` is a cursor position report only while one is owed; otherwise it
    is a key (F3 with a modifier):

    >>> scanner.cursor_queried()
    >>> scanner.feed(b"\\x1b[5;1R").typing
    False
    >>> scanner.feed(b"\\x1b[5;1R").typing
    True

    A lone ESC may be the Escape key or the start of a reply: a pause decides.

    >>> scanner.feed(b"\\x1b").typing, scanner.pending
    (False, True)
    >>> scanner.flush()
    InputEvents(typing=True, focus=())
    """

    __slots__ = (
        "_bel_ends",
        "_cursor_queries",
        "_focus",
        "_head_seen",
        "_intermediates",
        "_malformed",
        "_mouse_left",
        "_overflow",
        "_params",
        "_paste_matched",
        "_state",
        "_typing",
        "focus_reporting",
    )

    def __init__(self, focus_reporting: bool = False) -> None:
        self.focus_reporting = focus_reporting
        self._cursor_queries = 0
        self._state = _GROUND
        self._params = bytearray()
        self._intermediates = bytearray()
        self._overflow = False  # more parameters than MAX_PARAMS; the rest went unkept
        self._malformed = False  # a parameter byte after an intermediate
        self._head_seen = False  # an OSC's number or a DCS's parameters have begun
        self._bel_ends = False  # the string being skipped is an OSC
        self._mouse_left = 0
        self._paste_matched = 0  # bytes of PASTE_END seen at the end of the last chunk
        self._typing = False
        self._focus: list[Focus] = []

    @property
    def cursor_queries(self) -> int:
        """Cursor position reports still owed to the program."""
        return self._cursor_queries

    def cursor_queried(self) -> None:
        """The program asked for the cursor position (``CSI 6 n``)."""
        self._cursor_queries = min(self._cursor_queries + 1, MAX_CURSOR_QUERIES)

    def reset_cursor_queries(self) -> None:
        """Forget owed reports, for a program that was reset or replaced."""
        self._cursor_queries = 0

    @property
    def pending(self) -> bool:
        """Whether the last bytes may be a key or an unfinished reply: :meth:`flush` is due."""
        return self._state in _UNSETTLED

    @property
    def in_paste(self) -> bool:
        return self._state == _PASTE

    def flush(self) -> InputEvents:
        """Input paused: an unfinished escape sequence was the person's keys after all.

        A terminal writes each reply in one go, so one that stalls halfway is rare;
        the Escape key, and Alt with ``[``, ``]``, ``O``, ``P`` or ``_``, are not.
        """
        if self._state in _UNSETTLED:
            self._state = _GROUND
            return TYPING
        if self._state == _MOUSE:
            self._state = _GROUND
        return NOTHING

    def feed(self, data: bytes) -> InputEvents:
        # Every keystroke comes through here: plain text outside any sequence is
        # settled with one search.
        if self._state == _GROUND and b"\x1b" not in data:
            return TYPING if data else NOTHING
        self._typing = False
        self._focus = []
        pos = 0
        end = len(data)
        while pos < end:
            pos = self._step(data, pos, end)
        if not self._focus:
            return TYPING if self._typing else NOTHING
        return InputEvents(self._typing, tuple(self._focus))

    def _abandon(self) -> None:
        """What began like a sequence was keys; the byte at hand is read afresh."""
        self._typing = True
        self._state = _GROUND

    def _step(self, data: bytes, pos: int, end: int) -> int:
        state = self._state
        if state == _GROUND:
            found = data.find(b"\x1b", pos)
            if found < 0:
                self._typing = True
                return end
            if found > pos:
                self._typing = True
            self._state = _ESCAPE
            return found + 1
        if state == _ESCAPE:
            return self._after_escape(data[pos], pos)
        if state == _CSI:
            return self._scan_csi(data, pos, end)
        if state == _SS3:
            # Alt-O then Escape reads as "ESC O ESC": the second ESC starts anew.
            self._typing = True
            self._state = _ESCAPE if data[pos] == _ESC else _GROUND
            return pos + 1
        if state in (_OSC_HEAD, _DCS_HEAD, _APC_HEAD):
            return self._scan_head(data[pos], pos)
        if state == _STRING:
            return self._scan_string(data, pos, end)
        if state == _STRING_ESCAPE:
            if data[pos] == _BACKSLASH:
                self._state = _GROUND
                return pos + 1
            # An ESC that does not make ST ends the string and starts a new escape.
            self._state = _ESCAPE
            return pos
        if state == _MOUSE:
            # X10 coordinates are 32 or more, so an ESC means the report was cut short.
            if data[pos] == _ESC:
                self._state = _ESCAPE
                return pos + 1
            self._mouse_left -= 1
            if not self._mouse_left:
                self._state = _GROUND
            return pos + 1
        return self._scan_paste(data, pos, end)

    def _after_escape(self, byte: int, pos: int) -> int:
        if byte == 0x5B:  # "["
            self._state = _CSI
            self._params.clear()
            self._intermediates.clear()
            self._overflow = False
            self._malformed = False
        elif byte == 0x5D:  # "]"
            self._state = _OSC_HEAD
            self._head_seen = False
        elif byte == 0x50:  # "P"
            self._state = _DCS_HEAD
            self._head_seen = False
        elif byte == 0x5F:  # "_"
            self._state = _APC_HEAD
        elif byte == 0x4F:  # "O"
            self._state = _SS3
        elif byte == _ESC:
            # The first ESC was the Escape key (or Alt-Escape); the second starts anew.
            self._typing = True
        else:
            self._typing = True  # Alt and a key
            self._state = _GROUND
        return pos + 1

    def _scan_csi(self, data: bytes, pos: int, end: int) -> int:
        params = self._params
        intermediates = self._intermediates
        while pos < end:
            byte = data[pos]
            if 0x30 <= byte <= 0x3F:
                if intermediates:
                    self._malformed = True
                elif len(params) >= MAX_PARAMS:
                    self._overflow = True
                else:
                    params.append(byte)
            elif 0x20 <= byte <= 0x2F:
                if len(intermediates) >= MAX_INTERMEDIATES:
                    self._overflow = True
                else:
                    intermediates.append(byte)
            elif 0x40 <= byte <= 0x7E:
                self._state = _GROUND
                self._classify_csi(byte)
                return pos + 1
            else:
                # A control, DEL or a non-ASCII byte cannot be inside a sequence from
                # the terminal: it was Alt-[ and then ordinary keys.
                self._abandon()
                return pos
            pos += 1
        return end

    def _classify_csi(self, final: int) -> None:
        params = bytes(self._params)
        intermediates = bytes(self._intermediates)
        if self._malformed:
            self._typing = True
            return
        if final == 0x4D and not params and not intermediates:  # "M": X10 mouse
            self._typing = True
            self._state = _MOUSE
            self._mouse_left = 3
            return
        marker = params[0] if params else None
        if marker in _REPLY_MARKERS:
            return
        if marker == _SGR_MOUSE_MARKER:
            self._typing = True
            return
        if final == 0x79 and intermediates == b"$":  # "y": DECRPM for an ANSI mode
            return
        if final in (0x6E, 0x74) and params and not intermediates:  # "n" DSR, "t" window
            return
        if (
            final == 0x52  # "R"
            and self._cursor_queries
            and not intermediates
            and not self._overflow
            and _CURSOR_REPORT.fullmatch(params) is not None
        ):
            self._cursor_queries -= 1
            return
        if final in (0x49, 0x4F) and not params and not intermediates and self.focus_reporting:
            self._focus.append("in" if final == 0x49 else "out")
            return
        self._typing = True
        if final == 0x7E and params == b"200" and not intermediates:  # "~"
            self._state = _PASTE
            self._paste_matched = 0

    def _scan_head(self, byte: int, pos: int) -> int:
        state = self._state
        if state == _OSC_HEAD:
            # An OSC from the terminal is always "number ; text": anything else after
            # "ESC ]" was Alt-] and then keys.
            if 0x30 <= byte <= 0x39:
                self._head_seen = True
                return pos + 1
            if byte == _SEMICOLON and self._head_seen:
                self._enter_string(bel_ends=True)
                return pos + 1
        elif state == _DCS_HEAD:
            # Every DCS a terminal answers with has a parameter or an intermediate
            # before its final byte ("1+r", ">|", "!|", "1$r"); Alt-P and a letter has not.
            if 0x20 <= byte <= 0x3F:
                self._head_seen = True
                return pos + 1
            if 0x40 <= byte <= 0x7E and self._head_seen:
                self._enter_string(bel_ends=False)
                return pos + 1
        elif byte == 0x47:  # "G": in an APC, kitty's graphics answers
            self._enter_string(bel_ends=False)
            return pos + 1
        self._abandon()
        return pos

    def _enter_string(self, bel_ends: bool) -> None:
        self._state = _STRING
        self._bel_ends = bel_ends

    def _scan_string(self, data: bytes, pos: int, end: int) -> int:
        stop = _find_c0(data, pos)
        if stop < 0:
            return end
        byte = data[stop]
        if byte == _ESC:
            self._state = _STRING_ESCAPE
            return stop + 1
        if byte == _BEL and self._bel_ends:
            self._state = _GROUND
            return stop + 1
        # No answer holds a control character; the person pressed one (CAN and SUB
        # among them, which cancel the string), so the string is over and the key counts.
        self._state = _GROUND
        return stop

    def _scan_paste(self, data: bytes, pos: int, end: int) -> int:
        # A paste is the person's however long it runs, and its content is never read:
        # only its end marker is looked for.
        self._typing = True
        if self._paste_matched:
            rest = PASTE_END[self._paste_matched :]
            piece = data[pos : pos + len(rest)]
            if rest.startswith(piece):
                if len(piece) == len(rest):
                    self._paste_matched = 0
                    self._state = _GROUND
                    return pos + len(piece)
                self._paste_matched += len(piece)
                return end
            # ESC opens the marker and appears nowhere else in it, so the search
            # simply starts over here.
            self._paste_matched = 0
        found = data.find(PASTE_END, pos)
        if found >= 0:
            self._state = _GROUND
            return found + len(PASTE_END)
        tail = data.rfind(b"\x1b", max(pos, end - len(PASTE_END) + 1))
        if tail >= 0 and PASTE_END.startswith(data[tail:end]):
            self._paste_matched = end - tail
        return end


__all__ = [
    "MAX_CURSOR_QUERIES",
    "MAX_INTERMEDIATES",
    "MAX_PARAMS",
    "NOTHING",
    "PASTE_END",
    "PASTE_START",
    "TYPING",
    "InputEvents",
    "InputScanner",
]
