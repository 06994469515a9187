"""The app's log."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

LOG_NAME = "app.log"


def open_app_log(state_dir: Path) -> logging.Logger:
    """The app's log: ``app.log`` in the state directory, and stderr when it is a terminal."""
    log = logging.getLogger("tray.app")
    log.setLevel(logging.INFO)
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    # Started in the background (by `tray demo`, autostart, systemd), stderr is a file
    # or a journal, and app.log already has every line.
    if sys.stderr is not None and sys.stderr.isatty():
        stream = logging.StreamHandler()
        stream.setFormatter(formatter)
        log.addHandler(stream)
    try:
        fd = os.open(state_dir / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
        handler.setFormatter(formatter)
        log.addHandler(handler)
    except OSError:
        pass
    return log
