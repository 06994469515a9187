"""``[away]``: when the user counts as away from the desk, and where pings then also go.

Pure: it reads an already parsed TOML table. Whether Apprise accepts a URL is asked
through ``accepts``, which only the app passes (tray.outlets.forward.apprise_accepts):
Apprise must never be imported on the ``tray run`` path, which reads this file too.

The URLs are secrets (``pover://USER@TOKEN``): no message, repr or error here holds
more of one than its scheme.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from tray.core.durations import parse_duration

AWAY_STATES = ("blocked", "error", "done")
DEFAULT_AFTER = 300.0
DEFAULT_STATES = frozenset({"blocked", "error"})
KNOWN_KEYS = ("after", "forward", "states")
# RFC 3986's scheme, then "://": what every Apprise URL starts with.
_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
# Zero is refused too: away at once would forward every ping, even at the desk.
_EXPECTED_AFTER: Final = (
    'expected a duration above 0: a number of seconds, or text such as "30s", "5m", "1h"'
)


class AwayConfigError(ValueError):
    """An ``[away]`` setting that cannot be used; ``key`` names it (``away.forward``)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True, slots=True)
class AwaySettings:
    """``after`` in seconds; ``forward`` the Apprise URLs, in the file's order; ``states``
    the ping states that are forwarded while the user is away."""

    after: float = DEFAULT_AFTER
    forward: tuple[str, ...] = ()
    states: frozenset[str] = DEFAULT_STATES

    def __repr__(self) -> str:
        # Written here, so dataclass keeps it: its own would print the URLs, and a repr
        # ends up in logs and tracebacks.
        schemes = [scheme_of(url) for url in self.forward]
        return f"AwaySettings(after={self.after!r}, forward={schemes!r}, states={self.states!r})"

    @property
    def schemes(self) -> tuple[str, ...]:
        """Each forward URL's scheme, lower case, once each, in order: all a user may see."""
        return tuple(dict.fromkeys(scheme_of(url) for url in self.forward))


def scheme_of(url: str) -> str:
    """The URL's scheme, lower case, or "?" when it has none: never any more of it."""
    match = _SCHEME.match(url.strip())
    return match.group(1).lower() if match else "?"


def parse_away(
    value: object,
    key: str = "away",
    accepts: Callable[[str], bool] | None = None,
) -> AwaySettings:
    """The ``[away]`` table; raises :class:`AwayConfigError` naming the key.

    ``accepts`` tells whether Apprise knows a URL; without it only the shape
    (``scheme://...``) is checked, which is all ``tray run`` needs.
    """
    if not isinstance(value, dict):
        raise AwayConfigError(key, "expected a table ([away])")
    for name in value:
        if name not in KNOWN_KEYS:
            raise AwayConfigError(f"{key}.{name}", f"unknown key (known: {', '.join(KNOWN_KEYS)})")
    after = DEFAULT_AFTER
    if "after" in value:
        after = _after(value["after"], f"{key}.after")
    forward: tuple[str, ...] = ()
    if "forward" in value:
        forward = _forward(value["forward"], f"{key}.forward", accepts)
    states = DEFAULT_STATES
    if "states" in value:
        states = _states(value["states"], f"{key}.states")
    return AwaySettings(after, forward, states)


def check_forward(
    settings: AwaySettings, accepts: Callable[[str], bool], key: str = "away"
) -> None:
    """Raise :class:`AwayConfigError` for the first URL that ``accepts`` refuses."""
    _forward(list(settings.forward), f"{key}.forward", accepts)


def _after(value: object, key: str) -> float:
    # One message for a bad duration and for 0: parse_duration's own says ">= 0".
    try:
        seconds = parse_duration(value)
    except ValueError:
        raise AwayConfigError(key, _EXPECTED_AFTER) from None
    if seconds <= 0:
        raise AwayConfigError(key, _EXPECTED_AFTER)
    return seconds


def _forward(value: object, key: str, accepts: Callable[[str], bool] | None) -> tuple[str, ...]:
    expected = 'expected a list of Apprise URLs such as ["ntfys://ntfy.sh/my-topic"]'
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        # Never echo the value: it may be a URL with its secret, only mistyped.
        raise AwayConfigError(key, expected)
    urls: list[str] = []
    for index, item in enumerate(value):
        url = item.strip()
        scheme = scheme_of(url)
        if scheme == "?":
            raise AwayConfigError(f"{key}[{index}]", f"{expected}; this one has no scheme://")
        if accepts is not None and not accepts(url):
            raise AwayConfigError(
                f"{key}[{index}]",
                f"Apprise does not accept this {scheme}:// URL (see its wiki for the form)",
            )
        urls.append(url)
    return tuple(dict.fromkeys(urls))


def _states(value: object, key: str) -> frozenset[str]:
    expected = 'expected a list of states from "blocked", "error", "done"'
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise AwayConfigError(key, expected)
    if any(item not in AWAY_STATES for item in value):
        raise AwayConfigError(key, expected)
    return frozenset(value)


__all__ = [
    "AWAY_STATES",
    "AwayConfigError",
    "AwaySettings",
    "check_forward",
    "parse_away",
    "scheme_of",
]
