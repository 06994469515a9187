"""A driver program under test: a module of tests/desktop run as ``python -m``, which
reads commands on stdin and prints what happened, a line each."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from helpers.desktop_services import stop_process
from helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0


class DriverProgram:
    """``module`` run with the tray backend ``backend``; its stdout collected line by line."""

    def __init__(self, module: str, backend: str, env: Mapping[str, str], log: Path) -> None:
        self.log = log
        with log.open("wb") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module],
                cwd=ROOT,
                # The driver imports the tests' shared helpers, as pytest's pythonpath does.
                env={**env, "PYSTRAY_BACKEND": backend, "PYTHONPATH": str(ROOT / "tests")},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=sink,
                text=True,
            )
        self.lines: list[str] = []
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line.strip())

    def alive(self) -> None:
        """Fail, with what it printed, if the driver has exited."""
        if self.proc.poll() is not None:
            raise AssertionError(
                f"driver exited ({self.proc.returncode}); printed {self.lines}; "
                f"stderr: {self.log.read_text()[-2000:]}"
            )

    def expect(self, line: str, timeout: float = TIMEOUT) -> None:
        def seen() -> bool:
            if line in self.lines:
                return True
            self.alive()
            return False

        wait_for(seen, timeout, what=repr(line))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        stop_process(self.proc)
