"""Real terminals for the focus tests: a desktop of their own (Xvfb, a private bus and
openbox, which keeps _NET_ACTIVE_WINDOW), and `tray run` started inside a terminal so
that the test reads the terminal facts a real launcher recorded.

Every process here is started with Popen and stopped by its own pid. Each test gets a
fresh desktop, so a window manager never reaches the Xvfb the other tests share.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from Xlib import display as xdisplay

from helpers.desktop_services import (
    START_TIMEOUT,
    TOOL_TIMEOUT,
    base_env,
    name_has_owner,
    start_bus,
    start_xvfb,
    stop_process,
)
from helpers.waiting import wait_for
from tray.core.session.model import Session
from tray.state.store import StateStore

GNOME_TERMINAL_SERVER = "/usr/libexec/gnome-terminal-server"


@dataclass
class FocusDesktop:
    directory: Path
    env: dict[str, str]  # DISPLAY, the private bus, settings in a keyfile of our own
    state_dir: Path
    processes: list[subprocess.Popen[Any]] = field(default_factory=list)

    def start(self, argv: list[str], name: str, **extra: str) -> subprocess.Popen[Any]:
        with (self.directory / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                argv,
                env={**self.env, **extra},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self.processes.append(proc)
        return proc

    def tool(self, *argv: str, **extra: str) -> str:
        done = subprocess.run(
            list(argv),
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT,
            check=True,
        )
        return done.stdout.strip()

    def active_window(self) -> int:
        try:
            return int(self.tool("xdotool", "getactivewindow"))
        except subprocess.CalledProcessError:
            return 0

    def active_title(self) -> str:
        window = self.active_window()
        if not window:
            return ""
        try:
            return self.tool("xdotool", "getwindowname", str(window))
        except subprocess.CalledProcessError:
            return ""

    def wait_active_title(self, title: str) -> None:
        wait_for(lambda: self.active_title() == title, what=f"{title!r} to be the active window")

    def tray_run(self, name: str, title: str) -> list[str]:
        """argv for a real `tray run` whose command names its tab by OSC 0, then waits."""
        script = f"printf '\\033]0;{title}\\007'; exec sleep 600"
        return [sys.executable, "-m", "tray", "run", "--name", name, "--", "sh", "-c", script]

    def titled(self, title: str) -> list[str]:
        """argv for a plain command (no tray) that names its tab, then waits."""
        return ["sh", "-c", f"printf '\\033]0;{title}\\007'; exec sleep 600"]

    def recorded(self, name: str) -> Session:
        """The session that a real launcher wrote, once its terminal facts are there."""
        store = StateStore(self.state_dir)

        def found() -> Session | None:
            sessions, _ = store.read_all(time.time())
            return next((s for s in sessions if s.name == name and s.terminal), None)

        session = wait_for(found, START_TIMEOUT, 0.1, f"session {name!r} in the state dir")
        assert session is not None
        return session


@pytest.fixture(name="focus_desktop")
def focus_desktop_fixture(tmp_path: Path) -> Iterator[FocusDesktop]:
    """A desktop of the test's own: Xvfb, a private bus, openbox; stopped afterwards."""
    directory = tmp_path / "desktop"
    directory.mkdir()
    xvfb, display = start_xvfb(directory / "xvfb.log")
    bus: subprocess.Popen[Any] | None = None
    desktop: FocusDesktop | None = None
    try:
        bus, address = start_bus(directory / "bus")
        config = tmp_path / "config"
        state_dir = tmp_path / "state"
        state_dir.mkdir(mode=0o700)
        env = base_env(
            DISPLAY=display,
            DBUS_SESSION_BUS_ADDRESS=address,
            XDG_CONFIG_HOME=str(config),
            GSETTINGS_BACKEND="keyfile",
            LIBGL_ALWAYS_SOFTWARE="1",
            TRAY_STATE_DIR=str(state_dir),
        )
        for key in ("GNOME_TERMINAL_SCREEN", "GNOME_TERMINAL_SERVICE", "KITTY_WINDOW_ID",
                    "KITTY_LISTEN_ON", "WEZTERM_PANE", "KONSOLE_DBUS_SESSION",
                    "PTYXIS_VERSION", "TRAY_SESSION_ID"):  # fmt: skip
            env.pop(key, None)
        desktop = FocusDesktop(directory, env, state_dir)
        desktop.start(["openbox", "--sm-disable"], "openbox")
        wait_for(lambda: _has_window_manager(display), START_TIMEOUT, 0.1, "openbox")
        yield desktop
    finally:
        if desktop is not None:
            for proc in reversed(desktop.processes):
                stop_process(proc)
        if bus is not None:
            stop_process(bus)
        stop_process(xvfb)


