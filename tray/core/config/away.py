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

from tray.core.config.durations import parse_duration
from tray.core.config.parsing import ConfigError, checked, no_unknown_keys, quoted
from tray.protocol.state import PINGED, STATE_NAMED, State

# The ping states, of which [away] forwards those it names.
AWAY_STATES = PINGED
DEFAULT_AFTER = 300.0
DEFAULT_STATES = frozenset({State.BLOCKED, State.ERROR})
KNOWN_KEYS = ("after", "forward", "states", "answer", "answer_token")
# An ntfy topic's name, ntfy's way: 1 to 64 of these characters.
NTFY_TOPIC: Final = re.compile(r"[-_A-Za-z0-9]{1,64}")
# An ntfy server's URL: the scheme, a host name or an IPv6 address in brackets (no user),
# perhaps a port, then path parts, none empty; nothing after.
_NTFY_URL: Final = re.compile(
    r"(?i:(https?))://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
    r"(?::([0-9]{1,5}))?((?:/[^/?#\s]+)*)"
)
_MAX_PORT: Final = 65535
_TOKEN: Final = re.compile(r"[!-~]{1,256}")
# Apprise's ntfy URLs: ntfy:// or ntfys://, perhaps a user, a host (or, alone, a topic of
# ntfy.sh), then topics as the path, then options.
_APPRISE_NTFY: Final = re.compile(r"(?i:ntfys?)://(?:[^@/?#]*@)?([^/?#]+)(/[^?#]*)?(?:\?.*)?")
# RFC 3986's scheme, then "://": what every Apprise URL starts with.
_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
# Zero is refused too: away at once would forward every ping, even at the desk.
_EXPECTED_AFTER: Final = (
    'expected a duration above 0: a number of seconds, or text such as "30s", "5m", "1h"'
)


@dataclass(frozen=True, slots=True)
class AwaySettings:
    """``after`` in seconds; ``forward`` the Apprise URLs, in the file's order; ``states``
    the ping states that are forwarded while the user is away."""

    after: float = DEFAULT_AFTER
    forward: tuple[str, ...] = ()
    states: frozenset[State] = DEFAULT_STATES
    # Answering from the phone: the ntfy topic's URL, and its server's access token.
    answer: str | None = None
    answer_token: str | None = None

    def __repr__(self) -> str:
        # Written here, so dataclass keeps it: its own would print the URLs, the topic and
        # the token, and a repr ends up in logs and tracebacks.
        schemes = [scheme_of(url) for url in self.forward]
        answer = None if self.answer is None else answer_server(self.answer)
        return (
            f"AwaySettings(after={self.after!r}, forward={schemes!r}, states={self.states!r},"
            f" answer={answer!r}, answer_token={'set' if self.answer_token else None!r})"
        )

    @property
    def schemes(self) -> tuple[str, ...]:
        """Each forward URL's scheme, lower case, once each, in order: all a user may see."""
        return tuple(dict.fromkeys(scheme_of(url) for url in self.forward))


@dataclass(frozen=True, slots=True)
class NtfyServer:
    """Where an ntfy server is: ``https``, its host (an IPv6 one in brackets), its port
    (None: the scheme's), and the path it is served under ("" or "/prefix")."""

    https: bool
    host: str
    port: int | None
    prefix: str

    @property
    def base(self) -> str:
        port = "" if self.port is None else f":{self.port}"
        return f"{'https' if self.https else 'http'}://{self.host}{port}{self.prefix}"


def ntfy_server(url: str) -> NtfyServer:
    """The server of an ntfy URL, ``http(s)://host[:port][/path]``; ValueError naming what
    is wrong, never echoing the URL.

    >>> ntfy_server("https://[::1]:2586/ntfy").base
    'https://[::1]:2586/ntfy'
    """
    text = url.strip()
    if not text.lower().startswith(("https://", "http://")):
        raise ValueError("an ntfy URL must start with https:// or http://")
    match = _NTFY_URL.fullmatch(text)
    if match is None:
        raise ValueError(
            'expected an ntfy URL such as "https://ntfy.sh/my-topic": a host, perhaps a'
            " port, then the path, with no user, no empty part and no ? or # part"
        )
    scheme, host, port, path = match.groups()
    if port is not None and not 0 < int(port) <= _MAX_PORT:
        raise ValueError("the ntfy URL's port must be a number up to 65535")
    number = None if port is None else int(port)
    return NtfyServer(scheme.lower() == "https", host, number, path)


def ntfy_topic(url: str) -> tuple[str, str]:
    """The server's base URL and the topic of an ntfy topic URL; ValueError if it is not
    one (the message never holds the URL: the topic is a secret).

    >>> ntfy_topic("https://ntfy.sh/tray-7f3k2q9x")
    ('https://ntfy.sh', 'tray-7f3k2q9x')
    >>> ntfy_topic("http://127.0.0.1:8080/ntfy/alerts/")
    ('http://127.0.0.1:8080/ntfy', 'alerts')
    """
    text = url.strip()
    server = ntfy_server(text[:-1] if text.endswith("/") else text)
    head, _, topic = server.prefix.rpartition("/")
    if NTFY_TOPIC.fullmatch(topic) is None:
        raise ValueError(
            'expected an ntfy topic URL such as "https://ntfy.sh/my-topic", its topic'
            " 1 to 64 letters, digits, '-' or '_'"
        )
    return NtfyServer(server.https, server.host, server.port, head).base, topic


def answer_server(url: str) -> str:
    """All of an answer URL a user may be shown: its server, never its topic.

    >>> answer_server("https://ntfy.example.com:8443/secret-topic")
    'ntfy.example.com:8443'
    """
    base = ntfy_topic(url)[0]
    return base.split("://", 1)[1].split("/", 1)[0]


