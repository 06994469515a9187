"""Focus with real terminals on a desktop with a window manager (openbox): a real
`tray run` inside GNOME Terminal, kitty and xterm records its terminal facts, and the
app's focus function, given those facts, brings that tab and window forward."""

from __future__ import annotations

import shlex
from pathlib import Path

from helpers.desktop_terminals import (
    FocusDesktop,
    focus_desktop_fixture,  # noqa: F401 - the fixture focus_desktop
    gnome_active_tab,
    gnome_terminal,
    kitty_focused_window,
    kitty_ls,
    konsole_call,
    konsole_current_session,
    start_gnome_terminal_server,
    start_kitty,
)
from helpers.waiting import wait_for

from tray.desktop.focus import focus_plan, focus_session
from tray.desktop.focus.gnome_terminal import ENABLE_COMMAND


def _gnome_two_tabs(desktop: FocusDesktop) -> dict[str, str]:
    """A window with the session's tab (first) and another tab (active); returns the
    session's recorded terminal facts."""
    gnome_terminal(desktop, "--window", "--", *desktop.tray_run("focus-me", "session-tab"))
    desktop.wait_active_title("session-tab")
    terminal = dict(desktop.recorded("focus-me").terminal)
    # Run from the session's tab, the client adds a tab to that tab's window.
    gnome_terminal(
        desktop, "--tab", "--", *desktop.titled("other-tab"),
        GNOME_TERMINAL_SCREEN=terminal["GNOME_TERMINAL_SCREEN"],
        GNOME_TERMINAL_SERVICE=terminal["GNOME_TERMINAL_SERVICE"],
    )  # fmt: skip
    desktop.wait_active_title("other-tab")
    assert gnome_active_tab(desktop, 1) == 1
    return terminal


def test_gnome_terminal_selects_the_sessions_tab_and_window(
    focus_desktop: FocusDesktop,
) -> None:
    desktop = focus_desktop
    start_gnome_terminal_server(desktop, shell_integration=True)
    terminal = _gnome_two_tabs(desktop)
    assert terminal["GNOME_TERMINAL_SERVICE"].startswith(":")
    gnome_terminal(desktop, "--window", "--", *desktop.titled("front"))
    desktop.wait_active_title("front")

    way, reason = focus_plan(terminal, desktop.env)
    assert way is not None
    assert reason == "GNOME Terminal tab"
    result = focus_session(terminal, env=desktop.env)
    assert result.ok, result.message
    assert result.message == "selected the GNOME Terminal tab"
    # The window's title is its active tab's: the session's tab, in the active window.
    desktop.wait_active_title("session-tab")
    assert gnome_active_tab(desktop, 1) == 0


def test_gnome_terminal_without_shell_integration_raises_the_window_and_says_why(
    focus_desktop: FocusDesktop,
) -> None:
    desktop = focus_desktop
    start_gnome_terminal_server(desktop, shell_integration=False)
    terminal = _gnome_two_tabs(desktop)
    # Another program's window in front: the one GNOME Terminal window is behind it.
    desktop.start(["xterm", "-T", "front", "-e", "sleep", "600"], "xterm")
    desktop.wait_active_title("front")

    result = focus_session(terminal, env=desktop.env)
    assert result.ok, result.message
    assert ENABLE_COMMAND in result.message
    assert "restart GNOME Terminal" in result.message
    # Raised, but its active tab is still the other one.
    desktop.wait_active_title("other-tab")
    assert gnome_active_tab(desktop, 1) == 1


def test_gnome_terminal_with_two_windows_and_no_provider_does_not_guess(
    focus_desktop: FocusDesktop,
) -> None:
    desktop = focus_desktop
    start_gnome_terminal_server(desktop, shell_integration=False)
    gnome_terminal(desktop, "--window", "--", *desktop.tray_run("focus-me", "session-tab"))
    desktop.wait_active_title("session-tab")
    terminal = dict(desktop.recorded("focus-me").terminal)
    gnome_terminal(desktop, "--window", "--", *desktop.titled("front"))
    desktop.wait_active_title("front")

    result = focus_session(terminal, env=desktop.env)
    assert not result.ok
    assert "GNOME Terminal has 2 windows open" in result.message
    assert ENABLE_COMMAND in result.message
    assert desktop.active_title() == "front"


