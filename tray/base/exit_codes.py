"""The error of a bad command line, raised by the commands and reported by ``tray.cli``.

In the core so that both can reach it; ``tray run`` loads it too, so it stays tiny.
"""


class UsageError(Exception):
    """Bad command-line arguments; the message is the whole line, program name included."""