def without_topic(url: str, answer: str) -> str | None:
    """The Apprise URL ``url`` without ``answer``'s ntfy topic among the topics it
    publishes to on that server (None when that was its only one): a ping then goes to
    that topic once, with its buttons, and to the URL's other topics as before.

    >>> without_topic("ntfys://ntfy.sh/alerts", "https://ntfy.sh/alerts") is None
    True
    >>> without_topic("ntfy://alerts", "https://ntfy.sh/alerts") is None
    True
    >>> without_topic("ntfys://ntfy.sh/team/alerts?priority=high", "https://ntfy.sh/alerts")
    'ntfys://ntfy.sh/team?priority=high'
    >>> without_topic("ntfys://ntfy.example.com/alerts", "https://ntfy.sh/alerts")
    'ntfys://ntfy.example.com/alerts'
    """
    text = url.strip()
    match = _APPRISE_NTFY.fullmatch(text)
    if match is None:
        return text
    base, topic = ntfy_topic(answer)
    server = base.split("://", 1)[1].split("/", 1)[0].lower()
    topics = [part for part in (match.group(2) or "").split("/") if part]
    if not topics:  # ntfy://TOPIC: Apprise's form for ntfy.sh
        return None if server == "ntfy.sh" and match.group(1) == topic else text
    if match.group(1).lower() != server or topic not in topics:
        return text
    kept = [part for part in topics if part != topic]
    if not kept:
        return None
    return f"{text[: match.start(2)]}/{'/'.join(kept)}{text[match.end(2) :]}"


def scheme_of(url: str) -> str:
    """The URL's scheme, lower case, or "?" when it has none: never any more of it."""
    match = _SCHEME.match(url.strip())
    return match.group(1).lower() if match else "?"


def parse_away(
    value: object,
    key: str = "away",
    accepts: Callable[[str], bool] | None = None,
) -> AwaySettings:
    """The ``[away]`` table; raises :class:`ConfigError` naming the key.

    ``accepts`` tells whether Apprise knows a URL; without it only the shape
    (``scheme://...``) is checked, which is all ``tray run`` needs.
    """
    if not isinstance(value, dict):
        raise ConfigError("expected a table ([away])", key)
    no_unknown_keys(value, KNOWN_KEYS, f"{key}.")
    after = DEFAULT_AFTER
    if "after" in value:
        after = _after(value["after"], f"{key}.after")
    forward: tuple[str, ...] = ()
    if "forward" in value:
        forward = _forward(value["forward"], f"{key}.forward", accepts)
    states = DEFAULT_STATES
    if "states" in value:
        states = _states(value["states"], f"{key}.states")
    answer = _answer(value.get("answer"), f"{key}.answer")
    answer_token = _answer_token(value.get("answer_token"), f"{key}.answer_token")
    if answer_token is not None and answer is None:
        raise ConfigError("set only with away.answer", f"{key}.answer_token")
    return AwaySettings(after, forward, states, answer, answer_token)


def check_forward(
    settings: AwaySettings, accepts: Callable[[str], bool], key: str = "away"
) -> None:
    """Raise :class:`ConfigError` for the first URL that ``accepts`` refuses."""
    _forward(list(settings.forward), f"{key}.forward", accepts)


def _after(value: object, key: str) -> float:
    # One message for a bad duration and for 0: parse_duration's own says ">= 0".
    try:
        seconds = parse_duration(value)
    except ValueError:
        raise ConfigError(_EXPECTED_AFTER, key) from None
    if seconds <= 0:
        raise ConfigError(_EXPECTED_AFTER, key)
    return seconds


def _forward(value: object, key: str, accepts: Callable[[str], bool] | None) -> tuple[str, ...]:
    expected = 'expected a list of Apprise URLs such as ["ntfys://ntfy.sh/my-topic"]'
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        # Never echo the value: it may be a URL with its secret, only mistyped.
        raise ConfigError(expected, key)
    urls: list[str] = []
    for index, item in enumerate(value):
        url = item.strip()
        scheme = scheme_of(url)
        if scheme == "?":
            raise ConfigError(f"{expected}; this one has no scheme://", f"{key}[{index}]")
        if accepts is not None and not accepts(url):
            raise ConfigError(
                f"Apprise does not accept this {scheme}:// URL (see its wiki for the form)",
                f"{key}[{index}]",
            )
        urls.append(url)
    return tuple(dict.fromkeys(urls))


def _answer(value: object, key: str) -> str | None:
    if value is None:
        return None
    # Never echo the value: its topic is the user's secret.
    if not isinstance(value, str):
        raise ConfigError('expected an ntfy topic URL such as "https://ntfy.sh/my-topic"', key)
    checked(key, ntfy_topic, value)
    return value.strip()


def _answer_token(value: object, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or _TOKEN.fullmatch(value.strip()) is None:
        raise ConfigError('expected the ntfy server\'s access token, such as "tk_..."', key)
    return value.strip()


def _states(value: object, key: str) -> frozenset[State]:
    expected = f"expected a list of states from {', '.join(map(quoted, AWAY_STATES))}"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(expected, key)
    if any(item not in AWAY_STATES for item in value):
        raise ConfigError(expected, key)
    return frozenset(STATE_NAMED[item] for item in value)


__all__ = [
    "AWAY_STATES",
    "NTFY_TOPIC",
    "AwaySettings",
    "NtfyServer",
    "answer_server",
    "check_forward",
    "ntfy_server",
    "ntfy_topic",
    "parse_away",
    "scheme_of",
    "without_topic",
]
