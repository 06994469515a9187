"""The one D-Bus loop: the app's parts that speak D-Bus (the notifier, idle and lock, the
tray area's probe, focus) share one loop thread and one connection of tray's own,
counted by the bus itself (a real private dbus-daemon, asked which connections come
from this process), with dunst as the notification server."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.bus_clients import connections_of
from helpers.desktop_apps import StartApp
from helpers.desktop_fake_bus import FakeBusPeer
from helpers.desktop_services import (
    BusMonitor,
    Dunst,
    base_env,
    start_bus,
    start_dunst,
    stop_process,
)
from helpers.fake_notifier import FakeNotifier
from helpers.fake_tray_icon import FakeTrayIcon
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for

from tray.app.start import build_app
from tray.desktop.bus_loop import BusLoop, attach, attached
from tray.desktop.focus import focus_session
from tray.desktop.idle import PresenceMonitor
from tray.desktop.tray_area import TrayAreaLook
from tray.outlets.notifier import Notifier
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.store import StateStore

LOG = logging.getLogger("tray.test.bus_loop")


def bus_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name == "tray-bus"]


@pytest.fixture
def own_bus(tmp_path: Path) -> Iterator[str]:
    proc, address = start_bus(tmp_path / "bus")
    try:
        yield address
    finally:
        stop_process(proc)


@pytest.fixture
def own_dunst(
    xvfb_display: str, own_bus: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Dunst]:
    """dunst on this test's own bus, which this process's environment names too:
    desktop-notifier reads it there."""
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", own_bus)
    server = start_dunst(base_env(DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=own_bus), tmp_path)
    try:
        yield server
    finally:
        server.stop()


def test_the_app_parts_share_one_loop_and_one_connection(
    own_dunst: Dunst, own_bus: str, xvfb_display: str
) -> None:
    env = base_env(DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=own_bus)
    before = {thread.ident for thread in threading.enumerate()}
    assert connections_of(own_bus, os.getpid()) == []
    with attached(env) as loop:
        notifier = Notifier("tray-test", lambda _key, _token: None, LOG, environ=env)
        monitor = PresenceMonitor(300.0, lambda _state: None, env, log=LOG)
        look = TrayAreaLook(env)
        try:
            monitor.start()
            monitor.wait_ready()
            assert look.bus_facts().error is None
            # A Konsole that is not there: the call is made, and answered by the bus.
            konsole = {
                "KONSOLE_DBUS_SERVICE": "org.kde.konsole-4242",
                "KONSOLE_DBUS_SESSION": "/Sessions/5",
                "KONSOLE_DBUS_WINDOW": "/Windows/2",
            }
            focused = focus_session(konsole, env=env)
            assert focused.message == "Konsole: the session's Konsole has exited"
            notifier.send("one loop", "one connection", "normal", "k")
            wait_for(lambda: own_dunst.count() == 1, what="dunst to show the notification")

            ours = loop.run(loop.session(), 5.0)
            assert ours is not None
            mine = connections_of(own_bus, os.getpid())
            # tray's one connection, and desktop-notifier's own: no other.
            assert ours.unique_name in mine
            assert len(mine) == 2, mine
            started = [t.name for t in threading.enumerate() if t.ident not in before]
            assert started == ["tray-bus"]
        finally:
            look.close()
            monitor.stop()
            notifier.close()
        assert bus_threads() == ["tray-bus"]  # held by this test until the block ends
    assert bus_threads() == []
    wait_for(lambda: connections_of(own_bus, os.getpid()) == [], what="the connections to close")


def test_loops_are_shared_by_bus_address_and_end_with_their_last_user() -> None:
    first = attach({"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/a"})
    again = attach({"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/a", "OTHER": "1"})
    other = attach({"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/b"})
    try:
        assert first is again
        assert other is not first
        assert len(bus_threads()) == 2
        first.detach()
        assert len(bus_threads()) == 2  # `again` still holds it
    finally:
        again.detach()
        other.detach()
    assert bus_threads() == []


def test_a_bus_that_cannot_be_reached_is_none_with_its_reason(tmp_path: Path) -> None:
    with attached({"DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path / 'none'}"}) as loop:
        assert loop.run(loop.session(), 5.0) is None
        assert loop.session_error == "No such file or directory"
    with attached({}) as loop:
        assert loop.run(loop.session(), 5.0) is None
        assert loop.session_error == "DBUS_SESSION_BUS_ADDRESS is not set"


def test_run_gives_up_at_its_timeout_and_cancels_the_work() -> None:
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    with attached({}) as loop:
        with pytest.raises(TimeoutError, match=r"within 0\.2 s"):
            loop.run(forever(), 0.2)
        assert cancelled.wait(5.0)


def test_run_on_the_loop_itself_is_refused_rather_than_waiting_for_ever() -> None:
    async def nested(loop: BusLoop) -> str:
        async def inner() -> None:
            return None

        try:
            loop.run(inner(), 1.0)
        except RuntimeError as error:
            return str(error)
        return "ran"

    with attached({}) as loop:
        assert loop.run(nested(loop), 5.0) == "BusLoop.run called on the bus loop itself"


def _calls_by_sender(monitor_text: str) -> list[tuple[str, str, list[str]]]:
    """dbus-monitor's method calls as (sender, member, string arguments)."""
    calls: list[tuple[str, str, list[str]]] = []
    for line in monitor_text.splitlines():
        if line.startswith("method call "):
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            calls.append((fields["sender"], fields["member"], []))
        elif calls and line.strip().startswith('string "'):
            calls[-1][2].append(line.strip()[len('string "') : -1])
    return calls


