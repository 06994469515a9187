"""The user's settings: ``config.toml`` read into typed values, with errors that name the key."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from tray.core.answers.gate import DEFAULT_SETTINGS, AnswerSettings, AppKeys
from tray.core.config.answer import parse_answer
from tray.core.config.durations import parse_duration
from tray.core.config.parsing import ConfigError, no_unknown_keys, quoted, setting, table
from tray.protocol.state import PINGED, STATE_NAMED, State

if TYPE_CHECKING:
    # Imported where their tables are parsed: a file without [away] or [[hosts]] (and
    # every `tray run`'s start, which reads the file) never loads them.
    from tray.core.config.away import AwaySettings
    from tray.core.config.hosts import HostConfig

FILE_NAME = "config.toml"

_QUIET_HOURS: Final = re.compile(r"(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})")


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """``[notify]``. ``quiet_hours`` is (start, end) in minutes of the local day, and
    wraps past midnight when start >= end; ``remind`` 0 turns reminders off."""

    enabled: bool = True
    states: frozenset[State] = frozenset(PINGED)
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
    except ConfigError as error:
        raise error.within(origin) from None


# The tables of config.toml; each has a ``_parse_<table>`` of its own below.
_TABLES: Final = ("sessions", "notify", "shell", "hosts", "answer", "away")


def _parse(document: Mapping[str, Any], known_keys: Mapping[str, AppKeys]) -> Config:
    no_unknown_keys(document, _TABLES)
    return Config(
        sessions=_parse_sessions(table(document, "sessions")),
        notify=_parse_notify(table(document, "notify")),
        shell=_parse_shell(table(document, "shell")),
        hosts=_parse_hosts(document),
        answer=parse_answer(document, known_keys),
        away=_parse_away(document),
    )


def _parse_away(document: Mapping[str, Any]) -> AwaySettings | None:
    if "away" not in document:
        return None
    from tray.core.config.away import parse_away  # noqa: PLC0415

    # Its URLs are checked for shape only: whether Apprise knows them is the app's
    # question (tray.outlets.forward).
    return parse_away(document["away"])


def _parse_sessions(sessions: Mapping[str, Any]) -> SessionsConfig:
    no_unknown_keys(sessions, ("keep_ended",), "sessions.")
    base = SessionsConfig()
    return SessionsConfig(
        keep_ended=setting(sessions, "sessions.keep_ended", parse_duration, base.keep_ended),
    )


def _parse_notify(notify: Mapping[str, Any]) -> PolicySettings:
    no_unknown_keys(
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
        enabled=setting(notify, "notify.enabled", _boolean, base.enabled),
        states=setting(notify, "notify.states", _states, base.states),
        settle=setting(notify, "notify.settle", parse_duration, base.settle),
        dedup_window=setting(notify, "notify.dedup_window", parse_duration, base.dedup_window),
        burst=setting(notify, "notify.burst", _positive_int, base.burst),
        burst_window=setting(notify, "notify.burst_window", parse_duration, base.burst_window),
        typing_grace=setting(notify, "notify.typing_grace", parse_duration, base.typing_grace),
        done_after=setting(notify, "notify.done_after", parse_duration, base.done_after),
        quiet_hours=setting(notify, "notify.quiet_hours", _quiet_hours, None),
        when_focused=setting(notify, "notify.when_focused", _boolean, base.when_focused),
        terminal_notifications=setting(
            notify, "notify.terminal_notifications", _boolean, base.terminal_notifications
        ),
        remind=setting(notify, "notify.remind", parse_duration, base.remind),
    )


def _parse_hosts(document: Mapping[str, Any]) -> tuple[HostConfig, ...]:
    if "hosts" not in document:
        return ()
    from tray.core.config.hosts import parse_hosts  # noqa: PLC0415

    return parse_hosts(document["hosts"])


def _parse_shell(shell: Mapping[str, Any]) -> ShellConfig:
    no_unknown_keys(shell, ("wrap", "ignore"), "shell.")
    return ShellConfig(
        wrap=setting(shell, "shell.wrap", _command_names, DEFAULT_WRAP),
        ignore=setting(shell, "shell.ignore", _command_names, DEFAULT_IGNORE),
    )


def _command_names(value: object) -> tuple[str, ...]:
    expected = 'expected a list of command names such as ["claude", "codex"]'
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(expected)
    if not all(_COMMAND_NAME.fullmatch(item) for item in value):
        raise ValueError(expected)
    return tuple(dict.fromkeys(value))


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _positive_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected a whole number >= 1")
    return value


def _states(value: object) -> frozenset[State]:
    if (
        not isinstance(value, list)
        or not all(isinstance(item, str) for item in value)
        or any(item not in PINGED for item in value)
    ):
        raise ValueError(f"expected a list of states from {', '.join(map(quoted, PINGED))}")
    return frozenset(STATE_NAMED[item] for item in value)


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
