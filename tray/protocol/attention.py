"""Attention signals besides OSC 7501: notifications, progress, working directory, prompts.

Each parser takes the payload of one OSC, the bytes after ``NUMBER;``, as the output
scanner hands it over. ``signals.md`` describes the formats and who sends them.

Everything here is untrusted: any program, even ``cat`` of a file, can write it. Text is
decoded as UTF-8 with replacement and cut to a sane length, and nothing else: stripping
invisible characters and escaping markup happen where the text is shown.
"""

from __future__ import annotations

from tray.value import Value

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final, Literal

    Condition = Literal["always", "unfocused", "invisible"]
    ProgressState = Literal["remove", "set", "error", "indeterminate", "paused"]
    MarkKind = Literal["A", "B", "C", "D", "E"]

MAX_TITLE: Final = 192
MAX_BODY: Final = 2048
MAX_CMDLINE: Final = 2048
MAX_PATH: Final = 4096

# kitty's limits for OSC 99 chunks: a payload is at most 2048 bytes before encoding.
KITTY_MAX_PAYLOAD: Final = 2048
KITTY_MAX_PENDING: Final = 16
KITTY_MAX_BYTES: Final = 4096


class Notification(Value):
    """A desktop notification a program asked for. ``title`` or ``body`` may be empty,
    never both. ``source`` is the OSC number it came in: 9, 777 or 99. ``urgency`` is
    kitty's: 0 low, 1 normal, 2 critical."""

    __slots__ = ("body", "condition", "source", "title", "urgency")

    def __init__(
        self,
        title: str,
        body: str,
        source: int,
        condition: Condition = "always",
        urgency: int | None = None,
    ) -> None:
        self.title: Final = title
        self.body: Final = body
        self.source: Final = source
        self.condition: Final = condition
        self.urgency: Final = urgency


class Progress(Value):
    """ConEmu's progress bar (OSC 9;4). ``value`` is 0 to 100, or None when not given.

    ``error`` is the bar's colour, not a failure of the session.
    """

    __slots__ = ("state", "value")

    def __init__(self, state: ProgressState, value: int | None = None) -> None:
        self.state: Final = state
        self.value: Final = value


class PromptMark(Value):
    """A shell integration mark, from OSC 133 or OSC 633.

    ``A`` a prompt starts, ``B`` the prompt ends, ``C`` a command starts, ``D`` it
    finished (``exit_status`` when the shell said), ``E`` the command line of the
    command about to start or running (OSC 633 only). ``cmdline`` comes with ``C`` (when
    the shell sent one) and with ``E``.
    """

    __slots__ = ("cmdline", "exit_status", "kind")

    def __init__(
        self, kind: MarkKind, exit_status: int | None = None, cmdline: str | None = None
    ) -> None:
        self.kind: Final = kind
        self.exit_status: Final = exit_status
        self.cmdline: Final = cmdline


class FinishedCommand(Value):
    __slots__ = ("cmdline", "ended_at", "exit_status", "started_at")

    def __init__(
        self, cmdline: str | None, exit_status: int | None, started_at: float, ended_at: float
    ) -> None:
        self.cmdline: Final = cmdline
        self.exit_status: Final = exit_status
        self.started_at: Final = started_at
        self.ended_at: Final = ended_at

    @property
    def duration(self) -> float:
        return max(0.0, self.ended_at - self.started_at)


def _text(raw: bytes, limit: int) -> str:
    return raw.decode("utf-8", "replace").strip()[:limit].rstrip()


def _cmdline(raw: bytes) -> str | None:
    return _text(raw, MAX_CMDLINE) or None


# --- OSC 9 --------------------------------------------------------------------------------

