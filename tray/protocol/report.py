"""OSC 7501 report bodies: parse and encode, following ``protocol.md`` to the letter."""

from __future__ import annotations

from tray.base.value import Value

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

STATES: Final = ("idle", "working", "done", "blocked", "error")
CLEAR: Final = "clear"
KINDS: Final = ("permission", "question", "auth")
# Most urgent first.
URGENCY: Final = ("blocked", "error", "working", "done", "idle")

MAX_KEY = 16
MAX_APP = 32
MAX_ID = 128
MAX_ID_SEGMENT = 32
MAX_ID_SEGMENTS = 8
MAX_TITLE_ENCODED, MAX_TITLE_DECODED = 256, 192
MAX_MSG_ENCODED, MAX_MSG_DECODED = 2732, 2048

# The checks below are plain string methods, not regular expressions: re (with enum,
# functools and more) would cost every `tray run` milliseconds. An app, and each segment
# of an id, is 1 to MAX_APP (MAX_ID_SEGMENT) of these characters.
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-")
_BASE64_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
# C0 controls, DEL and C1 controls are refused in decoded text: translate() deletes them,
# so a shorter result means there was one.
_DELETE_CONTROLS = dict.fromkeys((*range(0x20), *range(0x7F, 0xA0)))
# What a value may hold: [A-Za-z0-9_.,+/=-]; the check deletes these and looks for a rest.
_VALUE_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,+/=-"
_BLANKS = b" \t"


def _is_name(text: str, limit: int) -> bool:
    """``text`` is 1 to ``limit`` characters of ``[A-Za-z0-9_.+-]``."""
    return 0 < len(text) <= limit and _NAME_CHARS.issuperset(text)


def _is_id(text: str) -> bool:
    """1 to MAX_ID_SEGMENTS names of at most MAX_ID_SEGMENT characters, joined by "/"."""
    segments = text.split("/")
    return len(segments) <= MAX_ID_SEGMENTS and all(
        _is_name(segment, MAX_ID_SEGMENT) for segment in segments
    )


def _is_base64_text(text: str) -> bool:
    """Only ``[A-Za-z0-9+/]``, or nothing."""
    return text.isascii() and not text.encode("ascii").translate(None, _BASE64_BYTES)


def _has_control(text: str) -> bool:
    return len(text.translate(_DELETE_CONTROLS)) != len(text)


class ReportError(ValueError):
    """A field that cannot go into a report, with a message fit for one line."""


class Report(Value):
    """One parsed report. ``id`` is ``""`` for the root record."""

    __slots__ = ("app", "id", "kind", "msg", "progress", "state", "title")

    def __init__(  # noqa: PLR0917 - built positionally, in the protocol's order
        self,
        state: str,
        id: str = "",
        kind: str | None = None,
        progress: int | None = None,
        app: str | None = None,
        title: str | None = None,
        msg: str | None = None,
    ) -> None:
        self.state: Final = state
        self.id: Final = id
        self.kind: Final = kind
        self.progress: Final = progress
        self.app: Final = app
        self.title: Final = title
        self.msg: Final = msg


def _decode_text(value: str, max_decoded: int) -> str | None:
    """Decode a base64 text field; ``None`` means the report must be discarded."""
    data = value.rstrip("=")
    padding = len(value) - len(data)
    if not _is_base64_text(data) or len(data) % 4 == 1:
        return None
    if padding and (len(value) % 4 != 0 or padding > 2):
        return None
    import binascii  # noqa: PLC0415 - a C module to load: only a report with text needs it

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
    """Parse the bytes after ``7501;``. ``None`` means the report is discarded."""
    fields: dict[str, str] = {}
    for pair in body.split(b":"):
        key_bytes, sep, value_bytes = pair.partition(b"=")
        if not sep:
            continue
        key_bytes = key_bytes.strip(_BLANKS)
        value_bytes = value_bytes.strip(_BLANKS)
        if len(key_bytes) > MAX_KEY or _breaks_size_limit(key_bytes, value_bytes):
            return None
        # A key is [a-z]+: isalpha() is ASCII letters only, for bytes.
        if not (key_bytes.isalpha() and key_bytes.islower()):
            continue
        if value_bytes.translate(None, _VALUE_BYTES):
            continue
        fields[key_bytes.decode("ascii")] = value_bytes.decode("ascii")

    state = fields.get("state")
    if state is None or (state not in STATES and state != CLEAR):
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
    kind = fields.get("kind") if state == "blocked" else None
    if kind not in KINDS:
        kind = None
    progress = None
    raw_progress = fields.get("progress")
    if (
        state in ("working", "blocked")
        and raw_progress is not None
        and raw_progress.isdigit()  # ASCII only: the value check let nothing else in
        and int(raw_progress) <= 100
    ):
        progress = int(raw_progress)
    app = fields.get("app")
    if app is not None and not _is_name(app, MAX_APP):
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
    import binascii  # noqa: PLC0415 - see _decode_text

    encoded = binascii.b2a_base64(raw, newline=False).decode("ascii")
    if len(encoded) > max_encoded:  # pragma: no cover - implied by the decoded limit
        raise ReportError(f"{name} is too long")
    return encoded


def validate(report: Report) -> None:
    """Raise :class:`ReportError` unless the report encodes to exactly itself."""
    # Reports are built from outside input too (command-line arguments): check the types
    # here, so a wrong one is a clear error rather than a TypeError deep in a check.
    texts = (report.state, report.id, report.kind, report.app, report.title, report.msg)
    names = ("state", "id", "kind", "app", "title", "msg")
    for name, value in zip(names, texts, strict=True):
        if not isinstance(value, str) and (value is not None or name in ("state", "id")):
            raise ReportError(f"{name} must be text, not {type(value).__name__}")
    if report.state not in STATES and report.state != CLEAR:
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
        if report.state != "blocked":
            raise ReportError("kind goes only with state blocked")
    if report.progress is not None:
        if (
            isinstance(report.progress, bool)
            or not isinstance(report.progress, int)
            or not 0 <= report.progress <= 100
        ):
            raise ReportError("progress must be a whole number from 0 to 100")
        if report.state not in ("working", "blocked"):
            raise ReportError("progress goes only with state working or blocked")
    if report.app is not None and not _is_name(report.app, MAX_APP):
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
    """The body for ``report``; raises :class:`ReportError` for an invalid field."""
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


def encode_sequence(report: Report) -> bytes:
    """A whole OSC 7501 sequence, BEL-terminated, ready to write to a terminal."""
    return b"\x1b]7501;" + encode_body(report) + b"\x07"


__all__ = [
    "CLEAR",
    "KINDS",
    "STATES",
    "URGENCY",
    "Report",
    "ReportError",
    "encode_body",
    "encode_sequence",
    "parse_body",
    "validate",
]
