"""Pure: the ``[[hosts]]`` tables of config.toml, checked and turned into :class:`HostConfig`.

Part of the core, beside ``config``, which reads them; the ssh command lines built from
them are the remote adapter's (``tray.core.hosts.ssh_commands``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from tray.core.config.parsing import ConfigError, no_unknown_keys, show

DEFAULT_REMOTE_COMMAND: Final = "tray"
# Host names end up in session ids ("host:devbox/<id>") and in notifications, so they
# are kept to characters that need no escaping anywhere and cannot fake a separator.
NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", re.ASCII)
MAX_DESTINATION: Final = 255
MAX_OPTIONS: Final = 64
MAX_OPTION: Final = 1024
MAX_REMOTE_COMMAND: Final = 1024
KNOWN_KEYS: Final = ("name", "destination", "ssh_options", "remote_command")


@dataclass(frozen=True, slots=True)
class HostConfig:
    name: str
    destination: str
    ssh_options: tuple[str, ...] = ()
    remote_command: str = DEFAULT_REMOTE_COMMAND


def parse_hosts(value: object, key: str = "hosts") -> tuple[HostConfig, ...]:
    """The ``hosts`` array of tables; raises :class:`ConfigError` naming the key."""
    if not isinstance(value, list):
        raise ConfigError(f"expected an array of tables ([[{key}]]), got {_show(value)}", key)
    hosts: list[HostConfig] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        where = f"{key}[{index}]"
        host = parse_host(item, where)
        folded = host.name.casefold()
        if folded in seen:
            raise ConfigError(
                f"{_show(host.name)} is already the name of {key}[{seen[folded]}]", f"{where}.name"
            )
        seen[folded] = index
        hosts.append(host)
    return tuple(hosts)


def parse_host(value: object, key: str) -> HostConfig:
    if not isinstance(value, Mapping):
        raise ConfigError(f"expected a table, got {_show(value)}", key)
    no_unknown_keys(value, KNOWN_KEYS, f"{key}.")
    for required in ("name", "destination"):
        if required not in value:
            raise ConfigError("missing", f"{key}.{required}")
    return HostConfig(
        name=_name(value["name"], f"{key}.name"),
        destination=_destination(value["destination"], f"{key}.destination"),
        ssh_options=_options(value.get("ssh_options", []), f"{key}.ssh_options"),
        remote_command=_remote_command(
            value.get("remote_command", DEFAULT_REMOTE_COMMAND), f"{key}.remote_command"
        ),
    )


def _name(value: object, key: str) -> str:
    if not isinstance(value, str) or NAME_PATTERN.fullmatch(value) is None:
        raise ConfigError(
            "expected 1 to 40 letters, digits, '.', '_' or '-', starting with a letter or "
            f"digit, got {_show(value)}",
            key,
        )
    return value


def _destination(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f'expected a string such as "me@devbox", got {_show(value)}', key)
    if not value:
        raise ConfigError("must not be empty", key)
    if value.startswith("-"):
        # ssh would read it as an option (think "-oProxyCommand=..."); options belong
        # in ssh_options.
        raise ConfigError(
            f"must not start with '-' (put ssh options in ssh_options), got {_show(value)}", key
        )
    if len(value) > MAX_DESTINATION:
        raise ConfigError(f"longer than {MAX_DESTINATION} characters", key)
    if any(char.isspace() or not char.isprintable() for char in value):
        raise ConfigError(f"must not hold spaces or control characters, got {_show(value)}", key)
    return value


def _options(value: object, key: str) -> tuple[str, ...]:
    expected = 'expected a list of strings such as ["-p", "2222"]'
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{expected}, got {_show(value)}", key)
    if len(value) > MAX_OPTIONS:
        raise ConfigError(f"more than {MAX_OPTIONS} options", key)
    for index, item in enumerate(value):
        if len(item) > MAX_OPTION:
            raise ConfigError(f"longer than {MAX_OPTION} characters", f"{key}[{index}]")
        if "\0" in item or "\n" in item or "\r" in item:
            raise ConfigError("must not hold NUL or line breaks", f"{key}[{index}]")
    if "--" in value:
        # Everything after "--" would be taken as the destination and the command.
        raise ConfigError('must not hold "--"', key)
    return tuple(value)


def _remote_command(value: object, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f'expected a command such as "~/.local/bin/tray", got {_show(value)}', key
        )
    if len(value) > MAX_REMOTE_COMMAND:
        raise ConfigError(f"longer than {MAX_REMOTE_COMMAND} characters", key)
    # A line break would make the remote shell run the rest as a second command.
    if any(not char.isprintable() for char in value):
        raise ConfigError("must be one line without control characters", key)
    return value.strip()


def _show(value: object) -> str:
    # Brief: a host's values may be long, and some end up on ssh's command line.
    return show(value, brief=True)


__all__ = [
    "DEFAULT_REMOTE_COMMAND",
    "NAME_PATTERN",
    "HostConfig",
    "parse_host",
    "parse_hosts",
]
