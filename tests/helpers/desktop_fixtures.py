"""Fixtures for every desktop test: a real X server, a private bus and real desktop
services on them, shared by the whole session so the suite stays quick.

Chain: ``xvfb_display`` -> ``session_bus`` -> ``desktop_env`` -> ``dunst``, ``trayer``,
``sni_host``; ``bus_monitor`` watches the bus for one test. Nothing here reaches the
real desktop: the environment handed out drops DISPLAY, DBUS_SESSION_BUS_ADDRESS and
the tmux variables, and the bus auto-starts nothing.

Tests that need a service of their own (a bus without a notification server, a dunst
that comes and goes) use the ``start_*`` functions in services.py directly, and
``wait_for`` from waiting.py instead of sleeping.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.desktop_apps import RunningApp, StartApp, start_app_process
from helpers.desktop_services import (
    BusMonitor,
    Dunst,
    base_env,
    start_bus,
    start_dunst,
    start_sni_host,
    start_trayer,
    start_xvfb,
    stop_process,
)


@pytest.fixture(scope="session")
def desktop_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for the session's configs, sockets and logs (``*.log``: read them
    when a service misbehaves)."""
    return tmp_path_factory.mktemp("desktop")


@pytest.fixture(scope="session")
def xvfb_display(desktop_dir: Path) -> Iterator[str]:
    """A running Xvfb, 1024x768x24, no TCP, with no window manager; yields its DISPLAY
    value, like ":57". Xvfb picks a free number itself (-displayfd)."""
    proc, display = start_xvfb(desktop_dir / "xvfb.log")
    try:
        yield display
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def session_bus(desktop_dir: Path) -> Iterator[str]:
    """A private dbus-daemon of session type; yields its address (for
    DBUS_SESSION_BUS_ADDRESS). Nothing is auto-started on it: a service exists only
    when a fixture or a test started it."""
    proc, address = start_bus(desktop_dir / "bus")
    try:
        yield address
    finally:
        stop_process(proc)


@pytest.fixture
def desktop_env(xvfb_display: str, session_bus: str) -> dict[str, str]:
    """A fresh copy of the environment for anything run on the test desktop: this
    process's environment with DISPLAY=the Xvfb, DBUS_SESSION_BUS_ADDRESS=the private
    bus, NO_AT_BRIDGE=1, and no TMUX, TMUX_PANE, WINDOWID or WAYLAND_DISPLAY.

    In-process code that reads os.environ (desktop-notifier, pystray) needs these set
    with ``monkeypatch.setenv`` as well."""
    return base_env(DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session_bus)


@pytest.fixture(scope="session")
def dunst(xvfb_display: str, session_bus: str, desktop_dir: Path) -> Iterator[Dunst]:
    """dunst 1.9 on the Xvfb, owning org.freedesktop.Notifications on ``session_bus``.

    Its own dunstrc: markup full, popups top left, and no timeouts, so a notification
    stays until a test closes it. Shared by the session: call ``dunst.close_all()``
    first in a test that counts or clicks notifications. Handle: ``address``, ``env``,
    ``count(which)``, ``history()`` (closed ones, parsed from ``dunstctl history``),
    ``action(n)`` (clicks the n-th displayed one), ``close_all()``, ``ctl(*args)``."""
    env = base_env(DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session_bus)
    server = start_dunst(env, desktop_dir / "dunst")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def no_notifications(dunst: Dunst) -> None:
    """The shared screen with no notification left on it by an earlier test: dunst's
    popups stay until closed, stack down from the top left, and would cover a tray's
    icon or read as an open menu (tray's carry its state's icon, and are as tall as a
    menu)."""
    dunst.close_all()


@pytest.fixture
def bus_monitor(session_bus: str, tmp_path: Path) -> Iterator[BusMonitor]:
    """dbus-monitor on ``session_bus`` for one test, watching the
    org.freedesktop.Notifications interface, and attached before the test runs.

    ``notify_calls()`` gives the Notify calls seen so far as NotifyCall(app_name,
    replaces_id, icon, summary, body, actions, hints, expire_timeout; ``urgency`` is
    the urgency hint's byte), and ``wait_for_notify(count)`` waits for them."""
    env = base_env(DBUS_SESSION_BUS_ADDRESS=session_bus)
    monitor = BusMonitor(env, tmp_path / "dbus-monitor.log")
    try:
        yield monitor
    finally:
        monitor.stop()


@pytest.fixture
def trayer(
    xvfb_display: str, session_bus: str, tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """trayer, an XEmbed system tray, at the top right of the Xvfb: 32 px high, white,
    as wide as its icons. Yields trayer's Popen once it owns _NET_SYSTEM_TRAY_S0.

    A new one for each test: trayer does not always repaint where a killed client's
    icon was, and a stale icon from an earlier test would fool any test that reads
    the tray's pixels."""
    env = base_env(DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session_bus)
    proc = start_trayer(env, tmp_path / "trayer.log")
    try:
        yield proc
    finally:
        stop_process(proc)


class _SniHost:
    """The shared StatusNotifierItem host, started again when it has died.

    gtk-sni-tray-standalone can end at its start, racing with itself
    (:func:`start_sni_host`, which tries again). Whether it can end later on its own was
    never shown, but a whole run should not hang on one host: each test that needs it
    gets a live one."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self._env = env
        self._log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def live(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = start_sni_host(self._env, self._log)
        return self.proc

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)


@pytest.fixture(scope="session")
def _shared_sni_host(xvfb_display: str, session_bus: str, desktop_dir: Path) -> Iterator[_SniHost]:
    host = _SniHost(
        base_env(DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session_bus),
        desktop_dir / "sni-host.log",
    )
    try:
        yield host
    finally:
        host.stop()


@pytest.fixture
def sni_host(_shared_sni_host: _SniHost) -> subprocess.Popen[bytes]:
    """gtk-sni-tray-standalone --watcher: a StatusNotifierItem host, drawn as a bar at
    the bottom of the Xvfb, with its own org.kde.StatusNotifierWatcher on the session
    bus; its Popen, once the watcher is on the bus. One for the whole run, started again
    if it has ended (see :class:`_SniHost`)."""
    return _shared_sni_host.live()


@pytest.fixture
def start_app(
    desktop_env: dict[str, str], tmp_path: Path, dunst: Dunst, trayer: object
) -> Iterator[StartApp]:
    started: list[RunningApp] = []

    def start(config: str = "", **extra_env: str) -> RunningApp:
        dunst.close_all()
        app = start_app_process({**desktop_env, **extra_env}, tmp_path, config)
        started.append(app)
        return app

    yield start
    for app in started:
        stop_process(app.proc)
    # What the apps showed goes with them: the screen is shared by the whole run.
    dunst.close_all()
    for app in started:
        assert "Traceback" not in app.log, app.log
