"""What the scanner (:mod:`tray.protocol.scanner`) finds in a program's output: one value
type for each kind of sequence it reports, and :data:`Event`, any of them.

>>> Osc(777, b"notify;Build;done").number
777
>>> isinstance(Bell(), Event)
True
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Query:
    """A support query (:mod:`tray.protocol.support_queries`); ``answer`` is what goes
    back into the program's input, and ``number`` the OSC it came in: 7501, or 99 for
    kitty's notifications."""

    answer: bytes
    number: int = 7501


@dataclass(frozen=True, slots=True)
class RawReport:
    """A complete, size-checked OSC 7501 report; ``body`` follows ``7501;``."""

    body: bytes


@dataclass(frozen=True, slots=True)
class PromptStart:
    """OSC 133 or OSC 633 ``A``: a new shell prompt begins.

    The same mark also gives an :class:`Osc`, right after this event.
    """


@dataclass(frozen=True, slots=True)
class FullReset:
    """RIS (``ESC c``)."""


@dataclass(frozen=True, slots=True)
class Bell:
    """A BEL outside any OSC, DCS, SOS, PM or APC string: the program rang the bell."""


@dataclass(frozen=True, slots=True)
class Osc:
    """A complete OSC 7, 9, 99, 133, 633 or 777 of at most 4096 bytes.

    ``number`` is the decimal before the first ``;`` and ``payload`` everything after it,
    without the terminator: ``Osc(133, b"D;0")``, ``Osc(777, b"notify;Title;Body")``.
    """

    number: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class Title:
    """An OSC 0 or 2 whose text is not the last title's, from a scanner asked for titles:
    ``text`` is everything after ``0;`` or ``2;``, without the terminator."""

    text: bytes


@dataclass(frozen=True, slots=True)
class FocusReporting:
    """``CSI ? ... h`` or ``CSI ? ... l`` with 1004 among its modes: focus events on or off."""

    on: bool


@dataclass(frozen=True, slots=True)
class CursorQuery:
    """``CSI 6 n`` or ``CSI ? 6 n``: a ``CSI row ; col R`` on the input is the reply."""


Event = (
    Query | RawReport | PromptStart | FullReset | Bell | Osc | Title | FocusReporting | CursorQuery
)
