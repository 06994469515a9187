"""OSC 7501 report bodies: parse and encode, following ``protocol.md`` to the letter."""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass
from typing import Final, Literal

from tray.protocol.state import RUNNING, STATE_NAMED, State

STATES: Final = tuple(State)
# Not a state: a report of it takes records away.
CLEAR: Final = "clear"
Clear = Literal["clear"]
KINDS: Final = ("permission", "question", "auth")

MAX_KEY = 16
MAX_APP = 32
MAX_ID = 128
MAX_ID_SEGMENT = 32
MAX_ID_SEGMENTS = 8
MAX_TITLE_ENCODED, MAX_TITLE_DECODED = 256, 192
MAX_MSG_ENCODED, MAX_MSG_DECODED = 2732, 2048

# tray's own pair on a report that an agent's hook sent (``tray emit --hook``): a terminal
# ignores it as an unknown key; tray ranks such a report below the program's own.
HOOK_PAIR: Final = b"via=hook"
_HOOK_PAIR: Final = re.compile(rb"(?:^|:)[ \t]*via[ \t]*=[ \t]*hook[ \t]*(?::|$)")

# Spelled out rather than \w or \d, which take non-ASCII letters and digits too.
_NAME_CHARS = "[A-Za-z0-9_.+-]"
_APP = re.compile(rf"{_NAME_CHARS}{{1,{MAX_APP}}}")
_ID_SEGMENT = rf"{_NAME_CHARS}{{1,{MAX_ID_SEGMENT}}}"
_ID = re.compile(rf"{_ID_SEGMENT}(?:/{_ID_SEGMENT}){{0,{MAX_ID_SEGMENTS - 1}}}")
_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/]*")
# C0 controls, DEL and C1 controls are refused in decoded text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_KEY = re.compile(rb"[a-z]+")
_VALUE = re.compile(rb"[A-Za-z0-9_.,+/=-]*")
_BLANKS = b" \t"


def _is_app(text: str) -> bool:
    return _APP.fullmatch(text) is not None


def _is_id(text: str) -> bool:
    """1 to MAX_ID_SEGMENTS names of at most MAX_ID_SEGMENT characters, joined by "/"."""
    return _ID.fullmatch(text) is not None


def _has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


class ReportError(ValueError):
    """A field that cannot go into a report, with a message fit for one line."""


@dataclass(frozen=True, slots=True)
class Report:
    """One parsed report. ``id`` is ``""`` for the root record.

    Built positionally too, in the protocol's order:

    >>> report = Report(State.BLOCKED, "build", "permission")
    >>> report.id, report.kind, report.app
    ('build', 'permission', None)
    """

    state: State | Clear
    id: str = ""
    kind: str | None = None
    progress: int | None = None
    app: str | None = None
    title: str | None = None
    msg: str | None = None


def _decode_text(value: str, max_decoded: int) -> str | None:
    """Decode a base64 text field; ``None`` means the report must be discarded."""
    data = value.rstrip("=")
    padding = len(value) - len(data)
    if _BASE64_TEXT.fullmatch(data) is None or len(data) % 4 == 1:
        return None
    if padding and (len(value) % 4 != 0 or padding > 2):
        return None
    raw = binascii.a2b_base64(data + "=" * (-len(data) % 4))
    # Unused trailing bits must be zero: only the canonical encoding is accepted.
    if binascii.b2a_base64(raw, newline=False).decode("ascii").rstrip("=") != data:
        return None
    if len(raw) > max_decoded:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _has_control(text):
        return None
    return text


def _decoded_size(value: bytes) -> int:
    """What ``value`` decodes to as base64, counted from its length alone."""
    return len(value.rstrip(b"=")) * 3 // 4


def _breaks_size_limit(key: bytes, value: bytes) -> bool:
    """Whether this occurrence of ``key`` is over a size limit of protocol.md.

    Sizes are checked on every occurrence, before (and whatever) its content: a size
    limit protects the reader, so a value that is too big is refused even when a later
    pair would replace it, or when its bytes would make the pair malformed anyway.
    """
    if key == b"app":
        return len(value) > MAX_APP
    if key == b"id":
        segments = value.split(b"/")
        return (
            len(value) > MAX_ID
            or len(segments) > MAX_ID_SEGMENTS
            or any(len(segment) > MAX_ID_SEGMENT for segment in segments)
        )
    if key == b"title":
        return len(value) > MAX_TITLE_ENCODED or _decoded_size(value) > MAX_TITLE_DECODED
    if key == b"msg":
        return len(value) > MAX_MSG_ENCODED or _decoded_size(value) > MAX_MSG_DECODED
    return False


