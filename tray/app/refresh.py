"""Pure: when the app refreshes, and when a changed menu goes to the tray, so that a
storm of file changes costs a few refreshes and fewer menu rebuilds.

Launchers rewrite their files up to ten times a second each; twenty busy sessions would
otherwise mean two hundred full refreshes a second, and a menu rebuilt for each. Both
gates let the first change after a quiet spell through at once, so an isolated report
still reaches the icon, the menu and the policy without delay.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

# Short enough that a ping or a new icon never seems late, long enough that a busy
# directory costs a handful of refreshes a second.
REFRESH_INTERVAL = 0.25
# A menu whose only change is its text (a message, a percentage, an age) is rebuilt at
# most this often: the backend rebuilds every item of it, which costs far more than a
# refresh, and a message a second old is as good to read as a new one.
MENU_TEXT_PERIOD = 1.0

_NOTHING: Hashable = object()


class RefreshGate:
    """At most one requested refresh per ``interval``; every request is served by the
    next one. A request after a quiet spell goes at once; later ones wait for the
    interval's end and are served together.

    Times are passed in. A clock that goes back (a wall clock set back) opens the gate,
    so it can never stay shut for the size of the jump.
    """

    __slots__ = ("_interval", "_last", "_pending")

    def __init__(self, interval: float = REFRESH_INTERVAL) -> None:
        if interval < 0:
            raise ValueError("interval must not be negative")
        self._interval = interval
        self._last = -math.inf
        self._pending = False

    @property
    def pending(self) -> bool:
        return self._pending

    def request(self) -> None:
        """Something changed; the next refresh must see it."""
        self._pending = True

    def open_at(self, now: float) -> float:
        """From when a refresh may start (``now`` or earlier: at once)."""
        if now < self._last:
            return now
        return self._last + self._interval

    def ready_at(self, now: float) -> float | None:
        """When the pending refresh may run; None while none is pending."""
        return self.open_at(now) if self._pending else None

    def begin(self, now: float) -> bool:
        """Whether to refresh now; if so, the request is taken and the interval starts."""
        ready = self.ready_at(now)
        if ready is None or ready > now:
            return False
        self._pending = False
        self._last = now
        return True


class MenuPacer:
    """Decides when the menu is rebuilt and handed to the tray.

    The caller describes each new state twice. Its ``outline`` is what must show at
    once: the icon, whether pings are paused, and each session's place and state. Its
    ``text`` is the built menu's every word and flag. A new outline, or a change after a
    quiet ``period``, is rebuilt at once; any other change (a message, a percentage, an
    age) waits for the end of the period, and then only the latest state is built. A
    menu the tray already shows is never handed over again.
    """

    __slots__ = ("_last", "_outline", "_period", "_text", "_waiting")

    def __init__(self, period: float = MENU_TEXT_PERIOD) -> None:
        if period < 0:
            raise ValueError("period must not be negative")
        self._period = period
        self._outline: Hashable = _NOTHING
        self._text: Hashable = _NOTHING
        self._last = -math.inf
        self._waiting = False

    def ready(self, outline: Hashable, now: float) -> bool:
        """Whether to build the menu now; if not, it is held until :meth:`due_at`."""
        quiet = now >= self._last + self._period or now < self._last
        if outline != self._outline or quiet:
            return True
        self._waiting = True
        return False

    def offer(self, outline: Hashable, text: Hashable, now: float) -> bool:
        """Whether to hand the menu just built to the tray; if so, it counts as handed."""
        self._waiting = False
        if outline == self._outline and text == self._text:
            return False
        self._outline, self._text, self._last = outline, text, now
        return True

    def due_at(self) -> float | None:
        """When a held change should be built; None when none is held."""
        return self._last + self._period if self._waiting else None


@dataclass(frozen=True, slots=True)
class ItemLook:
    """One menu item as the user sees it."""

    text: str
    # enabled, visible, default, checked, radio
    flags: tuple[bool, bool, bool, bool | None, bool]
    submenu: tuple[ItemLook, ...] | None


def menu_text(menu: Any) -> tuple[ItemLook, ...]:
    """Everything a pystray menu shows: each item's text and flags, submenus included.

    Reading ``text`` runs a callable label, as a backend does when it builds the menu.
    """
    if not menu:
        return ()
    return tuple(
        ItemLook(
            str(item.text),
            (
                bool(item.enabled),
                bool(item.visible),
                bool(item.default),
                item.checked,
                bool(item.radio),
            ),
            menu_text(item.submenu) if item.submenu else None,
        )
        for item in menu.items
    )
