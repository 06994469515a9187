"""WezTerm: the session's pane (and its tab), through ``wezterm cli`` on its socket.

``activate-pane`` selects the pane and its tab but does not raise the window, so the
window way (WINDOWID on X11) follows it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._tools import SMALL_NUMBER, FocusResult, Step, absolute_path, find, quoted, run


def plan(terminal: Mapping[str, str]) -> Step | str | None:
    if "WEZTERM_PANE" not in terminal:
        return None
    pane = terminal["WEZTERM_PANE"]
    if not SMALL_NUMBER.fullmatch(pane):
        return f"WezTerm: the recorded pane {quoted(pane)} is not a pane id"
    socket = terminal.get("WEZTERM_UNIX_SOCKET", "")
    if not absolute_path(socket):
        return "WezTerm: its socket was not recorded for this session"
    return Step(f"WezTerm pane {pane}", lambda env: _activate(socket, pane, env))


def activate_argv(wezterm: str, pane: str) -> list[str]:
    return [wezterm, "cli", "activate-pane", "--pane-id", pane]


def _activate(socket: str, pane: str, env: Mapping[str, str]) -> FocusResult:
    wezterm = find("wezterm", env)
    if wezterm is None:
        return FocusResult(False, "wezterm is not installed where tray runs")
    # wezterm cli talks to the GUI whose socket WEZTERM_UNIX_SOCKET names.
    why, _ = run(activate_argv(wezterm, pane), {**env, "WEZTERM_UNIX_SOCKET": socket})
    if why is not None:
        return FocusResult(False, f"WezTerm could not activate pane {pane}: {why}")
    return FocusResult(True, f"activated WezTerm pane {pane}")
