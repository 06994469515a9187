"""tray's Wayland idle source (tray/desktop/idle/wayland_idle.py) inside the real
PresenceMonitor, against a fake compositor: a Unix socket served by the test that
answers the registry, binds and syncs as the protocol says, and sends the idle
notification's events when the test tells it to. The real compositor, KWin, is
tests/desktop/test_plasma.py's; this covers what KWin will not do on demand: a
compositor without the protocol, and one that goes away."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest
from helpers.waiting import wait_for

from desktop.test_idle import Changes
from tray.desktop.idle import PresenceMonitor
from tray.desktop.idle.wayland_idle import WaylandIdleNotifier
from tray.desktop.wayland_wire import MessageReader, decode_args, encode_message

NOTIFIER, SEAT = "ext_idle_notifier_v1", "wl_seat"


class FakeCompositor:
    """A stand-in compositor on ``path`` for one client: it offers ``offered`` globals
    (names 1, 2, ...), answers sync, and keeps what the client bound and asked for."""

    def __init__(self, path: Path, offered: tuple[str, ...]) -> None:
        self.offered = offered
        self.bound: dict[int, str] = {}  # new id -> interface
        self.notifications: list[tuple[int, int, int]] = []  # (id, timeout ms, seat id)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(1)
        self._client: socket.socket | None = None
        self._thread = threading.Thread(target=self._serve, name="fake-compositor", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            client, _ = self._listener.accept()
        except OSError:  # closed before a client came
            return
        self._client = client
        reader = MessageReader()
        while data := client.recv(4096):
            for message in reader.feed(data):
                self._answer(message.object_id, message.opcode, message.payload)

    def _answer(self, object_id: int, opcode: int, payload: bytes) -> None:
        assert self._client is not None
        if (object_id, opcode) == (1, 1):  # wl_display.get_registry
            (registry,) = decode_args("n", payload)
            assert isinstance(registry, int)
            for number, interface in enumerate(self.offered, 1):
                self._client.sendall(encode_message(registry, 0, "usu", [number, interface, 1]))
        elif (object_id, opcode) == (1, 0):  # wl_display.sync
            (callback,) = decode_args("n", payload)
            assert isinstance(callback, int)
            self._client.sendall(
                encode_message(callback, 0, "u", [7]) + encode_message(1, 1, "u", [callback])
            )
        elif (object_id, opcode) == (2, 0):  # wl_registry.bind
            _name, bound, _version, new = decode_args("usun", payload)
            assert isinstance(new, int) and isinstance(bound, str)
            self.bound[new] = bound
        elif self.bound.get(object_id) == NOTIFIER and opcode == 1:
            new, timeout, seat = decode_args("nuo", payload)
            assert isinstance(new, int) and isinstance(timeout, int) and isinstance(seat, int)
            self.notifications.append((new, timeout, seat))

    def event(self, opcode: int) -> None:
        """Send the idle notification's event: 0 idled, 1 resumed."""
        assert self._client is not None
        self._client.sendall(encode_message(self.notifications[-1][0], opcode, "", []))

    def hang_up(self) -> None:
        if self._client is not None:
            self._client.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        # The serving thread ends first (end of input, or its accept woken), and only then
        # are the sockets closed: closed under it, its recv() raised EBADF in the thread.
        self.hang_up()
        with suppress(OSError):  # not listening any more, or never connected
            self._listener.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        self._listener.close()
        if self._client is not None:
            self._client.close()


@pytest.fixture
def compositor(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FakeCompositor]:
    fake = FakeCompositor(tmp_path / "wayland-fake", request.param)
    try:
        yield fake
    finally:
        fake.close()


def monitor_on(path: Path, changes: Changes, after: float = 300.0) -> PresenceMonitor:
    # No buses: the Wayland source is the only one that can answer.
    env = {"WAYLAND_DISPLAY": str(path), "DBUS_SYSTEM_BUS_ADDRESS": ""}
    monitor = PresenceMonitor(after, changes, env, sources=[WaylandIdleNotifier])
    monitor.start()
    return monitor


@pytest.mark.parametrize("compositor", [(SEAT, NOTIFIER)], indirect=True)
def test_idled_is_away_and_resumed_is_back_with_after_as_the_timeout(
    compositor: FakeCompositor, tmp_path: Path
) -> None:
    changes = Changes()
    monitor = monitor_on(tmp_path / "wayland-fake", changes, after=42.5)
    try:
        assert monitor.wait_ready()
        assert monitor.idle_source == "wayland-idle"
        [(_, timeout, seat)] = compositor.notifications
        assert timeout == 42500
        assert compositor.bound[seat] == SEAT
        assert changes.states == []  # nothing is said until the compositor says it
        compositor.event(0)
        wait_for(changes.away, 5.0, 0.02, "away on idled")
        compositor.event(1)
        wait_for(changes.present_again, 5.0, 0.02, "present on resumed")
    finally:
        monitor.stop()


@pytest.mark.parametrize("compositor", [(SEAT,), (NOTIFIER,)], indirect=True)
def test_a_compositor_without_the_protocol_or_a_seat_tells_nothing(
    compositor: FakeCompositor, tmp_path: Path
) -> None:
    changes = Changes()
    monitor = monitor_on(tmp_path / "wayland-fake", changes)
    try:
        assert not monitor.wait_ready()
        assert monitor.idle_source is None
        assert compositor.notifications == []
    finally:
        monitor.stop()


@pytest.mark.parametrize("compositor", [(SEAT, NOTIFIER)], indirect=True)
def test_a_compositor_that_goes_away_leaves_the_user_present(
    compositor: FakeCompositor, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    changes = Changes()
    monitor = monitor_on(tmp_path / "wayland-fake", changes)
    try:
        assert monitor.wait_ready()
        compositor.event(0)
        wait_for(changes.away, 5.0, 0.02, "away on idled")
        with caplog.at_level(logging.WARNING, "tray.app"):
            compositor.hang_up()
            wait_for(changes.present_again, 5.0, 0.02, "present once the compositor is gone")
        assert "closed the connection" in caplog.text
    finally:
        monitor.stop()


def test_no_wayland_display_means_no_connection(tmp_path: Path) -> None:
    changes = Changes()
    monitor = PresenceMonitor(
        300.0, changes, {"DBUS_SYSTEM_BUS_ADDRESS": ""}, sources=[WaylandIdleNotifier]
    )
    monitor.start()
    try:
        assert not monitor.wait_ready()
    finally:
        monitor.stop()
