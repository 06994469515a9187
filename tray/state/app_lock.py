"""One tray app per state directory, kept with an flock on ``app.lock``."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

LOCK_NAME = "app.lock"


def hold_app_lock(state_dir: Path) -> IO[str] | None:
    """Take the app lock for the process's life; None when another app holds it."""
    handle = open(state_dir / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def app_lock_held(state_dir: Path) -> bool:
    """Whether a tray app holds the lock, asked without waiting.

    Taking the lock for a moment is the only portable way to ask about an flock. An app
    starting in that very moment would find it taken and leave, so callers that start an
    app look again when it exits.
    """
    try:
        fd = os.open(state_dir / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also releases the lock if it was taken here
    return False
