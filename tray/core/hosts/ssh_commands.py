"""Pure: the ssh command lines built from the ``[[hosts]]`` entries (:mod:`tray.core.config.hosts`).

Every command is an argv handed to ``ssh`` directly, never to a local shell. The remote
side is different by nature: ssh joins its command words and the remote login shell
reads them, which is what lets ``remote_command = "~/.local/bin/tray"`` work. So only
fixed words and strictly validated ids are ever put after ``remote_command``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Final

from tray.core.config.hosts import (
    DEFAULT_REMOTE_COMMAND,
    NAME_PATTERN,
    HostConfig,
    parse_host,
    parse_hosts,
)
from tray.protocol.state import ANSWER_NAMED

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
# A record id as the protocol allows it (segments joined by "/"): plain word characters
# for the remote shell, and passed as ``--record=ID``, so one that starts with "-" is
# never read as an option there.
RECORD_PATTERN: Final = re.compile(
    r"[A-Za-z0-9_.+-]{1,32}(?:/[A-Za-z0-9_.+-]{1,32}){0,7}", re.ASCII
)


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


def answer_words(
    session_id: str, answer: str, record: str | None, since: float | None
) -> list[str]:
    """``answer ID approve|deny [--record=ID] [--since=T]``, every word checked to be one
    the remote shell reads as is. Raises ValueError for anything else: the id, the record
    and the since come from the remote host's own state."""
    if not valid_remote_id(session_id):
        raise ValueError(f"not a session id: {session_id[:40]!r}")
    if answer not in ANSWER_NAMED:
        raise ValueError("the answer is approve or deny")
    words = ["answer", session_id, answer]
    if record == "":
        words.append("--record=''")  # the root record: an empty word, quoted
    elif record is not None:
        if RECORD_PATTERN.fullmatch(record) is None:
            raise ValueError(f"not a record id: {record[:40]!r}")
        words.append(f"--record={record}")
    if since is not None:
        if isinstance(since, bool) or not isinstance(since, float | int):
            raise ValueError("since must be a number")
        if not math.isfinite(since):
            raise ValueError("since must be finite")
        words.append(f"--since={float(since)!r}")
    return words


def answer_argv(  # noqa: PLR0917 - the command's own words, in their order
    host: HostConfig,
    session_id: str,
    answer: str,
    record: str | None,
    since: float | None,
    ssh: str = "ssh",
) -> list[str]:
    """``REMOTE_COMMAND answer ...`` on ``host``: see :func:`answer_words`."""
    return ssh_argv(host, answer_words(session_id, answer, record, since), ssh=ssh)


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
    "NAME_PATTERN",
    "HostConfig",
    "answer_argv",
    "answer_words",
    "dismiss_argv",
    "focus_argv",
    "parse_host",
    "parse_hosts",
    "ssh_argv",
    "stream_argv",
    "valid_pane",
    "valid_remote_id",
    "valid_socket",
    "version_argv",
]
