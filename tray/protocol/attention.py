"""Attention signals besides OSC 7501: notifications, progress, the working directory.
(Prompts and commands, OSC 133 and 633: :mod:`tray.protocol.prompt_marks`.)

Each parser takes the payload of one OSC, the bytes after ``NUMBER;``, as the output
scanner hands it over. ``signals.md`` describes the formats and who sends them.

Everything here is untrusted: any program, even ``cat`` of a file, can write it. Text is
decoded as UTF-8 with replacement and cut to a sane length, and nothing else: stripping
invisible characters and escaping markup happen where the text is shown.
"""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass
from typing import Final, Literal

Condition = Literal["always", "unfocused", "invisible"]
ProgressState = Literal["remove", "set", "error", "indeterminate", "paused"]

MAX_TITLE: Final = 192
MAX_BODY: Final = 2048
MAX_PATH: Final = 4096

# kitty's limits for OSC 99 chunks: a payload is at most 2048 bytes before encoding.
KITTY_MAX_PAYLOAD: Final = 2048
KITTY_MAX_PENDING: Final = 16
KITTY_MAX_BYTES: Final = 4096


@dataclass(frozen=True, slots=True)
class Notification:
    """A desktop notification a program asked for. ``title`` or ``body`` may be empty,
    never both. ``source`` is the OSC number it came in: 9, 777 or 99. ``urgency`` is
    kitty's: 0 low, 1 normal, 2 critical."""

    title: str
    body: str
    source: int
    condition: Condition = "always"
    urgency: int | None = None


@dataclass(frozen=True, slots=True)
class Progress:
    """ConEmu's progress bar (OSC 9;4). ``value`` is 0 to 100, or None when not given.

    ``error`` is the bar's colour, not a failure of the session.
    """

    state: ProgressState
    value: int | None = None


def clip_text(raw: bytes, limit: int) -> str:
    """UTF-8 with replacement, stripped, at most ``limit`` characters.

    >>> clip_text(b"  caf\\xc3\\xa9 \\xff  ", 40)
    'caf\xe9 \ufffd'
    >>> clip_text(b"Build finished", 5)
    'Build'
    """
    return raw.decode("utf-8", "replace").strip()[:limit].rstrip()


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
    """iTerm2's notification text, or ConEmu's progress; any other ConEmu command is None.

    >>> parse_osc9(b"\\n\\nClaude needs your permission")  # doctest: +NORMALIZE_WHITESPACE
    Notification(title='', body='Claude needs your permission', source=9, condition='always',
                 urgency=None)
    >>> parse_osc9(b"4;1;42")
    Progress(state='set', value=42)
    >>> parse_osc9(b"9;/home/me") is None
    True
    """
    if _is_conemu_command(payload):
        if payload.startswith(b"4;"):
            return _progress(payload[2:])
        return None
    # Claude Code starts its text with two newlines; _text strips them.
    body = clip_text(payload, MAX_BODY)
    return Notification("", body, source=9) if body else None


# --- OSC 777 ------------------------------------------------------------------------------


def parse_osc777(payload: bytes) -> Notification | None:
    """``notify;TITLE;BODY``: the title ends at the first ``;``, the body is the rest.

    >>> parse_osc777(b"notify;Build;done; 3 warnings")  # doctest: +NORMALIZE_WHITESPACE
    Notification(title='Build', body='done; 3 warnings', source=777, condition='always',
                 urgency=None)
    >>> parse_osc777(b"preexec") is None
    True
    """
    command, sep, rest = payload.partition(b";")
    if command != b"notify" or not sep:
        return None
    title_raw, _, body_raw = rest.partition(b";")
    title, body = clip_text(title_raw, MAX_TITLE), clip_text(body_raw, MAX_BODY)
    if not title and not body:
        return None
    return Notification(title, body, source=777)


# --- OSC 99 -------------------------------------------------------------------------------

_KITTY_ID: Final = re.compile(rb"[A-Za-z0-9_+.-]{1,64}")
_PADDED_BASE64: Final = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
_KITTY_CONDITIONS: Final[dict[bytes, Condition]] = {
    b"always": "always",
    b"unfocused": "unfocused",
    b"invisible": "invisible",
}
# Not part of a notification at all: a request to close one, a support query, and
# kitty's liveness query.
_KITTY_COMMANDS: Final = frozenset({b"close", b"?", b"alive"})


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
    if len(data) > (KITTY_MAX_PAYLOAD + 2) // 3 * 4 or _PADDED_BASE64.fullmatch(data) is None:
        return None
    unpadded = data.rstrip(b"=")
    if len(unpadded) % 4 == 1:
        return None
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

    >>> kitty = KittyAssembler()
    >>> kitty.feed(b"i=7:d=0;Build") is None
    True
    >>> kitty.pending
    1
    >>> kitty.feed(b"i=7:p=body:u=2;finished")
    Notification(title='Build', body='finished', source=99, condition='always', urgency=2)
    >>> kitty.feed(b"e=1;SGVsbG8=").title
    'Hello'
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
        if _KITTY_ID.fullmatch(identifier) is None or encoding not in (b"0", b"1"):
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
        title = clip_text(bytes(pending.title), MAX_TITLE)
        body = clip_text(bytes(pending.body), MAX_BODY)
        if not title and not body:
            return None
        return Notification(title, body, 99, pending.condition, pending.urgency)


# --- OSC 7 --------------------------------------------------------------------------------

_LOCAL_HOSTS: Final = ("", "localhost")


_PERCENT_ESCAPE: Final = re.compile(rb"%([0-9A-Fa-f]{2})")
_BAD_PERCENT: Final = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def percent_decode(raw: bytes) -> bytes | None:
    """Each ``%`` and the two hex digits after it made one byte; None when a ``%`` has
    no two hex digits after it.

    >>> percent_decode(b"/home/me/My%20Files")
    b'/home/me/My Files'
    >>> percent_decode(b"/100%") is None
    True
    """
    if _BAD_PERCENT.search(raw) is not None:
        return None
    return _PERCENT_ESCAPE.sub(lambda escape: bytes([int(escape[1], 16)]), raw)


def parse_osc7(payload: bytes, hostname: str) -> str | None:
    """The working directory from ``file://HOST/PATH`` (PATH percent-encoded) or
    kitty's ``kitty-shell-cwd://HOST/PATH`` (PATH raw), when HOST is this machine:
    empty, ``localhost`` or ``hostname``. Anything else is None.

    >>> parse_osc7(b"file://devbox/home/me/My%20Files", "devbox")
    '/home/me/My Files'
    >>> parse_osc7(b"kitty-shell-cwd://localhost/tmp", "devbox")
    '/tmp'
    >>> parse_osc7(b"file://elsewhere/home/me", "devbox") is None
    True
    """
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
        decoded = percent_decode(path)
        if decoded is None:
            return None
        path = decoded
    if not path.startswith(b"/") or b"\0" in path or len(path) > MAX_PATH:
        return None
    return path.decode("utf-8", "replace")


__all__ = [
    "KITTY_MAX_BYTES",
    "KITTY_MAX_PAYLOAD",
    "KITTY_MAX_PENDING",
    "MAX_BODY",
    "MAX_PATH",
    "MAX_TITLE",
    "KittyAssembler",
    "Notification",
    "Progress",
    "clip_text",
    "parse_osc7",
    "parse_osc9",
    "parse_osc777",
    "percent_decode",
]
