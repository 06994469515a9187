"""tmux: select the session's window, then its pane, on the server it recorded."""

from __future__ import annotations

from collections.abc import Mapping

from ._tools import PANE, FocusResult, Step, absolute_path, failure, find, quoted


def plan(terminal: Mapping[str, str]) -> Step | str | None:
    """A step, a reason it cannot be done, or None when the session is not in tmux."""
    if "TMUX_PANE" not in terminal:
        return None
    pane = terminal["TMUX_PANE"]
    if not PANE.fullmatch(pane):
        return f"the recorded tmux pane {quoted(pane)} is not a pane id"
    # TMUX is "socket,pid,session"; the socket path itself may hold commas.
    socket = terminal.get("TMUX", "").rsplit(",", 2)[0]
    if not absolute_path(socket):
        return "the tmux server's socket was not recorded for this session"
    return Step(f"tmux pane {pane}", lambda env: _select(socket, pane, env))


def _select(socket: str, pane: str, env: Mapping[str, str]) -> FocusResult:
    tmux = find("tmux", env)
    if tmux is None:
        return FocusResult(False, "tmux is not installed")
    # select-window first: select-pane alone does not change the session's window.
    for command in ("select-window", "select-pane"):
        why = failure([tmux, "-S", socket, command, "-t", pane], env)
        if why is not None:
            return FocusResult(False, f"tmux could not select pane {pane}: {why}")
    return FocusResult(True, f"selected tmux pane {pane}")
