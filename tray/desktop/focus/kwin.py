"""KDE Plasma on Wayland: ask KWin, through its scripting interface, to activate the
terminal's window: the X11 window in WINDOWID when KWin manages one by that id (a
terminal on Xwayland), else the one window of the terminal process (or of its nearest
ancestor that has windows).

Konsole on Wayland sets WINDOWID too, to a number that names no X11 window (measured: 2);
KWin's Wayland windows have no ``windowId``, so such a number matches nothing and the
process decides.

The script is written from integers only (pids, a window id), into a directory of our
own, loaded, run, and unloaded. KWin runs it without reporting what it did, so success
here means "asked", not "seen". A process with two windows and no X11 id to tell them
apart (two Konsole windows of one process) is left as it is.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence

from tray.state.liveness import process_start_token

from ._dbus import DBusError, call
from ._tools import (
    START_TIME,
    TERMINAL_PID_KEY,
    TERMINAL_START_KEY,
    WINDOW_ID,
    X11_ID_LIMIT,
    FocusResult,
    Step,
    positive_pid,
)

KWIN = "org.kde.KWin"
PLUGIN = "tray-focus"
_ANCESTORS = 3
# Script ids are small counters; the old reply's check allowed six digits.
_SCRIPT_LIMIT = 10**6


def is_kde_wayland(env: Mapping[str, str]) -> bool:
    desktops = env.get("XDG_CURRENT_DESKTOP", "").split(":")
    return bool(env.get("WAYLAND_DISPLAY")) and "KDE" in desktops


def plan(terminal: Mapping[str, str]) -> Step | str | None:
    if TERMINAL_PID_KEY not in terminal:
        return None
    pid = positive_pid(terminal[TERMINAL_PID_KEY])
    start = terminal.get(TERMINAL_START_KEY, "")
    if pid is None or not START_TIME.fullmatch(start):
        return "the recorded terminal process is not a process id"
    window = _x11_window(terminal.get("WINDOWID", ""))
    return Step(
        "the terminal's window, through KWin", lambda env: _activate(pid, start, window, env)
    )


def _x11_window(value: str) -> int | None:
    """WINDOWID as a number, when it could be an X11 window id at all."""
    if not WINDOW_ID.fullmatch(value) or not 0 < int(value) < X11_ID_LIMIT:
        return None
    return int(value)


def script(pids: Sequence[int], x11_window: int | None = None) -> str:
    """KWin JavaScript activating the X11 window ``x11_window`` if KWin has it, else the
    one normal window of the first pid that has any."""
    numbers = ", ".join(str(int(pid)) for pid in pids)
    window = int(x11_window) if x11_window is not None else 0
    return (
        "(function () {\n"
        f"  var pids = [{numbers}];\n"
        f"  var x11 = {window};\n"
        "  var six = typeof workspace.windowList === 'function';\n"
        "  var all = six ? workspace.windowList() : workspace.clientList();\n"
        "  function activate(w) {\n"
        "    if (six) { workspace.activeWindow = w; }\n"
        "    else { workspace.activeClient = w; }\n"
        "  }\n"
        "  var byId = all.filter(function (w) { return x11 > 0 && w.windowId === x11; });\n"
        "  if (byId.length === 1) { activate(byId[0]); return; }\n"
        "  for (var i = 0; i < pids.length; i++) {\n"
        "    var mine = all.filter(function (w) { return w.pid === pids[i] && w.normalWindow; });\n"
        "    if (mine.length === 1) { activate(mine[0]); }\n"
        "    if (mine.length > 0) { return; }\n"
        "  }\n"
        "})();\n"
    )


def _chain(pid: int) -> list[int]:
    chain = [pid]
    for _ in range(_ANCESTORS):
        try:
            with open(f"/proc/{chain[-1]}/stat", "rb") as stat_file:
                parent = int(stat_file.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        if parent <= 1:
            break
        chain.append(parent)
    return chain


def _activate(pid: int, start: str, x11_window: int | None, env: Mapping[str, str]) -> FocusResult:
    if process_start_token(pid) != start:
        return FocusResult(False, f"the terminal process {pid} has exited")
    with tempfile.TemporaryDirectory(prefix="tray-kwin-") as directory:
        path = os.path.join(directory, "focus.js")
        with open(path, "w", encoding="ascii") as script_file:
            script_file.write(script(_chain(pid), x11_window))
        try:
            # A script left loaded by an earlier run would make loadScript refuse.
            call(KWIN, "/Scripting", "org.kde.kwin.Scripting.unloadScript", "s", [PLUGIN], env)
            reply = call(
                KWIN, "/Scripting", "org.kde.kwin.Scripting.loadScript", "ss", [path, PLUGIN], env
            )
            number = _script_number(reply)
            if number is None:
                return FocusResult(False, "KWin did not load the focus script")
            try:  # KWin 6 names the script's object so; KWin 5 used "/<id>".
                call(KWIN, f"/Scripting/Script{number}", "org.kde.kwin.Script.run", "", [], env)
            except DBusError:
                call(KWIN, f"/{number}", "org.kde.kwin.Script.run", "", [], env)
            call(KWIN, "/Scripting", "org.kde.kwin.Scripting.unloadScript", "s", [PLUGIN], env)
        except DBusError as error:
            return FocusResult(False, f"KWin could not run the focus script: {error}")
    return FocusResult(True, f"asked KWin to activate the window of process {pid}")


def _script_number(reply: list[object]) -> int | None:
    """The id loadScript gave the script: a small number (-1 when it refused)."""
    if len(reply) != 1 or not isinstance(reply[0], int) or isinstance(reply[0], bool):
        return None
    number = reply[0]
    return number if 0 <= number < _SCRIPT_LIMIT else None