def test_kitty_focuses_the_sessions_window(focus_desktop: FocusDesktop, tmp_path: Path) -> None:
    desktop = focus_desktop
    socket = tmp_path / "kitty.sock"
    start_kitty(desktop, socket, desktop.tray_run("focus-me", "session-window"))
    terminal = dict(desktop.recorded("focus-me").terminal)
    session_window = int(terminal["KITTY_WINDOW_ID"])
    assert terminal["KITTY_LISTEN_ON"] == f"unix:{socket}"
    # A second window in the same tab, then a second OS window in front.
    to = ["kitty", "@", "--to", f"unix:{socket}"]
    desktop.tool(*to, "launch", "--type=window", "sleep", "600")
    desktop.tool(*to, "launch", "--type=os-window", "sleep", "600")
    wait_for(
        lambda: kitty_focused_window(desktop, socket) not in (None, session_window),
        what="another kitty window to have the focus",
    )
    assert len(kitty_ls(desktop, socket)) == 2

    result = focus_session(terminal, env=desktop.env)
    assert result.ok, result.message
    assert result.message == f"focused kitty window {session_window}"
    wait_for(
        lambda: kitty_focused_window(desktop, socket) == session_window,
        what="the session's kitty window to have the focus",
    )


def test_kitty_without_remote_control_says_so() -> None:
    way, reason = focus_plan({"KITTY_WINDOW_ID": "1"}, {"PATH": "/usr/bin"})
    assert (way, reason) == (None, "kitty: remote control is off")


def test_xterm_without_windowid_is_found_by_its_process(focus_desktop: FocusDesktop) -> None:
    desktop = focus_desktop
    xterm = desktop.start(
        ["xterm", "-T", "session-window", "-e",
         "env", "-u", "WINDOWID", *desktop.tray_run("focus-me", "session-window")],
        "xterm-session",
    )  # fmt: skip
    terminal = dict(desktop.recorded("focus-me").terminal)
    assert "WINDOWID" not in terminal
    # The launcher recorded the process that owns its pty: xterm itself.
    assert terminal["terminal_pid"] == str(xterm.pid)
    desktop.wait_active_title("session-window")
    desktop.start(["xterm", "-T", "front", "-e", "sleep", "600"], "xterm-front")
    desktop.wait_active_title("front")

    way, reason = focus_plan(terminal, desktop.env)
    assert way is not None
    assert reason == "the terminal's X11 window"
    result = focus_session(terminal, env=desktop.env)
    assert result.ok, result.message
    desktop.wait_active_title("session-window")


def test_konsole_selects_the_sessions_tab_then_its_window(focus_desktop: FocusDesktop) -> None:
    desktop = focus_desktop
    # Konsole's own parser would take `--name` for itself: a script runs `tray run`.
    script = desktop.directory / "session.sh"
    script.write_text("#!/bin/sh\nexec " + shlex.join(desktop.tray_run("focus-me", "tab")) + "\n")
    script.chmod(0o755)
    desktop.start(
        ["konsole", "--nofork", "-e", str(script)], "konsole", HOME=str(desktop.directory)
    )
    terminal = dict(desktop.recorded("focus-me").terminal)
    service, window = terminal["KONSOLE_DBUS_SERVICE"], terminal["KONSOLE_DBUS_WINDOW"]
    session = int(terminal["KONSOLE_DBUS_SESSION"].removeprefix("/Sessions/"))
    # A second tab, which becomes the current one, then another program's window in front.
    konsole_call(desktop, service, window, "org.kde.konsole.Window.newSession")
    wait_for(lambda: konsole_current_session(desktop, service, window) != session)
    desktop.start(["xterm", "-T", "front", "-e", "sleep", "600"], "xterm")
    desktop.wait_active_title("front")

    way, reason = focus_plan(terminal, desktop.env)
    assert way is not None
    assert reason == f"Konsole tab, then X11 window {terminal['WINDOWID']}"
    result = focus_session(terminal, env=desktop.env)
    assert result.ok, result.message
    assert konsole_current_session(desktop, service, window) == session
    wait_for(
        lambda: desktop.active_window() == int(terminal["WINDOWID"]),
        what="Konsole's window to be the active one",
    )
