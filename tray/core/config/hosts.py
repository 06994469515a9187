"""Pure: the ``[[hosts]]`` tables of config.toml, checked and turned into :class:`HostConfig`.

Part of the core, beside ``config``, which reads them; the ssh command lines built from
them are the remote adapter's (``tray.core.hosts.ssh_commands``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

DEFAULT_REMOTE_COMMAND: Final = "tray"
# Host names end up in session ids ("host:devbox/<id>") and in notifications, so they
# are kept to characters that need no escaping anywhere and cannot fake a separator.
NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", re.ASCII)
MAX_DESTINATION: Final = 255
MAX_OPTIONS: Final = 64
MAX_OPTION: Final = 1024
MAX_REMOTE_COMMAND: Final = 1024
KNOWN_KEYS: Final = ("name", "destination", "ssh_options", "remote_command")


class HostConfigError(ValueError):
    """A ``[[hosts]]`` entry that cannot be used; ``key`` says which, e.g. ``hosts[0].name``."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True, slots=True)
class HostConfig:
    name: str
    destination: str
    ssh_options: tuple[str, ...] = ()
    remote_command: str = DEFAULT_REMOTE_COMMAND


def parse_hosts(value: object, key: str = "hosts") -> tuple[HostConfig, ...]:
    """The ``hosts`` array of tables; raises :class:`HostConfigError` naming the key."""
    if not isinstance(value, list):
        raise HostConfigError(key, f"expected an array of tables ([[{key}]]), got {_show(value)}")
    hosts: list[HostConfig] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(value):
        where = f"{key}[{index}]"
        host = parse_host(item, where)
        folded = host.name.casefold()
        if folded in seen:
            raise HostConfigError(
                f"{where}.name",
                f"{_show(host.name)} is already the name of {key}[{seen[folded]}]",
            )
        seen[folded] = index
        hosts.append(host)
    return tuple(hosts)


def parse_host(value: object, key: str) -> HostConfig:
    if not isinstance(value, Mapping):
        raise HostConfigError(key, f"expected a table, got {_show(value)}")
    for name in value:
        if name not in KNOWN_KEYS:
            raise HostConfigError(f"{key}.{name}", f"unknown key (known: {', '.join(KNOWN_KEYS)})")
    for required in ("name", "destination"):
        if required not in value:
            raise HostConfigError(f"{key}.{required}", "missing")
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
        raise HostConfigError(
            key,
            "expected 1 to 40 letters, digits, '.', '_' or '-', starting with a letter or "
            f"digit, got {_show(value)}",
        )
    return value


def _destination(value: object, key: str) -> str:
    if not isinstance(value, str):
        raise HostConfigError(key, f'expected a string such as "me@devbox", got {_show(value)}')
    if not value:
        raise HostConfigError(key, "must not be empty")
    if value.startswith("-"):
        # ssh would read it as an option (think "-oProxyCommand=..."); options belong
        # in ssh_options.
        raise HostConfigError(
            key, f"must not start with '-' (put ssh options in ssh_options), got {_show(value)}"
        )
    if len(value) > MAX_DESTINATION:
        raise HostConfigError(key, f"longer than {MAX_DESTINATION} characters")
    if any(char.isspace() or not char.isprintable() for char in value):
        raise HostConfigError(
            key, f"must not hold spaces or control characters, got {_show(value)}"
        )
    return value


def _options(value: object, key: str) -> tuple[str, ...]:
    expected = 'expected a list of strings such as ["-p", "2222"]'
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise HostConfigError(key, f"{expected}, got {_show(value)}")
    if len(value) > MAX_OPTIONS:
        raise HostConfigError(key, f"more than {MAX_OPTIONS} options")
    for index, item in enumerate(value):
        if len(item) > MAX_OPTION:
            raise HostConfigError(f"{key}[{index}]", f"longer than {MAX_OPTION} characters")
        if "\0" in item or "\n" in item or "\r" in item:
            raise HostConfigError(f"{key}[{index}]", "must not hold NUL or line breaks")
    if "--" in value:
        # Everything after "--" would be taken as the destination and the command.
        raise HostConfigError(key, 'must not hold "--"')
    return tuple(value)


def _remote_command(value: object, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise HostConfigError(
            key, f'expected a command such as "~/.local/bin/tray", got {_show(value)}'
        )
    if len(value) > MAX_REMOTE_COMMAND:
        raise HostConfigError(key, f"longer than {MAX_REMOTE_COMMAND} characters")
    # A line break would make the remote shell run the rest as a second command.
    if any(not char.isprintable() for char in value):
        raise HostConfigError(key, "must be one line without control characters")
    return value.strip()


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value[:80], ensure_ascii=False)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__ if not isinstance(value, int | float) else str(value)


__all__ = [
    "DEFAULT_REMOTE_COMMAND",
    "NAME_PATTERN",
    "HostConfig",
    "HostConfigError",
    "parse_host",
    "parse_hosts",
]
