"""``tray doctor``'s terminal line: whether the terminal it runs in answers the OSC 7501
support query itself, asked as a program would ask it (protocol.md), on the controlling
terminal in raw mode, with a timeout.

Apart from :mod:`tray.commands.doctor` because it alone speaks to the user's terminal:
a reply that comes late is flushed, never left typed into the shell.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import termios
import time
from typing import Final

from tray.base.check import Check
from tray.desktop.bus_loop import describe
from tray.state.environment import Environment
from tray.terminal.fdio import write_all
from tray.terminal.raw_mode import RawMode

TERMINAL_TIMEOUT: Final = 1.0

# The 7501 answer (BEL or ST terminated) and the DA1 answer, ESC [ ? Ps ; ... c.
_OSC_ANSWER: Final = re.compile(rb"\x1b\]7501;\?(?:\x07|\x1b\\)")
_DA1_ANSWER: Final = re.compile(rb"\x1b\[\?[0-9;]*c")
TERMINAL_QUERY: Final = b"\x1b]7501;?\x07\x1b[c"


def check_terminal(env: Environment) -> Check:
    """Whether this terminal answers the OSC 7501 support query, as a program would ask."""
    if not (os.isatty(env.stdin_fd) and os.isatty(env.stdout_fd)):
        return Check("ok", "terminal", "not a terminal: skipped")
    try:
        fd = os.open(env.tty_path, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        return Check("ok", "terminal", f"no controlling terminal ({describe(error)}): skipped")
    try:
        reply = _ask_terminal(fd)
    except (OSError, termios.error) as error:
        return Check("warn", "terminal", f"cannot ask it ({describe(error)})")
    finally:
        os.close(fd)
    answer = _OSC_ANSWER.search(reply)
    da1 = _DA1_ANSWER.search(reply)
    # Whichever answer comes first decides, as protocol.md tells programs to do.
    if answer is not None and (da1 is None or answer.start() < da1.start()):
        if env.environ.get("TRAY_SESSION_ID"):
            return Check("ok", "terminal", "answers OSC 7501 (this shell runs under tray run)")
        return Check("ok", "terminal", "answers OSC 7501 itself")
    found = "does not answer (use tray run)"
    if da1 is None:
        found = f"does not answer (use tray run); no reply at all within {TERMINAL_TIMEOUT:.0f} s"
    return Check("warn", "terminal", found, "start agents as `tray run -- CMD`")


def _ask_terminal(fd: int) -> bytes:
    reply = b""
    with RawMode(fd):
        try:
            write_all(fd, TERMINAL_QUERY)
            deadline = time.monotonic() + TERMINAL_TIMEOUT
            while _DA1_ANSWER.search(reply) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                readable, _, _ = select.select([fd], [], [], remaining)
                if not readable:
                    break
                chunk = os.read(fd, 1024)
                if not chunk:
                    break
                reply += chunk
        finally:
            # A late or out-of-order answer must not end up typed into the user's shell.
            with contextlib.suppress(OSError, termios.error):
                termios.tcflush(fd, termios.TCIFLUSH)
    return reply
