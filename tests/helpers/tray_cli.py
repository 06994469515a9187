"""The tray CLI as a test runs it in a subprocess, found through the interpreter that runs
the tests: never a fixed path such as .venv/bin/tray, so the tests pass in any
environment that has tray installed (a venv, tox, a packager's build)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def tray_argv(*args: str) -> list[str]:
    """``tray ARGS``: the console script beside this interpreter when the environment
    installed one (what a user runs), else ``python -m tray`` with this interpreter."""
    script = Path(sys.executable).with_name("tray")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), *args]
    return [sys.executable, "-m", "tray", *args]
