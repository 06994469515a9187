"""Idle and screen-lock detection: is anyone at the desk?

Two kinds of source, each tried in order; the first of each kind that answers wins and
is named (for ``tray doctor``):
- lock: logind's session ``LockedHint`` (system bus), then
  ``org.freedesktop.ScreenSaver`` ``GetActive`` with its ``ActiveChanged`` signal;
- idle: GNOME's ``org.gnome.Mutter.IdleMonitor`` (idle and user-active watches, so no
  polling, also on Wayland), then ``org.freedesktop.ScreenSaver.GetSessionIdleTime``
  (KDE's ksmserver on X11: milliseconds, as KIdleTime gives them), then X11's
  MIT-SCREEN-SAVER extension through python-xlib.

Sources with signals are followed by their signals. The polled ones are asked when the
idle time could first reach ``after`` and every few seconds only while the user is
away (see tray.core.away.AwayTracker.next_poll). Where no source answers, the state stays
"present" for ever: nothing is forwarded when tray cannot tell.

Everything runs on one daemon thread with an asyncio loop of its own; ``on_change`` is
called from that thread with each new :class:`tray.core.away.AwayState`.

The D-Bus calls, signal subscriptions and connections go through
:mod:`tray.desktop.bus`, each with its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping

from dbus_fast import Message, Variant
from dbus_fast.aio import MessageBus

from tray.core.away import AwayState, AwayTracker
from tray.desktop.bus import BusCallError, call_method, connect, subscribe

SYSTEM_BUS = "unix:path=/var/run/dbus/system_bus_socket"

LOGIND = "org.freedesktop.login1"
LOGIND_PATH = "/org/freedesktop/login1"
SCREENSAVER = "org.freedesktop.ScreenSaver"
# KDE answers on both paths; others on the first only.
SCREENSAVER_PATHS = ("/org/freedesktop/ScreenSaver", "/ScreenSaver")
MUTTER = "org.gnome.Mutter.IdleMonitor"
MUTTER_PATH = "/org/gnome/Mutter/IdleMonitor/Core"
PROPERTIES = "org.freedesktop.DBus.Properties"
_MUTTER = (MUTTER, MUTTER_PATH, MUTTER)

# What the doctor line and the app's log call each source.
NAMES = {
    "logind": "logind's LockedHint",
    "screensaver-lock": "the screen saver's lock (org.freedesktop.ScreenSaver)",
    "mutter": "GNOME's idle monitor",
    "screensaver-idle": "the screen saver's idle time (org.freedesktop.ScreenSaver)",
    "x11": "X11 idle time (MIT-SCREEN-SAVER)",
}

Report = Callable[[AwayState | None], None]


class PresenceMonitor:
    """Follows the user's presence on a thread of its own.

    ``env`` gives DISPLAY, DBUS_SESSION_BUS_ADDRESS, DBUS_SYSTEM_BUS_ADDRESS and
    XDG_SESSION_ID, so tests point it at their own desktop.
    """

    def __init__(
        self,
        after: float,
        on_change: Callable[[AwayState], None],
        env: Mapping[str, str],
        clock: Callable[[], float] = time.time,
        log: logging.Logger | None = None,
    ) -> None:
        self._tracker = AwayTracker(after)
        self._on_change = on_change
        self._env = dict(env)
        self._clock = clock
        self._log = log or logging.getLogger("tray.app")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self.lock_source: str | None = None
        self.idle_source: str | None = None
        self._buses: list[MessageBus] = []
        self._tasks: set[asyncio.Future[None]] = set()

    # -- the caller's side ---------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tray-idle", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float = 10.0) -> bool:
        """Wait until every source was tried; True when one of them answered."""
        self._ready.wait(timeout)
        return self.lock_source is not None or self.idle_source is not None

    @property
    def state(self) -> AwayState:
        return self._tracker.state

    def describe(self) -> str:
        """Which sources tell, in words; "nothing" when none does."""
        return describe_sources(self.lock_source, self.idle_source)

    def stop(self, timeout: float = 5.0) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout)

    # -- the watch's own thread ----------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except Exception:
            self._log.exception("idle detection stopped")
        finally:
            self._ready.set()
            loop.close()

    def _report(self, change: AwayState | None) -> None:
        if change is None:
            return
        try:
            self._on_change(change)
        except Exception:
            self._log.exception("the away state's receiver failed")

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        polls: list[Awaitable[None]] = []
        try:
            session = await connect(self._env.get("DBUS_SESSION_BUS_ADDRESS"))
            system = await connect(self._env.get("DBUS_SYSTEM_BUS_ADDRESS", SYSTEM_BUS))
            self._buses = [bus for bus in (session, system) if bus is not None]
            if system is not None and await self._follow_logind(system):
                self.lock_source = "logind"
            elif session is not None and await self._follow_screensaver_lock(session):
                self.lock_source = "screensaver-lock"
            if session is not None and await self._follow_mutter(session):
                self.idle_source = "mutter"
            elif session is not None and await self._screensaver_idle(session) is not None:
                self.idle_source = "screensaver-idle"
                assert session is not None
                polls.append(self._poll(lambda: self._screensaver_idle(session)))
            elif self._x11_idle() is not None:
                self.idle_source = "x11"
                polls.append(self._poll(self._x11_idle_async))
            self._log.info("away detection: %s", self.describe())
        finally:
            self._ready.set()
        tasks = [asyncio.ensure_future(poll) for poll in polls]
        try:
            await self._stopping.wait()
        finally:
            for task in tasks:
                task.cancel()
            for bus in self._buses:
                bus.disconnect()
            self._close_x11()

    async def _poll(self, query: Callable[[], Awaitable[float | None]]) -> None:
        while True:
            seconds = await query()
            if seconds is None:
                # The source went away (the X server, the screen saver): present, which
                # forwards nothing, and a slow retry.
                self._report(self._tracker.idle_edge(False, self._clock()))
                await asyncio.sleep(60.0)
                continue
            self._report(self._tracker.idle_seconds(seconds, self._clock()))
            await asyncio.sleep(self._tracker.next_poll(seconds))

    # -- logind ------------------------------------------------------------------------------

    async def _follow_logind(self, bus: MessageBus) -> bool:
        session_id = self._env.get("XDG_SESSION_ID") or "auto"
        try:
            (path,) = await call_method(
                bus, (LOGIND, LOGIND_PATH, f"{LOGIND}.Manager"), "GetSession", "s", [session_id]
            )
            assert isinstance(path, str)
            (hint,) = await call_method(
                bus, (LOGIND, path, PROPERTIES), "Get", "ss", [f"{LOGIND}.Session", "LockedHint"]
            )
        except (BusCallError, ValueError, AssertionError):
            return False
        if not isinstance(hint, Variant) or not isinstance(hint.value, bool):
            return False

        def changed(message: Message) -> None:
            interface, values, _ = message.body
            if interface != f"{LOGIND}.Session" or "LockedHint" not in values:
                return
            value = values["LockedHint"].value
            if isinstance(value, bool):
                self._report(self._tracker.locked(value, self._clock()))

        try:
            await subscribe(
                bus,
                {"sender": LOGIND, "path": path, "interface": PROPERTIES,
                 "member": "PropertiesChanged"},
                changed,
            )  # fmt: skip
        except BusCallError:
            return False
        self._report(self._tracker.locked(hint.value, self._clock()))
        return True

    # -- org.freedesktop.ScreenSaver ---------------------------------------------------------

    async def _follow_screensaver_lock(self, bus: MessageBus) -> bool:
        for path in SCREENSAVER_PATHS:
            try:
                (active,) = await call_method(bus, (SCREENSAVER, path, SCREENSAVER), "GetActive")
            except (BusCallError, ValueError):
                continue
            if not isinstance(active, bool):
                continue

            def changed(message: Message) -> None:
                (value,) = message.body
                if isinstance(value, bool):
                    self._report(self._tracker.locked(value, self._clock()))

            try:
                await subscribe(
                    bus,
                    {"sender": SCREENSAVER, "path": path, "interface": SCREENSAVER,
                     "member": "ActiveChanged"},
                    changed,
                )  # fmt: skip
            except BusCallError:
                return False
            self._report(self._tracker.locked(active, self._clock()))
            return True
        return False

    async def _screensaver_idle(self, bus: MessageBus) -> float | None:
        try:
            (millis,) = await call_method(
                bus, (SCREENSAVER, SCREENSAVER_PATHS[0], SCREENSAVER), "GetSessionIdleTime"
            )
        except (BusCallError, ValueError):
            return None
        return millis / 1000.0 if isinstance(millis, int) else None

    # -- Mutter's idle monitor ---------------------------------------------------------------

    async def _follow_mutter(self, bus: MessageBus) -> bool:
        try:
            (idle_ms,) = await call_method(bus, _MUTTER, "GetIdletime")
        except (BusCallError, ValueError):
            return False
        if not isinstance(idle_ms, int):
            return False
        watches: dict[str, int] = {}

        async def watch_active() -> None:
            watches["active"] = _number(await call_method(bus, _MUTTER, "AddUserActiveWatch"))

        def fired(message: Message) -> None:
            (watch,) = message.body
            now = self._clock()
            if watch == watches.get("idle"):
                self._report(self._tracker.idle_edge(True, now))
                # A user-active watch fires once, so each absence adds its own.
                task = asyncio.ensure_future(self._quietly(watch_active()))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif watch == watches.get("active"):
                self._report(self._tracker.idle_edge(False, now))

        try:
            await subscribe(
                bus,
                {"sender": MUTTER, "path": MUTTER_PATH, "interface": MUTTER,
                 "member": "WatchFired"},
                fired,
            )  # fmt: skip
            # An idle watch fires each time the idle time passes its interval.
            watches["idle"] = _number(
                await call_method(
                    bus, _MUTTER, "AddIdleWatch", "t", [max(1, round(self._tracker.after * 1000))]
                )
            )
            if idle_ms >= self._tracker.after * 1000:
                self._report(self._tracker.idle_edge(True, self._clock()))
                await watch_active()
        except BusCallError:
            return False
        return True

    async def _quietly(self, work: Awaitable[None]) -> None:
        try:
            await work
        except BusCallError as error:
            self._log.warning("GNOME's idle monitor: %s", error)

    # -- X11 ---------------------------------------------------------------------------------

    _x11: object = None

    def _x11_idle(self) -> float | None:
        """Seconds since the last input on the X display, or None when it cannot tell."""
        display_name = self._env.get("DISPLAY")
        if not display_name:
            return None
        try:
            if self._x11 is None:
                from Xlib import display as xdisplay  # noqa: PLC0415 - X11 only

                connection = xdisplay.Display(display_name)
                if not connection.has_extension("MIT-SCREEN-SAVER"):
                    connection.close()
                    return None
                self._x11 = connection
            info = self._x11.screen().root.screensaver_query_info()  # type: ignore[attr-defined]
            return float(info.idle) / 1000.0
        except Exception:  # python-xlib raises many kinds; all mean "lost"
            self._close_x11()
            return None

    async def _x11_idle_async(self) -> float | None:
        return self._x11_idle()

    def _close_x11(self) -> None:
        connection, self._x11 = self._x11, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()  # type: ignore[attr-defined]


def _number(body: list[object]) -> int:
    if len(body) != 1 or not isinstance(body[0], int):
        raise BusCallError("an answer that is not a number")
    return body[0]


def describe_sources(lock_source: str | None, idle_source: str | None) -> str:
    names = [NAMES[source] for source in (idle_source, lock_source) if source is not None]
    return " and ".join(names) if names else "nothing"


def probe(env: Mapping[str, str], after: float = 300.0, timeout: float = 10.0) -> str | None:
    """For ``tray doctor``: which sources tell here, in words, or None when none does."""
    watch = PresenceMonitor(after, lambda _state: None, env, log=logging.getLogger("tray.doctor"))
    watch.start()
    try:
        found = watch.wait_ready(timeout)
        return watch.describe() if found else None
    finally:
        watch.stop()


__all__ = ["NAMES", "PresenceMonitor", "describe_sources", "probe"]