def parse_body(body: bytes) -> Report | None:
    """Parse the bytes after ``7501;``. ``None`` means the report is discarded.

    >>> report = parse_body(b"state=blocked:id=build:kind=permission:app=codex:title=RGVwbG95")
    >>> report.state, report.id, report.kind, report.app, report.title
    ('blocked', 'build', 'permission', 'codex', 'Deploy')

    An unknown key, or a known one with a value it cannot take, is left out; a report
    without a valid state is discarded whole:

    >>> parse_body(b"state=working:progress=150:colour=red").progress is None
    True
    >>> parse_body(b"state=sleeping") is None
    True
    """
    fields: dict[str, str] = {}
    for pair in body.split(b":"):
        key_bytes, sep, value_bytes = pair.partition(b"=")
        if not sep:
            continue
        key_bytes = key_bytes.strip(_BLANKS)
        value_bytes = value_bytes.strip(_BLANKS)
        if len(key_bytes) > MAX_KEY or _breaks_size_limit(key_bytes, value_bytes):
            return None
        if _KEY.fullmatch(key_bytes) is None or _VALUE.fullmatch(value_bytes) is None:
            continue
        fields[key_bytes.decode("ascii")] = value_bytes.decode("ascii")

    name = fields.get("state")
    state: State | Clear | None = CLEAR if name == CLEAR else STATE_NAMED.get(name or "")
    if state is None:
        return None
    record_id = fields.get("id")
    if record_id is None:
        record_id = ""
    elif not _is_id(record_id):
        return None
    title = msg = None
    if fields.get("title"):
        title = _decode_text(fields["title"], MAX_TITLE_DECODED)
        if title is None:
            return None
    if fields.get("msg"):
        msg = _decode_text(fields["msg"], MAX_MSG_DECODED)
        if msg is None:
            return None
    kind = fields.get("kind") if state is State.BLOCKED else None
    if kind not in KINDS:
        kind = None
    progress = None
    raw_progress = fields.get("progress")
    if (
        state in RUNNING
        and raw_progress is not None
        and raw_progress.isdigit()  # ASCII only: the value check let nothing else in
        and int(raw_progress) <= 100
    ):
        progress = int(raw_progress)
    app = fields.get("app")
    if app is not None and not _is_app(app):
        app = None
    return Report(state, record_id, kind, progress, app, title, msg)


def _encode_text(name: str, text: str, max_encoded: int, max_decoded: int) -> str:
    if _has_control(text):
        raise ReportError(f"{name} must be one line without control characters")
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        # Command-line arguments carry undecodable bytes as lone surrogates.
        raise ReportError(f"{name} is not valid Unicode text") from None
    if len(raw) > max_decoded:
        raise ReportError(f"{name} is {len(raw)} bytes of UTF-8; the limit is {max_decoded}")
    encoded = binascii.b2a_base64(raw, newline=False).decode("ascii")
    if len(encoded) > max_encoded:  # pragma: no cover - implied by the decoded limit
        raise ReportError(f"{name} is too long")
    return encoded


