"""The support queries ``tray run`` answers itself, in place of the terminal beneath it.

A program asks whether its terminal speaks a protocol before it uses it. Two of those
questions are tray's to answer, because tray is the one that listens:

- OSC 7501, ``ESC ] 7501 ; ? TERM`` (``protocol.md``, support detection): the answer is
  the same bytes. A body of exactly ``?``, after trimming ASCII space and tab.
- kitty's desktop notifications, ``ESC ] 99 ; i=ID : p=? ; TERM`` (kitty's
  ``desktop-notifications`` page, "Querying for support"): the answer is an OSC 99 with
  the same ``i=`` and ``p=?``, then what the terminal implements as ``key=value`` pairs
  joined by ``:``. opencode (OpenTUI) asks it at start and sends its notifications only
  when it is answered.

Either answer goes back with the terminator the query used, as xterm does for its own
queries and protocol.md asks for OSC 7501 (kitty always answers with ST; a program that
accepts kitty's answer accepts either).

The scanner (:mod:`tray.protocol.scanner`) withholds the bytes of a sequence while it
may still become a query; :func:`could_be_query` says when it no longer can.
"""

from __future__ import annotations

import re
from typing import Final

ST: Final = b"\x1b\\"
BEL: Final = b"\x07"
# What follows "ESC ]" in each kind of sequence.
REPORT_PREFIX: Final = b"7501;"
KITTY_PREFIX: Final = b"99;"

_BLANKS: Final = b" \t"
_QUERY_TAIL: Final = re.compile(rb"[ \t]*(?:\?[ \t]*)?")
_OSC7501_ANSWER: Final = b"\x1b]7501;?"

# The capabilities tray answers, each only for what it really does with an OSC 99:
# - p: it reads a notification's title and body (icons, buttons, sounds are dropped);
# - o: it honours when to show one: unfocused and invisible only while the session is
#   unseen (core/policy/schedule.py).
# Left out, as kitty's page says to when a terminal does not implement them: a (tray
# never reads it: a click on tray's notification does what a click on any of them does,
# and nothing is ever reported into the program's input), c (no close events), s (no
# sounds), u (urgency is tray's own, from the record), w (no expiry).
KITTY_CAPABILITIES: Final = b"p=title,body:o=always,unfocused,invisible"
# kitty's id characters. Only an id of these is ever echoed: the answer goes into the
# program's input, where arbitrary bytes would be typed keys.
_ID: Final = rb"[A-Za-z0-9_+.-]{1,64}"
# A query and nothing else: p=? with an optional id, in either order, and no payload.
# Any other key (d=, e=, o=...), an empty pair, a repeated key or a payload makes it
# something tray does not answer.
_KITTY_QUERY: Final = re.compile(rb"(?:i=(" + _ID + rb"):p=\?|p=\?(?::i=(" + _ID + rb"))?);")
# Every prefix of such a query: while the bytes after "99;" match this, a query may
# still come of them.
_KITTY_QUERY_START: Final = re.compile(
    rb"(?:i(?:=(?:ID(?::(?:p(?:=(?:\?;?)?)?)?)?)?)?"
    rb"|p(?:=(?:\?(?:;|:(?:i(?:=(?:ID;?)?)?)?)?)?)?)?".replace(b"ID", _ID)
)


def answer_osc7501(payload: bytes, st: bool) -> bytes | None:
    """The answer to an OSC 7501 whose bytes after ``7501;`` are ``payload`` and whose
    terminator is ST (``st``) or BEL; None when it is not a support query.

    >>> answer_osc7501(b" ? ", False)
    b'\\x1b]7501;?\\x07'
    >>> answer_osc7501(b"??", True) is None
    True
    """
    if payload.strip(_BLANKS) != b"?":
        return None
    return _OSC7501_ANSWER + (ST if st else BEL)


def answer_kitty(payload: bytes, st: bool) -> bytes | None:
    """The answer to an OSC 99 whose bytes after ``99;`` are ``payload``; None when it
    is not exactly a support query. Without an id, the answer says ``i=0``, as kitty's.

    >>> answer_kitty(b"i=opentui-notifications:p=?;", True)
    b'\\x1b]99;i=opentui-notifications:p=?;p=title,body:o=always,unfocused,invisible\\x1b\\\\'
    >>> answer_kitty(b"p=?;", False)
    b'\\x1b]99;i=0:p=?;p=title,body:o=always,unfocused,invisible\\x07'
    >>> answer_kitty(b"i=1:p=title;Hello", True) is None  # a notification
    True
    >>> answer_kitty(b"i=a b:p=?;", True) is None  # an id that is not echoed
    True
    """
    match = _KITTY_QUERY.fullmatch(payload)
    if match is None:
        return None
    identifier = match[1] or match[2] or b"0"
    return b"\x1b]99;i=" + identifier + b":p=?;" + KITTY_CAPABILITIES + (ST if st else BEL)


def _could_be_osc7501_query(body: bytes | bytearray) -> bool:
    if len(body) <= len(REPORT_PREFIX):
        return REPORT_PREFIX.startswith(body)
    return (
        body.startswith(REPORT_PREFIX)
        and _QUERY_TAIL.fullmatch(body, len(REPORT_PREFIX)) is not None
    )


def _could_be_kitty_query(body: bytes | bytearray) -> bool:
    if len(body) <= len(KITTY_PREFIX):
        return KITTY_PREFIX.startswith(body)
    return (
        body.startswith(KITTY_PREFIX)
        and _KITTY_QUERY_START.fullmatch(body, len(KITTY_PREFIX)) is not None
    )


def could_be_query(body: bytes | bytearray) -> bool:
    """True while ``body`` (the bytes of an OSC after ``ESC ]``, so far) may still grow
    into a support query.

    >>> [could_be_query(b) for b in (b"", b"750", b"7501; ?", b"99;i=x:p", b"99;p=?;")]
    [True, True, True, True, True]
    >>> [could_be_query(b) for b in (b"7501;s", b"99;i=1:d", b"99;p=?;x", b"0;title")]
    [False, False, False, False]
    """
    return _could_be_osc7501_query(body) or _could_be_kitty_query(body)


def could_be_osc7501_or_query(body: bytes | bytearray) -> bool:
    """True while ``body`` may still grow into any OSC 7501 sequence or a support query:
    what a launcher inside another one withholds.

    >>> could_be_osc7501_or_query(b"7501;state=work"), could_be_osc7501_or_query(b"9;hi")
    (True, False)
    """
    if len(body) <= len(REPORT_PREFIX):
        return REPORT_PREFIX.startswith(body) or _could_be_kitty_query(body)
    return body.startswith(REPORT_PREFIX) or _could_be_kitty_query(body)


__all__ = [
    "KITTY_CAPABILITIES",
    "KITTY_PREFIX",
    "REPORT_PREFIX",
    "answer_kitty",
    "answer_osc7501",
    "could_be_osc7501_or_query",
    "could_be_query",
]
