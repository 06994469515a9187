"""The app's log."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

LOG_NAME = "app.log"
FORMAT = "%(asctime)s %(levelname)s %(message)s"


def open_app_log(state_dir: Path) -> logging.Logger:
    """The app's log: ``app.log`` in the state directory, and stderr when it is a terminal
    or when ``app.log`` cannot be written (said once, on stderr)."""
    log = logging.getLogger("tray.app")
    log.setLevel(logging.INFO)
    formatter = logging.Formatter(FORMAT)
    # Started in the background (by `tray demo`, autostart, systemd), stderr is a file
    # or a journal, and app.log already has every line.
    to_stderr = sys.stderr is not None and sys.stderr.isatty()
    path = state_dir / LOG_NAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as error:
        if sys.stderr is not None:
            reason = error.strerror or str(error)
            sys.stderr.write(f"tray app: cannot write {path}: {reason}; logging to stderr\n")
            to_stderr = True
    else:
        handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
        handler.setFormatter(formatter)
        log.addHandler(handler)
    if to_stderr:
        stream = logging.StreamHandler()
        stream.setFormatter(formatter)
        log.addHandler(stream)
    return log
