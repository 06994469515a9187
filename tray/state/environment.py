"""What a command may touch, passed in so tests never reach the real user's things."""

from __future__ import annotations

import os
import sys
import time

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import TextIO


class Environment:
    # A plain class, not a dataclass: the dataclasses module brings inspect, ast and dis
    # in, milliseconds of every `tray run`.
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
        from pathlib import Path  # noqa: PLC0415 - see state_directory

        return Path(self.state_directory())

    def state_directory(self) -> str:
        """:meth:`state_dir` as a string: ``tray run`` works on strings, because pathlib
        (with fnmatch, re and enum) would cost milliseconds of every start."""
        explicit = self.environ.get("TRAY_STATE_DIR")
        if explicit:
            if os.path.isabs(explicit):
                return explicit
            # Made absolute because the launcher hands it to a child that may change directory.
            return os.path.join(self.cwd(), explicit)
        runtime = self.environ.get("XDG_RUNTIME_DIR")
        # The XDG spec says a relative path in these variables is invalid and to be ignored.
        if runtime and os.path.isabs(runtime):
            return os.path.join(runtime, "tray")
        # Imported only here: any Linux desktop sets XDG_RUNTIME_DIR.
        import warnings  # noqa: PLC0415

        import platformdirs  # noqa: PLC0415

        # platformdirs warns on stderr about its /tmp fallback; the store checks who owns it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return str(platformdirs.user_runtime_dir("tray", appauthor=False))

    def config_dir(self) -> Path:
        from pathlib import Path  # noqa: PLC0415 - see state_directory

        return Path(self.config_directory())

    def config_directory(self) -> str:
        """:meth:`config_dir` as a string, for ``tray run`` (see :meth:`state_directory`)."""
        explicit = self.environ.get("XDG_CONFIG_HOME")
        if explicit and os.path.isabs(explicit):
            return os.path.join(explicit, "tray")
        if sys.platform.startswith("linux"):
            # platformdirs' answer here too, without its import on every `tray run`.
            return os.path.join(os.path.expanduser("~/.config"), "tray")
        import platformdirs  # noqa: PLC0415

        return str(platformdirs.user_config_dir("tray", appauthor=False))
