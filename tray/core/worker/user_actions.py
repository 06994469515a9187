"""Pure: what the user asks of the app's worker, from the menu or a notification.

Each is a small value, posted as it is (:meth:`tray.app.messages.Mailbox.post`) and
carried out by the worker in order. They sit this low so that the menu
(:mod:`tray.desktop.tray_menu`), below the app, can make them itself: the app then has no
method a menu item. Times are taken when the user acts, not when the worker gets to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tray.core.answers.target import AnswerTarget

# How long Pause and Snooze last: the menu's and the notification's words say an hour.
PAUSE_SECONDS = 3600.0


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
class Copy:
    """Copy a session's message (or one of its records', by ``record_id``) to the
    clipboard: the worker reads it from the overview it showed."""

    session_id: str
    record_id: str | None = None


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


def answer_to(target: AnswerTarget, answer: str) -> Answer:
    """``answer`` (approve or deny) to the prompt ``target`` names."""
    return Answer(target.session_id, target.record_id, target.since, answer)


def pause_hour(now: float) -> Pause:
    return Pause(now + PAUSE_SECONDS)


def snooze_hour(session_ids: tuple[str, ...], now: float) -> Snooze:
    """A menu item's Snooze (one session) or a notification's (each it speaks for)."""
    return Snooze(session_ids, now + PAUSE_SECONDS)


UserAction = (
    Focus | MarkSeen | Dismiss | ClearFinished | Pause | Resume | Snooze | Unsnooze | Copy | Answer
)
