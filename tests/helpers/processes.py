"""Processes the tests need as they are: one that has ended, for liveness checks."""

from __future__ import annotations

import subprocess

from tray.store import process_start_token


def dead_process() -> tuple[int, str]:
    """The pid and start token of a process that has exited and been reaped."""
    child = subprocess.Popen(["sleep", "60"])
    token = process_start_token(child.pid)
    child.kill()
    child.wait()
    assert token is not None
    return child.pid, token
