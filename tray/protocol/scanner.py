"""Incremental scanner that splits a program's output into passthrough bytes and events.

It reads a byte stream cut at arbitrary read boundaries and finds:

- OSC 7501 reports (:class:`RawReport`), and the OSC 7501 and OSC 99 support queries
  (:class:`Query`);
- OSC 133 and 633 ``A`` prompt marks (:class:`PromptStart`), and every complete OSC 7,
  9, 99, 133, 633 and 777 (:class:`Osc`), and, when asked, each new title (:class:`Title`:
  OSC 0 or 2 with a text other than the last one's);
- RIS, ``ESC c`` (:class:`FullReset`);
- a BEL outside any OSC, DCS, SOS, PM or APC string (:class:`Bell`);
- DEC private mode 1004 turned on or off (:class:`FocusReporting`), and the cursor
  position queries ``CSI 6 n`` and ``CSI ? 6 n`` (:class:`CursorQuery`).

Everything except a support query is passed through unchanged. A support query is never
passed on, not even in part, however slowly its bytes arrive: the bytes of a sequence that
may still become one are withheld until it completes (and is dropped), turns out to be
something else (and is released), or the output ends (:meth:`Scanner.finish`). Withholding
a prefix of ``ESC ] 7501 ; ?`` or ``ESC ] 99 ; p=?`` hides nothing: a terminal would show
nothing for it either.

Plain text costs two memchr() scans a read. Other escape sequences (colours, cursor
moves) are passed over inside the regular expression engine; only the few interesting
ones, and a read boundary inside one, reach Python code.

Memory is bounded: an OSC is collected up to the 4096-byte sequence limit and no further,
the content of DCS, SOS, PM and APC strings is skipped and never collected, and a CSI is
followed across reads only while it is short enough (:data:`MAX_CSI`) to be of interest.

Where terminals differ, the scanner follows the VT500 parser that most of them share: an
ESC that does not make ST ends an OSC or a string and starts a new escape sequence, and
CAN or SUB cancels either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from tray.protocol.output_events import (
    Bell,
    CursorQuery,
    Event,
    FocusReporting,
    FullReset,
    Osc,
    PromptStart,
    Query,
    RawReport,
    Title,
)
from tray.protocol.support_queries import (
    KITTY_PREFIX,
    REPORT_PREFIX,
    answer_kitty,
    answer_osc7501,
    could_be_osc7501_or_query,
    could_be_query,
)

ESC = 0x1B
BEL = 0x07
CAN = 0x18
SUB = 0x1A
BACKSLASH = 0x5C
OSC_INTRODUCER = 0x5D  # "]" after ESC
RIS_FINAL = 0x63  # "c" after ESC
# DCS ("P"), SOS ("X"), PM ("^") and APC ("_") after ESC: strings that run up to ST.
STRING_INTRODUCERS = b"PX^_"

ST = b"\x1b\\"
MAX_SEQUENCE = 4096
# The longest CSI, from ESC to its final byte, that can give an event. Real mode changes
# are a few bytes long; a longer one is passed through unrecognised.
MAX_CSI = 64
PROMPT_MARKS = (b"133;A", b"633;A")
# The OSC numbers reported as Osc events: cwd, notifications and shell integration. The
# titles (OSC 0 and 2) are Title events for a scanner asked for them, a launcher whose
# agent's rules read them: any other program's titles are passed over, as colours are.
OSC_NUMBERS = (7, 9, 99, 133, 633, 777)
TITLE_NUMBERS = (0, 2)
FOCUS_MODE = 1004

_ESC_BYTE = bytes([ESC])
# ESC, "]", then BEL: the least a complete OSC needs around its body.
_MAX_BODY = MAX_SEQUENCE - 3


# The escape sequences of interest are each found by a search of its own. Colours and
# cursor moves, which fill a TUI's output, never leave the regular expression engine, and
# only the sequences that give an event reach Python code. bytes.find() is no match for
# that: a TUI writes an ESC every nine bytes or so (both captures in tests/data), and over
# 64 KiB of Codex's output a Python loop that finds each ESC and looks at the byte after
# it took 20 times as long as the search for the introducers, and a single find() of one
# two-byte introducer (of the six) took about as long as that whole search.

# ESC then "]", "P", "X", "^", "_" or "c": an OSC, a string, or RIS.
_INTRODUCER: Final = re.compile(rb"\x1b[\]c" + re.escape(STRING_INTRODUCERS) + rb"]")
# A mode change with 1004 among its modes (group 1 its final byte), of at most MAX_CSI
# bytes, or a cursor position query (group 1 None).
_CSI_EVENT: Final = re.compile(
    rb"\x1b\[(?:\?(?:(?=[0-9;]{0,%d}[hl])(?:[0-9;]*;)?0*%d(?:;[0-9;]*)?([hl])|6n)|6n)"
    % (MAX_CSI - 4, FOCUS_MODE)
)
# What a read may cut off that the next read could still make into something of
# interest: a lone ESC, or the start of a mode change or a cursor position query.
_CUT_OFF: Final = re.compile(rb"\x1b(?:\[(?:\?[0-9;]*|6)?)?")
_OSC_END: Final = re.compile(rb"[\x07\x18\x1a\x1b]")
# BEL is payload in these strings, never a terminator.
_STRING_END: Final = re.compile(rb"[\x18\x1a\x1b]")

_OSC_NUMBER_TEXT = frozenset(b"%d" % number for number in OSC_NUMBERS)
_TITLE_NUMBER_TEXT = frozenset(b"%d" % number for number in TITLE_NUMBERS)
_OSC_AND_TITLE_TEXT = _OSC_NUMBER_TEXT | _TITLE_NUMBER_TEXT
_PROMPT_NUMBER_TEXT = frozenset(mark.split(b";")[0] for mark in PROMPT_MARKS)


_NO_EVENTS: tuple[Event, ...] = ()
# The meaning of no title yet: unlike any a reader gives.
_UNSEEN = object()
_BELL = Bell()
_FULL_RESET = FullReset()
_PROMPT_START = PromptStart()
_CURSOR_QUERY = CursorQuery()
_FOCUS = {b"h": FocusReporting(True), b"l": FocusReporting(False)}


class ScanResult(tuple[bytes, tuple[Event, ...]]):
    """A read's passthrough bytes and events: a pair, with names for its two parts."""

    __slots__ = ()

    @property
    def output(self) -> bytes:
        return self[0]

    @property
    def events(self) -> tuple[Event, ...]:
        return self[1]


