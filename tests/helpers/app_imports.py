"""Which of the app's libraries a piece of code imports, asked of a fresh interpreter.

The state directory and the config are read and written by every command and by each
``tray run``; none of them may pull in the tray app, its desktop and outlets, or the
libraries those stand on: seconds of start-up, and a display or D-Bus to boot.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tray

PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent
APP_LIBRARIES = (
    "tray.app",
    "tray.desktop",
    "tray.outlets",
    "pystray",
    "PIL",
    "desktop_notifier",
    "dbus_fast",
    "apprise",
    "watchdog",
    "asyncio",
)


def app_libraries_imported(code: str, **environ: str) -> set[str]:
    """The names of :data:`APP_LIBRARIES` that are in ``sys.modules`` (themselves or a
    submodule) once ``code`` ran in a new interpreter with ``environ`` as its environment."""
    probe = (
        f"import sys\nsys.path.insert(0, {str(PROJECT_ROOT)!r})\n{code}\n"
        f"names = {APP_LIBRARIES!r}\n"
        "print(' '.join(name for name in names\n"
        "               if any(m == name or m.startswith(name + '.') for m in sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())
