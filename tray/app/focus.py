"""Bring a session's terminal to the front: the app's door to ``tray.desktop.focus``,
which knows each terminal's own way (tmux, GNOME Terminal, kitty, WezTerm, Konsole,
Ptyxis, X11 windows, KWin)."""

from __future__ import annotations

from tray.desktop.focus import FocusResult, check_focus, focus_plan, focus_session

__all__ = ["FocusResult", "check_focus", "focus_plan", "focus_session"]
