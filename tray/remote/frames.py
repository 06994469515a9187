"""Pure: the stream's framed lines, a bounded line splitter, backoff and coalescing.

A frame is one line: ``\\x1eTRAY<version> <kind> <json>\\n``. The leading record
separator is what tells a frame from whatever else the remote login shell prints (a
MOTD, a chatty ``.bashrc``): such text never holds it, and JSON cannot hold it raw,
since the encoder escapes every control character. A frame is also found after text
that lacks its final newline, as a ``printf`` in a profile leaves it.

The link's stdin carries the one request that goes the other way: an answer to a
permission prompt (:class:`AnswerRequest`), framed the same way, one small line. The
stream says it takes them in every status document (:data:`TAKES_ANSWERS`); an older
stream never reads its stdin and says nothing, so the tray answers over a one-shot ssh.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from tray.base.safe_text import clean_text, cut
from tray.core.hosts.ssh_commands import RECORD_PATTERN, valid_remote_id
from tray.protocol.state import ANSWER_NAMED

MARK: Final = b"\x1eTRAY"
VERSION: Final = 1
STATE: Final = "state"
BEAT: Final = "beat"
# In the stream's status document: the answer requests it takes (ANSWERS_VERSION).
TAKES_ANSWERS: Final = "takes_answers"
ANSWER: Final = "answer"  # on the link's stdin: an AnswerRequest
ANSWERED: Final = "answered"  # its outcome: {"id": N, "ok": bool, "reason": "..."}
# Raised whenever the request or its reply changes shape; each side takes only its own.
ANSWERS_VERSION: Final = 1
# A request is a few ids and a number; anything longer is not one, and is skipped.
MAX_REQUEST: Final = 1024
MAX_REQUEST_ID: Final = 1 << 31
MAX_REASON: Final = 100
_REQUEST_FIELDS: Final = frozenset({"id", "session", "record", "since", "answer"})
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


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    """Answer ``session``'s prompt: its ``record`` (None: the one standing) of ``since``
    (None: whichever stands now). ``id`` pairs the reply with it."""

    id: int
    session: str
    record: str | None
    since: float | None
    answer: str


def _checked(request: AnswerRequest) -> AnswerRequest:
    """The request, if every field is one the other side accepts; else ValueError."""
    if isinstance(request.id, bool) or not isinstance(request.id, int):
        raise ValueError("request id must be an integer")
    if not 0 < request.id < MAX_REQUEST_ID:
        raise ValueError("request id out of range")
    if not isinstance(request.session, str) or not valid_remote_id(request.session):
        raise ValueError("not a session id")
    record = request.record
    if record is not None and (
        not isinstance(record, str) or (record != "" and RECORD_PATTERN.fullmatch(record) is None)
    ):
        raise ValueError("not a record id")
    since = request.since
    if since is not None:
        if isinstance(since, bool) or not isinstance(since, int | float):
            raise ValueError("since must be a number")
        if not math.isfinite(since):
            raise ValueError("since must be finite")
        since = float(since)
    if request.answer not in ANSWER_NAMED:
        raise ValueError("the answer is approve or deny")
    return AnswerRequest(request.id, request.session, record, since, request.answer)


def encode_answer_request(request: AnswerRequest) -> bytes:
    """The request's line for the link's stdin; ValueError when a field is not valid."""
    checked = _checked(request)
    line = encode_frame(
        ANSWER,
        {
            "v": ANSWERS_VERSION,
            "id": checked.id,
            "session": checked.session,
            "record": checked.record,
            "since": checked.since,
            "answer": checked.answer,
        },
    )
    if len(line) > MAX_REQUEST:
        raise ValueError("request too long")
    return line


def parse_answer_request(line: bytes) -> AnswerRequest | None:
    """The request in one line of the link's stdin, or None for anything else: another
    version, another kind, an unknown or missing field, a bad value."""
    if len(line) > MAX_REQUEST:
        return None
    frame = parse_frame(line)
    if frame is None or frame.version != VERSION or frame.kind != ANSWER:
        return None
    # The whole line is the frame: nothing may come before the mark.
    if not line.startswith(MARK):
        return None
    try:
        data = frame.json()
    except FrameError:
        return None
    if data.get("v") != ANSWERS_VERSION or set(data) != {*_REQUEST_FIELDS, "v"}:
        return None
    try:
        return _checked(
            AnswerRequest(
                data["id"], data["session"], data["record"], data["since"], data["answer"]
            )
        )
    except ValueError:
        return None


def encode_answer_reply(request_id: int, ok: bool, reason: str) -> bytes:
    return encode_frame(
        ANSWERED,
        {"v": ANSWERS_VERSION, "id": request_id, "ok": ok, "reason": cut(reason, MAX_REASON)},
    )


def parse_answer_reply(frame: Frame) -> tuple[int, bool, str] | None:
    """``(request id, ok, reason)`` from an ``answered`` frame; the reason is the remote's
    text, so it is cleaned and cut here. None for any frame that is not a valid one."""
    if frame.kind != ANSWERED:
        return None
    try:
        data = frame.json()
    except FrameError:
        return None
    request_id, ok, reason = data.get("id"), data.get("ok"), data.get("reason")
    if data.get("v") != ANSWERS_VERSION or isinstance(request_id, bool):
        return None
    if not isinstance(request_id, int) or not isinstance(ok, bool) or not isinstance(reason, str):
        return None
    return request_id, ok, cut(clean_text(reason), MAX_REASON)


def takes_answers(document: Mapping[str, Any]) -> bool:
    """Whether a stream's status document says it takes this tray's answer requests."""
    return document.get(TAKES_ANSWERS) == ANSWERS_VERSION


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
    "ANSWER",
    "ANSWERED",
    "ANSWERS_VERSION",
    "BEAT",
    "MARK",
    "MAX_FRAME",
    "MAX_REQUEST",
    "STATE",
    "TAKES_ANSWERS",
    "VERSION",
    "AnswerRequest",
    "Backoff",
    "Coalescer",
    "Frame",
    "FrameError",
    "LineSplitter",
    "encode_answer_reply",
    "encode_answer_request",
    "encode_frame",
    "parse_answer_reply",
    "parse_answer_request",
    "parse_frame",
    "takes_answers",
]
