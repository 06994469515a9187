"""Idle and lock detection against a real X server (Xvfb's MIT-SCREEN-SAVER, moved by
xdotool) and, for what cannot run here, small fakes on private buses.

The fakes, named as such: FakeLogind (org.freedesktop.login1 on a bus standing in for
the system bus), FakeScreenSaver (org.freedesktop.ScreenSaver) and FakeMutter
(org.gnome.Mutter.IdleMonitor). Debian 12 has no headless locker that implements
org.freedesktop.ScreenSaver: xfce4-screensaver is not in bookworm, and light-locker
aborts without logind and LightDM on a system bus (tried). Each fake answers only the
calls tray makes, as the real service does, and emits its signals when the test says.
"""

from __future__ import annotations

import contextlib
import functools
import random
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dbus_fast import Message, MessageType, Variant
from helpers.desktop_fake_bus import FakeBusPeer
from helpers.desktop_services import TOOL_TIMEOUT, base_env, start_bus, stop_process
from helpers.waiting import wait_for

from tray.core.away.tracker import AwayState
from tray.desktop.idle import SOURCES, PresenceMonitor, probe
from tray.desktop.idle._source import Source
from tray.desktop.idle.logind import LockedHint
from tray.desktop.idle.screensaver_idle import ScreenSaverIdleTime
from tray.desktop.idle.x11 import X11IdleTime

Handler = Callable[[list[object]], tuple[str, list[object]]]


class FakeService(FakeBusPeer):
    """One bus name, answering only the method calls of a table: ``methods`` maps (path,
    interface, member) to a function of the call's body that returns the reply's
    (signature, body); anything else gets dbus-fast's own UnknownMethod. ``answered``
    lists the calls it answered, as (interface, member)."""

    def __init__(self, address: str, name: str, methods: dict[tuple[str, str, str], Handler]):
        self.methods = methods
        self.answered: list[tuple[str, str]] = []
        super().__init__(address, (name,))

    def _answer(self, message: Message) -> Message | bool | None:
        if message.message_type != MessageType.METHOD_CALL:
            return None
        key = (message.path or "", message.interface or "", message.member or "")
        handler = self.methods.get(key)
        if handler is None:
            return None
        self.answered.append((key[1], key[2]))
        signature, body = handler(list(message.body))
        return Message.new_method_return(message, signature, body)


class Changes:
    """What an PresenceMonitor reported, in order, from its thread."""

    def __init__(self) -> None:
        self.states: list[AwayState] = []
        self._lock = threading.Lock()

    def __call__(self, state: AwayState) -> None:
        with self._lock:
            self.states.append(state)

    def last(self) -> AwayState | None:
        with self._lock:
            return self.states[-1] if self.states else None

    def away(self) -> bool:
        last = self.last()
        return last is not None and last.away

    def present_again(self) -> bool:
        with self._lock:
            return len(self.states) >= 2 and not self.states[-1].away


