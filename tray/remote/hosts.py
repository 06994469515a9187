"""Pure: the ``[[hosts]]`` tables of config.toml, and the ssh command lines built from them.

Every command is an argv handed to ``ssh`` directly, never to a local shell. The remote
side is different by nature: ssh joins its command words and the remote login shell
reads them, which is what lets ``remote_command = "~/.local/bin/tray"`` work. So only
fixed words and strictly validated ids are ever put after ``remote_command``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
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

# Before the user's own options, so they win where ssh takes the first value given:
# without a terminal there is nobody to type a password or a passphrase (BatchMode),
# and a stream must not start the user's port forwardings or become a lingering
# ControlPersist master that outlives the link.
BASE_OPTIONS: Final = (
    "-T",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    "-o",
    "ClearAllForwardings=yes",
    "-o",
    "ControlMaster=no",
)
# Only for the long-lived stream: ssh itself notices a dead TCP connection after three
# missed probes, which matches the link's own 45 s heartbeat deadline.
STREAM_OPTIONS: Final = ("-o", "ServerAliveInterval=15")
STREAM_WORDS: Final = ("status", "--watch", "--format", "jsonl")
VERSION_WORDS: Final = ("--version",)

# What a remote session id may look like before it is put on a remote command line.
# tray's own ids are "<pid>-<hex>"; this is far stricter than what the shell needs.
REMOTE_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}", re.ASCII)
# A tmux pane id and a tmux server's socket, as a remote session recorded them; both go
# on the remote shell's command line unquoted, so only characters it reads as plain
# word characters are allowed.
PANE_PATTERN: Final = re.compile(r"%[0-9]{1,9}", re.ASCII)
SOCKET_PATTERN: Final = re.compile(r"/[A-Za-z0-9_./-]{1,1023}", re.ASCII)


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


# Command lines.


def ssh_argv(
    host: HostConfig, words: Sequence[str], *, stream: bool = False, ssh: str = "ssh"
) -> list[str]:
    """``ssh [options] -- DESTINATION "REMOTE_COMMAND WORDS..."`` as an argv."""
    if host.destination.startswith("-"):
        raise ValueError("a destination must not start with '-'")
    options = [*BASE_OPTIONS, *(STREAM_OPTIONS if stream else ())]
    remote = " ".join((host.remote_command, *words))
    return [ssh, *options, *host.ssh_options, "--", host.destination, remote]


def stream_argv(host: HostConfig, ssh: str = "ssh") -> list[str]:
    return ssh_argv(host, STREAM_WORDS, stream=True, ssh=ssh)


def version_argv(host: HostConfig, ssh: str = "ssh") -> list[str]:
    return ssh_argv(host, VERSION_WORDS, ssh=ssh)


def valid_remote_id(session_id: str) -> bool:
    return REMOTE_ID_PATTERN.fullmatch(session_id) is not None


def dismiss_argv(host: HostConfig, session_ids: Sequence[str], ssh: str = "ssh") -> list[str]:
    """``REMOTE_COMMAND dismiss ID...``; every id is checked before any goes on the line."""
    if not session_ids:
        raise ValueError("no session ids")
    for session_id in session_ids:
        if not valid_remote_id(session_id):
            raise ValueError(f"not a session id: {session_id[:40]!r}")
    return ssh_argv(host, ("dismiss", *session_ids), ssh=ssh)


def valid_pane(pane: str) -> bool:
    return PANE_PATTERN.fullmatch(pane) is not None


def valid_socket(socket: str) -> bool:
    return SOCKET_PATTERN.fullmatch(socket) is not None


def focus_argv(host: HostConfig, pane: str, socket: str, ssh: str = "ssh") -> list[str]:
    """``tmux -S SOCKET select-window -t PANE ; select-pane -t PANE`` on ``host``.

    tmux, not ``remote_command``: focusing needs no tray there. select-window first, as
    select-pane alone leaves the session on another window. The ``;`` is escaped for the
    remote shell, so that tmux gets it as its own command separator.
    """
    if host.destination.startswith("-"):
        raise ValueError("a destination must not start with '-'")
    if not valid_pane(pane):
        raise ValueError(f"not a tmux pane id: {pane[:20]!r}")
    if not valid_socket(socket):
        raise ValueError(f"not a tmux socket path: {socket[:60]!r}")
    remote = f"tmux -S {socket} select-window -t {pane} \\; select-pane -t {pane}"
    return [ssh, *BASE_OPTIONS, *host.ssh_options, "--", host.destination, remote]


__all__ = [
    "DEFAULT_REMOTE_COMMAND",
    "HostConfig",
    "HostConfigError",
    "dismiss_argv",
    "focus_argv",
    "parse_hosts",
    "ssh_argv",
    "stream_argv",
    "valid_pane",
    "valid_remote_id",
    "valid_socket",
    "version_argv",
]
