"""How something else joins the pty's poll loop (:class:`tray.launcher.proxy.PtyProxy`)
beside the pty: its fds and its wake-ups, in the same ``poll()``, with no thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Seat(Protocol):
    """What a guest of the loop may ask of it: its fds polled for reading, each with its
    handler (called with poll's events), and a wake-up at a moment of the monotonic clock."""

    def watch(self, fd: int, handler: Callable[[int], None]) -> None: ...

    def unwatch(self, fd: int) -> None: ...

    def wake_at(self, guest: LoopGuest, when: float) -> None: ...


class LoopGuest(Protocol):
    """Something else the session serves from the same poll (no thread), such as its
    answer socket: it takes its seat when the loop starts, and is woken when its
    moment (:meth:`Seat.wake_at`) has come."""

    def join(self, seat: Seat) -> None: ...

    def wake(self) -> None: ...
