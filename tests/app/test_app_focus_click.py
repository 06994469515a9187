"""The whole path, for real: a program blocks inside a terminal under `tray run`,
`tray app` sends the notification to dunst, and a click on it (dunst's default action)
selects that program's tab and makes its window the active one: GNOME Terminal (its
search provider, and without it the window alone, which the app says), kitty (remote
control) and xterm (found up the process tree, with no WINDOWID)."""

from __future__ import annotations

import base64
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from helpers.desktop_apps import TIMEOUT, RunningApp, start_app_process
from helpers.desktop_services import Dunst, start_dunst, start_trayer, stop_process
from helpers.desktop_terminals import (
    FocusDesktop,
    focus_desktop_fixture,  # noqa: F401 - the fixture focus_desktop
    gnome_active_tab,
    gnome_terminal,
    kitty_focused_window,
    kitty_ls,
    start_gnome_terminal_server,
    start_kitty,
)
from helpers.waiting import wait_for


def _blocking_agent(directory: Path) -> Path:
    """A program that names its tab, asks for approval (OSC 7501), and waits."""
    message = base64.b64encode(b"approve Bash: ls").decode()
    agent = directory / "agent.py"
    agent.write_text(
        "import sys\n"
        "sys.stdout.write('\\x1b]0;session-tab\\x07')\n"
        "sys.stdout.write('\\x1b]7501;state=blocked:kind=permission:app=claude-code"
        f":msg={message}\\x07')\n"
        "sys.stdout.flush()\n"
        "input()\n"
    )
    return agent


def test_a_click_on_the_notification_selects_the_gnome_terminal_tab(
    focus_desktop: FocusDesktop, tmp_path: Path
) -> None:
    desktop = focus_desktop
    start_gnome_terminal_server(desktop, shell_integration=True)
    dunst = start_dunst(desktop.env, tmp_path / "dunst")
    trayer = start_trayer(desktop.env, tmp_path / "trayer.log")
    app = None
    try:
        app = start_app_process(desktop.env, tmp_path, "")
        agent = _blocking_agent(tmp_path)
        run = [sys.executable, "-m", "tray", "run", "--name", "agent", "--"]
        gnome_terminal(desktop, "--window", "--", *run, sys.executable, str(agent))
        desktop.wait_active_title("session-tab")
        terminal = desktop.recorded("agent").terminal
        gnome_terminal(
            desktop, "--tab", "--", *desktop.titled("other-tab"),
            GNOME_TERMINAL_SCREEN=terminal["GNOME_TERMINAL_SCREEN"],
            GNOME_TERMINAL_SERVICE=terminal["GNOME_TERMINAL_SERVICE"],
        )  # fmt: skip
        desktop.wait_active_title("other-tab")
        gnome_terminal(desktop, "--window", "--", *desktop.titled("front"))
        desktop.wait_active_title("front")
        wait_for(lambda: dunst.count("displayed") == 1, TIMEOUT, what="the notification")

        dunst.action(0)
        desktop.wait_active_title("session-tab")
        assert gnome_active_tab(desktop, 1) == 0
    finally:
        if app is not None:
            stop_process(app.proc)
            assert "Traceback" not in app.log, app.log
        stop_process(trayer)
        dunst.stop()


@contextlib.contextmanager
def _app_on(desktop: FocusDesktop, tmp_path: Path) -> Iterator[tuple[Dunst, RunningApp]]:
    """dunst, a tray host and a real `tray app` on the focus desktop."""
    dunst = start_dunst(desktop.env, tmp_path / "dunst")
    trayer = start_trayer(desktop.env, tmp_path / "trayer.log")
    app = None
    try:
        app = start_app_process(desktop.env, tmp_path, "")
        yield dunst, app
    finally:
        if app is not None:
            stop_process(app.proc)
            assert "Traceback" not in app.log, app.log
        stop_process(trayer)
        dunst.stop()