def validate(report: Report) -> None:
    """Raise :class:`ReportError` unless the report encodes to exactly itself.

    >>> validate(Report(State.BLOCKED, kind="permission"))
    >>> try:
    ...     validate(Report(State.DONE, kind="permission"))
    ... except ReportError as error:
    ...     print(error)
    kind goes only with state blocked
    """
    # Reports are built from outside input too (command-line arguments): check the types
    # here, so a wrong one is a clear error rather than a TypeError deep in a check.
    texts = (report.state, report.id, report.kind, report.app, report.title, report.msg)
    names = ("state", "id", "kind", "app", "title", "msg")
    for name, value in zip(names, texts, strict=True):
        if not isinstance(value, str) and (value is not None or name in ("state", "id")):
            raise ReportError(f"{name} must be text, not {type(value).__name__}")
    if report.state not in STATE_NAMED and report.state != CLEAR:
        raise ReportError(
            f"state must be one of {', '.join((*STATES, CLEAR))}, not {report.state[:20]!r}"
        )
    if report.id and (len(report.id) > MAX_ID or not _is_id(report.id)):
        raise ReportError(
            f"id must be 1 to {MAX_ID_SEGMENTS} segments of [A-Za-z0-9_.+-]"
            f"{{1,{MAX_ID_SEGMENT}}} joined by '/', at most {MAX_ID} bytes"
        )
    if report.kind is not None:
        if report.kind not in KINDS:
            raise ReportError(f"kind must be one of {', '.join(KINDS)}")
        if report.state != State.BLOCKED:
            raise ReportError("kind goes only with state blocked")
    if report.progress is not None:
        if (
            isinstance(report.progress, bool)
            or not isinstance(report.progress, int)
            or not 0 <= report.progress <= 100
        ):
            raise ReportError("progress must be a whole number from 0 to 100")
        if report.state not in RUNNING:
            raise ReportError("progress goes only with state working or blocked")
    if report.app is not None and not _is_app(report.app):
        # A reader discards a whole report for an app over the size limit, so that
        # must never leave here as a report that would vanish without a word.
        raise ReportError(f"app must be 1 to {MAX_APP} characters of [A-Za-z0-9_.+-]")
    for name, text, max_encoded, max_decoded in (
        ("title", report.title, MAX_TITLE_ENCODED, MAX_TITLE_DECODED),
        ("msg", report.msg, MAX_MSG_ENCODED, MAX_MSG_DECODED),
    ):
        if text == "":
            raise ReportError(f"{name} must not be empty")
        if text is not None:
            _encode_text(name, text, max_encoded, max_decoded)


def encode_body(report: Report) -> bytes:
    """The body for ``report``; raises :class:`ReportError` for an invalid field.

    Text goes as base64, so any character but a control one may be in it:

    >>> encode_body(Report(State.WORKING, "build", progress=40, title="Deploy"))
    b'state=working:id=build:progress=40:title=RGVwbG95'
    >>> parse_body(_) == Report(State.WORKING, "build", progress=40, title="Deploy")
    True
    """
    validate(report)
    parts = [f"state={report.state}"]
    if report.id:
        parts.append(f"id={report.id}")
    if report.kind is not None:
        parts.append(f"kind={report.kind}")
    if report.progress is not None:
        parts.append(f"progress={report.progress}")
    if report.app is not None:
        parts.append(f"app={report.app}")
    if report.title is not None:
        parts.append("title=" + _encode_text("title", report.title, 0x7FFF, MAX_TITLE_DECODED))
    if report.msg is not None:
        parts.append("msg=" + _encode_text("msg", report.msg, 0x7FFF, MAX_MSG_DECODED))
    return ":".join(parts).encode("ascii")


def encode_sequence(report: Report, *, from_hook: bool = False) -> bytes:
    """A whole OSC 7501 sequence, BEL-terminated, ready to write to a terminal;
    ``from_hook`` adds :data:`HOOK_PAIR` last.

    >>> encode_sequence(Report(State.DONE, app="make"))
    b'\\x1b]7501;state=done:app=make\\x07'
    >>> encode_sequence(Report(State.BLOCKED, kind="permission", app="copilot"), from_hook=True)
    b'\\x1b]7501;state=blocked:kind=permission:app=copilot:via=hook\\x07'
    """
    body = encode_body(report)
    if from_hook:
        body += b":" + HOOK_PAIR
    return b"\x1b]7501;" + body + b"\x07"


def from_hook(body: bytes) -> bool:
    """Whether a report's body carries :data:`HOOK_PAIR`, wherever it stands.

    >>> from_hook(b"state=done:via = hook"), from_hook(b"state=done:via=hooks")
    (True, False)
    """
    return _HOOK_PAIR.search(body) is not None


__all__ = [
    "CLEAR",
    "HOOK_PAIR",
    "KINDS",
    "STATES",
    "Clear",
    "Report",
    "ReportError",
    "encode_body",
    "encode_sequence",
    "from_hook",
    "parse_body",
    "validate",
]
