"""The user's settings: ``config.toml`` read into typed values, with errors that name the key."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from tray.core.answers.gate import (
    DEFAULT_SETTINGS,
    AnswerConfigError,
    AnswerSettings,
    AppKeys,
    parse_answer,
)
from tray.core.config.durations import parse_duration

if TYPE_CHECKING:
    # Imported where their tables are parsed: a file without [away] or [[hosts]] (and
    # every `tray run`'s start, which reads the file) never loads them.
    from tray.core.config.away import AwaySettings
    from tray.core.config.hosts import HostConfig

T = TypeVar("T")

FILE_NAME = "config.toml"
NOTIFY_STATES = ("blocked", "error", "done")

_QUIET_HOURS: Final = re.compile(r"(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})")


def _json_string(text: str) -> str:
    """``text`` quoted as JSON (and as a TOML basic string), for error messages."""
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """``[notify]``. ``quiet_hours`` is (start, end) in minutes of the local day, and
    wraps past midnight when start >= end; ``remind`` 0 turns reminders off."""

    enabled: bool = True
    states: frozenset[str] = frozenset({"blocked", "error", "done"})
    settle: float = 1.0
    dedup_window: float = 30.0
    burst: int = 3
    burst_window: float = 10.0
    typing_grace: float = 5.0
    done_after: float = 30.0
    quiet_hours: tuple[int, int] | None = None
    when_focused: bool = False
    terminal_notifications: bool = True
    remind: float = 300.0


class ConfigError(ValueError):
    """A config file that cannot be used, with a one-line message naming the key."""


@dataclass(frozen=True, slots=True)
class SessionsConfig:
    """``[sessions]``: how long an ended session stays listed, in seconds."""

    keep_ended: float = 24 * 3600.0


# The contract's defaults: agents with sessions of their own, and full-screen or
# open-ended programs whose end is no news.
DEFAULT_WRAP = (
    "claude",
    "codex",
    "pi",
    "crush",
    "gemini",
    "opencode",
    "aider",
    "goose",
    "amp",
    "cursor-agent",
    "copilot",
)
DEFAULT_IGNORE = ("vim", "nvim", "less", "man", "ssh", "tmux", "watch", "top", "htop")
# Names end up as shell function names and in shell code: nothing a shell would parse.
_COMMAND_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


@dataclass(frozen=True, slots=True)
class ShellConfig:
    """``[shell]``: commands ``tray init`` runs under ``tray run``, and ones never reported."""

    wrap: tuple[str, ...] = DEFAULT_WRAP
    ignore: tuple[str, ...] = DEFAULT_IGNORE


# The defaults are values no one can change, so every Config can share them.
_DEFAULT_SESSIONS = SessionsConfig()
_DEFAULT_NOTIFY = PolicySettings()
_DEFAULT_SHELL = ShellConfig()


@dataclass(frozen=True, slots=True)
class Config:
    """The whole file. ``notify`` is the notification policy's settings, straight: the
    policy is pure and reads no file. ``away`` is None without an ``[away]`` table."""

    sessions: SessionsConfig = _DEFAULT_SESSIONS
    notify: PolicySettings = _DEFAULT_NOTIFY
    shell: ShellConfig = _DEFAULT_SHELL
    hosts: tuple[HostConfig, ...] = ()
    answer: AnswerSettings = DEFAULT_SETTINGS
    away: AwaySettings | None = None


def parse_config(
    document: Mapping[str, Any],
    origin: str = FILE_NAME,
    known_keys: Mapping[str, AppKeys] | None = None,
) -> Config:
    """Settings from an already parsed TOML document; ``origin`` prefixes error messages.
    ``known_keys`` are the answer keys of the agents' rules files."""
    try:
        return _parse(document, known_keys or {})
    except _BadKeyError as error:
        raise ConfigError(f"{origin}: {error.key}: {error.problem}") from None


class _BadKeyError(Exception):
    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


# The tables of config.toml; each has a ``_parse_<table>`` of its own below.
_TABLES: Final = ("sessions", "notify", "shell", "hosts", "answer", "away")


def _parse(document: Mapping[str, Any], known_keys: Mapping[str, AppKeys]) -> Config:
    _no_unknown_keys(document, _TABLES, "")
    return Config(
        sessions=_parse_sessions(_table(document, "sessions")),
        notify=_parse_notify(_table(document, "notify")),
        shell=_parse_shell(_table(document, "shell")),
        hosts=_parse_hosts(document),
        answer=_parse_answer(document, known_keys),
        away=_parse_away(document),
    )


def _parse_answer(document: Mapping[str, Any], known_keys: Mapping[str, AppKeys]) -> AnswerSettings:
    try:
        return parse_answer(document, known_keys)
    except AnswerConfigError as error:
        raise _BadKeyError(error.key, error.problem) from None


def _parse_away(document: Mapping[str, Any]) -> AwaySettings | None:
    if "away" not in document:
        return None
    from tray.core.config.away import AwayConfigError, parse_away  # noqa: PLC0415

    # Its URLs are checked for shape only: whether Apprise knows them is the app's
    # question (tray.outlets.forward).
    try:
        return parse_away(document["away"])
    except AwayConfigError as error:
        raise _BadKeyError(error.key, error.problem) from None


