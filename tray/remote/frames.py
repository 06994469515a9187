"""Pure: the stream's framed lines, a bounded line splitter, backoff and coalescing.

A frame is one line: ``\\x1eTRAY<version> <kind> <json>\\n``. The leading record
separator is what tells a frame from whatever else the remote login shell prints (a
MOTD, a chatty ``.bashrc``): such text never holds it, and JSON cannot hold it raw,
since the encoder escapes every control character. A frame is also found after text
that lacks its final newline, as a ``printf`` in a profile leaves it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

MARK: Final = b"\x1eTRAY"
VERSION: Final = 1
STATE: Final = "state"
BEAT: Final = "beat"
# A whole status document in one line; far above a real one, and what a reader holds
# at most while it waits for a line's end.
MAX_FRAME: Final = 1 << 20

_HEADER: Final = re.compile(rb"\x1eTRAY([0-9]{1,4}) ([a-z]{1,16}) ")

T = TypeVar("T")


class FrameError(ValueError):
    """A frame whose payload is not a JSON object."""


@dataclass(frozen=True, slots=True)
class Frame:
    version: int
    kind: str
    payload: bytes  # the JSON text, parsed only when needed: most frames get coalesced

    def json(self) -> dict[str, Any]:
        try:
            value = json.loads(self.payload)
        except (ValueError, RecursionError):
            raise FrameError("payload is not JSON") from None
        if not isinstance(value, dict):
            raise FrameError("payload is not a JSON object")
        return value


def encode_frame(kind: str, payload: Mapping[str, Any]) -> bytes:
    if re.fullmatch(r"[a-z]{1,16}", kind) is None:
        raise ValueError(f"bad frame kind {kind!r}")
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return b"%s%d %s %s\n" % (MARK, VERSION, kind.encode("ascii"), body.encode("ascii"))


def parse_frame(line: bytes) -> Frame | None:
    """The frame in one line (newline already removed), or None for any other text."""
    start = line.rfind(MARK)
    if start < 0:
        return None
    match = _HEADER.match(line, start)
    if match is None:
        return None
    return Frame(
        version=int(match.group(1)),
        kind=match.group(2).decode("ascii"),
        payload=line[match.end() :].rstrip(b"\r"),
    )


class LineSplitter:
    """Bytes in, whole lines out; a line longer than ``limit`` is dropped as it streams.

    Memory stays at ``limit`` bytes however long the line: once a line is too long, the
    rest of it is skipped up to its newline without being kept.
    """

    def __init__(self, limit: int = MAX_FRAME) -> None:
        self._limit = limit
        self._pending = bytearray()
        self._skipping = False
        self.dropped = 0

    @property
    def buffered(self) -> int:
        return len(self._pending)

    def feed(self, data: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            if end < 0:
                self._keep(data[start:])
                break
            self._keep(data[start:end])
            if self._skipping:
                self._skipping = False
            else:
                lines.append(bytes(self._pending))
            self._pending.clear()
            start = end + 1
        return lines

    def _keep(self, part: bytes) -> None:
        if self._skipping:
            return
        if len(self._pending) + len(part) > self._limit:
            self._pending.clear()
            self._skipping = True
            self.dropped += 1
            return
        self._pending += part


class Backoff:
    """Delays between reconnections: ``first``, doubling up to ``limit``, until reset."""

    def __init__(self, first: float = 1.0, limit: float = 60.0) -> None:
        if not 0 < first <= limit:
            raise ValueError("need 0 < first <= limit")
        self._first = first
        self._limit = limit
        self._next = first

    def next(self) -> float:
        delay = self._next
        self._next = min(self._limit, self._next * 2)
        return delay

    def reset(self) -> None:
        self._next = self._first


class Coalescer(Generic[T]):
    """At most one item per ``interval``: the newest offered wins, none is delayed longer
    than needed, and the first after a quiet spell goes at once."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._last: float | None = None
        self._pending: T | None = None
        self._has_pending = False

    @property
    def pending(self) -> bool:
        return self._has_pending

    def offer(self, item: T) -> None:
        self._pending = item
        self._has_pending = True

    def due_at(self) -> float | None:
        if not self._has_pending:
            return None
        return 0.0 if self._last is None else self._last + self._interval

    def take(self, now: float) -> T | None:
        """The pending item when it may go now; it is then counted as sent at ``now``."""
        due = self.due_at()
        if due is None or now < due:
            return None
        item = self._pending
        self._pending = None
        self._has_pending = False
        self._last = now
        return item


__all__ = [
    "BEAT",
    "MARK",
    "MAX_FRAME",
    "STATE",
    "VERSION",
    "Backoff",
    "Coalescer",
    "Frame",
    "FrameError",
    "LineSplitter",
    "encode_frame",
    "parse_frame",
]
