"""What a command may touch, passed in so tests never reach the real user's things."""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

# Set for a command under `tray run`: the session it runs in. Seen by a launcher, it
# means nested.
SESSION_VARIABLE = "TRAY_SESSION_ID"


class Environment:
    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        clock: Callable[[], float] = time.time,
        cwd: Callable[[], str] = os.getcwd,
        tty_path: str = "/dev/tty",
    ) -> None:
        self.environ: Mapping[str, str] = dict(os.environ) if environ is None else environ
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.stdout: TextIO = sys.stdout if stdout is None else stdout
        self.stderr: TextIO = sys.stderr if stderr is None else stderr
        self.clock = clock
        self.cwd = cwd
        self.tty_path = tty_path

    def state_dir(self) -> Path:
        """``TRAY_STATE_DIR``, else ``$XDG_RUNTIME_DIR/tray``, else platformdirs' runtime dir."""
        explicit = self.environ.get("TRAY_STATE_DIR")
        if explicit:
            # Made absolute because the launcher hands it to a child that may change directory.
            return Path(self.cwd(), explicit)
        runtime = self.environ.get("XDG_RUNTIME_DIR")
        # The XDG spec says a relative path in these variables is invalid and to be ignored.
        if runtime and os.path.isabs(runtime):
            return Path(runtime, "tray")
        # Imported only here: any Linux desktop sets XDG_RUNTIME_DIR.
        import platformdirs  # noqa: PLC0415

        # platformdirs warns on stderr about its /tmp fallback; the store checks who owns it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Path(platformdirs.user_runtime_dir("tray", appauthor=False))

    def config_dir(self) -> Path:
        explicit = self.environ.get("XDG_CONFIG_HOME")
        if explicit and os.path.isabs(explicit):
            return Path(explicit, "tray")
        if sys.platform.startswith("linux"):
            # What platformdirs says, but from ``environ``: platformdirs reads os.environ.
            return Path.home() / ".config" / "tray"
        import platformdirs  # noqa: PLC0415

        return Path(platformdirs.user_config_dir("tray", appauthor=False))
