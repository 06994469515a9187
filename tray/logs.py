"""Small helpers for what a long-running command or the app says, and where it goes.

One home for each: warning once per problem (a watch re-reads every few seconds), the
stderr log of the commands that keep running, and sending stdout to /dev/null once its
reader has gone.
"""

from __future__ import annotations

import logging
import os
from typing import TextIO


class OnceLog:
    """Warns once per problem, not once per event, and notes when it clears."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._active: set[str] = set()

    def problem(self, key: str, message: str) -> None:
        if key not in self._active:
            self._active.add(key)
            self._log.warning("%s", message)

    def cleared(self, keys: set[str]) -> None:
        for key in self._active - keys:
            self._log.info("recovered: %s", key)
        self._active &= keys


class OnceFilter(logging.Filter):
    """Lets each message through once: a watch re-reads every few seconds, and an
    unreadable file is worth one warning, not one a round."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self._seen:
            return False
        self._seen.add(message)
        return True


def stderr_log(name: str, stream: TextIO, prefix: str) -> logging.Logger:
    """A logger that writes ``PREFIX: message`` lines to ``stream`` and nowhere else,
    each message once."""
    log = logging.getLogger(name)
    log.propagate = False
    log.handlers.clear()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(f"{prefix}: %(message)s"))
    handler.addFilter(OnceFilter())
    log.addHandler(handler)
    return log


def discard_output(fd: int) -> None:
    """Point ``fd`` at /dev/null: its reader went away, and whatever is still buffered
    can go nowhere, so the flushes at exit succeed instead of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)
