"""Signals from the launcher to the command and its jobs, as a terminal's line
discipline and a closing terminal would send them.

The command (``Spawned.child``) leads its own process group on the pty, under the keeper
(``Spawned.keeper``, see :mod:`tray.launcher.spawn`); a shell started as the command may
put a job of its own in the foreground, which is the group the pty names.
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress

from tray.launcher.spawn import Spawned


def send(pid: int, signum: int) -> None:
    """``kill(pid, signum)``; nothing when the process is gone already."""
    # Gone, or its pid was taken by another user's process.
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def send_group(group: int, signum: int) -> None:
    """``killpg(group, signum)``; nothing when the group is gone already (as in
    :func:`send`)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


def foreground_group(master: int, command: Spawned) -> int:
    """The pty's foreground process group, or the command's own when the pty cannot
    tell (closed, or no foreground group)."""
    try:
        group = os.tcgetpgrp(master)
    except OSError:
        return command.child
    return group if group > 0 else command.child


def continue_command(master: int, command: Spawned) -> None:
    """SIGCONT to the keeper, the command's group and the foreground job."""
    send(command.keeper, signal.SIGCONT)
    for group in {foreground_group(master, command), command.child}:
        send_group(group, signal.SIGCONT)


def hang_up_command(master: int, command: Spawned) -> None:
    """SIGHUP (and SIGCONT, for a stopped job to hear it) to the command's own group
    first, as the kernel hangs up a session's leader before its foreground job; then to
    a foreground job of its own (one its shell started); then SIGCONT to the keeper."""
    foreground = foreground_group(master, command)
    for group in dict.fromkeys((command.child, foreground)):
        send_group(group, signal.SIGHUP)
        send_group(group, signal.SIGCONT)
    send(command.keeper, signal.SIGCONT)