# ConEmu's commands share OSC 9 with iTerm2's notifications; these payloads are commands
# (signals.md, following Ghostty), so never text to show.
_CONEMU_PREFIXES: Final = (
    b"1;",
    b"10;",
    b"11;",
    b"12",
    b"2;",
    b"3;",
    b"4;",
    b"5",
    b"6;",
    b"7;",
    b"8;",
    b"9;",
)
_PROGRESS_STATES: Final[dict[bytes, ProgressState]] = {
    b"0": "remove",
    b"1": "set",
    b"2": "error",
    b"3": "indeterminate",
    b"4": "paused",
}


def _is_conemu_command(payload: bytes) -> bool:
    return payload == b"10" or payload.startswith(_CONEMU_PREFIXES)


def _progress(arguments: bytes) -> Progress | None:
    """``ST`` or ``ST;PR``, the part after ``4;``."""
    state_field, _, value_field = arguments.partition(b";")
    state = _PROGRESS_STATES.get(state_field)
    if state is None:
        return None
    if state in ("remove", "indeterminate") or not value_field.isdigit():
        return Progress(state)
    digits = value_field.lstrip(b"0") or b"0"
    # Past three digits it is over 100 anyway; int() is never fed a huge number.
    return Progress(state, 100 if len(digits) > 3 else min(int(digits), 100))


def parse_osc9(payload: bytes) -> Notification | Progress | None:
    """iTerm2's notification text, or ConEmu's progress; any other ConEmu command is None."""
    if _is_conemu_command(payload):
        if payload.startswith(b"4;"):
            return _progress(payload[2:])
        return None
    # Claude Code starts its text with two newlines; _text strips them.
    body = _text(payload, MAX_BODY)
    return Notification("", body, source=9) if body else None


# --- OSC 777 ------------------------------------------------------------------------------


def parse_osc777(payload: bytes) -> Notification | None:
    """``notify;TITLE;BODY``: the title ends at the first ``;``, the body is the rest."""
    command, sep, rest = payload.partition(b";")
    if command != b"notify" or not sep:
        return None
    title_raw, _, body_raw = rest.partition(b";")
    title, body = _text(title_raw, MAX_TITLE), _text(body_raw, MAX_BODY)
    if not title and not body:
        return None
    return Notification(title, body, source=777)


# --- OSC 99 -------------------------------------------------------------------------------

# Checks here are bytes methods, not regular expressions: re (with enum, functools and
# more) would cost every `tray run` milliseconds. An id is 1 to 64 of these.
_KITTY_ID_BYTES: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+.-"
_KITTY_MAX_ID: Final = 64
_KITTY_CONDITIONS: Final[dict[bytes, Condition]] = {
    b"always": "always",
    b"unfocused": "unfocused",
    b"invisible": "invisible",
}
# Not part of a notification at all: a request to close one, a support query, and
# kitty's liveness query.
_KITTY_COMMANDS: Final = frozenset({b"close", b"?", b"alive"})
_BASE64_BYTES: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _is_kitty_id(identifier: bytes) -> bool:
    return 0 < len(identifier) <= _KITTY_MAX_ID and not identifier.translate(None, _KITTY_ID_BYTES)


def _is_padded_base64(data: bytes) -> bool:
    """``[A-Za-z0-9+/]*`` then at most two ``=``."""
    unpadded = data.rstrip(b"=")
    return len(data) - len(unpadded) <= 2 and not unpadded.translate(None, _BASE64_BYTES)


class _Pending:
    __slots__ = ("body", "condition", "title", "urgency")

    def __init__(self) -> None:
        self.title = bytearray()
        self.body = bytearray()
        self.condition: Condition = "always"
        self.urgency: int | None = None

    def room(self) -> int:
        return KITTY_MAX_BYTES - len(self.title) - len(self.body)


def _decode_kitty_payload(data: bytes, encoded: bool) -> bytes | None:
    if not encoded:
        return data if len(data) <= KITTY_MAX_PAYLOAD else None
    if len(data) > (KITTY_MAX_PAYLOAD + 2) // 3 * 4 or not _is_padded_base64(data):
        return None
    unpadded = data.rstrip(b"=")
    if len(unpadded) % 4 == 1:
        return None
    import binascii  # noqa: PLC0415 - a C module to load: only a kitty payload needs it

    try:
        raw = binascii.a2b_base64(unpadded + b"=" * (-len(unpadded) % 4), strict_mode=True)
    except binascii.Error:  # pragma: no cover - the checks above rule it out
        return None
    return raw if len(raw) <= KITTY_MAX_PAYLOAD else None


