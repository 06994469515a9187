"""``[away]``: when the user counts as away from the desk, and where pings then also go.

Pure: it reads an already parsed TOML table. Whether Apprise accepts a URL is asked
through ``accepts``, which only the app passes (tray.outlets.forward.apprise_accepts):
Apprise must never be imported on the ``tray run`` path, which reads this file too.

The URLs are secrets (``pover://USER@TOKEN``): no message, repr or error here holds
more of one than its scheme.
"""

from __future__ import annotations

import re

from tray.base.value import Value

# typing is for mypy only: importing it would cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

AWAY_STATES = ("blocked", "error", "done")
DEFAULT_AFTER = 300.0
DEFAULT_STATES = frozenset({"blocked", "error"})
KNOWN_KEYS = ("after", "forward", "states")
# RFC 3986's scheme, then "://": what every Apprise URL starts with.
_SCHEME = r"([A-Za-z][A-Za-z0-9+.-]*)://"


class AwayConfigError(ValueError):
    """An ``[away]`` setting that cannot be used; ``key`` names it (``away.forward``)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


class AwaySettings(Value):
    """``after`` in seconds; ``forward`` the Apprise URLs, in the file's order; ``states``
    the ping states that are forwarded while the user is away."""

    __slots__ = ("after", "forward", "states")

    def __init__(
        self,
        after: float = DEFAULT_AFTER,
        forward: tuple[str, ...] = (),
        states: frozenset[str] = DEFAULT_STATES,
    ) -> None:
        self.after: Final = after
        self.forward: Final = forward
        self.states: Final = states

    def __repr__(self) -> str:
        # Value's repr would print the URLs, and a repr ends up in logs and tracebacks.
        schemes = [scheme_of(url) for url in self.forward]
        return f"AwaySettings(after={self.after!r}, forward={schemes!r}, states={self.states!r})"

    @property
    def schemes(self) -> tuple[str, ...]:
        """Each forward URL's scheme, lower case, once each, in order: all a user may see."""
        return tuple(dict.fromkeys(scheme_of(url) for url in self.forward))


def scheme_of(url: str) -> str:
    """The URL's scheme, lower case, or "?" when it has none: never any more of it."""
    match = re.match(_SCHEME, url.strip())
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
    # Imported here: tray.core.config imports this module, and owns the duration syntax.
    from tray.core.durations import parse_duration  # noqa: PLC0415

    try:
        seconds = parse_duration(value)
    except ValueError as error:
        raise AwayConfigError(key, str(error)) from None
    if seconds <= 0:
        raise AwayConfigError(key, 'expected a duration above 0, such as "5m"')
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
