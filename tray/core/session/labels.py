"""Pure: what a session is called, and where a remote session's tmux facts are kept.

Shared by the app's overview and the remote package (which labels a host's sessions
"devbox · ..."), so it sits below both.
"""

from __future__ import annotations

from typing import Final

from tray.base.safe_text import clean_text
from tray.core.session.model import Session

# Where a remote session's tmux pane and socket are kept (tray.core.hosts.remote_sessions): keys of
# their own, so the local focus code, which reads TMUX and TMUX_PANE, never takes them
# for a pane on this machine.
REMOTE_PANE_KEY: Final = "REMOTE_TMUX_PANE"
REMOTE_SOCKET_KEY: Final = "REMOTE_TMUX_SOCKET"


def session_app(session: Session) -> str | None:
    root = next((r for r in session.records if r.id == ""), None)
    if root is not None and root.app:
        return root.app
    return next((r.app for r in session.records if r.app), None)


def session_label(session: Session) -> str:
    """``--name`` when given, else "app · directory", else the derived name (with the
    directory a program reported by OSC 7); one clean line."""
    if session.name_given:
        return clean_text(session.name) or session.id
    app = session_app(session)
    directory = clean_text(session.cwd.rstrip("/").rsplit("/", 1)[-1])
    if app is None:
        name = clean_text(session.name) or session.id
        # A shell that says where it is (OSC 7) is known by that place, as an agent is.
        return f"{name} · {directory}" if session.cwd_reported and directory else name
    return f"{app} · {directory}" if directory else app


# What the launcher records of the terminal a session runs in (with the terminal
# process's pid and start time), for focusing it and for naming it.
TERMINAL_VARIABLES = (
    "TMUX",
    "TMUX_PANE",
    "WINDOWID",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "KITTY_WINDOW_ID",
    "KITTY_LISTEN_ON",
    "WEZTERM_PANE",
    "WEZTERM_UNIX_SOCKET",
    "GNOME_TERMINAL_SCREEN",
    "GNOME_TERMINAL_SERVICE",
    "KONSOLE_DBUS_SERVICE",
    "KONSOLE_DBUS_SESSION",
    "KONSOLE_DBUS_WINDOW",
    "PTYXIS_VERSION",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "TERM",
    "SSH_TTY",
)