class KittyAssembler:
    """Joins kitty's OSC 99 chunks into notifications.

    Chunks with the same ``i`` join until one says ``d=1`` (the default). Title and body
    may each come in several chunks and are concatenated. Bounded: at most
    ``max_pending`` notifications wait at once (the least recently fed goes first) and
    each holds at most ``KITTY_MAX_BYTES`` of text.
    """

    __slots__ = ("_max_pending", "_pending")

    def __init__(self, max_pending: int = KITTY_MAX_PENDING) -> None:
        self._max_pending = max(1, max_pending)
        self._pending: dict[bytes, _Pending] = {}

    @property
    def pending(self) -> int:
        return len(self._pending)

    def clear(self) -> None:
        self._pending.clear()

    def feed(self, payload: bytes) -> Notification | None:
        """One OSC 99 payload, ``METADATA;PAYLOAD``; a notification once one is complete."""
        metadata, sep, data = payload.partition(b";")
        if not sep:
            return None
        keys: dict[bytes, bytes] = {}
        for pair in metadata.split(b":"):
            key, equals, value = pair.partition(b"=")
            if equals and len(key) == 1:
                keys[key] = value
        kind = keys.get(b"p", b"title")
        if kind in _KITTY_COMMANDS:
            return None
        identifier = keys.get(b"i", b"0")
        encoding = keys.get(b"e", b"0")
        if not _is_kitty_id(identifier) or encoding not in (b"0", b"1"):
            return None
        text = b""
        if kind in (b"title", b"body"):
            decoded = _decode_kitty_payload(data, encoding == b"1")
            if decoded is None:
                return None  # the whole chunk is dropped, metadata and all
            text = decoded
        # Icons, buttons and types still to come carry no text, but are still part of
        # the notification: their chunk can be the one that completes it.
        pending = self._pending.pop(identifier, None)
        if pending is None:
            pending = _Pending()
        if kind == b"title":
            pending.title += text[: pending.room()]
        elif kind == b"body":
            pending.body += text[: pending.room()]
        condition = _KITTY_CONDITIONS.get(keys.get(b"o", b""))
        if condition is not None:
            pending.condition = condition
        urgency = keys.get(b"u")
        if urgency in (b"0", b"1", b"2"):
            pending.urgency = int(urgency)
        if keys.get(b"d", b"1") == b"0":
            # Re-inserted last: the least recently fed notification is the first to go.
            while len(self._pending) >= self._max_pending:
                del self._pending[next(iter(self._pending))]
            self._pending[identifier] = pending
            return None
        title = _text(bytes(pending.title), MAX_TITLE)
        body = _text(bytes(pending.body), MAX_BODY)
        if not title and not body:
            return None
        return Notification(title, body, 99, pending.condition, pending.urgency)


# --- OSC 7 --------------------------------------------------------------------------------

_LOCAL_HOSTS: Final = ("", "localhost")
_HEX = frozenset(b"0123456789abcdefABCDEF")


def _percent_decode(raw: bytes) -> bytes | None:
    """Each ``%`` and the two hex digits after it made one byte; None when a ``%`` has
    no two hex digits after it."""
    if b"%" not in raw:
        return raw
    first, *escaped = raw.split(b"%")
    out = bytearray(first)
    for piece in escaped:
        if len(piece) < 2 or piece[0] not in _HEX or piece[1] not in _HEX:
            return None
        out.append(int(piece[:2], 16))
        out += piece[2:]
    return bytes(out)