def _run_agent(tmp_path: Path) -> list[str]:
    agent = _blocking_agent(tmp_path)
    return [
        sys.executable,
        "-m",
        "tray",
        "run",
        "--name",
        "agent",
        "--",
        sys.executable,
        str(agent),
    ]


def test_a_click_without_gnome_terminals_provider_raises_the_window_and_says_why(
    focus_desktop: FocusDesktop, tmp_path: Path
) -> None:
    desktop = focus_desktop
    start_gnome_terminal_server(desktop, shell_integration=False)
    with _app_on(desktop, tmp_path) as (dunst, app):
        gnome_terminal(desktop, "--window", "--", *_run_agent(tmp_path))
        desktop.wait_active_title("session-tab")
        terminal = desktop.recorded("agent").terminal
        gnome_terminal(
            desktop, "--tab", "--", *desktop.titled("other-tab"),
            GNOME_TERMINAL_SCREEN=terminal["GNOME_TERMINAL_SCREEN"],
            GNOME_TERMINAL_SERVICE=terminal["GNOME_TERMINAL_SERVICE"],
        )  # fmt: skip
        desktop.wait_active_title("other-tab")
        desktop.start(["xterm", "-T", "front", "-e", "sleep", "600"], "xterm")
        desktop.wait_active_title("front")
        wait_for(lambda: dunst.count("displayed") == 1, TIMEOUT, what="the notification")

        dunst.action(0)
        # The window comes forward, still on its other tab; the app says why, once.
        desktop.wait_active_title("other-tab")
        wait_for(lambda: "only in part" in app.log, TIMEOUT, what="the app to say why")
        assert gnome_active_tab(desktop, 1) == 1
        line = next(line for line in app.log.splitlines() if "only in part" in line)
        assert "focused agent only in part" in line
        assert "shell-integration-enabled true" in line
        assert "restart GNOME Terminal" in line


def test_a_click_on_the_notification_focuses_the_kitty_window(
    focus_desktop: FocusDesktop, tmp_path: Path
) -> None:
    desktop = focus_desktop
    socket = tmp_path / "kitty.sock"
    with _app_on(desktop, tmp_path) as (dunst, _app):
        start_kitty(desktop, socket, _run_agent(tmp_path))
        terminal = desktop.recorded("agent").terminal
        session_window = int(terminal["KITTY_WINDOW_ID"])
        to = ["kitty", "@", "--to", f"unix:{socket}"]
        desktop.tool(*to, "launch", "--type=window", "sleep", "600")
        desktop.tool(*to, "launch", "--type=os-window", "sleep", "600")
        wait_for(
            lambda: kitty_focused_window(desktop, socket) not in (None, session_window),
            what="another kitty window to have the focus",
        )
        assert len(kitty_ls(desktop, socket)) == 2
        wait_for(lambda: dunst.count("displayed") == 1, TIMEOUT, what="the notification")

        dunst.action(0)
        wait_for(
            lambda: kitty_focused_window(desktop, socket) == session_window,
            TIMEOUT,
            what="the session's kitty window to have the focus",
        )


def test_a_click_on_the_notification_raises_the_xterm_found_by_its_process(
    focus_desktop: FocusDesktop, tmp_path: Path
) -> None:
    desktop = focus_desktop
    with _app_on(desktop, tmp_path) as (dunst, _app):
        xterm = desktop.start(
            ["xterm", "-T", "session-window", "-e", "env", "-u", "WINDOWID", *_run_agent(tmp_path)],
            "xterm-session",
        )
        terminal = desktop.recorded("agent").terminal
        assert "WINDOWID" not in terminal
        assert terminal["terminal_pid"] == str(xterm.pid)
        desktop.wait_active_title("session-tab")
        desktop.start(["xterm", "-T", "front", "-e", "sleep", "600"], "xterm-front")
        desktop.wait_active_title("front")
        wait_for(lambda: dunst.count("displayed") == 1, TIMEOUT, what="the notification")

        dunst.action(0)
        desktop.wait_active_title("session-tab")
