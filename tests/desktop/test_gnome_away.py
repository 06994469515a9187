"""Away on a real GNOME Shell 43 (headless, Wayland; the session's shell of
helpers.gnome_shell), with no logind on its system bus: mutter's idle monitor says when
nobody has touched the desk for ``after``, and a virtual pointer's motion inside the
compositor brings the user back; the shell's real lock screen, locked and unlocked over
``org.gnome.ScreenSaver``, is away and back through tray's GNOME lock source.

The watch is tray's own PresenceMonitor, with the sources tray uses everywhere, pointed
at the shell's buses; and then a real ``tray app`` on this desktop, with ``[away]``: a
locked screen sends a blocked ping to the phone (a loopback JSON server), and unlocking
brings the user back.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.away_forwarding import blocked_ping_is_forwarded, forward_config
from helpers.desktop_apps import TIMEOUT, start_app_process
from helpers.desktop_services import TOOL_TIMEOUT, name_has_owner, stop_process
from helpers.receiver import running_receiver
from helpers.waiting import wait_for

from desktop.test_idle import Changes
from tray.desktop.idle import PresenceMonitor, probe

if TYPE_CHECKING:  # helpers.gnome_shell loads PyGObject: the fixture imports it when used
    from helpers.gnome_shell import GnomeShell

AFTER = 1.0  # seconds without input that count as away: short, for a quick test
GNOME_SAVER = ("org.gnome.ScreenSaver", "/org/gnome/ScreenSaver", "org.gnome.ScreenSaver")
DESCRIBED = "GNOME's idle monitor and GNOME's lock screen (org.gnome.ScreenSaver)"


# Where the pointer goes to make input: the empty lower half of the screen, away from the
# top bar and from where banners show (a banner shows its buttons under the pointer).
NUDGE_SPOTS = ((300, 600), (900, 600))


def _nudge(shell: GnomeShell) -> None:
    """A real input event: the virtual pointer moves somewhere it is not now (a move to
    where it already is makes no motion, and resets no idle time)."""
    here = tuple(shell.eval("global.get_pointer().slice(0, 2)"))
    shell.move_pointer(*(NUDGE_SPOTS[1] if here == NUDGE_SPOTS[0] else NUDGE_SPOTS[0]))


def _screen_saver(shell: GnomeShell, method: str, *args: str) -> str:
    """Call ``org.gnome.ScreenSaver.METHOD`` on the shell's session bus as any client
    does (``Lock`` returns once the lock screen is shown); the reply, as gdbus prints it."""
    destination, path, interface = GNOME_SAVER
    done = subprocess.run(
        ["gdbus", "call", "--session", "--dest", destination, "--object-path", path,
         "--method", f"{interface}.{method}", *args],
        env=shell.env, capture_output=True, text=True, timeout=TOOL_TIMEOUT, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def _unlocked(shell: GnomeShell) -> None:
    """The shell is the whole run's: leave it unlocked whatever the test did."""
    if _screen_saver(shell, "GetActive") != "(false,)":
        _screen_saver(shell, "SetActive", "false")
    shell.wait_eval(
        "!Main.screenShield.locked && !Main.screenShield.active"
        " && Main.sessionMode.currentMode !== 'unlock-dialog'",
        "the lock screen gone",
    )


def test_no_input_for_after_is_away_and_the_pointer_brings_the_user_back(
    gnome_shell: GnomeShell,
) -> None:
    changes = Changes()
    moved_before = time.time()
    _nudge(gnome_shell)
    monitor = PresenceMonitor(AFTER, changes, gnome_shell.env)
    monitor.start()
    try:
        assert monitor.wait_ready()
        assert monitor.idle_source == "mutter"
        for absence in (1, 2):
            wait_for(changes.away, 15.0, 0.05, f"away after {AFTER} s without input ({absence})")
            state = changes.last()
            assert state is not None and state.since is not None
            # Away from when the idle time reached `after`, not before.
            assert moved_before + AFTER - 0.1 <= state.since <= time.time()
            moved_before = time.time()
            _nudge(gnome_shell)
            wait_for(lambda: not changes.away(), 10.0, 0.05, "present after a pointer move")
        assert [s.away for s in changes.states] == [True, False, True, False]
    finally:
        monitor.stop()


def test_the_lock_screen_is_away_through_gnome_lock_source_without_logind(
    gnome_shell: GnomeShell,
) -> None:
    """Locked for real, over org.gnome.ScreenSaver, with nothing owning logind's name on
    the shell's system bus; unlocked by SetActive(false). ``after`` is long here so that
    only the lock can make the user away."""
    env = gnome_shell.env
    system_bus = {**env, "DBUS_SESSION_BUS_ADDRESS": env["DBUS_SYSTEM_BUS_ADDRESS"]}
    assert not name_has_owner(system_bus, "org.freedesktop.login1")
    assert probe(env) == DESCRIBED  # what `tray doctor` names here
    changes = Changes()
    _nudge(gnome_shell)  # the shell is the run's: it may have been idle for long
    monitor = PresenceMonitor(300.0, changes, env)
    monitor.start()
    try:
        assert monitor.wait_ready()
        assert (monitor.lock_source, monitor.idle_source) == ("gnome-screensaver", "mutter")
        assert monitor.describe() == DESCRIBED
        assert not monitor.state.away
        locked_at = time.time()
        _screen_saver(gnome_shell, "Lock")
        assert gnome_shell.eval("Main.screenShield.locked") is True
        wait_for(changes.away, 10.0, 0.05, "away once the screen is locked")
        state = changes.last()
        assert state is not None and state.since is not None
        assert locked_at <= state.since <= time.time()
        _screen_saver(gnome_shell, "SetActive", "false")
        wait_for(changes.present_again, 10.0, 0.05, "present once the screen is unlocked")
        assert [s.away for s in changes.states] == [True, False]
    finally:
        monitor.stop()
        _unlocked(gnome_shell)


def test_the_app_forwards_a_ping_while_the_gnome_screen_is_locked(
    gnome_shell: GnomeShell, tmp_path: Path
) -> None:
    """The real app, on the shell's Wayland display and buses: ``after`` is long, so only
    the lock makes the user away; its log names GNOME's sources."""
    _nudge(gnome_shell)
    with running_receiver() as receiver:
        app = start_app_process(gnome_shell.env, tmp_path, forward_config(receiver, "5m"))
        try:
            wait_for(lambda: f"away: tells by {DESCRIBED}" in app.log, TIMEOUT, what="sources")
            _screen_saver(gnome_shell, "Lock")
            wait_for(lambda: "away (since" in app.log, TIMEOUT, what="the app to see the lock")
            blocked_ping_is_forwarded(app.state_dir, receiver, "while locked")
            _screen_saver(gnome_shell, "SetActive", "false")
            wait_for(
                lambda: " INFO back\n" in app.log.partition("away (since")[2],
                TIMEOUT,
                what="the app to see the user back",
            )
        finally:
            stop_process(app.proc)
            _unlocked(gnome_shell)
            gnome_shell.clear_notifications()
