"""What reaches the app's worker thread, as messages.

Menu items run on pystray's thread and notification buttons on the notifier's; the
policy, the overview and the app's memory belong to the worker alone. So every user
action is a small value (:mod:`tray.core.worker.user_actions`, low enough for the menu to
make them), posted to a :class:`Mailbox` and handled by the worker in order
(:meth:`tray.app.main.TrayApp.handle`); so are the app's own messages here. A new action
is a new class there and a new case in ``handle``. What may wait on another program or
another machine (focus, an answer) runs off the worker (:mod:`tray.app.background_calls`)
and comes back as one of these too (:class:`FocusDone`, :class:`AnswerDone`), for the
worker to apply.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from tray.core.away.tracker import AwayState
from tray.core.hosts.remote_sessions import HostStatus, RemoteState
from tray.core.session.model import Session
from tray.core.view.overview import NO_MUTES, Mutes
from tray.core.worker.refresh import HostUpdates
from tray.core.worker.user_actions import Answer, UserAction
from tray.desktop.focus import FocusResult


@dataclass(frozen=True, slots=True)
class Away:
    """The user left the desk or came back (tray.desktop.idle, on its own thread)."""

    state: AwayState


@dataclass(frozen=True, slots=True)
class PhoneReply:
    """A reply on the phone's reply topic: untrusted text, checked by the worker before
    it becomes an :class:`Answer` (:mod:`tray.app.phone_answers`)."""

    text: str


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


@dataclass(frozen=True, slots=True)
class TrayAreaFound:
    """The desktop had no tray area at start-up, and now has one (the bus loop's watch):
    the worker shows the icon again, for the backend to dock it there."""


# The user's actions, and what the app's own parts hand the worker.
Message = UserAction | Away | PhoneReply | AnswerDone | FocusDone | TrayAreaFound


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


class MenuSide:
    """The app as the menu reaches it from pystray's thread
    (:class:`tray.desktop.tray_menu.MenuActions`): each item posts one user action,
    stamped by :meth:`now`; Quit stops the icon's loop.

    :attr:`mutes` is what the worker last made of the pause and the snoozes: the worker
    replaces it whole, so the menu may read it from its own thread.
    """

    def __init__(
        self,
        post: Callable[[Message], None],
        clock: Callable[[], float],
        quit_app: Callable[[], None],
    ) -> None:
        self.post = post
        self.now = clock
        self.quit = quit_app
        self.mutes: Mutes = NO_MUTES

    @property
    def paused(self) -> bool:
        return self.mutes.paused(self.now())


class HostInbox:
    """What the hosts' links hand the worker, each from its own thread: a host's latest
    sessions and its link's health, kept under a lock until a refresh takes them. Each
    one sets the change flag, which wakes the worker."""

    def __init__(self, changed: threading.Event, log: logging.Logger) -> None:
        self._changed = changed
        self._log = log
        self._lock = threading.Lock()
        self._states: dict[str, RemoteState] = {}
        self._statuses: dict[str, HostStatus] = {}
        self._first: list[RemoteState] = []

    def on_state(self, host: str, state: RemoteState) -> None:
        with self._lock:
            self._states[host] = state
            if state.initial:
                self._first.append(state)
        self._changed.set()

    def on_status(self, host: str, status: HostStatus) -> None:
        with self._lock:
            self._statuses[host] = status
        # The link itself warns once when a host is lost; this notes when it is back.
        if status.state == "connected":
            self._log.info("%s: connected", host)
        self._changed.set()

    def take(self) -> HostUpdates:
        """Every host's latest, and the first documents heard since the last take."""
        with self._lock:
            news = HostUpdates(dict(self._states), dict(self._statuses), self._first)
            self._first = []
        return news
