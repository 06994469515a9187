"""The real ``python -m tray`` in subprocesses, confined to a temporary home."""

from __future__ import annotations

import errno
import json
import os
import select
import subprocess
import sys
import time
import tty
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tray
from tray.core.session.model import Session
from tray.state.store import StateStore

PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent
TIMEOUT = 30.0
# Makes its stdin, a pty slave, the controlling terminal of the new session it runs in.
TAKE_TTY = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


@dataclass(frozen=True)
class PtyRun:
    returncode: int
    stderr: str
    written: bytes  # everything that reached the pty master


@dataclass
class Tray:
    home: Path
    state_dir: Path
    config_home: Path
    environ: dict[str, str]

    def run(
        self, *args: str, extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return self.run_argv([sys.executable, "-m", "tray", *args], extra_env)

    def run_argv(
        self, argv: Sequence[str], extra_env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            list(argv),
            env={**self.environ, **(extra_env or {})},
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert "Traceback" not in result.stderr, result.stderr
        return result

    def run_on_pty(self, *args: str) -> PtyRun:
        """``python -m tray ARGS`` with a pty as controlling terminal, stdin and stdout.

        stderr is a pipe, so the pty gets only what tray writes to the terminal.
        """
        master, slave = os.openpty()
        tty.setraw(slave)  # no output processing: the master sees the exact bytes
        try:
            child = subprocess.Popen(
                [sys.executable, "-S", "-c", TAKE_TTY, sys.executable, "-m", "tray", *args],
                env=self.environ,
                cwd=self.home,
                stdin=slave,
                stdout=slave,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        finally:
            os.close(slave)
        try:
            written = _read_until_hangup(master)
            _, stderr = child.communicate(timeout=TIMEOUT)
        finally:
            os.close(master)
            if child.poll() is None:
                child.kill()
                child.wait()
        text = stderr.decode("utf-8", "replace")
        assert "Traceback" not in text, text
        return PtyRun(child.returncode, text, written)

    def status_json(self) -> dict[str, Any]:
        result = self.run("status", "--json")
        assert result.returncode == 0, result.stderr
        document: dict[str, Any] = json.loads(result.stdout)
        return document

    def write_session(self, session: Session) -> Path:
        store = StateStore(self.state_dir)
        store.ensure()
        store.write(session)
        return store.path_for(session.id)

    def write_config(self, text: str) -> Path:
        path = self.config_home / "tray" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


def _read_until_hangup(master: int) -> bytes:
    chunks = []
    deadline = time.monotonic() + TIMEOUT
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "the pty was never hung up"
        ready, _, _ = select.select([master], [], [], remaining)
        if not ready:
            continue
        try:
            data = os.read(master, 65536)
        except OSError as error:
            # EIO: every slave descriptor is closed, so the child is gone.
            if error.errno == errno.EIO:
                break
            raise
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)
