"""What a command may touch, passed in so tests never reach the real user's things."""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import platformdirs


@dataclass
class Environment:
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    stdin_fd: int = 0
    stdout_fd: int = 1
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    clock: Callable[[], float] = time.time
    cwd: Callable[[], str] = os.getcwd
    tty_path: str = "/dev/tty"

    def state_dir(self) -> Path:
        """``TRAY_STATE_DIR``, else ``$XDG_RUNTIME_DIR/tray``, else platformdirs' runtime dir."""
        explicit = self.environ.get("TRAY_STATE_DIR")
        if explicit:
            if os.path.isabs(explicit):
                return Path(explicit)
            # Made absolute because the launcher hands it to a child that may change directory.
            return Path(self.cwd(), explicit)
        runtime = self.environ.get("XDG_RUNTIME_DIR")
        # The XDG spec says a relative path in these variables is invalid and to be ignored.
        if runtime and os.path.isabs(runtime):
            return Path(runtime) / "tray"
        # platformdirs warns on stderr about its /tmp fallback; the store checks who owns it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Path(platformdirs.user_runtime_dir("tray", appauthor=False))

    def config_dir(self) -> Path:
        explicit = self.environ.get("XDG_CONFIG_HOME")
        if explicit and os.path.isabs(explicit):
            return Path(explicit) / "tray"
        return Path(platformdirs.user_config_dir("tray", appauthor=False))
