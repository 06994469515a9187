"""Probes of the desktop that may hang or crash, each in a ``python -c`` child.

Importing pystray picks its backend and can raise an Xlib error or hang on a broken
display; connecting to a broken X server can hang too. So ``tray doctor`` asks in child
processes, with a timeout. (The app, whose display already works, looks for a tray host
in-process: :mod:`tray.desktop.tray_area`.)
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any, Final

PROBE_TIMEOUT: Final = 10.0

GTK_FIX: Final = (
    "pip install 'tray[gtk]' (PyGObject) and the system package "
    "gir1.2-ayatanaappindicator3-0.1 (AppIndicator)"
)


def has_desktop_services() -> bool:
    """Whether icons and notifications go through X11/Wayland and D-Bus here."""
    return sys.platform not in ("darwin", "win32")


# Run with ``python -c`` in a child process: pystray picks its backend while importing, and
# importing can raise an Xlib error or hang on a broken display.
BACKEND_PROBE: Final = """
import json, sys
try:
    import pystray
except BaseException as error:
    kind = type(error)
    print(json.dumps({"error": "%s.%s: %s" % (kind.__module__, kind.__name__, error)}))
else:
    name = "unknown"
    for candidate in ("appindicator", "gtk", "xorg", "darwin", "win32", "dummy"):
        module = sys.modules.get("pystray._" + candidate)
        if module is not None and getattr(module, "Icon", None) is pystray.Icon:
            name = candidate
            break
    # Whether the backend the app asks for in an XEmbed-only tray loads too.
    try:
        import pystray._gtk
        gtk = True
    except BaseException:
        gtk = False
    print(json.dumps({"backend": name, "gtk": gtk}))
"""

X_PROBE: Final = """
import json
try:
    from Xlib import display
    connection = display.Display()
    screen = connection.get_default_screen()
    selection = "_NET_SYSTEM_TRAY_S%d" % screen
    owner = connection.get_selection_owner(connection.intern_atom(selection))
    owner = owner if isinstance(owner, int) else owner.id
    connection.close()
    print(json.dumps({"selection": selection, "owner": owner}))
except BaseException as error:
    print(json.dumps({"error": "%s: %s" % (type(error).__name__, error)}))
"""


class Probe:
    """A ``python -c`` child that prints one JSON object; started now, read later."""

    def __init__(self, code: str, environ: Mapping[str, str]) -> None:
        self._started = time.monotonic()
        self._error: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", code],
                env=dict(environ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,  # never a reader on the user's terminal
            )
        except OSError as error:
            self._error = f"cannot run {sys.executable}: {error.strerror or error}"

    def result(self) -> dict[str, Any]:
        if self._proc is None:
            return {"error": self._error}
        remaining = max(0.0, PROBE_TIMEOUT - (time.monotonic() - self._started))
        try:
            out, err = self._proc.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate()
            return {"error": f"no answer within {PROBE_TIMEOUT:.0f} s (hung)", "hung": True}
        lines = out.strip().splitlines()
        if lines:
            with contextlib.suppress(ValueError):
                document = json.loads(lines[-1])
                if isinstance(document, dict):
                    return document
        last = (err.strip().splitlines() or [f"exit status {self._proc.returncode}"])[-1]
        return {"error": last}
