"""An X11 window: the one in WINDOWID, else the one window of the terminal's process.

xdotool does the work: ``windowactivate`` asks the window manager (which also switches
desktops); without one that keeps _NET_ACTIVE_WINDOW it fails at once, and raising plus
focusing by hand is the best left to do.
"""

from __future__ import annotations

from collections.abc import Mapping

from tray.state.liveness import process_start_token

from ._tools import (
    DISPLAY,
    START_TIME,
    TERMINAL_PID_KEY,
    TERMINAL_START_KEY,
    WINDOW_ID,
    X11_ID_LIMIT,
    FocusResult,
    Step,
    find,
    positive_pid,
    quoted,
    run,
)

# How far up from the recorded terminal process to look for the window's owner: Ptyxis
# runs its shells under ptyxis-agent, a child of the process that draws the windows.
_ANCESTORS = 3


def display_for(terminal: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    display = terminal.get("DISPLAY") or env.get("DISPLAY", "")
    return display if DISPLAY.fullmatch(display) else None


def plan_window_id(terminal: Mapping[str, str], env: Mapping[str, str]) -> Step | str | None:
    if "WINDOWID" not in terminal:
        return None
    window = terminal["WINDOWID"]
    if not WINDOW_ID.fullmatch(window) or not 0 < int(window) < X11_ID_LIMIT:
        return f"the recorded X11 window {quoted(window)} is not a window id"
    display = display_for(terminal, env)
    if display is None:
        return "no X11 display to raise the window on"
    return Step(f"X11 window {window}", lambda app_env: activate(window, display, app_env))


def plan_process(
    terminal: Mapping[str, str], env: Mapping[str, str], *, owner: str = "the terminal"
) -> Step | str | None:
    """The window of the terminal process, by _NET_WM_PID; None when none was recorded."""
    if TERMINAL_PID_KEY not in terminal:
        return None
    pid = positive_pid(terminal[TERMINAL_PID_KEY])
    start = terminal.get(TERMINAL_START_KEY, "")
    if pid is None or not START_TIME.fullmatch(start):
        return "the recorded terminal process is not a process id"
    display = display_for(terminal, env)
    if display is None:
        return "no X11 display to find the terminal's window on"
    return Step(
        f"{owner}'s X11 window", lambda app_env: _by_process(pid, start, display, owner, app_env)
    )


def _by_process(
    pid: int, start: str, display: str, owner: str, env: Mapping[str, str]
) -> FocusResult:
    # The pid may have been reused since the session started: its start time says.
    if process_start_token(pid) != start:
        return FocusResult(False, f"{owner} process {pid} has exited")
    xdotool = find("xdotool", env)
    if xdotool is None:
        return FocusResult(False, "xdotool is not installed")
    tool_env = {**env, "DISPLAY": display}
    current = pid
    for _ in range(_ANCESTORS + 1):
        _, output = run([xdotool, "search", "--onlyvisible", "--pid", str(current)], tool_env)
        windows = [line for line in output.split() if WINDOW_ID.fullmatch(line)]
        if len(windows) == 1:
            return activate(windows[0], display, env)
        if len(windows) > 1:
            # One server process often owns every window: guessing would land elsewhere.
            return FocusResult(
                False,
                f"{owner} has {len(windows)} windows open; cannot tell which one is the session's",
            )
        parent = _parent(current)
        if parent is None:
            break
        current = parent
    return FocusResult(False, f"no visible X11 window belongs to {owner} process {pid}")


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            fields = stat_file.read().rsplit(b")", 1)[1].split()
        parent = int(fields[1])
    except (OSError, IndexError, ValueError):
        return None
    return parent if parent > 1 else None


def activate(window: str, display: str, env: Mapping[str, str]) -> FocusResult:
    xdotool = find("xdotool", env)
    if xdotool is None:
        return FocusResult(False, "xdotool is not installed")
    tool_env = {**env, "DISPLAY": display}
    why, _ = run([xdotool, "windowactivate", "--sync", window], tool_env)
    if why is None:
        return FocusResult(True, f"activated X11 window {window}")
    why = (
        run([xdotool, "windowraise", window], tool_env)[0]
        or run([xdotool, "windowfocus", "--sync", window], tool_env)[0]
    )
    if why is not None:
        return FocusResult(False, f"xdotool could not raise X11 window {window}: {why}")
    return FocusResult(True, f"raised X11 window {window}")
