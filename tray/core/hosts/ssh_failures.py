"""Pure: why an ssh to a host failed, from its stderr and exit status, and how to fix it.

ssh itself exits 255 on its own errors; any other status is the remote command's. The
remote shell's "not found" is 127, and "cannot execute" 126.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from tray.base.exit_codes import USAGE_ERROR
from tray.base.safe_text import ELLIPSIS, clean_text, cut
from tray.core.hosts.ssh_commands import HostConfig

FailureKind = Literal[
    "auth",
    "host-key",
    "host-key-changed",
    "resolve",
    "refused",
    "no-route",
    "timeout",
    "lost",
    "no-tray",
    "not-executable",
    "old-tray",
    "incompatible",
    "no-word",
    "no-ssh",
    "silent",
    "other",
]

SSH_ERROR: Final = 255
NOT_FOUND: Final = 127
CANNOT_EXECUTE: Final = 126
MAX_REASON: Final = 160


@dataclass(frozen=True, slots=True)
class Failure:
    kind: FailureKind
    reason: str  # one line, what happened
    fix: str | None = None  # one line, what to do about it

    def line(self) -> str:
        return f"{self.reason}; fix: {self.fix}" if self.fix else self.reason


# Checked in order: the first that matches wins. A host key problem also ends in
# "Permission denied"-free text, but a changed key prints the long warning first.
_PATTERNS: Final[tuple[tuple[FailureKind, tuple[str, ...]], ...]] = (
    ("host-key-changed", ("remote host identification has changed",)),
    (
        "host-key",
        (
            "host key verification failed",
            "no matching host key type",
            "host key for",  # "... has changed and you have requested strict checking"
        ),
    ),
    (
        "auth",
        (
            "permission denied (",
            "too many authentication failures",
            "no more authentication methods",
        ),
    ),
    (
        "resolve",
        (
            "could not resolve hostname",
            "name or service not known",
            "temporary failure in name resolution",
        ),
    ),
    ("refused", ("connection refused",)),
    ("no-route", ("no route to host", "network is unreachable", "host is down")),
    ("timeout", ("timed out", "operation timed out")),
    (
        "lost",
        (
            "connection closed by",
            "connection reset",
            "broken pipe",
            "not responding",
            "kex_exchange_identification",
            "connection to ",  # "Connection to devbox closed by remote host."
        ),
    ),
)


def classify(host: HostConfig, stderr: str, exit_code: int | None) -> Failure:
    """The reason and the fix for a failed ssh, from what it printed and how it ended."""
    text = stderr.casefold()
    if exit_code != SSH_ERROR:
        remote = _remote_failure(host, text, exit_code)
        if remote is not None:
            return remote
    for kind, needles in _PATTERNS:
        if any(needle in text for needle in needles):
            return _explain(kind, host, stderr)
    last = _last_line(stderr)
    if exit_code is None:
        return Failure("other", last or "ssh stopped")
    if last:
        return Failure("other", last)
    return Failure("silent", f"ssh exited with status {exit_code} and said nothing")


def _remote_failure(host: HostConfig, text: str, exit_code: int | None) -> Failure | None:
    command = host.remote_command
    if exit_code == NOT_FOUND or "command not found" in text:
        return _explain("no-tray", host, text)
    if exit_code == CANNOT_EXECUTE:
        return Failure(
            "not-executable",
            cut(f"{clean_text(command)} cannot be run on {host.name}", MAX_REASON),
            "make it executable, or point remote_command at the tray program there",
        )
    if exit_code == USAGE_ERROR and ("invalid choice" in text or "unrecognized arguments" in text):
        return _explain("old-tray", host, text)
    return None


def _explain(kind: FailureKind, host: HostConfig, stderr: str) -> Failure:
    destination = host.destination
    name = host.name
    command = cut(clean_text(host.remote_command), 60)
    if kind == "auth":
        return Failure(
            kind,
            f"{destination} refused the key (Permission denied)",
            f"add your key to the agent with ssh-add (tray cannot ask for a passphrase), "
            f"and check that 'ssh {destination} true' works without a prompt",
        )
    if kind == "host-key-changed":
        return Failure(
            kind,
            f"the host key of {destination} has changed",
            f"if {name} was reinstalled, remove the old key with 'ssh-keygen -R HOST' and "
            f"connect once with 'ssh {destination}' to accept the new one",
        )
    if kind == "host-key":
        return Failure(
            kind,
            f"the host key of {destination} could not be verified",
            f"connect once with 'ssh {destination}' in a terminal to check and accept it",
        )
    if kind == "resolve":
        return Failure(
            kind,
            f"cannot resolve the host name of {destination}",
            "check the destination in [[hosts]], or your network and VPN",
        )
    if kind == "refused":
        return Failure(
            kind,
            f"connection refused by {destination}: no ssh server listening there",
            'check that sshd runs on the host, and the port (ssh_options = ["-p", "PORT"])',
        )
    if kind == "no-route":
        return Failure(kind, f"no route to {destination}", "check your network or VPN")
    if kind == "timeout":
        return Failure(
            kind,
            f"connecting to {destination} timed out",
            "check that the host is up and reachable from here",
        )
    if kind == "lost":
        return Failure(kind, f"the connection to {destination} was lost")
    if kind == "no-tray":
        return Failure(
            kind,
            f"{command}: command not found on {name}",
            "install tray there (pipx install tray); pipx puts it in ~/.local/bin, which a "
            'non-interactive ssh command often lacks: set remote_command = "~/.local/bin/tray"',
        )
    if kind == "old-tray":
        return Failure(
            kind,
            f"the tray on {name} is too old for remote sessions",
            "upgrade tray there (pipx upgrade tray)",
        )
    return Failure(kind, _last_line(stderr) or "ssh failed")


def short_line(text: str, limit: int = MAX_REASON) -> str:
    """Untrusted text as one clean line of at most ``limit`` characters and cells.

    Cells alone do not bound it: combining marks take none, and a line of them could be
    any length.
    """
    line = clean_text(text)
    if len(line) > limit:
        line = line[: limit - 1] + ELLIPSIS
    return cut(line, limit)


def _last_line(stderr: str) -> str:
    for raw in reversed(stderr.splitlines()):
        line = short_line(raw)
        if line:
            return line
    return ""


__all__ = ["Failure", "FailureKind", "classify", "short_line"]