# One is made for every read: tuple.__new__ straight, the cheapest way to make one.
_new_result = tuple.__new__


_GROUND, _OSC, _OSC_ESCAPE, _STRING, _STRING_ESCAPE = range(5)


class Scanner:
    """Feed bytes in, get passthrough bytes and events out.

    A sequence that may still turn out to be a support query (which is never forwarded)
    is a *candidate*, and its bytes are withheld, with no time limit. At most one
    sequence is ever withheld, so this is bounded by the 4096-byte limit. When the output
    has ended, :meth:`finish` gives back whatever is still withheld.

    With ``withhold_reports``, every OSC 7501 sequence is a candidate, and a complete
    one is not forwarded either. That is for a launcher inside another launcher's
    session, where forwarding would have the outer one record each report again. With
    ``titles``, OSC 0 and 2 are events too, each only when its text is not the last
    title's: agents set the same title again and again (some with OSC 0 and 2 alike, on
    every frame), and what reads titles wants to know when one changes. A reader that
    tells titles apart by a few patterns (an agent's rules) can say so with the
    ``meanings`` of :meth:`read_titles`: then only a change of meaning is an event, and
    the frames of a spinner the patterns pass over are not.
    """

    __slots__ = (
        "_body",
        "_candidate",
        "_carry",
        "_carry_sent",
        "_held",
        "_holding",
        "_mode",
        "_osc_numbers",
        "_overflow",
        "_title",
        "_title_meaning",
        "_title_meanings",
        "_withhold_reports",
    )

    def __init__(self, withhold_reports: bool = False, titles: bool = False) -> None:
        self._withhold_reports = withhold_reports
        self.read_titles(titles)
        self._candidate = could_be_osc7501_or_query if withhold_reports else could_be_query
        self._reset()

    def read_titles(self, titles: bool, meanings: Mapping[bytes, object] | None = None) -> None:
        """Whether OSC 0 and 2 are events from now on; the first one after this is.

        ``meanings`` gives each title's meaning to the reader, the same object for titles
        that mean the same (a memo of what its patterns make of them): a title is an event
        only when its meaning is not the last title's.

        >>> meanings = {b"Working 1": "working", b"Working 2": "working", b"Ready": "done"}
        >>> scanner = Scanner()
        >>> scanner.read_titles(True, meanings)
        >>> scanner.feed(b"\x1b]0;Working 1\x07\x1b]0;Working 2\x07\x1b]0;Ready\x07").events
        (Title(text=b'Working 1'), Title(text=b'Ready'))
        """
        self._osc_numbers = _OSC_AND_TITLE_TEXT if titles else _OSC_NUMBER_TEXT
        self._title: bytes | None = None
        self._title_meanings = meanings
        self._title_meaning: object = _UNSEEN

    def _reset(self) -> None:
        self._mode = _GROUND
        # The start of an escape sequence that the last read cut off, looked at again
        # with the next read: a lone ESC (withheld), or a CSI that may still be of
        # interest (already forwarded).
        self._carry = b""
        self._carry_sent = False
        self._body = bytearray()  # the current OSC's bytes after "ESC ]", up to the limit
        self._overflow = False
        # The withheld bytes of the current OSC while it is a candidate, and a trailing ESC
        # that may start a candidate.
        self._held = bytearray()
        self._holding = False

    @property
    def held(self) -> int:
        """How many bytes are withheld, waiting for the bytes that decide their fate."""
        return len(self._held) + (0 if self._carry_sent else len(self._carry))

    def finish(self) -> bytes:
        """The output has ended: release what is withheld, and start afresh.

        >>> scanner = Scanner()
        >>> scanner.feed(b"50% done\\x1b]75")
        (b'50% done', ())
        >>> scanner.finish()
        b'\\x1b]75'
        """
        out = (b"" if self._carry_sent else self._carry) + bytes(self._held)
        self._reset()
        return out

    def feed(self, data: bytes) -> ScanResult:
        """The next bytes of the output, cut wherever the read happened to end.

        A report is passed through, and given as an event:

        >>> scanner = Scanner()
        >>> output, events = scanner.feed(b"\\x1b]7501;state=working\\x07building")
        >>> output
        b'\\x1b]7501;state=working\\x07building'
        >>> events
        (RawReport(body=b'state=working'),)

        A support query is answered and never passed on, even when it comes in pieces:

        >>> scanner.feed(b"...\\x1b]7501")
        (b'...', ())
        >>> scanner.held
        6
        >>> scanner.feed(b";?\\x07done\\n")
        (b'done\\n', (Query(answer=b'\\x1b]7501;?\\x07', number=7501),))

        Shell marks, bells and focus reporting; colours pass by unremarked:

        >>> scanner.feed(b"\\x1b]133;A\\x07$ \\x1b[1mbold\\x1b[0m\\x07\\x1b[?1004h").events
        (PromptStart(), Osc(number=133, payload=b'A'), Bell(), FocusReporting(on=True))
        """
        # find() rather than "in": it goes straight to memchr(), and costs half as much.
        if (
            self._mode == _GROUND and not self._carry and data.find(ESC) < 0 and data.find(BEL) < 0
        ) or not data:
            return _new_result(ScanResult, (data, _NO_EVENTS))
        out: list[bytes] = []
        events: list[Event] = []
        mode = self._mode
        if mode == _GROUND:
            carry = self._carry
            if carry:
                self._carry = b""
                self._ground(carry + data, 0, len(carry) if self._carry_sent else 0, out, events)
            elif data.find(ESC) < 0:
                # Bells, and no sequence to look for: no regular expression.
                return _new_result(ScanResult, (data, (_BELL,) * data.count(BEL)))
            else:
                self._ground(data, 0, 0, out, events)
        elif mode == _OSC:
            self._continue_osc(data, out, events)
        elif mode == _STRING:
            self._continue_string(data, out, events)
        else:
            self._after_escape(data, out, events)
        return _new_result(ScanResult, (b"".join(out), tuple(events) if events else _NO_EVENTS))

    # ----------------------------------------------------------------- ground

    def _ground(
        self, buf: bytes, pos: int, flushed: int, out: list[bytes], events: list[Event]
    ) -> None:
        """Scan ``buf`` from ``pos``; ``buf[flushed:pos]`` is passthrough not yet output."""
        introducers = _INTRODUCER
        csi_events = _CSI_EVENT
        end = len(buf)
        bell = buf.find(BEL, pos)
        introducer = introducers.search(buf, pos)
        csi = csi_events.search(buf, pos)
        while True:
            # A search's answer inside what was just consumed is out of date.
            if 0 <= bell < pos:
                bell = buf.find(BEL, pos)
            if introducer is not None and introducer.start() < pos:
                introducer = introducers.search(buf, pos)
            if csi is not None and csi.start() < pos:
                csi = csi_events.search(buf, pos)
            start = end if introducer is None else introducer.start()
            if csi is not None and csi.start() < start:
                if 0 <= bell < csi.start():
                    events.append(_BELL)
                    pos = bell + 1
                    continue
                final = csi.group(1)
                events.append(_CURSOR_QUERY if final is None else _FOCUS[final])
                pos = csi.end()
                continue
            if 0 <= bell < start:
                events.append(_BELL)
                pos = bell + 1
                continue
            if start == end:
                break
            kind = buf[start + 1]
            if kind == OSC_INTRODUCER:
                stop = _OSC_END.search(buf, start + 2)
                if stop is None:
                    out.append(buf[flushed:start])
                    self._enter_osc(buf[start:], False, out)
                    return
                at = stop.start()
                terminator = buf[at]
                if terminator == BEL or (terminator == ESC and buf[at + 1 : at + 2] == b"\\"):
                    after = at + 1 if terminator == BEL else at + 2
                    body = buf[start + 2 : at]
                    valid = after - start <= MAX_SEQUENCE
                    if self._complete(body, terminator == ESC, valid, events):
                        out.append(buf[flushed:start])
                        flushed = after
                    pos = after
                elif terminator == ESC and at + 1 == end:
                    out.append(buf[flushed:start])
                    self._enter_osc(buf[start:at], True, out)
                    return
                elif terminator == ESC:
                    pos = at  # the OSC ends unapplied; its ESC starts anew
                else:
                    pos = at + 1  # CAN or SUB: cancelled, and itself ordinary output
            elif kind == RIS_FINAL:
                events.append(_FULL_RESET)
                pos = start + 2
            else:
                pos = self._skip_string(buf, start + 2)
                if pos < 0:
                    out.append(buf[flushed:] if pos == -1 else buf[flushed:-1])
                    return
        cut = buf.rfind(ESC, max(pos, end - MAX_CSI + 1))
        if cut >= 0 and _CUT_OFF.fullmatch(buf, cut) is not None:
            if cut == end - 1:
                # A lone ESC may start a query: withheld until its next byte is known.
                out.append(buf[flushed:cut])
                self._carry_sent = False
            else:
                # The start of a CSI: forwarded now, recognised with the next read.
                out.append(buf[flushed:])
                self._carry_sent = True
            self._carry = buf[cut:]
            return
        out.append(buf[flushed:])

    # ----------------------------------------------------------------- strings

    def _skip_string(self, buf: bytes, pos: int) -> int:
        """Where ground resumes after a DCS, SOS, PM or APC string whose content starts at
        ``pos``; -1 when the read ends inside it, -2 when it ends with an ESC (withheld)."""
        stop = _STRING_END.search(buf, pos)
        if stop is None:
            self._mode = _STRING
            return -1
        at = stop.start()
        if buf[at] != ESC:
            return at + 1  # CAN or SUB: cancelled, and itself ordinary output
        if at + 1 == len(buf):
            self._mode = _STRING_ESCAPE
            self._held = bytearray(_ESC_BYTE)
            return -2
        return at + 2 if buf[at + 1] == BACKSLASH else at

    def _continue_string(self, data: bytes, out: list[bytes], events: list[Event]) -> None:
        resume = self._skip_string(data, 0)
        if resume == -1:
            out.append(data)
        elif resume == -2:
            out.append(data[:-1])
        else:
            self._mode = _GROUND
            self._ground(data, resume, 0, out, events)

    # ----------------------------------------------------------------- OSC

    def _enter_osc(self, sequence: bytes, escaped: bool, out: list[bytes]) -> None:
        """The read ended inside an OSC; ``sequence`` is it from its ESC, and ``escaped``
        says whether an ESC, which may become ST, followed."""
        body = sequence[2:]
        self._overflow = len(body) > _MAX_BODY
        self._body = bytearray() if self._overflow else bytearray(body)
        self._holding = not self._overflow and self._candidate(body)
        if self._holding:
            self._held = bytearray(sequence)
        else:
            out.append(sequence)
            self._held = bytearray()
        if escaped:
            self._held.append(ESC)
            self._mode = _OSC_ESCAPE
        else:
            self._mode = _OSC

    def _collect(self, chunk: bytes, out: list[bytes]) -> None:
        if self._holding:
            self._held += chunk
        else:
            out.append(chunk)
        if self._overflow:
            return
        if len(self._body) + len(chunk) > _MAX_BODY:
            self._overflow = True
            self._body.clear()
        else:
            self._body += chunk
        if self._holding and (self._overflow or not self._candidate(self._body)):
            self._holding = False
            out.append(bytes(self._held))
            self._held.clear()

    def _continue_osc(self, data: bytes, out: list[bytes], events: list[Event]) -> None:
        stop = _OSC_END.search(data)
        if stop is None:
            self._collect(data, out)
            return
        at = stop.start()
        if at:
            self._collect(data[:at], out)
        terminator = data[at]
        if terminator == BEL:
            self._end_osc(data, at, at + 1, out, events)
        elif terminator != ESC:  # CAN or SUB: cancelled, and itself ordinary output
            out.append(bytes(self._held))
            self._held.clear()
            self._holding = False
            self._mode = _GROUND
            self._ground(data, at + 1, at, out, events)
        elif at + 1 == len(data):
            if not self._holding:
                self._held = bytearray()
            self._held.append(ESC)
            self._mode = _OSC_ESCAPE
        elif data[at + 1] == BACKSLASH:
            self._end_osc(data, at, at + 2, out, events)
        else:
            out.append(bytes(self._held))
            self._held.clear()
            self._holding = False
            self._mode = _GROUND
            self._ground(data, at, at, out, events)

    def _end_osc(
        self, data: bytes, terminator: int, after: int, out: list[bytes], events: list[Event]
    ) -> None:
        """The OSC's terminator is ``data[terminator:after]`` (the rest of it, when its ESC
        is withheld); ground follows."""
        st = data[after - 1] == BACKSLASH
        size = 2 + len(self._body) + (2 if st else 1)
        valid = not self._overflow and size <= MAX_SEQUENCE
        # Only a candidate can be dropped, and a candidate was withheld whole.
        if self._complete(bytes(self._body), st, valid, events):
            flushed = after
        else:
            out.append(bytes(self._held))
            flushed = terminator
        self._held.clear()
        self._holding = False
        self._mode = _GROUND
        self._ground(data, after, flushed, out, events)

    def _after_escape(self, data: bytes, out: list[bytes], events: list[Event]) -> None:
        """The last read ended with an ESC inside an OSC or a string."""
        if data[0] == BACKSLASH:
            if self._mode == _OSC_ESCAPE:
                self._end_osc(data, 0, 1, out, events)
                return
            out.append(_ESC_BYTE)
            self._held.clear()
            self._mode = _GROUND
            self._ground(data, 1, 0, out, events)
            return
        # Not ST: the sequence ends unapplied, and the ESC starts a new one.
        out.append(bytes(self._held[:-1]))
        self._held.clear()
        self._holding = False
        self._mode = _GROUND
        self._ground(_ESC_BYTE + data, 0, 0, out, events)

    def _complete(self, body: bytes, st: bool, valid: bool, events: list[Event]) -> bool:
        """A terminated OSC's events; True when it is not to be forwarded."""
        if not valid:
            return False
        if body.startswith(REPORT_PREFIX):
            payload = body[len(REPORT_PREFIX) :]
            answer = answer_osc7501(payload, st)
            if answer is not None:
                events.append(Query(answer))
                return True
            events.append(RawReport(payload))
            return self._withhold_reports
        if body.startswith(KITTY_PREFIX):
            # Answered and not forwarded, as the OSC 7501 query is: a kitty beneath would
            # answer too, and the program would read a second answer as typed keys. The
            # notifications that follow are forwarded, so that kitty still shows them.
            answer = answer_kitty(body[len(KITTY_PREFIX) :], st)
            if answer is not None:
                events.append(Query(answer, 99))
                return True
        number, separator, payload = body.partition(b";")
        if separator and number in self._osc_numbers:
            if number in _TITLE_NUMBER_TEXT:
                if payload != self._title:
                    self._title = payload
                    meanings = self._title_meanings
                    if meanings is not None:
                        meaning = meanings[payload]
                        if meaning is self._title_meaning:
                            return False
                        self._title_meaning = meaning
                    events.append(Title(payload))
                return False
            if number in _PROMPT_NUMBER_TEXT and (payload == b"A" or payload.startswith(b"A;")):
                events.append(_PROMPT_START)
            events.append(Osc(int(number), payload))
        return False
