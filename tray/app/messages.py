"""What reaches the app's worker thread, as messages.

Menu items run on pystray's thread and notification buttons on the notifier's; the
policy, the overview and the app's memory belong to the worker alone. So every user
action is one of these small values, posted to a :class:`Mailbox` and handled by the
worker in order (:meth:`tray.app.main.TrayApp.handle`). A new action is a new class here
and a new case there. What may wait on another program or another machine (focus, an
answer) runs off the worker (:mod:`tray.app.errands`) and comes back as one of these too
(:class:`FocusDone`, :class:`AnswerDone`), for the worker to apply.

Times are taken when the user acts, not when the worker gets to it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from tray.core.away.tracker import AwayState
from tray.core.session.model import Session
from tray.desktop.focus import FocusResult


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
    # From a button on the phone (``[away] answer``): what came of it goes back there.
    from_phone: bool = False


@dataclass(frozen=True, slots=True)
class PhoneReply:
    """A reply on the phone's reply topic: untrusted text, checked by the worker before
    it becomes an :class:`Answer` (:mod:`tray.app.phone_answers`)."""

    text: str


@dataclass(frozen=True, slots=True)
class Copy:
    """Copy a session's message (or one of its records', by ``record_id``) to the
    clipboard: the worker reads it from the overview it showed."""

    session_id: str
    record_id: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one answer: ``ok`` when the keys went in; else ``line``, the
    refusal as the notification says it ("api-server: the prompt has changed; not
    answered")."""

    ok: bool
    line: str = ""


@dataclass(frozen=True, slots=True)
class AnswerDone:
    """An answer came back from the session's launcher (or its host): the worker now
    withdraws the prompt's notification, or says why not."""

    answer: Answer
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class FocusDone:
    """A focus came back: ``session`` as the worker had it when it was asked."""

    session: Session
    result: FocusResult


Message = (
    Away
    | Focus
    | MarkSeen
    | Dismiss
    | ClearFinished
    | Pause
    | Resume
    | Snooze
    | Unsnooze
    | Answer
    | PhoneReply
    | Copy
    | AnswerDone
    | FocusDone
)


class ChangeFlag(threading.Event):
    """Set by whatever notices a change (the directory watcher, a host's link), cleared
    by the worker's refresh. Setting it also wakes the worker, unless the worker is
    letting changes gather for a refresh already due (see :meth:`Mailbox.wait`)."""

    def __init__(self, wake: Callable[[], None]) -> None:
        super().__init__()
        self._wake = wake

    def set(self) -> None:
        super().set()
        self._wake()


class Mailbox:
    """Messages from any thread to the worker, kept in the order they were posted, and
    the one place the worker sleeps: until a message, a change it listens for, or its
    next deadline (:class:`tray.core.worker.deadlines.Deadlines`).

    A storm of changes is one flag (:attr:`changed`), not a message each.
    """

    __slots__ = ("_closed", "_listening", "_queue", "_ring", "changed")

    def __init__(self) -> None:
        self._queue: deque[Message] = deque()
        self._ring = threading.Condition(threading.Lock())
        self._listening = True
        self._closed = False
        self.changed = ChangeFlag(self._on_change)

    def post(self, message: Message) -> None:
        """Hand ``message`` to the worker; any thread. Once closed, it is dropped."""
        with self._ring:
            if self._closed:
                return
            self._queue.append(message)
            self._ring.notify_all()

    def take(self) -> list[Message]:
        """The messages posted so far, oldest first; the worker's only. Those posted
        meanwhile wait for the next call, so a storm of them cannot hold up a refresh."""
        with self._ring:
            taken = list(self._queue)
            self._queue.clear()
        return taken

    def wait(self, timeout: float, *, changes: bool) -> None:
        """Sleep until a message is posted, the mailbox closes, ``timeout`` seconds
        pass, or, with ``changes``, :attr:`changed` is set."""
        with self._ring:
            self._listening = changes
            self._ring.wait_for(
                lambda: bool(self._queue) or self._closed or (changes and self.changed.is_set()),
                timeout,
            )

    def close(self) -> None:
        """Wake the worker for good: it ends, and later posts are dropped."""
        with self._ring:
            self._closed = True
            self._ring.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def _on_change(self) -> None:
        # A worker letting changes gather is not woken for each: the refresh it waits
        # for reads them all.
        with self._ring:
            if self._listening:
                self._ring.notify_all()

    def __len__(self) -> int:
        return len(self._queue)
