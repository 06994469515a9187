"""The real `tray app` with one ``[[hosts]]`` entry, a real sshd on loopback in front of a
second state directory, and the real desktop of tests/desktop: Xvfb, trayer, and dunst
on a private bus, where every Notify call is watched.

A host's prompt pings with its name; losing the host (sshd and every connection it
holds killed at once) is one warning and a calm icon, never a blocked one; when it is
back, a prompt already told about stays quiet and a new one pings. A click on a remote
prompt's notification selects its tmux pane on the host, and "Clear all finished"
dismisses the host's ended sessions there, both over ssh.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.desktop_apps import TIMEOUT, RunningApp, StartApp
from helpers.desktop_screen import (
    TRAYER,
    colour_count,
    grab,
    icon_box,
    main_colour,
    open_menu,
    tray_box,
    xdotool,
)
from helpers.desktop_services import BusMonitor, Dunst
from helpers.host_sessions import make_session
from helpers.knocks import knocks_on
from helpers.sshd import Remote, Sshd, hosts_toml, run_tmux
from helpers.waiting import barrier, wait_for

from tray.core.hosts.ssh_commands import HostConfig
from tray.core.view.overview import IconState
from tray.protocol.state import State

# The desktop's fixtures, for this module's tests too.

# The link retries after 1 s, then 2 s, 4 s...: an outage that sees several.
RETRIES = 2


def log_lines(app: RunningApp, pattern: str) -> list[str]:
    return [line for line in app.log.splitlines() if re.search(pattern, line)]


def icon_shows(display: str, state: IconState) -> bool:
    box = tray_box(display, TRAYER)
    if box is None:
        return False
    shot = grab(display, box)
    others: list[IconState] = [s for s in (State.BLOCKED, State.WORKING, "calm") if s != state]
    return colour_count(shot, main_colour(state)) >= 20 and all(
        colour_count(shot, main_colour(other)) < 20 for other in others
    )


def test_a_hosts_prompts_ping_and_its_outage_is_one_warning_and_never_blocked(  # noqa: PLR0917
    start_app: StartApp,
    bus_monitor: BusMonitor,
    xvfb_display: str,
    sshd: Sshd,
    remote: Remote,
    host: HostConfig,
) -> None:
    # gtk: the backend that docks in trayer every time (see tests/desktop/test_app.py).
    app = start_app(hosts_toml(host) + "\n[notify]\nsettle = 0\n", PYSTRAY_BACKEND="gtk")
    icon_box(xvfb_display, TRAYER)  # waits until our icon is drawn in the tray
    wait_for(lambda: log_lines(app, r"INFO devbox: connected"), TIMEOUT, what="the link")

    # (1) A prompt on the host pings, naming the host.
    remote.write(make_session("1-a", msg="approve Bash: git push"))
    (call,) = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert call.summary == "devbox \u00b7 api needs approval"
    assert call.body == "approve Bash: git push"
    wait_for(lambda: icon_shows(xvfb_display, State.BLOCKED), TIMEOUT, what="a blocked icon")

    # (2) The host goes away with every connection: one warning, and its prompt turns
    # stale, so the icon no longer says blocked.
    sshd.kill()
    wait_for(lambda: log_lines(app, r"WARNING devbox: unreachable"), TIMEOUT, what="a warning")
    wait_for(lambda: icon_shows(xvfb_display, "calm"), TIMEOUT, what="the icon to calm down")
    # The retries meet a port that closes every connection: a few of them, however long.
    with knocks_on(sshd.port) as knocks:
        wait_for(lambda: knocks.count >= RETRIES, TIMEOUT, what=f"{RETRIES} retries")
    # One warning per outage, however many retries (the desktop may add its own).
    (warning,) = log_lines(app, r"WARNING .*devbox")
    assert "connection refused" in warning
    assert len(bus_monitor.notify_calls()) == 1

    # (3) Back: the prompt already told about stays quiet, a new one pings once.
    sshd.start()
    wait_for(
        lambda: len(log_lines(app, r"INFO devbox: connected")) == 2,
        TIMEOUT,
        what="the link to reconnect",
    )
    wait_for(lambda: icon_shows(xvfb_display, State.BLOCKED), TIMEOUT, what="blocked again")
    remote.write(make_session("1-b", msg="approve Bash: make deploy", name="web"))
    # The new ping is the barrier: a repeat of the first would have come before it.
    calls = bus_monitor.wait_for_notify(2, TIMEOUT)
    assert [(c.summary, c.body) for c in calls] == [
        ("devbox \u00b7 api needs approval", "approve Bash: git push"),
        ("devbox \u00b7 web needs approval", "approve Bash: make deploy"),
    ]
    # Nothing more, however long: a local marker's ping comes third, and last.
    barrier(app.state_dir, bus_monitor, 3, settle=0)
    assert len(log_lines(app, r"WARNING .*devbox")) == 1, app.log


def test_a_click_focuses_the_remote_tmux_pane_and_clear_all_finished_dismisses_there(  # noqa: PLR0917
    start_app: StartApp,
    bus_monitor: BusMonitor,
    dunst: Dunst,
    xvfb_display: str,
    remote: Remote,
    host: HostConfig,
    tmp_path: Path,
) -> None:
    if shutil.which("tmux") is None:
        pytest.fail("needs tmux (make test installs it)")
    remote.write(make_session("1-gone", "done", alive=False))
    child = tmp_path / "agent.py"
    child.write_text(
        "import sys\n"
        "sys.stdout.write('\\x1b]7501;state=blocked:kind=permission:app=claude-code\\x07')\n"
        "sys.stdout.flush()\n"
        "input()\n"
    )
    socket = tmp_path / "tmux.sock"
    run_tmux(socket, "new-session", "-d", "-s", "work", "-x", "100", "-y", "30")
    try:
        app = start_app(hosts_toml(host) + "\n[notify]\nsettle = 0\n", PYSTRAY_BACKEND="gtk")
        icon = icon_box(xvfb_display, TRAYER).centre
        command = f"{remote.tray} run --name agent -- {sys.executable} {child}"
        run_tmux(socket, "new-window", "-t", "work:1", "-c", str(tmp_path), command)
        run_tmux(socket, "select-window", "-t", "work:0")

        (call,) = bus_monitor.wait_for_notify(1, TIMEOUT)
        assert call.summary == "devbox \u00b7 agent needs approval"
        dunst.action(0)
        wait_for(
            lambda: run_tmux(socket, "display", "-p", "#{window_index}") == "1",
            TIMEOUT,
            what="the click to select the agent's tmux window on the host",
        )

        # Up from nothing selected is the last item, Quit; then Pause, then Clear.
        assert (remote.state_dir / "1-gone.json").exists()
        open_menu(xvfb_display, icon, 3)
        xdotool(xvfb_display, "key", "Up", "Up", "Up", "Return")
        wait_for(
            lambda: not (remote.state_dir / "1-gone.json").exists(),
            TIMEOUT,
            what="the ended session to be dismissed on the host",
        )
        wait_for(lambda: log_lines(app, r"INFO devbox: dismissed 1 session"), TIMEOUT)
        assert not log_lines(app, r"WARNING .*(devbox|focus|dismiss)"), app.log
        run_tmux(socket, "send-keys", "-t", "work:1", "Enter")
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], timeout=10, check=False)
