"""Bring a session's own tab forward, in its terminal's own way.

Where more than one way applies they are all done, in order: the tmux pane, then the
terminal's tab, then its window. ``focus_plan`` decides what would be done without
running anything (for the menu's label); ``focus_session`` does it; ``check_focus`` says
what Focus would use for the terminal it runs in (for ``tray doctor``).

Every value comes from a state file any local program could write: each is checked
strictly before it becomes an argument of a fixed command, D-Bus is called only on the
terminal's own service names, and nothing is ever typed into a session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from tray.base.check import Check
from tray.desktop.bus_loop import attached
from tray.terminal.variables import TERMINAL_VARIABLES

from . import gnome_terminal, kitty, konsole, kwin, ptyxis, tmux, wezterm, x11
from ._tools import TERMINAL_PID_KEY, TERMINAL_START_KEY, FocusResult, Step

__all__ = [
    "TERMINAL_PID_KEY",
    "TERMINAL_START_KEY",
    "FocusResult",
    "Way",
    "check_focus",
    "focus_plan",
    "focus_session",
]

NOTHING = "no tmux pane, terminal tab or window recorded for this session"
WAYLAND_CANNOT = "this Wayland desktop lets no program raise another's window"


@dataclass(frozen=True, slots=True)
class Way:
    steps: tuple[Step, ...]

    @property
    def what(self) -> str:
        return ", then ".join(step.what for step in self.steps)


def _steps(
    terminal: Mapping[str, str], env: Mapping[str, str], token: str | None
) -> tuple[list[Step], list[str]]:
    steps: list[Step] = []
    reasons: list[str] = []

    def add(planned: Step | str | None) -> bool:
        if isinstance(planned, Step):
            steps.append(planned)
            return True
        if planned is not None:
            reasons.append(planned)
        return False

    add(tmux.plan(terminal))
    # GNOME Terminal's provider and kitty's focus-window present the window themselves.
    raises_window = add(gnome_terminal.plan(terminal, env, token)) | add(kitty.plan(terminal))
    add(wezterm.plan(terminal))
    add(konsole.plan(terminal))
    if raises_window:
        return steps, reasons
    if ptyxis.applies(terminal):
        if add(ptyxis.plan(terminal, env, token)):
            reasons.append(ptyxis.NO_TAB)
    elif kwin.is_kde_wayland(env) and TERMINAL_PID_KEY in terminal:
        # Before WINDOWID: Konsole on Wayland sets it to a number that is no X11 window.
        # KWin knows both kinds of window.
        add(kwin.plan(terminal))
    elif "WINDOWID" in terminal:
        add(x11.plan_window_id(terminal, env))
    elif x11.display_for(terminal, env) is not None:
        add(x11.plan_process(terminal, env))
    elif env.get("WAYLAND_DISPLAY") and not steps:
        reasons.append(WAYLAND_CANNOT)
    return steps, reasons


def focus_plan(
    terminal: Mapping[str, str], environ: Mapping[str, str], *, activation_token: str | None = None
) -> tuple[Way | None, str]:
    """What Focus would do for ``terminal``, and a short reason or note; runs nothing.

    (None, reason) means Focus can do nothing: the reason suits a disabled menu item,
    "Focus (kitty: remote control is off)".
    """
    steps, reasons = _steps(terminal, environ, activation_token)
    if not steps:
        return None, reasons[0] if reasons else NOTHING
    way = Way(tuple(steps))
    return way, "; ".join([way.what, *reasons])


def focus_session(
    terminal: Mapping[str, str], *, env: Mapping[str, str], activation_token: str | None = None
) -> FocusResult:
    """Do every way that applies; succeeds when any one brought something forward.

    ``env`` is the app's environment: PATH, the session bus, and DISPLAY when the session
    recorded none. ``activation_token`` is the notification server's, from a click.
    """
    steps, reasons = _steps(terminal, env, activation_token)
    if not steps:
        return FocusResult(False, "; ".join(reasons) if reasons else NOTHING)
    # Held for all the steps: their D-Bus calls share one loop and one connection (the
    # app's own, while the app holds it).
    with attached(env):
        results = [step.act(env) for step in steps]
    notes = [reason for reason in reasons if not any(reason in r.message for r in results)]
    ok = any(result.ok for result in results)
    # Something came forward, yet a way failed or could not be tried: the app says so.
    partial = ok and (bool(notes) or any(r.partial or not r.ok for r in results))
    return FocusResult(
        ok,
        "; ".join([*(result.message for result in results), *notes]),
        partial,
    )


def check_focus(environ: Mapping[str, str]) -> Check:
    """For ``tray doctor``: what Focus will use for a session started here, or what is
    missing. Asks GNOME Terminal (read-only) whether its search provider is on."""
    # The launcher's own list, so the check sees what a session started here records;
    # of it, Focus reads only its terminals' variables (TERM, TERM_PROGRAM and SSH_TTY
    # name the terminal and are passed over).
    terminal = {key: environ[key] for key in TERMINAL_VARIABLES if key in environ}
    process = _terminal_process()
    if process is not None:
        terminal[TERMINAL_PID_KEY], terminal[TERMINAL_START_KEY] = process
    way, reason = focus_plan(terminal, environ)
    if way is None:
        if reason == kitty.REMOTE_OFF:
            return Check("warn", "focus", f"{reason}: {kitty.HOW_TO_ENABLE}")
        return Check("warn", "focus", reason)
    service = terminal.get("GNOME_TERMINAL_SERVICE", "")
    uses_provider = any(step.what == "GNOME Terminal tab" for step in way.steps)
    if uses_provider and gnome_terminal.provider_enabled(service, environ) is False:
        return Check("warn", "focus", gnome_terminal.PROVIDER_OFF)
    if uses_provider and gnome_terminal.gnome_wayland(environ):
        return Check("ok", "focus", f"{reason} ({gnome_terminal.GNOME_WAYLAND_NOTE})")
    if "KITTY_WINDOW_ID" in terminal and "KITTY_LISTEN_ON" not in terminal:
        return Check("ok", "focus", f"{reason} (to select kitty's window: {kitty.HOW_TO_ENABLE})")
    return Check("ok", "focus", reason)


def _terminal_process() -> tuple[str, str] | None:
    """The nearest ancestor not on our terminal: the terminal itself (as the launcher
    records it)."""
    try:
        tty = os.fstat(0).st_rdev if os.isatty(0) else None
    except OSError:
        return None
    if tty is None:
        return None
    pid = os.getppid()
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat_file:
                fields = stat_file.read().rsplit(b")", 1)[1].split()
            parent, tty_nr, start = int(fields[1]), int(fields[4]), fields[19].decode()
        except (OSError, IndexError, ValueError):
            return None
        if tty_nr != tty:
            return str(pid), start
        if parent <= 1:
            return None
        pid = parent
    return None