def _has_window_manager(display: str) -> bool:
    connection = xdisplay.Display(display)
    try:
        atom = connection.intern_atom("_NET_SUPPORTING_WM_CHECK")
        return connection.screen().root.get_full_property(atom, 0) is not None
    finally:
        connection.close()


# ------------------------------------------------------------------ GNOME Terminal


def start_gnome_terminal_server(desktop: FocusDesktop, *, shell_integration: bool) -> None:
    """The server, with shell-integration-enabled set in a keyfile of its own (it reads
    the setting only when it starts); a private bus starts no services by itself."""
    settings = Path(desktop.env["XDG_CONFIG_HOME"]) / "glib-2.0" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    value = "true" if shell_integration else "false"
    (settings / "keyfile").write_text(
        f"[org/gnome/terminal/legacy]\nshell-integration-enabled={value}\n"
    )
    proc = desktop.start([GNOME_TERMINAL_SERVER], "gnome-terminal-server")

    def owned() -> bool:
        if proc.poll() is not None:
            raise RuntimeError("gnome-terminal-server exited; see its log")
        return name_has_owner(desktop.env, "org.gnome.Terminal")

    wait_for(owned, START_TIMEOUT, 0.1, "org.gnome.Terminal on the bus")


def gnome_terminal(desktop: FocusDesktop, *argv: str, **extra: str) -> None:
    """Run the gnome-terminal client, which asks the server for a window or a tab."""
    desktop.tool("gnome-terminal", *argv, **extra)


def gnome_active_tab(desktop: FocusDesktop, window: int) -> int:
    """The index of the active tab of GNOME Terminal's window number ``window``."""
    reply = desktop.tool(
        "gdbus", "call", "--session", "--dest", "org.gnome.Terminal",
        "--object-path", f"/org/gnome/Terminal/window/{window}",
        "--method", "org.gtk.Actions.Describe", "active-tab",
    )  # fmt: skip
    # ((false, signature 'i', [<1>]),)
    return int(reply.rsplit("<", 1)[1].split(">", 1)[0])


# ------------------------------------------------------------------ kitty


def start_kitty(desktop: FocusDesktop, socket: Path, argv: list[str]) -> None:
    desktop.start(
        ["kitty", "--config", "NONE", "-o", "allow_remote_control=yes",
         "--listen-on", f"unix:{socket}", *argv],
        "kitty",
    )  # fmt: skip
    wait_for(socket.exists, START_TIMEOUT, 0.1, "kitty's socket")


def kitty_ls(desktop: FocusDesktop, socket: Path) -> list[dict[str, Any]]:
    listing: list[dict[str, Any]] = json.loads(
        desktop.tool("kitty", "@", "--to", f"unix:{socket}", "ls")
    )
    return listing


def kitty_focused_window(desktop: FocusDesktop, socket: Path) -> int | None:
    """The window kitty has focus in: in the focused OS window, its active tab's focused
    window (kitty marks the active window of every tab as focused)."""
    for os_window in kitty_ls(desktop, socket):
        if not os_window.get("is_focused"):
            continue
        for tab in os_window["tabs"]:
            if tab.get("is_focused"):
                for window in tab["windows"]:
                    if window.get("is_focused"):
                        return int(window["id"])
    return None


# ------------------------------------------------------------------ Konsole


def konsole_call(desktop: FocusDesktop, service: str, path: str, method: str, *args: str) -> str:
    return desktop.tool(
        "gdbus", "call", "--session", "--dest", service, "--object-path", path,
        "--method", method, *args,
    )  # fmt: skip


def konsole_current_session(desktop: FocusDesktop, service: str, window: str) -> int:
    reply = konsole_call(desktop, service, window, "org.kde.konsole.Window.currentSession")
    return int(reply.strip("(),"))
