"""kitty: the session's window (and so its tab), through kitty's remote control.

Reaching kitty from outside needs both ``allow_remote_control`` and ``listen_on`` in
kitty.conf; KITTY_LISTEN_ON is set in its windows only when it listens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ._tools import SMALL_NUMBER, FocusResult, Step, absolute_path, find, quoted, run

KITTY_TIMEOUT = 15.0
REMOTE_OFF = "kitty: remote control is off"
HOW_TO_ENABLE = (
    "set allow_remote_control yes and listen_on unix:/tmp/kitty-{kitty_pid} in kitty.conf"
)
# An abstract socket name, or TCP on the loopback only.
_ABSTRACT = re.compile(r"unix:@[A-Za-z0-9._+=-]{1,100}")
_TCP = re.compile(r"tcp:(localhost|127\.0\.0\.1|\[::1\]):[0-9]{1,5}")


def valid_address(address: str) -> bool:
    if address.startswith("unix:/"):
        return absolute_path(address.removeprefix("unix:"))
    return bool(_ABSTRACT.fullmatch(address) or _TCP.fullmatch(address))


def plan(terminal: Mapping[str, str]) -> Step | str | None:
    if "KITTY_WINDOW_ID" not in terminal:
        return None
    window = terminal["KITTY_WINDOW_ID"]
    if not SMALL_NUMBER.fullmatch(window):
        return f"kitty: the recorded window {quoted(window)} is not a window id"
    address = terminal.get("KITTY_LISTEN_ON")
    if address is None:
        return REMOTE_OFF
    if not valid_address(address):
        return f"kitty: the recorded socket {quoted(address)} is not a kitty address"
    return Step(f"kitty window {window}", lambda env: _focus(address, window, env))


def focus_argv(kitty: str, address: str, window: str) -> list[str]:
    return [kitty, "@", "--to", address, "focus-window", "--match", f"id:{window}"]


def _focus(address: str, window: str, env: Mapping[str, str]) -> FocusResult:
    kitty = find("kitty", env)
    if kitty is None:
        return FocusResult(False, "kitty is not installed where tray runs")
    # kitty's client is kitty itself, in Python: seconds to start on a busy machine.
    why, _ = run(focus_argv(kitty, address, window), env, KITTY_TIMEOUT)
    if why is None:
        return FocusResult(True, f"focused kitty window {window}")
    if "remote control" in why.lower():
        return FocusResult(False, f"{REMOTE_OFF} ({HOW_TO_ENABLE})")
    return FocusResult(False, f"kitty could not focus window {window}: {why}")
