"""What the user asks of the app, as messages to its worker thread.

Menu items run on pystray's thread and notification buttons on the notifier's; the
policy, the overview and the app's memory belong to the worker alone. So every user
action is one of these small values, posted to a :class:`Mailbox` and handled by the
worker in order (:meth:`tray.app.main.TrayApp.handle`). A new action is a new class here
and a new case there.

Times are taken when the user acts, not when the worker gets to it.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

from tray.core.away import AwayState


@dataclass(frozen=True, slots=True)
class Focus:
    session_id: str
    # The notification server's token for a click (notification spec 1.2): lets a
    # Wayland terminal raise its window. Never logged.
    activation_token: str | None = None


@dataclass(frozen=True, slots=True)
class MarkSeen:
    session_id: str
    at: float


@dataclass(frozen=True, slots=True)
class Dismiss:
    session_id: str


@dataclass(frozen=True, slots=True)
class ClearFinished:
    pass


@dataclass(frozen=True, slots=True)
class Pause:
    until: float


@dataclass(frozen=True, slots=True)
class Resume:
    pass


@dataclass(frozen=True, slots=True)
class Snooze:
    session_ids: tuple[str, ...]
    until: float


@dataclass(frozen=True, slots=True)
class Unsnooze:
    session_id: str


@dataclass(frozen=True, slots=True)
class Away:
    """The user left the desk or came back (tray.desktop.idle, on its own thread)."""

    state: AwayState


@dataclass(frozen=True, slots=True)
class Answer:
    """Approve or deny one prompt: ``record_id`` and ``since`` name the prompt the user
    saw, so a prompt that changed meanwhile is refused, never answered."""

    session_id: str
    record_id: str
    since: float
    answer: str


Message = (
    Away | Focus | MarkSeen | Dismiss | ClearFinished | Pause | Resume | Snooze | Unsnooze | Answer
)


class Mailbox:
    """Messages from any thread to the worker, kept in the order they were posted.

    Posting sets every event in ``wake``, so a sleeping worker gets to it at once. The
    deque's append and popleft are atomic, so neither side takes a lock.
    """

    __slots__ = ("_queue", "_wake")

    def __init__(self, *wake: threading.Event) -> None:
        self._queue: deque[Message] = deque()
        self._wake = wake

    def post(self, message: Message) -> None:
        self._queue.append(message)
        for event in self._wake:
            event.set()

    def take(self) -> list[Message]:
        """The messages posted so far, oldest first; the worker's only. Those posted
        meanwhile wait for the next call, so a storm of them cannot hold up a refresh."""
        return [self._queue.popleft() for _ in range(len(self._queue))]

    def __len__(self) -> int:
        return len(self._queue)
