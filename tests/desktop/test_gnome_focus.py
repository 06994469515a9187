"""Focus on a real GNOME Shell 43 on Wayland (helpers.gnome_shell), with GNOME Terminal a
Wayland client of that shell and a real `tray run` in one of its tabs.

What was measured there, and what these tests hold to:
- GNOME Terminal's search provider (``ActivateResult``) selects the session's tab, but
  the shell does not raise the window: mutter marks it as demanding attention, and the
  shell shows its own notification "“<title>” is ready", whose click raises it.
- GNOME Shell 43's notification server sends no ``ActivationToken`` on a click.
- Given a real activation token of that compositor, handed to GNOME Terminal as
  GApplication platform data before ``ActivateResult``, the window comes forward at once.

The clicks are real pointer events inside the compositor (the fixture's virtual pointer).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.desktop_apps import TIMEOUT, start_app_process
from helpers.desktop_services import START_TIMEOUT, TOOL_TIMEOUT, name_has_owner, stop_process
from helpers.waiting import wait_for

from tray.base.check import Check
from tray.desktop.focus import FocusResult, check_focus, focus_plan, focus_session
from tray.desktop.focus.gnome_terminal import GNOME_WAYLAND_NOTE
from tray.state.store import StateStore

if TYPE_CHECKING:  # helpers.gnome_shell loads PyGObject: the fixture imports it when used
    from helpers.gnome_shell import GnomeShell

GNOME_TERMINAL_SERVER = "/usr/libexec/gnome-terminal-server"
TERMINAL = "org.gnome.Terminal"
SESSION_TAB = "session-tab"
# The title of the window that has the keyboard focus ("" for none).
FOCUS_TITLE = "global.display.focus_window ? global.display.focus_window.title : ''"
# The shell's own notification for a window that asked to come forward and was refused.
READY = f"“{SESSION_TAB}” is ready"


@dataclass
class WaylandTerminal:
    """GNOME Terminal's server as a Wayland client of the shell, started for one test."""

    shell: GnomeShell
    env: dict[str, str]  # for gnome-terminal and `tray run`: the shell's, and a keyfile
    state_dir: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def open(self, *argv: str, **extra: str) -> None:
        """Run the gnome-terminal client, which asks the server for a window or tab."""
        subprocess.run(
            ["gnome-terminal", *argv],
            env={**self.env, **extra},
            capture_output=True,
            timeout=TOOL_TIMEOUT,
            check=True,
        )

    def focused_title(self) -> str:
        title: str = self.shell.eval(FOCUS_TITLE)
        return title

    def wait_focused(self, title: str) -> None:
        wait_for(lambda: self.focused_title() == title, TIMEOUT, 0.05, f"{title!r} focused")

    def window_titles(self) -> list[str]:
        titles: list[str] = self.shell.eval(
            "global.get_window_actors().map(actor => actor.meta_window.title)"
        )
        return titles

    def active_tab(self, window: int) -> int:
        """The index of the active tab of GNOME Terminal's window number ``window``."""
        done = subprocess.run(
            ["gdbus", "call", "--session", "--dest", TERMINAL,
             "--object-path", f"/org/gnome/Terminal/window/{window}",
             "--method", "org.gtk.Actions.Describe", "active-tab"],
            env=self.env, capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=True,
        )  # fmt: skip
        # ((true, signature 'i', [<1>]),)
        return int(done.stdout.rsplit("<", 1)[1].split(">", 1)[0])

    def recorded(self, name: str) -> dict[str, str]:
        """The terminal facts that the real launcher of session ``name`` wrote."""
        store = StateStore(self.state_dir)

        def found() -> dict[str, str] | None:
            sessions, _ = store.read_all(time.time())
            session = next((s for s in sessions if s.name == name and s.terminal), None)
            return dict(session.terminal) if session is not None else None

        terminal = wait_for(found, START_TIMEOUT, 0.1, f"session {name!r} in the state dir")
        assert terminal is not None
        return terminal