def _parse_sessions(sessions: Mapping[str, Any]) -> SessionsConfig:
    _no_unknown_keys(sessions, ("keep_ended",), "sessions.")
    base = SessionsConfig()
    return SessionsConfig(
        keep_ended=_get(sessions, "sessions.keep_ended", parse_duration, base.keep_ended),
    )


def _parse_notify(notify: Mapping[str, Any]) -> PolicySettings:
    _no_unknown_keys(
        notify,
        (
            "enabled",
            "states",
            "settle",
            "dedup_window",
            "burst",
            "burst_window",
            "typing_grace",
            "done_after",
            "quiet_hours",
            "when_focused",
            "terminal_notifications",
            "remind",
        ),
        "notify.",
    )
    base = PolicySettings()
    return PolicySettings(
        enabled=_get(notify, "notify.enabled", _boolean, base.enabled),
        states=_get(notify, "notify.states", _states, base.states),
        settle=_get(notify, "notify.settle", parse_duration, base.settle),
        dedup_window=_get(notify, "notify.dedup_window", parse_duration, base.dedup_window),
        burst=_get(notify, "notify.burst", _positive_int, base.burst),
        burst_window=_get(notify, "notify.burst_window", parse_duration, base.burst_window),
        typing_grace=_get(notify, "notify.typing_grace", parse_duration, base.typing_grace),
        done_after=_get(notify, "notify.done_after", parse_duration, base.done_after),
        quiet_hours=_get(notify, "notify.quiet_hours", _quiet_hours, None),
        when_focused=_get(notify, "notify.when_focused", _boolean, base.when_focused),
        terminal_notifications=_get(
            notify, "notify.terminal_notifications", _boolean, base.terminal_notifications
        ),
        remind=_get(notify, "notify.remind", parse_duration, base.remind),
    )


def _parse_hosts(document: Mapping[str, Any]) -> tuple[HostConfig, ...]:
    if "hosts" not in document:
        return ()
    from tray.core.config.hosts import HostConfigError, parse_hosts  # noqa: PLC0415

    try:
        return parse_hosts(document["hosts"])
    except HostConfigError as error:
        raise _BadKeyError(error.key, error.problem) from None


def _parse_shell(shell: Mapping[str, Any]) -> ShellConfig:
    _no_unknown_keys(shell, ("wrap", "ignore"), "shell.")
    return ShellConfig(
        wrap=_get(shell, "shell.wrap", _command_names, DEFAULT_WRAP),
        ignore=_get(shell, "shell.ignore", _command_names, DEFAULT_IGNORE),
    )


def _command_names(value: object) -> tuple[str, ...]:
    expected = 'expected a list of command names such as ["claude", "codex"]'
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(expected)
    if not all(_COMMAND_NAME.fullmatch(item) for item in value):
        raise ValueError(expected)
    return tuple(dict.fromkeys(value))


def _no_unknown_keys(table: Mapping[str, Any], known: tuple[str, ...], prefix: str) -> None:
    for key in table:
        if key not in known:
            raise _BadKeyError(f"{prefix}{key}", f"unknown key (known: {', '.join(known)})")


def _table(document: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = document.get(key, {})
    if not isinstance(value, dict):
        raise _BadKeyError(key, f"expected a table, got {_show(value)}")
    return value


def _get(table: Mapping[str, Any], key: str, convert: Callable[[object], T], default: T) -> T:
    name = key.rsplit(".", 1)[-1]
    if name not in table:
        return default
    try:
        return convert(table[name])
    except ValueError as error:
        raise _BadKeyError(key, f"{error}, got {_show(table[name])}") from None


def _show(value: object) -> str:
    """A value as the user wrote it in TOML, near enough to find it in the file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    return str(value)


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _positive_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected a whole number >= 1")
    return value


def _states(value: object) -> frozenset[str]:
    if (
        not isinstance(value, list)
        or not all(isinstance(item, str) for item in value)
        or any(item not in NOTIFY_STATES for item in value)
    ):
        raise ValueError(
            f"expected a list of states from {', '.join(map(_json_string, NOTIFY_STATES))}"
        )
    return frozenset(value)


def _quiet_hours(value: object) -> tuple[int, int]:
    expected = 'expected "HH:MM-HH:MM" with different start and end, such as "22:00-07:30"'
    if not isinstance(value, str):
        raise ValueError(expected)
    match = _QUIET_HOURS.fullmatch(value.strip())
    if match is None:
        raise ValueError(expected)
    start_hour, start_minute, end_hour, end_minute = (int(part) for part in match.groups())
    if max(start_hour, end_hour) > 23 or max(start_minute, end_minute) > 59:
        raise ValueError(expected)
    start = start_hour * 60 + start_minute
    end = end_hour * 60 + end_minute
    if start == end:
        raise ValueError(expected)
    return start, end


__all__ = [
    "Config",
    "ConfigError",
    "SessionsConfig",
    "ShellConfig",
    "parse_config",
]
