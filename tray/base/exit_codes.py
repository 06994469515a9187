"""The exit statuses tray itself chooses, and the error of a bad command line.

Plain ints, in one place, so that a status a script or a shell hook relies on is named once
(the contract's: ``tray answer`` exits 0, 1 or 2, ``tray run`` 127 or 128+N). A status that
is the command's own (what ``tray run`` passes on) is no choice of tray's and is not here.

In the base so that every layer can reach it; ``tray run`` loads it too, so it stays tiny
and imports nothing.
"""

# Done as asked.
SUCCESS = 0
# Not done, and one line on stderr says why (refused, a file unreadable, a check failed).
FAILURE = 1
# A bad command line or config: argparse's own status, and what scripts test for.
USAGE_ERROR = 2
# `tray run`: CMD could not be started (not found, not executable, no such directory), as
# a shell reports a command it could not run.
CANNOT_START = 127
# `tray run`: CMD (or the launcher's hung-up wait for it) ended by signal N exits with
# SIGNAL_BASE + N, as a shell reports it.
SIGNAL_BASE = 128
# Ctrl-C stopped tray itself: SIGNAL_BASE + SIGINT (2 on every POSIX system), as a shell
# would report the same interrupt.
INTERRUPTED = SIGNAL_BASE + 2


class UsageError(Exception):
    """Bad command-line arguments; the message is the whole line, program name included."""


__all__ = [
    "CANNOT_START",
    "FAILURE",
    "INTERRUPTED",
    "SIGNAL_BASE",
    "SUCCESS",
    "USAGE_ERROR",
    "UsageError",
]
