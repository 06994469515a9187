"""What every idle or lock source is, and what it is given to work with.

A source is one way of telling whether the user is at the desk. It has a ``key`` (for
the monitor's ``lock_source``/``idle_source`` and the logs), a ``name`` (the words of
``tray doctor``'s line) and a ``kind``: "lock" or "idle". The monitor tries the sources
of its list in order and follows the first of each kind whose :meth:`Source.follow`
answers True.

A source that tells by itself (signals) subscribes in ``follow``; one that must be
asked subclasses :class:`PolledSource` and only says how to ask, and the monitor asks it
as often as the tracker needs.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import ClassVar, Literal

from dbus_fast import Message
from dbus_fast.aio import MessageBus

from tray.core.away.tracker import AwayState, AwayTracker
from tray.desktop.bus import BusCallError, Subscription, subscribe

Kind = Literal["lock", "idle"]
# Seconds since the last input, or None when the source cannot tell (any more).
IdleQuery = Callable[[], Awaitable[float | None]]


class Desk:
    """What a source works with: where to look (the environment; the session and system
    buses, the bus loop's one connection each, shared with the rest of the app) and whom
    to tell (the tracker, whose every change goes to the monitor's receiver)."""

    def __init__(  # noqa: PLR0917 - the monitor builds one, in one place
        self,
        env: Mapping[str, str],
        session: MessageBus | None,
        system: MessageBus | None,
        tracker: AwayTracker,
        clock: Callable[[], float],
        report: Callable[[AwayState | None], None],
        log: logging.Logger,
    ) -> None:
        self.env = env
        self.session = session
        self.system = system
        self.log = log
        self._tracker = tracker
        self._clock = clock
        self._report = report
        self.polls: list[IdleQuery] = []
        self._tasks: set[asyncio.Future[None]] = set()
        # Taken off the shared connections when the monitor stops.
        self._subscriptions: list[Subscription] = []

    @property
    def after(self) -> float:
        """How long without input counts as away, in seconds."""
        return self._tracker.after

    def locked(self, is_locked: bool) -> None:
        self._report(self._tracker.locked(is_locked, self._clock()))

    def idle_seconds(self, seconds: float) -> None:
        self._report(self._tracker.idle_seconds(seconds, self._clock()))

    def idle_edge(self, idle: bool) -> None:
        self._report(self._tracker.idle_edge(idle, self._clock()))

    def next_poll(self, seconds: float) -> float:
        return self._tracker.next_poll(seconds)

    def poll(self, query: IdleQuery) -> None:
        """Have the monitor ask ``query`` once every source was tried, and then as often
        as the tracker needs."""
        self.polls.append(query)

    async def subscribe(
        self, bus: MessageBus, rule: Mapping[str, str], handler: Callable[[Message], None]
    ) -> None:
        """Receive ``rule``'s signals until the monitor stops
        (:func:`tray.desktop.bus.subscribe`)."""
        self._subscriptions.append(await subscribe(bus, rule, handler))

    def spawn(self, work: Awaitable[None], source: str) -> None:
        """Run ``work`` beside the signals (a handler cannot wait); a D-Bus error in it
        is logged as ``source``'s, as nobody waits for it to say so."""

        async def quietly() -> None:
            try:
                await work
            except BusCallError as error:
                self.log.warning("%s: %s", source, error)

        task = asyncio.ensure_future(quietly())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self) -> None:
        """Stop what :meth:`spawn` started and is still waiting, and every signal."""
        for task in list(self._tasks):
            task.cancel()
        for subscription in self._subscriptions:
            subscription.cancel()
        self._subscriptions.clear()


class Source(ABC):
    """One way of telling; made anew for each monitor, so it may keep state."""

    key: ClassVar[str]
    name: ClassVar[str]
    kind: ClassVar[Kind]

    @abstractmethod
    async def follow(self, desk: Desk) -> bool:
        """Start telling ``desk``: True when this source answers here, having reported
        what it sees now and subscribed (or asked to be polled); False when it cannot
        tell here. Each call it makes has its timeout (:mod:`tray.desktop.bus`)."""

    def close(self) -> None:  # noqa: B027 - most sources hold nothing beyond the buses
        """Let go of what ``follow`` opened besides the shared buses."""


class PolledSource(Source):
    """A source that is asked for the idle time instead of telling when it changes."""

    kind: ClassVar[Kind] = "idle"

    @abstractmethod
    async def idle_time(self, desk: Desk) -> float | None:
        """Seconds since the last input, or None when this source cannot tell."""

    async def follow(self, desk: Desk) -> bool:
        if await self.idle_time(desk) is None:
            return False
        desk.poll(lambda: self.idle_time(desk))
        return True


__all__ = ["Desk", "IdleQuery", "Kind", "PolledSource", "Source"]