@pytest.fixture
def buses(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A private session bus and a private bus standing in for the system bus, with
    nothing on them: no test reaches the machine's own logind."""
    session, session_address = start_bus(tmp_path / "session")
    try:
        system, system_address = start_bus(tmp_path / "system")
    except BaseException:
        stop_process(session)
        raise
    try:
        yield session_address, system_address
    finally:
        stop_process(system)
        stop_process(session)


@contextlib.contextmanager
def _watch(
    after: float,
    env: dict[str, str],
    changes: Changes,
    sources: tuple[type[Source], ...] = SOURCES,
) -> Iterator[PresenceMonitor]:
    watch = PresenceMonitor(after, changes, env, sources=sources)
    watch.start()
    try:
        yield watch
    finally:
        watch.stop()


def _move_mouse(display: str) -> None:
    # A move to where the pointer already is makes no event, so never the same place.
    x, y = random.randrange(50, 900), random.randrange(50, 700)
    subprocess.run(
        ["xdotool", "mousemove", str(x), str(y)],
        env=base_env(DISPLAY=display),
        timeout=TOOL_TIMEOUT,
        check=True,
    )


def test_x11_idle_time_makes_the_user_away_and_the_mouse_brings_them_back(
    xvfb_display: str, buses: tuple[str, str]
) -> None:
    session, system = buses
    env = base_env(
        DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system
    )
    changes = Changes()
    _move_mouse(xvfb_display)
    moved_at = time.time()
    with _watch(2.0, env, changes) as watch:
        assert watch.wait_ready()
        assert watch.idle_source == "x11"
        assert watch.lock_source is None
        assert watch.describe() == "X11 idle time (MIT-SCREEN-SAVER)"
        assert not watch.state.away
        wait_for(changes.away, 15.0, 0.05, "away after 2 s without input")
        state = changes.last()
        assert state is not None and state.since is not None
        # Away from the moment the idle time reached `after`, to the poll's rounding.
        assert moved_at + 1.5 <= state.since <= time.time()
        _move_mouse(xvfb_display)
        wait_for(changes.present_again, 10.0, 0.05, "present again after a mouse move")
        assert [s.away for s in changes.states] == [True, False]


def test_input_before_after_passes_keeps_the_user_present(
    xvfb_display: str, buses: tuple[str, str]
) -> None:
    session, system = buses
    env = base_env(
        DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system
    )
    changes = Changes()
    # The display may have had no input for longer than `after` before this test (the
    # tests before it on this worker's Xvfb may not have touched it): the first poll,
    # at the start, would rightly say away.
    _move_mouse(xvfb_display)
    with _watch(4.0, env, changes) as watch:
        assert watch.wait_ready()
        deadline = time.monotonic() + 6.0
        while time.monotonic() < deadline:
            _move_mouse(xvfb_display)
            time.sleep(0.5)
        assert changes.states == []


def test_no_source_means_cannot_tell_and_nothing_is_reported(buses: tuple[str, str]) -> None:
    session, system = buses
    env = base_env(DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system)
    changes = Changes()
    with _watch(0.5, env, changes) as watch:
        assert not watch.wait_ready()
        assert watch.describe() == "nothing"
        _witness_after(0.5, env, session)
        # Longer than `after` has passed on the monitor's loop: still nothing.
        assert changes.states == []
    assert probe(env) is None


def _witness_after(after: float, env: dict[str, str], session: str) -> None:
    """Return once ``after`` has passed on the bus loop of ``env``: a second monitor there,
    polling a fake idle time that grows with the clock (from now), says away only then.
    Its fake comes after the first monitor looked for sources, which does not see it."""
    start = time.monotonic()

    def idle_ms(_body: list[object]) -> tuple[str, list[object]]:
        return "u", [int((time.monotonic() - start) * 1000)]

    saver = FakeService(session, SAVER, {(SAVER_PATH, SAVER, "GetSessionIdleTime"): idle_ms})
    witness = Changes()
    try:
        with _watch(after, env, witness, sources=(ScreenSaverIdleTime,)) as watch:
            assert watch.wait_ready()
            wait_for(witness.away, what=f"the witness to see {after} s pass")
    finally:
        saver.stop()


SAVER = "org.freedesktop.ScreenSaver"
SAVER_PATH = "/org/freedesktop/ScreenSaver"


def _fake_saver(address: str, state: dict[str, int | bool]) -> FakeService:
    return FakeService(
        address,
        SAVER,
        {
            (SAVER_PATH, SAVER, "GetActive"): lambda _b: ("b", [bool(state["active"])]),
            (SAVER_PATH, SAVER, "GetSessionIdleTime"): lambda _b: ("u", [int(state["idle"])]),
        },
    )


def test_screen_saver_lock_and_idle_time_fake(xvfb_display: str, buses: tuple[str, str]) -> None:
    """FakeScreenSaver: GetActive, ActiveChanged and GetSessionIdleTime (milliseconds,
    from KIdleTime), as KDE's ksmserver answers them on X11. It wins over X11's own
    idle time."""
    session, system = buses
    state: dict[str, int | bool] = {"active": False, "idle": 0}
    saver = _fake_saver(session, state)
    env = base_env(
        DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system
    )
    changes = Changes()
    try:
        with _watch(3.0, env, changes) as watch:
            assert watch.wait_ready()
            assert (watch.lock_source, watch.idle_source) == (
                "screensaver-lock",
                "screensaver-idle",
            )
            locked_at = time.time()
            state["active"] = True
            saver.signal(SAVER_PATH, SAVER, "ActiveChanged", "b", [True])
            wait_for(changes.away, 10.0, what="away on ActiveChanged(true)")
            since = changes.last()
            assert since is not None and since.since is not None
            assert locked_at <= since.since <= time.time()
            state["active"] = False
            saver.signal(SAVER_PATH, SAVER, "ActiveChanged", "b", [False])
            wait_for(changes.present_again, 10.0, what="present on ActiveChanged(false)")
            # The idle time, polled: 3.5 s without input is away, input is back.
            state["idle"] = 3_500
            wait_for(lambda: len(changes.states) == 3 and changes.away(), 10.0, what="idle")
            state["idle"] = 0
            wait_for(lambda: len(changes.states) == 4, 10.0, what="back from idle")
            assert [s.away for s in changes.states] == [True, False, True, False]
    finally:
        saver.stop()


def test_the_monitor_tries_only_its_list_in_the_lists_order(
    xvfb_display: str, buses: tuple[str, str]
) -> None:
    """The list decides: with X11 before the screen saver's idle time, X11 tells although
    FakeScreenSaver would answer (and wins with the default order, above), and the
    screen saver's lock, left out of the list, is never asked."""
    session, system = buses
    saver = _fake_saver(session, {"active": False, "idle": 0})
    env = base_env(
        DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system
    )
    changes = Changes()
    _move_mouse(xvfb_display)
    try:
        with _watch(2.0, env, changes, (X11IdleTime, ScreenSaverIdleTime)) as watch:
            assert watch.wait_ready()
            assert (watch.lock_source, watch.idle_source) == (None, "x11")
            assert watch.describe() == "X11 idle time (MIT-SCREEN-SAVER)"
            wait_for(changes.away, 15.0, 0.05, "away by X11's idle time")
            assert saver.answered == []
    finally:
        saver.stop()


def test_a_list_without_an_answering_source_tells_nothing(
    xvfb_display: str, buses: tuple[str, str]
) -> None:
    """X11 could tell here, but the list holds logind only, and no logind answers."""
    session, system = buses
    env = base_env(
        DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system
    )
    changes = Changes()
    with _watch(0.5, env, changes, (LockedHint,)) as watch:
        assert not watch.wait_ready()
        assert (watch.lock_source, watch.idle_source) == (None, None)
        assert watch.describe() == "nothing"
    assert changes.states == []


LOGIND = "org.freedesktop.login1"
SESSION_PATH = "/org/freedesktop/login1/session/_31"


def test_logind_locked_hint_fake(buses: tuple[str, str]) -> None:
    """FakeLogind: Manager.GetSession and the session's LockedHint property, with
    PropertiesChanged, on a bus given as DBUS_SYSTEM_BUS_ADDRESS."""
    session, system = buses
    locked = {"hint": False}
    asked: list[object] = []

    def get_session(body: list[object]) -> tuple[str, list[object]]:
        asked.append(body[0])
        return "o", [SESSION_PATH]

    def get_property(body: list[object]) -> tuple[str, list[object]]:
        assert body == [f"{LOGIND}.Session", "LockedHint"]
        return "v", [Variant("b", locked["hint"])]

    logind = FakeService(
        system,
        LOGIND,
        {
            ("/org/freedesktop/login1", f"{LOGIND}.Manager", "GetSession"): get_session,
            (SESSION_PATH, "org.freedesktop.DBus.Properties", "Get"): get_property,
        },
    )
    env = base_env(
        DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system, XDG_SESSION_ID="1"
    )
    changes = Changes()

    def hint(value: bool) -> None:
        locked["hint"] = value
        logind.signal(
            SESSION_PATH,
            "org.freedesktop.DBus.Properties",
            "PropertiesChanged",
            "sa{sv}as",
            [f"{LOGIND}.Session", {"LockedHint": Variant("b", value)}, []],
        )

    try:
        with _watch(300.0, env, changes) as watch:
            assert watch.wait_ready()
            assert watch.lock_source == "logind"
            assert watch.idle_source is None
            assert asked == ["1"]
            hint(True)
            wait_for(changes.away, 10.0, what="away on LockedHint true")
            hint(False)
            wait_for(changes.present_again, 10.0, what="present on LockedHint false")
    finally:
        logind.stop()


MUTTER = "org.gnome.Mutter.IdleMonitor"
MUTTER_PATH = "/org/gnome/Mutter/IdleMonitor/Core"


def test_mutter_idle_monitor_fake_is_followed_by_its_watches(
    xvfb_display: str, buses: tuple[str, str]
) -> None:
    """FakeMutter: GetIdletime, AddIdleWatch, AddUserActiveWatch and WatchFired, as
    mutter answers them; the test fires the watches in place of the user."""
    session, system = buses
    watches: dict[str, list[int]] = {"idle": [], "active": []}
    counter = iter(range(1, 100))

    def add(kind: str) -> Handler:
        def handler(body: list[object]) -> tuple[str, list[object]]:
            number = next(counter)
            watches[kind].append(number)
            if kind == "idle":
                assert body == [3_000]  # after, in milliseconds
            return "u", [number]

        return handler

    mutter = FakeService(
        session,
        MUTTER,
        {
            (MUTTER_PATH, MUTTER, "GetIdletime"): lambda _b: ("t", [100]),
            (MUTTER_PATH, MUTTER, "AddIdleWatch"): add("idle"),
            (MUTTER_PATH, MUTTER, "AddUserActiveWatch"): add("active"),
        },
    )
    env = base_env(
        DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=session, DBUS_SYSTEM_BUS_ADDRESS=system
    )
    changes = Changes()

    def fire(number: int) -> None:
        mutter.signal(MUTTER_PATH, MUTTER, "WatchFired", "u", [number])

    try:
        with _watch(3.0, env, changes) as watch:
            assert watch.wait_ready()
            assert watch.idle_source == "mutter"
            assert watch.describe() == "GNOME's idle monitor"
            assert len(watches["idle"]) == 1 and watches["active"] == []
            for absence in (1, 2):
                fire(watches["idle"][0])
                wait_for(changes.away, 10.0, what="away on the idle watch")
                wait_for(
                    functools.partial(lambda n: len(watches["active"]) == n, absence),
                    what="an active watch",
                )
                fire(watches["active"][-1])
                wait_for(lambda: not changes.away(), 10.0, what="present on the active watch")
            assert [s.away for s in changes.states] == [True, False, True, False]
            # Signals alone: it never asked for the idle time again.
            assert mutter.answered.count((MUTTER, "GetIdletime")) == 1
    finally:
        mutter.stop()
