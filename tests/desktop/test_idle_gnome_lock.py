"""GNOME's lock source (the org.gnome.ScreenSaver interface), against small fakes on a
private bus: FakeGnomeScreenSaver answers ``GetActive`` and sends ``ActiveChanged`` when
the test says, under the name ``org.gnome.ScreenSaver`` (older shells, phosh, GNOME 43's
relay) or ``org.gnome.Shell.ScreenShield`` (GNOME Shell 43 itself); tests/desktop/
test_gnome_away.py locks a real GNOME Shell. With FakeLogind beside it, logind's hint
comes first; and a name that D-Bus could start but nobody owns is never started.
"""

from __future__ import annotations

import time
from pathlib import Path

from dbus_fast import Variant
from helpers.desktop_services import base_env, start_bus, stop_process
from helpers.waiting import wait_for

from desktop import test_idle
from desktop.test_idle import (
    LOGIND,
    SESSION_PATH,
    Changes,
    FakeService,
    Handler,
    _watch,
)
from tray.desktop.idle import SOURCES
from tray.desktop.idle.gnome_screensaver import GnomeScreenSaverLock
from tray.desktop.idle.logind import LockedHint
from tray.desktop.idle.screensaver_lock import ScreenSaverLock

# test_idle's fixture: a private session bus and one standing in for the system bus.
buses = test_idle.buses

GNOME = "org.gnome.ScreenSaver"
SHIELD = "org.gnome.Shell.ScreenShield"
GNOME_PATH = "/org/gnome/ScreenSaver"


def _fake_gnome(address: str, get_active: Handler, name: str = GNOME) -> FakeService:
    """FakeGnomeScreenSaver under ``name``; the interface is org.gnome.ScreenSaver either
    way."""
    return FakeService(address, name, {(GNOME_PATH, GNOME, "GetActive"): get_active})


def _env(buses: tuple[str, str]) -> dict[str, str]:
    session, system = buses
    return base_env(DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system)


def _active_changed(fake: FakeService, signature: str, body: list[object]) -> None:
    fake.signal(GNOME_PATH, GNOME, "ActiveChanged", signature, body)


def test_gnome_lock_comes_after_logind_and_before_the_freedesktop_one() -> None:
    lock_sources = [source for source in SOURCES if source.kind == "lock"]
    assert lock_sources == [LockedHint, GnomeScreenSaverLock, ScreenSaverLock]


def test_gnome_screen_saver_fake_locks_and_unlocks(buses: tuple[str, str]) -> None:
    """ActiveChanged(true) is away from that moment, (false) present; a signal with any
    other body (a peer may send one) changes nothing."""
    session = buses[0]
    state = {"active": False}
    gnome = _fake_gnome(session, lambda _b: ("b", [state["active"]]))
    env = _env(buses)
    changes = Changes()
    try:
        with _watch(300.0, env, changes) as watch:
            assert watch.wait_ready()
            assert (watch.lock_source, watch.idle_source) == ("gnome-screensaver", None)
            assert watch.describe() == "GNOME's lock screen (org.gnome.ScreenSaver)"
            assert not watch.state.away
            locked_at = time.time()
            # Had either odd one locked, the (false) after it would unlock again: the
            # signals arrive in the order sent, so the (true) comes after all three.
            _active_changed(gnome, "s", ["true"])
            _active_changed(gnome, "bb", [True, True])
            _active_changed(gnome, "b", [False])
            state["active"] = True
            _active_changed(gnome, "b", [True])
            wait_for(changes.away, 10.0, what="away on ActiveChanged(true)")
            assert [s.away for s in changes.states] == [True]
            last = changes.last()
            assert last is not None and last.since is not None
            assert locked_at <= last.since <= time.time()
            state["active"] = False
            _active_changed(gnome, "b", [False])
            wait_for(changes.present_again, 10.0, what="present on ActiveChanged(false)")
            assert [s.away for s in changes.states] == [True, False]
            assert gnome.answered == [(GNOME, "GetActive")]
    finally:
        gnome.stop()


def test_an_answer_that_is_not_a_boolean_does_not_count(buses: tuple[str, str]) -> None:
    session = buses[0]
    gnome = _fake_gnome(session, lambda _b: ("s", ["yes"]))
    env = _env(buses)
    changes = Changes()
    try:
        with _watch(300.0, env, changes) as watch:
            assert not watch.wait_ready()
            assert watch.lock_source is None
            assert gnome.answered == [(GNOME, "GetActive")]
        assert changes.states == []
    finally:
        gnome.stop()


def test_logind_answers_first_and_gnome_is_not_asked(buses: tuple[str, str]) -> None:
    """FakeLogind and FakeGnomeScreenSaver both there: logind's hint is the lock source."""
    session, system = buses
    logind = FakeService(
        system,
        LOGIND,
        {
            ("/org/freedesktop/login1", f"{LOGIND}.Manager", "GetSession"): lambda _b: (
                "o",
                [SESSION_PATH],
            ),
            (SESSION_PATH, "org.freedesktop.DBus.Properties", "Get"): lambda _b: (
                "v",
                [Variant("b", False)],
            ),
        },
    )
    gnome = _fake_gnome(session, lambda _b: ("b", [False]))
    env = _env(buses)
    try:
        with _watch(300.0, env, Changes()) as watch:
            assert watch.wait_ready()
            assert watch.lock_source == "logind"
        assert gnome.answered == []
    finally:
        gnome.stop()
        logind.stop()


def test_the_shells_own_name_is_asked_before_the_relay(buses: tuple[str, str]) -> None:
    """Both names owned, as on GNOME 43 once the relay runs: the shell's is followed. Its
    screen is locked already, which is away at once; its ActiveChanged(false), back."""
    session = buses[0]
    shield = _fake_gnome(session, lambda _b: ("b", [True]), SHIELD)
    relay = _fake_gnome(session, lambda _b: ("b", [False]))
    changes = Changes()
    try:
        with _watch(300.0, _env(buses), changes) as watch:
            assert watch.wait_ready()
            assert watch.lock_source == "gnome-screensaver"
            wait_for(changes.away, 10.0, what="away while the shell's GetActive says true")
            shield.signal(GNOME_PATH, GNOME, "ActiveChanged", "b", [False])
            wait_for(changes.present_again, 10.0, what="present on the shell's (false)")
        assert shield.answered == [(GNOME, "GetActive")]
        assert relay.answered == []
    finally:
        relay.stop()
        shield.stop()


def test_a_gnome_name_nobody_owns_is_not_started(tmp_path: Path) -> None:
    """A session bus that could start org.gnome.ScreenSaver (a service file, as where
    GNOME is installed but another desktop runs): tray never asks it to."""
    started = tmp_path / "started"
    services = tmp_path / "services"
    services.mkdir()
    (services / f"{GNOME}.service").write_text(
        f"[D-BUS Service]\nName={GNOME}\nExec=/usr/bin/touch {started}\n"
    )
    session, session_address = start_bus(tmp_path / "session", services)
    try:
        env = base_env(DBUS_SESSION_BUS_ADDRESS=session_address)
        with _watch(300.0, env, Changes(), (GnomeScreenSaverLock,)) as watch:
            assert not watch.wait_ready()
            assert watch.lock_source is None
    finally:
        stop_process(session)
    assert not started.exists()
