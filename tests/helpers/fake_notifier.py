"""The notifier's stand-in for tests of the app's worker and answers: no bus, no dunst.

It writes down each notification (with the moment it was sent, for the tests that time
a ping) and each withdrawal; ``on_answer`` is set by the app as on the real notifier.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tray.core.answers.target import AnswerTarget
from tray.outlets.notifier import Notifier

_SEND = inspect.signature(Notifier.send)


@dataclass(frozen=True)
class Sent:
    """One notification as Notifier.send was given it, and when."""

    moment: float
    title: str
    body: str
    urgency: str
    key: str
    snooze: Sequence[str]
    answer: AnswerTarget | None
    icon: str


class FakeNotifier:
    """Writes down notifications and withdrawals. Takes the callbacks the app builds a
    notifier with, and drops them: the tests call ``on_answer`` themselves."""

    def __init__(self, *_callbacks: Callable[..., None]) -> None:
        self.sent: list[Sent] = []
        self.withdrawn: list[AnswerTarget] = []
        self.on_answer: Any = None

    def send(self, *args: Any, **named: Any) -> None:
        """As Notifier.send, whose own signature binds the arguments: a call the real
        notifier would refuse fails here too, and the fake never drifts from it."""
        bound = _SEND.bind(self, *args, **named)
        bound.apply_defaults()
        given = bound.arguments
        self.sent.append(
            Sent(
                time.monotonic(),
                given["title"],
                given["body"],
                given["urgency"],
                given["key"],
                tuple(given["snooze"]),
                given["answer"],
                given["icon"],
            )
        )

    def withdraw(self, target: AnswerTarget) -> None:
        self.withdrawn.append(target)

    def close(self) -> None:
        pass

    @property
    def titles(self) -> list[str]:
        return [sent.title for sent in self.sent]

    @property
    def texts(self) -> list[tuple[str, str, str]]:
        """Each notification's title, body and key."""
        return [(sent.title, sent.body, sent.key) for sent in self.sent]

    @property
    def answers(self) -> list[AnswerTarget | None]:
        return [sent.answer for sent in self.sent]

    @property
    def icons(self) -> list[str]:
        return [sent.icon for sent in self.sent]

    def sent_at(self, key: str) -> float | None:
        """When the first notification for ``key`` was sent, if one was."""
        return next((sent.moment for sent in self.sent if sent.key == key), None)


@dataclass
class FakePolicy:
    """The policy's side of an answer: which prompts were told answered."""

    told: list[tuple[str, str, float]] = field(default_factory=list)

    def answered(self, session_id: str, record_id: str, since: float) -> None:
        self.told.append((session_id, record_id, since))