def test_the_app_itself_asks_on_one_connection_of_its_own(
    start_app: StartApp, desktop_env: dict[str, str], tmp_path: Path
) -> None:
    """A real `tray app` (gtk backend, in trayer): the tray area's probe, the idle and
    lock sources and the notifier's look for its server all come from one connection,
    desktop-notifier's Notify from its own, and the app has no other of dbus-fast's."""
    address = desktop_env["DBUS_SESSION_BUS_ADDRESS"]
    monitor = BusMonitor(
        base_env(DBUS_SESSION_BUS_ADDRESS=address),
        tmp_path / "monitor.log",
        ("type='method_call'",),
    )
    try:
        app = start_app('[away]\nforward = ["json://localhost:9/"]\nafter = 60\n')
        wait_for(lambda: "away detection:" in app.log, what="the idle sources to be tried")
        now = time.time()
        StateStore(app.state_dir).write(live_session("s1", blocked("approve ls", now), now))
        [notified] = monitor.wait_for_notify(1, timeout=30.0)
        assert notified.summary.startswith("s1")
        calls = _calls_by_sender(monitor.text())
        mine = connections_of(address, app.proc.pid)
    finally:
        monitor.stop()

    def senders(member: str, argument: str | None = None) -> set[str]:
        return {
            sender
            for sender, called, args in calls
            if called == member and (argument is None or argument in args)
        }

    [tray] = senders("NameHasOwner", "org.kde.StatusNotifierWatcher")  # the tray area
    assert senders("GetIdletime") == {tray}  # idle: GNOME's idle monitor, asked first
    [notifying] = senders("Notify")  # desktop-notifier's own connection
    assert notifying != tray
    # The notifier asks for the server and its capabilities on tray's; desktop-notifier
    # asks for the capabilities again on its own (and GTK looks for the server on its).
    assert tray in senders("GetNameOwner", "org.freedesktop.Notifications")
    assert senders("GetCapabilities") == {tray, notifying}
    assert {tray, notifying} <= set(mine)
    # The third is GTK's own (pystray's gtk backend), which asks none of tray's questions.
    assert len(mine) == 3, mine
    others = set(mine) - {tray, notifying}
    tray_members = {"GetIdletime", "GetActive", "GetSessionIdleTime", "GetCapabilities", "Notify"}
    assert not [call for call in calls if call[0] in others and call[1] in tray_members]


def test_the_app_watches_for_a_late_tray_area_on_the_bus_loop_with_no_thread_of_its_own(
    own_bus: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real app (in-process; its icon and notifier below the line) on a bus with no
    StatusNotifierWatcher and no display: it warns, runs only the worker and the bus loop
    of tray's own while it looks, and has the worker show the icon again once a watcher
    comes."""
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")  # menus built without a display
    env = Environment(
        environ={
            "TRAY_STATE_DIR": str(tmp_path / "state"),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "DBUS_SESSION_BUS_ADDRESS": own_bus,
        }
    )
    StateStore(env.state_dir()).ensure()
    log = logging.getLogger("tray.test.bus_loop.app")
    caplog.set_level(logging.INFO, logger=log.name)
    icon = FakeTrayIcon(backend="appindicator")
    before = {thread.ident for thread in threading.enumerate()}
    watcher: FakeBusPeer | None = None
    try:
        with attached(env.environ):  # as run_app holds it
            app = build_app(env, load_config(env), log, icon, FakeNotifier)  # type: ignore[arg-type]
            app.start()
            try:
                wait_for(lambda: "tray host: none" in caplog.text, what="the warning")
                started = {t.name for t in threading.enumerate() if t.ident not in before}
                ours = {name for name in started if name.startswith("tray-")}
                # The directory watcher's inotify reader is the app's input, not a watch.
                assert ours == {"tray-worker", "tray-bus", "tray-inotify"}, started
                assert not icon.reshown.is_set()
                watcher = FakeBusPeer(own_bus, ["org.kde.StatusNotifierWatcher"])
                assert icon.reshown.wait(30.0), "the icon was not shown again"
                assert "a tray area appeared; showing the icon there" in caplog.text
                assert caplog.text.count("tray host: none") == 1
            finally:
                app.stop()
            assert not [t for t in threading.enumerate() if t.name == "tray-worker"]
        assert bus_threads() == []
    finally:
        if watcher is not None:
            watcher.stop()