def parse_osc7(payload: bytes, hostname: str) -> str | None:
    """The working directory from ``file://HOST/PATH`` (PATH percent-encoded) or
    kitty's ``kitty-shell-cwd://HOST/PATH`` (PATH raw), when HOST is this machine:
    empty, ``localhost`` or ``hostname``. Anything else is None."""
    scheme, sep, rest = payload.partition(b"://")
    scheme = scheme.lower()
    if not sep or scheme not in (b"file", b"kitty-shell-cwd"):
        return None
    slash = rest.find(b"/")
    if slash < 0:
        return None
    host = rest[:slash].decode("utf-8", "replace").lower()
    if host not in _LOCAL_HOSTS and host != hostname.lower():
        return None
    path = rest[slash:]
    if scheme == b"file":
        decoded = _percent_decode(path)
        if decoded is None:
            return None
        path = decoded
    if not path.startswith(b"/") or b"\0" in path or len(path) > MAX_PATH:
        return None
    return path.decode("utf-8", "replace")


# --- OSC 133 and OSC 633 ------------------------------------------------------------------

# An exit status is at most this many digits, after an optional "-".
_MAX_STATUS_DIGITS: Final = 10
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
_OCTAL = frozenset(b"01234567")


def _split_mark(payload: bytes) -> tuple[MarkKind, bytes] | None:
    """The mark's letter and its options; the letter stands alone or before ``;``."""
    letter, _, options = payload.partition(b";")
    kind = _MARK_KINDS.get(letter)
    return None if kind is None else (kind, options)


def _exit_status(options: bytes) -> int | None:
    first = options.partition(b";")[0]
    digits = first[1:] if first.startswith(b"-") else first
    # bytes.isdigit() is ASCII digits only, and False for no bytes at all.
    return int(first) if len(digits) <= _MAX_STATUS_DIGITS and digits.isdigit() else None


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
            while pos < len(text) and len(digits) < 2 and text[pos] in _HEX:
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
            decoded = _percent_decode(option[len(b"cmdline_url=") :])
            return None if decoded is None else _cmdline(decoded)
        rest = after
    return None


def parse_osc133(payload: bytes) -> PromptMark | None:
    """``A``, ``B``, ``C`` (maybe with ``cmdline=`` or ``cmdline_url=``) and ``D[;STATUS]``.

    Options such as ``aid=``, ``click_events=1``, ``special_key=1`` and ``redraw=0`` may
    follow any of them and are ignored.
    """
    split = _split_mark(payload)
    if split is None:
        return None
    kind, options = split
    if kind == "C":
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
                and all(digit in _HEX for digit in hex_digits)
            ):
                out.append(int(hex_digits, 16))
                pos += 4
                continue
        out.append(byte)
        pos += 1
    return bytes(out)


def parse_osc633(payload: bytes) -> PromptMark | None:
    """VS Code's marks: ``A``, ``B``, ``C``, ``D[;STATUS]`` and ``E;CMDLINE[;NONCE]``."""
    if payload.startswith(b"E;") or payload == b"E":
        # Semicolons inside the command line are escaped, so the first one left ends it.
        cmdline = payload[2:].partition(b";")[0]
        return PromptMark("E", cmdline=_cmdline(_vscode_unescape(cmdline)))
    split = _split_mark(payload)
    if split is None:
        return None
    kind, options = split
    if kind == "D":
        return PromptMark("D", exit_status=_exit_status(options))
    return PromptMark(kind)


class CommandTracker:
    """Follows the marks of one shell; a ``D`` after a ``C`` is a command that finished.

    Times come in with each mark, so this is pure.
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
    "KITTY_MAX_BYTES",
    "KITTY_MAX_PAYLOAD",
    "KITTY_MAX_PENDING",
    "MAX_BODY",
    "MAX_CMDLINE",
    "MAX_PATH",
    "MAX_TITLE",
    "CommandTracker",
    "FinishedCommand",
    "KittyAssembler",
    "Notification",
    "Progress",
    "PromptMark",
    "parse_osc7",
    "parse_osc9",
    "parse_osc133",
    "parse_osc633",
    "parse_osc777",
]
