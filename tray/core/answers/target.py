"""Pure: which prompts tray can answer, named so that a later prompt is never taken
for the one the user saw.

The notification, the menu and the policy all carry an :class:`AnswerTarget`;
:mod:`tray.app.answer_dispatch` carries one out.
"""

from __future__ import annotations

from dataclasses import dataclass

from tray.core.answers.gate import AnswerSettings, answers_for
from tray.protocol.records import Record

# The labels of the notification's actions and the menu's items, as the contract says.
APPROVE_LABEL = "Approve"
DENY_LABEL = "Deny"


@dataclass(frozen=True, slots=True)
class AnswerTarget:
    """A prompt tray can answer now: the session, the record, and the ``since`` that
    names this prompt (a later prompt of the same record has another one)."""

    session_id: str
    record_id: str
    since: float


def target_for(
    session_id: str, running: bool, record: Record | None, settings: AnswerSettings
) -> AnswerTarget | None:
    """The record's prompt in a session (running or not), when the contract's
    ``answers`` of it are not empty."""
    if record is None or record.since is None:
        return None
    if not answers_for(record, running, settings):
        return None
    return AnswerTarget(session_id, record.id, record.since)
