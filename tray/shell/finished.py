"""``tray _finished``: a command typed at a shell prompt ran long, and has ended.

The shell hooks from ``tray init`` call this in the background, only after a command that
ran longer than the threshold, so it may take its time; but it must never say anything:
the prompt is the user's. It writes one ended session, with one attention event, so the
tray app pings it like a finished ``tray run``.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
import shlex
import stat

from tray.base.exit_codes import SUCCESS, USAGE_ERROR
from tray.core.session.model import Attention, Session
from tray.state.environment import Environment
from tray.state.store import StateStore
from tray.terminal.variables import TERMINAL_VARIABLES

# A pasted script can be a command line of any size; the session file and the
# notification only need to say which command it was.
MAX_CMDLINE = 4096
# Where Linux puts terminals; /dev/null is a character device too, and no terminal.
_TERMINALS = ("/dev/pts/", "/dev/tty")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)


def split_cmdline(cmdline: str) -> list[str]:
    """The command line as words, as near as the shell's own syntax allows."""
    try:
        words = shlex.split(cmdline)
    except ValueError:  # an unbalanced quote, or a shell syntax shlex does not know
        words = []
    return words or [cmdline]


def command_name(cmdline: str) -> str:
    """The command's name: its first word after ``VAR=value`` prefixes, without a path."""
    try:
        words = shlex.split(cmdline)
    except ValueError:
        words = cmdline.split()
    for word in words:
        if not _ASSIGNMENT.fullmatch(word):
            return os.path.basename(word) or word
    return words[0] if words else cmdline


def run_finished(
    cmdline: str,
    status: int,
    duration: float,
    env: Environment,
    *,
    cwd: str | None = None,
    pid: int | None = None,
    tty: str | None = None,
    end: float | None = None,
) -> int:
    """Record the ended command in the state directory; returns the exit status."""
    cmdline = cmdline.strip()[:MAX_CMDLINE]
    if not cmdline or not math.isfinite(duration) or duration < 0:
        env.stderr.write("tray _finished: nothing to record\n")
        return USAGE_ERROR
    now = env.clock()
    # The shell's clock at its prompt is the end; the clock here runs a process start later.
    ended = end if end is not None and math.isfinite(end) and end <= now else now
    words = split_cmdline(cmdline)
    terminal = {key: env.environ[key] for key in TERMINAL_VARIABLES if key in env.environ}
    found = tty or _terminal_of(env, pid)
    if found:
        terminal["tty"] = found
    session = Session(
        id=f"{os.getpid()}-{secrets.token_hex(3)}",
        name=command_name(cmdline),
        command=tuple(words),
        cwd=cwd or _cwd(env),
        pid=pid if pid is not None and pid > 0 else os.getppid(),
        child_pid=None,
        started_at=ended - duration,
        updated_at=ended,
        alive=False,
        exit_code=status,
        source="launcher",
        terminal=terminal,
        state_since=ended,
        attention=(
            Attention(
                seq=1,
                at=ended,
                source="command",
                title=cmdline,
                exit_code=status,
                duration=duration,
            ),
        ),
    )
    store = StateStore(env.state_dir())
    store.ensure()
    store.write(session)
    return SUCCESS


def _cwd(env: Environment) -> str:
    try:
        return env.cwd()
    except OSError:
        return env.environ.get("PWD", "")


def _terminal_of(env: Environment, pid: int | None) -> str | None:
    """The shell's terminal: ours when the shell left it as our stdin, else the shell's."""
    with contextlib.suppress(OSError):
        if os.isatty(env.stdin_fd):
            return os.ttyname(env.stdin_fd)
    if pid is None or pid <= 0:
        return None
    with contextlib.suppress(OSError):
        path = os.readlink(f"/proc/{pid}/fd/0")
        if (
            path.startswith(_TERMINALS)
            and path != "/dev/tty"
            and stat.S_ISCHR(os.stat(path).st_mode)
        ):
            return path
    return None


__all__ = ["MAX_CMDLINE", "command_name", "run_finished", "split_cmdline"]
