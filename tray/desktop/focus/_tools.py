"""What every focus way shares: the result, the shape checks, and running one tool.

The values checked here come from a session's state file, which any local program could
have written. A value that fails its check is never passed on, not even in part.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TOOL_TIMEOUT = 3.0

# Keys the launcher adds to a session's ``terminal`` facts besides the variables: the
# process that owns the pty (pid and /proc start time), for the process-tree way.
TERMINAL_PID_KEY = "terminal_pid"
TERMINAL_START_KEY = "terminal_start"

PANE = re.compile(r"%[0-9]{1,9}")
SMALL_NUMBER = re.compile(r"[0-9]{1,9}")
WINDOW_ID = re.compile(r"[0-9]{1,10}")
DISPLAY = re.compile(r"[A-Za-z0-9._/-]*:[0-9]{1,5}(\.[0-9]{1,3})?")
START_TIME = re.compile(r"[0-9]{1,20}")
# A D-Bus unique name (":1.42"), the only kind a terminal's service variable should hold
# besides its own well-known name.
UNIQUE_NAME = re.compile(r":[0-9]{1,6}\.[0-9]{1,9}")
# An xdg-activation token as compositors make them (mutter's are UUIDs); a value of any
# other shape is not passed on.
ACTIVATION_TOKEN = re.compile(r"[A-Za-z0-9_.:/+=-]{1,200}")
X11_ID_LIMIT = 1 << 32
_PATH_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class FocusResult:
    ok: bool
    message: str
    # Brought something forward, but not all it should: the window and not its tab.
    # The message then says what was left undone and how to fix it.
    partial: bool = False


@dataclass(frozen=True, slots=True)
class Step:
    """One thing Focus will do for a session, decided without running anything."""

    what: str  # "tmux pane %3", "GNOME Terminal tab", for messages and `tray doctor`
    act: Callable[[Mapping[str, str]], FocusResult]  # given the app's environment


def absolute_path(value: str) -> bool:
    """A plain absolute path: no control characters, not absurdly long."""
    return (
        value.startswith("/")
        and len(value) <= _PATH_LIMIT
        and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
    )


def positive_pid(value: str) -> int | None:
    if not SMALL_NUMBER.fullmatch(value):
        return None
    pid = int(value)
    return pid if pid > 1 else None


def platform_data(token: str) -> dict[str, Any]:
    """GApplication platform data (``a{sv}``) carrying an activation token that passed
    :data:`ACTIVATION_TOKEN`. Both keys: GTK 4 reads "activation-token", older toolkits
    "desktop-startup-id". GTK 3 (GNOME Terminal 3.46, measured on mutter 43) keeps it
    for the next window it presents."""
    from dbus_fast import Variant  # noqa: PLC0415  (Linux only)

    return {"activation-token": Variant("s", token), "desktop-startup-id": Variant("s", token)}


def find(tool: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(tool, path=env.get("PATH", os.defpath))


def quoted(value: str) -> str:
    """A recorded value in a message: short, and with anything odd escaped."""
    return repr(value[:24])


def run(
    argv: Sequence[str], env: Mapping[str, str], timeout: float = TOOL_TIMEOUT
) -> tuple[str | None, str]:
    """Run a tool: (None, its output) when it succeeded, else (one line saying why, "")."""
    name = os.path.basename(argv[0])
    try:
        done = subprocess.run(
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"{name} did not finish within {timeout:.0f} s", ""
    except OSError as error:
        return f"{name} could not start ({error.strerror})", ""
    if done.returncode == 0:
        return None, done.stdout
    # The first line names the problem ("can't find pane: %9", "X Error ... BadWindow").
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return (lines[0][:200] if lines else f"exit status {done.returncode}"), ""


def failure(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    return run(argv, env)[0]
