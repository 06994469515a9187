"""The presence monitor: tries the sources of :data:`SOURCES` in order, follows the first
of each kind that answers, and feeds what they say to one
:class:`tray.core.away.tracker.AwayTracker`.

Everything runs on the app's one D-Bus loop (:mod:`tray.desktop.bus_loop`), on its
connections; ``on_change`` is called from that loop's thread with each new
:class:`tray.core.away.tracker.AwayState`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from tray.core.away.tracker import AwayState, AwayTracker
from tray.desktop.bus_loop import BusLoop, attach

from ._source import Desk, IdleQuery, Kind, Source
from .gnome_screensaver import GnomeScreenSaverLock
from .logind import LockedHint
from .mutter import MutterIdleMonitor
from .screensaver_idle import ScreenSaverIdleTime
from .screensaver_lock import ScreenSaverLock
from .wayland_idle import WaylandIdleNotifier
from .x11 import X11IdleTime

# Tried in this order; the first of each kind that answers wins. A new source is one
# module and one line here.
SOURCES: tuple[type[Source], ...] = (
    LockedHint,
    GnomeScreenSaverLock,
    ScreenSaverLock,
    MutterIdleMonitor,
    WaylandIdleNotifier,
    ScreenSaverIdleTime,
    X11IdleTime,
)

# What the doctor line and the app's log call each source.
NAMES = {source.key: source.name for source in SOURCES}

# After a polled source stopped answering (the X server, the screen saver went away).
RETRY_LOST = 60.0


class PresenceMonitor:
    """Follows the user's presence on the bus loop of ``env``'s buses.

    ``env`` gives DISPLAY, DBUS_SESSION_BUS_ADDRESS, DBUS_SYSTEM_BUS_ADDRESS and
    XDG_SESSION_ID, so tests point it at their own desktop. ``sources`` are tried in
    their order; :data:`SOURCES` unless a test chooses.
    """

    def __init__(  # noqa: PLR0917 - the app and the tests pass these in this order
        self,
        after: float,
        on_change: Callable[[AwayState], None],
        env: Mapping[str, str],
        clock: Callable[[], float] = time.time,
        log: logging.Logger | None = None,
        sources: Sequence[type[Source]] = SOURCES,
    ) -> None:
        self._tracker = AwayTracker(after)
        self._on_change = on_change
        self._env = dict(env)
        self._clock = clock
        self._log = log or logging.getLogger("tray.app")
        self._sources = tuple(sources)
        self._bus: BusLoop | None = None
        self._running: concurrent.futures.Future[None] | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._found: dict[Kind, str] = {}

    # -- the caller's side ---------------------------------------------------------------

    @property
    def lock_source(self) -> str | None:
        """The key of the source that tells of a locked screen, if any does."""
        return self._found.get("lock")

    @property
    def idle_source(self) -> str | None:
        """The key of the source that tells the idle time, if any does."""
        return self._found.get("idle")

    def start(self) -> None:
        self._stopping = asyncio.Event()  # bound to a loop only once waited on
        self._bus = attach(self._env)
        self._running = self._bus.submit(self._run(self._bus, self._stopping))

    def wait_ready(self, timeout: float = 10.0) -> bool:
        """Wait until every source was tried; True when one of them answered."""
        self._ready.wait(timeout)
        return bool(self._found)

    @property
    def state(self) -> AwayState:
        return self._tracker.state

    def describe(self) -> str:
        """Which sources tell, in words; "nothing" when none does."""
        names = {source.key: source.name for source in self._sources}
        return describe_sources(self.lock_source, self.idle_source, names)

    def stop(self, timeout: float = 5.0) -> None:
        bus, running, self._bus = self._bus, self._running, None
        if bus is None or running is None:
            return
        if self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                bus.loop.call_soon_threadsafe(self._stopping.set)
        if not bus.on_loop():
            with contextlib.suppress(Exception):  # what it was, _run logged it
                running.result(timeout)
        bus.detach()

    # -- on the bus loop -----------------------------------------------------------------

    async def _run(self, bus: BusLoop, stopping: asyncio.Event) -> None:
        try:
            await self._main(bus, stopping)
        except asyncio.CancelledError:
            raise
        except Exception:
            self._log.exception("idle detection stopped")
        finally:
            self._ready.set()

    def _report(self, change: AwayState | None) -> None:
        if change is None:
            return
        try:
            self._on_change(change)
        except Exception:
            self._log.exception("the away state's receiver failed")

    async def _main(self, bus: BusLoop, stopping: asyncio.Event) -> None:
        sources = [make() for make in self._sources]
        desk: Desk | None = None
        polls: list[asyncio.Future[None]] = []
        try:
            try:
                session = await bus.session()
                system = await bus.system()
                desk = Desk(
                    self._env, session, system, self._tracker, self._clock, self._report, self._log
                )
                for source in sources:
                    if source.kind not in self._found and await source.follow(desk):
                        self._found[source.kind] = source.key
                self._log.info("away detection: %s", self.describe())
            finally:
                self._ready.set()
            polls = [asyncio.ensure_future(self._poll(desk, query)) for query in desk.polls]
            await stopping.wait()
        finally:
            for task in polls:
                task.cancel()
            if desk is not None:
                desk.cancel()
            for source in sources:
                source.close()

    async def _poll(self, desk: Desk, query: IdleQuery) -> None:
        """Ask a polled source when the idle time could first reach ``after``, and every
        few seconds only while the user is away (AwayTracker.next_poll)."""
        while True:
            seconds = await query()
            if seconds is None:
                # The source went away: present, which forwards nothing, and a slow retry.
                desk.idle_edge(False)
                await asyncio.sleep(RETRY_LOST)
                continue
            desk.idle_seconds(seconds)
            await asyncio.sleep(desk.next_poll(seconds))


def describe_sources(
    lock_source: str | None, idle_source: str | None, names: Mapping[str, str] = NAMES
) -> str:
    """The sources that tell, by their keys, in the words of ``names``; "nothing" when
    neither does."""
    found = [names[source] for source in (idle_source, lock_source) if source is not None]
    return " and ".join(found) if found else "nothing"


def probe(env: Mapping[str, str], after: float = 300.0, timeout: float = 10.0) -> str | None:
    """For ``tray doctor``: which sources tell here, in words, or None when none does."""
    monitor = PresenceMonitor(after, lambda _state: None, env, log=logging.getLogger("tray.doctor"))
    monitor.start()
    try:
        found = monitor.wait_ready(timeout)
        return monitor.describe() if found else None
    finally:
        monitor.stop()


__all__ = ["NAMES", "SOURCES", "PresenceMonitor", "describe_sources", "probe"]
