"""Incremental scanner that splits a program's output into passthrough bytes and events.

It finds OSC 7501 reports and support queries, OSC 133/633 ``A`` prompt marks and RIS in
a byte stream cut at arbitrary read boundaries. Everything except a support query is
passed through unchanged. Memory is bounded: an OSC is collected up to the 4096-byte
sequence limit and no further.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ESC = 0x1B
BEL = 0x07
CAN = 0x18
SUB = 0x1A
BACKSLASH = 0x5C
OSC_INTRODUCER = 0x5D  # "]" after ESC
RIS_FINAL = 0x63  # "c" after ESC

ST = b"\x1b\\"
MAX_SEQUENCE = 4096
REPORT_PREFIX = b"7501;"
PROMPT_MARKS = (b"133;A", b"633;A")

# Only "ESC ]" and "ESC c" start anything we track; a lone ESC at the end of a chunk may
# become either. Every other escape sequence is skipped at C speed.
_INTERESTING_ESC = re.compile(rb"\x1b(?:[\]c]|\Z)")
_OSC_END = re.compile(rb"[\x07\x18\x1a\x1b]")
_BLANKS = b" \t"


@dataclass(frozen=True, slots=True)
class Query:
    """An OSC 7501 support query; ``answer`` is what goes back into the program's input."""

    answer: bytes


@dataclass(frozen=True, slots=True)
class RawReport:
    """A complete, size-checked OSC 7501 report; ``body`` follows ``7501;``."""

    body: bytes


@dataclass(frozen=True, slots=True)
class PromptStart:
    """OSC 133 or OSC 633 ``A``: a new shell prompt begins."""


@dataclass(frozen=True, slots=True)
class FullReset:
    """RIS (``ESC c``)."""


Event = Query | RawReport | PromptStart | FullReset

_NO_EVENTS: tuple[Event, ...] = ()


@dataclass(frozen=True, slots=True)
class ScanResult:
    output: bytes
    events: tuple[Event, ...]


_QUERY_TAIL = re.compile(rb"[ \t]*(?:\?[ \t]*)?")
_GROUND, _ESCAPE, _OSC, _OSC_ESCAPE = range(4)


def _could_be_query(body: bytes) -> bool:
    """True while ``body`` (the bytes after ``ESC ]``) may still grow into a query."""
    if len(body) <= len(REPORT_PREFIX):
        return REPORT_PREFIX.startswith(body)
    return (
        body.startswith(REPORT_PREFIX)
        and _QUERY_TAIL.fullmatch(body, len(REPORT_PREFIX)) is not None
    )


def _could_be_report(body: bytes) -> bool:
    """True while ``body`` may still grow into any OSC 7501 sequence."""
    if len(body) <= len(REPORT_PREFIX):
        return REPORT_PREFIX.startswith(body)
    return body.startswith(REPORT_PREFIX)


def _is_query(body: bytes) -> bool:
    return body.startswith(REPORT_PREFIX) and body[len(REPORT_PREFIX) :].strip(_BLANKS) == b"?"


def _is_prompt_mark(body: bytes) -> bool:
    return any(body == mark or body.startswith(mark + b";") for mark in PROMPT_MARKS)


