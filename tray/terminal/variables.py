"""The environment variables that name the terminal a session runs in.

Read from the environment by ``tray run`` (:mod:`tray.launcher.attached`) and by the
shell's finished-command report (:mod:`tray.shell.finished`), and kept in the session's
``terminal`` facts: the desktop's focus finds the session's tab by them.
"""

from __future__ import annotations

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
