# dbus-fast reads D-Bus signatures from the annotations ("as", "us"), and the spec names
# the members in CamelCase.
# ruff: noqa: F821, F722, N802
# mypy: disable-error-code="name-defined,valid-type"
"""A click's activation token (notification spec 1.2) reaches the click handler.

dunst 1.9, the real server of the other tests, sends no token: a click on it gives
None. For a server that does (Plasma's, for one), a small fake of a spec 1.2
server (FakeSpec12Server) on a private bus of its own sends
``ActivationToken`` then ``ActionInvoked``, as the spec orders them; the notifier under
test is the real one, with desktop-notifier and dbus-fast for real. The last test runs
the whole path through a real TrayApp (its icon host a fake that writes nothing): the
app pings for a Ptyxis session on Wayland, the click's token reaches Focus, and Focus
calls Ptyxis's GApplication ``Activate`` through gdbus with that token. Ptyxis is not in
Debian 12, so FakePtyxis stands in for its bus interface, and records the token.
"""

import asyncio
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method, signal
from helpers.desktop_services import Dunst, start_bus, stop_process
from helpers.fake_tray_icon import FakeTrayIcon
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for

from tray.app.start import build_app
from tray.outlets.notifier import Notifier
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.store import StateStore

TOKEN = "x11-or-wayland-token_42"  # noqa: S105 - an activation token, no secret


class FakeSpec12Server(ServiceInterface):
    """Just enough of org.freedesktop.Notifications 1.2: Notify, and a click that sends
    the token first."""

    def __init__(self) -> None:
        super().__init__("org.freedesktop.Notifications")
        self.ids: list[int] = []

    @method()
    def GetCapabilities(self) -> "as":
        return ["actions", "body"]

    @method()
    def GetServerInformation(self) -> "ssss":
        return ["fake", "tray-tests", "1", "1.2"]

    @method()
    def Notify(  # noqa: PLR0917 - the spec's own signature
        self,
        app_name: "s",
        replaces_id: "u",
        icon: "s",
        summary: "s",
        body: "s",
        actions: "as",
        hints: "a{sv}",
        timeout: "i",
    ) -> "u":
        self.ids.append(len(self.ids) + 7)
        return self.ids[-1]

    @method()
    def CloseNotification(self, nid: "u") -> None:
        pass

    @signal()
    def ActivationToken(self, nid: int, token: str) -> "us":
        return [nid, token]

    @signal()
    def ActionInvoked(self, nid: int, key: str) -> "us":
        return [nid, key]

    @signal()
    def NotificationClosed(self, nid: int, reason: int) -> "uu":
        return [nid, reason]


class FakePtyxis(ServiceInterface):
    """Ptyxis's GApplication interface, as far as Focus uses it on Wayland: Activate
    with the activation token in its platform data, written down."""

    def __init__(self) -> None:
        super().__init__("org.freedesktop.Application")
        self.tokens: list[object] = []

    @method()
    def Activate(self, platform_data: "a{sv}") -> None:
        self.tokens.append(platform_data["activation-token"].value)


class Served:
    def __init__(self, address: str) -> None:
        self.server = FakeSpec12Server()
        self.ptyxis = FakePtyxis()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(address,), daemon=True)
        self._thread.start()
        assert self._ready.wait(10)

    def _run(self, address: str) -> None:
        asyncio.set_event_loop(self._loop)

        async def serve() -> None:
            bus = await MessageBus(bus_address=address).connect()
            bus.export("/org/freedesktop/Notifications", self.server)
            await bus.request_name("org.freedesktop.Notifications")
            ptyxis = await MessageBus(bus_address=address).connect()
            ptyxis.export("/org/gnome/Ptyxis", self.ptyxis)
            await ptyxis.request_name("org.gnome.Ptyxis")
            self._ready.set()

        self._loop.run_until_complete(serve())
        self._loop.run_forever()

    address = ""

    def click(self, nid: int, token: str | None) -> None:
        def emit() -> None:
            if token is not None:
                self.server.ActivationToken(nid, token)
            self.server.ActionInvoked(nid, "default")

        self._loop.call_soon_threadsafe(emit)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


@pytest.fixture
def spec12(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    proc, address = start_bus(tmp_path / "bus")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    served = Served(address)
    served.address = address
    try:
        yield served
    finally:
        served.stop()
        stop_process(proc)


def _notifier(clicks: list[tuple[str, str | None]]) -> Notifier:
    log = logging.getLogger("test.activation")
    return Notifier("tray-test", lambda key, token: clicks.append((key, token)), log)


def test_a_click_carries_the_servers_activation_token(spec12: Served) -> None:
    clicks: list[tuple[str, str | None]] = []
    notifier = _notifier(clicks)
    try:
        notifier.send("build needs you", "approve?", "normal", "session-a")
        wait_for(lambda: len(spec12.server.ids) == 1, what="the Notify call")
        # The token's subscription is made before Notify; a click right away finds it.
        spec12.click(spec12.server.ids[0], TOKEN)
        wait_for(lambda: len(clicks) == 1, what="the click")
        notifier.send("tests failed", "exit 2", "normal", "session-b")
        wait_for(lambda: len(spec12.server.ids) == 2, what="the second Notify call")
        spec12.click(spec12.server.ids[1], None)  # a click the server gave no token
        wait_for(lambda: len(clicks) == 2, what="the second click")
    finally:
        notifier.close()
    assert clicks == [("session-a", TOKEN), ("session-b", None)]


def test_a_click_on_dunst_gives_no_token(dunst: Dunst, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", dunst.address)
    dunst.close_all()
    clicks: list[tuple[str, str | None]] = []
    notifier = _notifier(clicks)
    try:
        notifier.send("build needs you", "approve?", "normal", "session-a")
        wait_for(lambda: dunst.count() == 1, what="dunst to show it")
        dunst.action(0)
        wait_for(lambda: len(clicks) == 1, what="the click")
    finally:
        notifier.close()
        dunst.close_all()
    assert clicks == [("session-a", None)]


def test_a_click_hands_the_token_through_the_app_to_the_terminal(
    spec12: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole path: the app pings for a Ptyxis session on Wayland, the server's click
    brings its token, and Focus presents Ptyxis with that token (through gdbus)."""
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    state = tmp_path / "state"
    store = StateStore(state)
    store.ensure()
    now = time.time()
    session = live_session("p1", blocked("approve Bash: ls", now), now)
    store.write(dataclasses.replace(session, terminal={"PTYXIS_VERSION": "46.2"}))
    env = Environment(
        environ={
            "TRAY_STATE_DIR": str(state),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "DBUS_SESSION_BUS_ADDRESS": spec12.address,
            "WAYLAND_DISPLAY": "wayland-test",
        }
    )
    log = logging.getLogger("test.activation.app")
    app = build_app(
        env,
        load_config(env),
        log,
        FakeTrayIcon(),  # type: ignore[arg-type]
        lambda on_click, on_snooze: Notifier("tray-test", on_click, log, on_snooze),
        refresh_interval=0.0,
    )
    app.start_worker()
    try:
        wait_for(lambda: spec12.server.ids, 20, what="the app's notification")
        spec12.click(spec12.server.ids[0], TOKEN)
        wait_for(lambda: spec12.ptyxis.tokens, 20, what="Ptyxis presented")
    finally:
        app.stop()
    assert spec12.ptyxis.tokens == [TOKEN]