class Scanner:
    """Feed bytes in, get passthrough bytes and events out.

    A sequence that may still turn out to be a support query (which is never forwarded)
    is a *candidate*, and its bytes are withheld. The caller releases them with
    :meth:`flush_held` when no more bytes arrive for a short while. At most one sequence
    is ever withheld, so this is bounded by the 4096-byte limit.

    With ``withhold_reports``, every OSC 7501 sequence is a candidate, and a complete
    one is not forwarded either. That is for a launcher inside another launcher's
    session, where forwarding would have the outer one record each report again.
    """

    __slots__ = (
        "_body",
        "_candidate",
        "_esc_held",
        "_held",
        "_holding",
        "_mode",
        "_overflow",
        "_withhold_reports",
    )

    def __init__(self, withhold_reports: bool = False) -> None:
        self._withhold_reports = withhold_reports
        self._candidate = _could_be_report if withhold_reports else _could_be_query
        self._mode = _GROUND
        self._body = bytearray()  # bytes after "ESC ]", up to the limit
        self._overflow = False
        self._held = bytearray()
        self._holding = True  # whether the current candidate's bytes are withheld
        self._esc_held = False  # a pending ESC sits at the end of ``_held``

    @property
    def held(self) -> int:
        """How many bytes are withheld; non-zero means :meth:`flush_held` is due later."""
        return len(self._held)

    def flush_held(self) -> bytes:
        """Give up waiting for a split query: release the withheld bytes.

        The rest of the current sequence then passes straight through. If it still
        completes as a query it is answered, and its terminator is forwarded so the
        outer terminal does not stay inside a half-sent sequence.
        """
        out = bytes(self._held)
        self._held.clear()
        self._holding = False
        self._esc_held = False
        return out

    def feed(self, data: bytes) -> ScanResult:
        if self._mode == _GROUND and _INTERESTING_ESC.search(data) is None:
            return ScanResult(data, _NO_EVENTS)
        out: list[bytes] = []
        events: list[Event] = []
        self._scan(data, out, events)
        return ScanResult(b"".join(out), tuple(events) if events else _NO_EVENTS)

    def _emit(self, chunk: bytes, out: list[bytes]) -> None:
        if self._holding:
            self._held += chunk
        else:
            out.append(chunk)

    def _release(self, out: list[bytes]) -> None:
        if self._held:
            out.append(bytes(self._held))
            self._held.clear()
        self._esc_held = False

    def _begin_escape(self) -> None:
        """A lone ESC starts a new candidate; hold it until its next byte is known."""
        self._mode = _ESCAPE
        self._holding = True
        self._held.append(ESC)
        self._esc_held = True

    def _to_ground(self) -> None:
        self._mode = _GROUND
        self._holding = True

    def _scan(self, data: bytes, out: list[bytes], events: list[Event]) -> None:
        pos = 0
        end = len(data)
        while pos < end:
            mode = self._mode
            if mode == _GROUND:
                match = _INTERESTING_ESC.search(data, pos)
                if match is None:
                    out.append(data[pos:])
                    return
                start = match.start()
                if start + 1 == end:
                    out.append(data[pos:start])
                    self._begin_escape()
                    return
                if data[start + 1] == RIS_FINAL:
                    events.append(FullReset())
                    out.append(data[pos : start + 2])
                    pos = start + 2
                    continue
                out.append(data[pos:start])
                self._begin_escape()
                pos = start + 1
            elif mode == _ESCAPE:
                if data[pos] == OSC_INTRODUCER:
                    self._esc_held = False
                    self._emit(b"]", out)
                    self._mode = _OSC
                    self._body.clear()
                    self._overflow = False
                    pos += 1
                    continue
                self._release(out)
                self._to_ground()
                if data[pos] == RIS_FINAL:
                    events.append(FullReset())
                    out.append(b"c")
                    pos += 1
            elif mode == _OSC:
                pos = self._scan_osc(data, pos, out, events)
            else:
                pos = self._after_osc_escape(data[pos], pos, out, events)

    def _collect(self, chunk: bytes, out: list[bytes]) -> None:
        self._emit(chunk, out)
        if self._overflow:
            return
        # 3 bytes of framing (ESC, "]", BEL) is the least a complete sequence needs.
        if len(self._body) + len(chunk) > MAX_SEQUENCE - 3:
            self._overflow = True
            self._body.clear()
        else:
            self._body += chunk
        if self._holding and (self._overflow or not self._candidate(bytes(self._body))):
            self._holding = False
            self._release(out)

    def _scan_osc(self, data: bytes, pos: int, out: list[bytes], events: list[Event]) -> int:
        match = _OSC_END.search(data, pos)
        if match is None:
            self._collect(data[pos:], out)
            return len(data)
        stop = match.start()
        if stop > pos:
            self._collect(data[pos:stop], out)
        byte = data[stop]
        if byte == BEL:
            self._finish(b"\x07", st=False, out=out, events=events)
        elif byte == ESC:
            self._mode = _OSC_ESCAPE
            self._held.append(ESC)
            self._esc_held = True
        else:
            # CAN or SUB cancels the sequence; the byte itself is ordinary output.
            self._release(out)
            out.append(data[stop : stop + 1])
            self._to_ground()
        return stop + 1

    def _after_osc_escape(self, byte: int, pos: int, out: list[bytes], events: list[Event]) -> int:
        if byte == BACKSLASH:
            self._finish(b"\\", st=True, out=out, events=events)
            return pos + 1
        # An ESC that does not make ST ends the OSC unapplied and starts a new escape.
        if self._esc_held:
            del self._held[-1:]
            self._release(out)
            self._begin_escape()
        else:
            self._release(out)
            self._mode = _ESCAPE
            self._holding = False  # its ESC has already been released by a flush
        return pos

    def _finish(self, final: bytes, st: bool, out: list[bytes], events: list[Event]) -> None:
        body = bytes(self._body)
        size = 2 + len(body) + (2 if st else 1)
        valid = not self._overflow and size <= MAX_SEQUENCE
        if valid and _is_query(body):
            events.append(Query(b"\x1b]7501;?" + (ST if st else b"\x07")))
            if self._holding:
                self._held.clear()
                self._esc_held = False
                self._to_ground()
                return
        elif valid and body.startswith(REPORT_PREFIX):
            events.append(RawReport(body[len(REPORT_PREFIX) :]))
            if self._withhold_reports and self._holding:
                self._held.clear()
                self._esc_held = False
                self._to_ground()
                return
        elif valid and _is_prompt_mark(body):
            events.append(PromptStart())
        self._release(out)
        out.append(final)
        self._to_ground()
