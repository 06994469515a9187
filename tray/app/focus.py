"""Bring a session's terminal to the front: its tmux pane, its X11 window, or both.

The values come from a state file, which any local program could have written. They
are only ever arguments to a fixed command, after a strict check of their shape, and
nothing is ever typed into the session.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TOOL_TIMEOUT = 3.0

_PANE = re.compile(r"%[0-9]{1,9}")
_WINDOW_ID = re.compile(r"[0-9]{1,10}")
_DISPLAY = re.compile(r"[A-Za-z0-9._/-]*:[0-9]{1,5}(\.[0-9]{1,3})?")
_X11_ID_LIMIT = 1 << 32


@dataclass(frozen=True, slots=True)
class FocusResult:
    ok: bool
    message: str


def focus_session(terminal: Mapping[str, str], *, env: Mapping[str, str]) -> FocusResult:
    """Select the recorded tmux pane and raise the recorded X11 window.

    ``terminal`` is what the launcher recorded (``TMUX``, ``TMUX_PANE``, ``WINDOWID``,
    ``DISPLAY``); ``env`` is the app's environment, which supplies ``PATH`` and, when the
    session recorded none, ``DISPLAY``. Succeeds when either one was brought forward.
    """
    results: list[FocusResult] = []
    if "TMUX_PANE" in terminal:
        results.append(_focus_tmux(terminal, env))
    if "WINDOWID" in terminal:
        results.append(_focus_x11(terminal, env))
    if not results:
        return FocusResult(False, "no tmux pane or X11 window recorded for this session")
    return FocusResult(
        any(result.ok for result in results), "; ".join(result.message for result in results)
    )


def _focus_tmux(terminal: Mapping[str, str], env: Mapping[str, str]) -> FocusResult:
    pane = terminal["TMUX_PANE"]
    if not _PANE.fullmatch(pane):
        return FocusResult(False, f"the recorded tmux pane {pane[:20]!r} is not a pane id")
    # TMUX is "socket,pid,session"; the socket path itself may hold commas.
    socket = terminal.get("TMUX", "").rsplit(",", 2)[0]
    if not os.path.isabs(socket):
        return FocusResult(False, "the tmux server's socket was not recorded for this session")
    tmux = _find("tmux", env)
    if tmux is None:
        return FocusResult(False, "tmux is not installed")
    # select-window first: select-pane alone does not change the session's window.
    for command in ("select-window", "select-pane"):
        failure = _run([tmux, "-S", socket, command, "-t", pane], env)
        if failure is not None:
            return FocusResult(False, f"tmux could not select pane {pane}: {failure}")
    return FocusResult(True, f"selected tmux pane {pane}")


def _focus_x11(terminal: Mapping[str, str], env: Mapping[str, str]) -> FocusResult:
    window = terminal["WINDOWID"]
    if not _WINDOW_ID.fullmatch(window) or not 0 < int(window) < _X11_ID_LIMIT:
        return FocusResult(False, f"the recorded X11 window {window[:20]!r} is not a window id")
    display = terminal.get("DISPLAY") or env.get("DISPLAY", "")
    if not _DISPLAY.fullmatch(display):
        return FocusResult(False, "no X11 display to raise the window on")
    xdotool = _find("xdotool", env)
    if xdotool is None:
        return FocusResult(False, "xdotool is not installed")
    tool_env = {**env, "DISPLAY": display}
    # windowactivate asks the window manager, which also switches desktops; without a
    # window manager (or with one that lacks _NET_ACTIVE_WINDOW) it fails at once, and
    # raising plus focusing by hand is the best left to do.
    if _run([xdotool, "windowactivate", "--sync", window], tool_env) is None:
        return FocusResult(True, f"activated X11 window {window}")
    failure = _run([xdotool, "windowraise", window], tool_env) or _run(
        [xdotool, "windowfocus", "--sync", window], tool_env
    )
    if failure is not None:
        return FocusResult(False, f"xdotool could not raise X11 window {window}: {failure}")
    return FocusResult(True, f"raised X11 window {window}")


def _find(tool: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(tool, path=env.get("PATH", os.defpath))


def _run(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Run a tool; None when it succeeded, else one line saying why not."""
    try:
        done = subprocess.run(
            argv,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TOOL_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"{os.path.basename(argv[0])} did not finish within {TOOL_TIMEOUT:.0f} s"
    except OSError as error:
        return f"{os.path.basename(argv[0])} could not start ({error.strerror})"
    if done.returncode == 0:
        return None
    # The first line names the problem ("can't find pane: %9", "X Error ... BadWindow").
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return lines[0] if lines else f"exit status {done.returncode}"