@pytest.fixture(name="terminal")
def terminal_fixture(gnome_shell: GnomeShell, tmp_path: Path) -> Iterator[WaylandTerminal]:
    """GNOME Terminal's server on the shell's display and bus, with its search provider
    on (shell-integration-enabled, in a keyfile of its own: read only when the server
    starts); stopped, with its windows, afterwards."""
    gnome_shell.clear_notifications()
    if name_has_owner(gnome_shell.env, TERMINAL):
        raise RuntimeError("another GNOME Terminal server already runs on the shell's bus")
    settings = tmp_path / "terminal-config" / "glib-2.0" / "settings"
    settings.mkdir(parents=True)
    (settings / "keyfile").write_text(
        "[org/gnome/terminal/legacy]\nshell-integration-enabled=true\n"
    )
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    env = {
        **gnome_shell.env,
        "GDK_BACKEND": "wayland",
        "GSETTINGS_BACKEND": "keyfile",
        "XDG_CONFIG_HOME": str(settings.parent.parent),
        "TRAY_STATE_DIR": str(state_dir),
    }
    for key in ("DISPLAY", "GNOME_TERMINAL_SCREEN", "GNOME_TERMINAL_SERVICE", "TRAY_SESSION_ID"):
        env.pop(key, None)
    terminal = WaylandTerminal(gnome_shell, env, state_dir)
    with (tmp_path / "gnome-terminal-server.log").open("ab") as log:
        server = subprocess.Popen(
            [GNOME_TERMINAL_SERVER], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
    terminal.processes.append(server)
    try:

        def owned() -> bool:
            if server.poll() is not None:
                raise RuntimeError("gnome-terminal-server exited; see its log")
            return name_has_owner(env, TERMINAL)

        wait_for(owned, START_TIMEOUT, 0.1, "org.gnome.Terminal on the shell's bus")
        yield terminal
    finally:
        for proc in reversed(terminal.processes):
            stop_process(proc)
        wait_for(
            lambda: not any(t in terminal.window_titles() for t in (SESSION_TAB, "front")),
            TIMEOUT,
            0.1,
            "GNOME Terminal's windows to close",
        )
        gnome_shell.clear_notifications()


def _blocking_agent(directory: Path) -> Path:
    """A program that names its tab, asks for approval (OSC 7501), and waits."""
    message = base64.b64encode(b"approve Bash: ls").decode()
    agent = directory / "agent.py"
    agent.write_text(
        "import sys\n"
        f"sys.stdout.write('\\x1b]0;{SESSION_TAB}\\x07')\n"
        "sys.stdout.write('\\x1b]7501;state=blocked:kind=permission:app=claude-code"
        f":msg={message}\\x07')\n"
        "sys.stdout.flush()\n"
        "input()\n"
    )
    return agent


def _titled(title: str) -> list[str]:
    return ["sh", "-c", f"printf '\\033]0;{title}\\007'; exec sleep 600"]


def _session_behind(terminal: WaylandTerminal, command: list[str]) -> dict[str, str]:
    """The session's tab in window 1 with another tab active there, and a second window
    ("front") focused; returns the session's recorded terminal facts."""
    run = [sys.executable, "-m", "tray", "run", "--name", "agent", "--"]
    terminal.open("--window", "--", *run, *command)
    terminal.wait_focused(SESSION_TAB)
    facts = terminal.recorded("agent")
    # Run from the session's tab, the client adds a tab to that tab's window.
    terminal.open(
        "--tab", "--", *_titled("other-tab"),
        GNOME_TERMINAL_SCREEN=facts["GNOME_TERMINAL_SCREEN"],
        GNOME_TERMINAL_SERVICE=facts["GNOME_TERMINAL_SERVICE"],
    )  # fmt: skip
    terminal.wait_focused("other-tab")
    assert terminal.active_tab(1) == 1
    terminal.open("--window", "--", *_titled("front"))
    terminal.wait_focused("front")
    return facts


def _click_banner(shell: GnomeShell, body: str) -> None:
    """Click the banner showing ``body``, on its title row (not on a button), once it
    has finished sliding in."""
    x, y, width = shell.wait_eval(
        "(() => { const tray = Main.messageTray, banner = tray._banner;"
        " if (!banner || tray._notificationState !== imports.ui.messageTray.State.SHOWN)"
        " return null;"
        f" if (banner.notification.bannerBodyText !== {body!r}) return null;"
        " const [x, y] = banner.get_transformed_position();"
        " const place = [x, y, banner.get_transformed_size()[0]];"
        " return place.every(Number.isFinite) ? place : null; })()",
        f"the banner {body!r}",
    )
    # Whole pixels: the fixture waits until the pointer is at the rounded position.
    shell.click(int(x + width / 2), int(y) + 16)


def _indicator(shell: GnomeShell) -> str:
    """The JS expression for tray's icon in the top bar (the one AppIndicator item)."""
    keys = wait_for(
        lambda: [key for key in shell.status_area() if key.startswith("appindicator-")],
        TIMEOUT,
        0.05,
        "tray's icon in the top bar",
    )
    assert len(keys) == 1, keys
    return f"Main.panel.statusArea[{json.dumps(keys[0])}]"


def _menu_labels(shell: GnomeShell, indicator: str) -> list[str]:
    """Every label in tray's menu in the top bar, in order (the labels stripped: the menu
    indents an item's notes). Open or not: the extension keeps the menu filled."""
    labels: list[str] = shell.eval(
        f"(() => {{ const labels = [];"
        " const walk = menu => menu._getMenuItems().forEach(entry => {"
        " if (entry.label && entry.label.text) labels.push(entry.label.text.trim());"
        " if (entry.menu && entry.menu !== menu) walk(entry.menu); });"
        f" walk({indicator}.menu); return labels; }})()"
    )
    return labels


def _notes_under_focus(labels: list[str]) -> list[str]:
    """The two labels after the "Focus" item ([] when there is none)."""
    if "Focus" not in labels:
        return []
    focus = labels.index("Focus")
    return labels[focus + 1 : focus + 3]


def test_a_banner_click_selects_the_tab_and_gnome_asks_for_a_second_click(
    gnome_shell: GnomeShell, terminal: WaylandTerminal, tmp_path: Path
) -> None:
    """The real app: the session's banner clicked, the tab is selected at once; the
    window comes forward from the shell's "is ready" banner, as the app says."""
    app = start_app_process(gnome_shell.env, tmp_path, "")
    try:
        assert app.state_dir == terminal.state_dir
        _session_behind(terminal, [sys.executable, str(_blocking_agent(tmp_path))])
        body: str = gnome_shell.wait_eval(
            "(() => { const banner = Main.messageTray._banner;"
            " return banner && banner.notification.title.includes('agent')"
            " ? banner.notification.bannerBodyText : null; })()",
            "the session's banner",
        )

        _click_banner(gnome_shell, body)
        # The tab is the active one at once; the window stays behind, asking for attention.
        # (Had the shell handed over an activation token, the app would have used it, and
        # said so: GNOME Shell 43 sends none.)
        wait_for(lambda: terminal.active_tab(1) == 0, TIMEOUT, 0.05, "the session's tab active")
        wait_for(lambda: "only in part" in app.log, TIMEOUT, what="the app to say why")
        line = next(line for line in app.log.splitlines() if "only in part" in line)
        assert (
            f"focused agent only in part: selected the GNOME Terminal tab; {GNOME_WAYLAND_NOTE}"
            in line
        )
        assert terminal.focused_title() == "front"

        _click_banner(gnome_shell, READY)
        terminal.wait_focused(SESSION_TAB)
        assert terminal.active_tab(1) == 0

        # The app's menu in the top bar says it too, under the session's Focus item. The
        # menu reaches the shell over D-Bus a moment after the log line; the shell's copy
        # of it is waited for, and then opened with one click. (Opening it, closing it and
        # clicking again until it showed the notes made the next click come within the
        # double-click time: the AppIndicator extension took the two as a double click,
        # asked the app to Activate, which its indicator lacks, and left the menu shut.)
        expected = ["selected the GNOME Terminal tab", GNOME_WAYLAND_NOTE]
        indicator = _indicator(gnome_shell)
        wait_for(
            lambda: _notes_under_focus(_menu_labels(gnome_shell, indicator)) == expected,
            TIMEOUT,
            0.05,
            "the Focus item's notes in the top bar's menu",
        )
        gnome_shell.click_actor(indicator)
        gnome_shell.wait_eval(f"{indicator}.menu.isOpen", "tray's menu to open")
        labels = _menu_labels(gnome_shell, indicator)
        assert _notes_under_focus(labels) == expected, labels
    finally:
        gnome_shell.eval(
            "const menu = Main.panel.menuManager.activeMenu; if (menu) menu.close(); true"
        )
        stop_process(app.proc)
        assert "Traceback" not in app.log, app.log


def test_a_token_of_the_compositor_brings_the_window_forward_at_once(
    gnome_shell: GnomeShell, terminal: WaylandTerminal
) -> None:
    """The path for a notification server that hands over a token (GNOME Shell 43's
    does not): a real token of this mutter, made by the shell's own launch context as
    for an app it starts, stands in for the server's."""
    facts = _session_behind(terminal, _titled(SESSION_TAB))
    token = gnome_shell.eval(
        "global.create_app_launch_context(global.display.get_current_time_roundtrip(), -1)"
        ".get_startup_notify_id(imports.gi.Gio.DesktopAppInfo.new('org.gnome.Terminal.desktop'),"
        " [])"
    )
    assert isinstance(token, str) and token

    result = focus_session(facts, env=gnome_shell.env, activation_token=token)
    assert result.ok, result.message
    assert not result.partial
    assert result.message == "selected the GNOME Terminal tab, with an activation token"
    terminal.wait_focused(SESSION_TAB)
    assert terminal.active_tab(1) == 0


def test_doctor_and_the_plan_say_what_gnome_leaves_to_the_user(
    gnome_shell: GnomeShell, terminal: WaylandTerminal, tmp_path: Path
) -> None:
    """`tray doctor`, run in a GNOME Terminal tab on the shell, names the second click;
    the menu's plan for such a session stays a plain "Focus"."""
    facts = _session_behind(terminal, _titled(SESSION_TAB))
    way, reason = focus_plan(facts, gnome_shell.env)
    assert way is not None
    assert reason == "GNOME Terminal tab"
    assert check_focus({**gnome_shell.env, **facts}) == Check(
        "ok", "focus", f"GNOME Terminal tab ({GNOME_WAYLAND_NOTE})"
    )
    # A "token" of the wrong shape (this one would break out of the GVariant text it went
    # into) is never passed on: the focus goes without one.
    bad = "x'> , 'y': <'z"
    result = focus_session(facts, env=gnome_shell.env, activation_token=bad)
    assert result == FocusResult(
        True, f"selected the GNOME Terminal tab; {GNOME_WAYLAND_NOTE}", partial=True
    )
    assert terminal.active_tab(1) == 0

    report = tmp_path / "doctor.txt"
    written = f"{sys.executable} -m tray doctor > {report}.part 2>&1; mv {report}.part {report}"
    terminal.open("--window", "--", "sh", "-c", f"{written}; exec sleep 600")
    wait_for(report.exists, TIMEOUT, 0.1, "tray doctor's report")
    lines = report.read_text().splitlines()
    focus = [line for line in lines if line.split(":", 1)[0].split()[-1:] == ["focus"]]
    assert focus == [f"ok   focus: GNOME Terminal tab ({GNOME_WAYLAND_NOTE})"], lines
