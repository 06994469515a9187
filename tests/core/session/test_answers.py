"""Each record's ``answers`` in the contract's shape, and the launcher's last answer."""

from __future__ import annotations

import dataclasses
import json

import pytest
from helpers.answer_keys import SHIPPED_SETTINGS

from tray.core.answers.gate import AnswerSettings
from tray.core.session.model import Answered, Session, SessionFormatError, status_document
from tray.protocol.records import Record
from tray.protocol.state import Answer, State

BASE = Session(
    id="4242-abc123",
    name="claude",
    command=("claude",),
    cwd="/home/me/api-server",
    pid=4242,
    child_pid=4243,
    started_at=1.0,
    updated_at=2.0,
    source="program",
)


def blocked(app: str | None = "claude-code", kind: str | None = "permission") -> Record:
    return Record("", State.BLOCKED, kind, None, app, None, "approve Bash: x", 5.0, 5.0)


def answers(session: Session, settings: AnswerSettings | None = None) -> list[object]:
    public = session.to_public(SHIPPED_SETTINGS if settings is None else settings)
    return [r["answers"] for r in public["records"]]


def test_a_blocked_permission_of_an_app_with_keys_offers_both() -> None:
    session = dataclasses.replace(BASE, records=(blocked(),))
    assert answers(session) == [["approve", "deny"]]
    assert session.to_public()["records"][0]["since"] == 5.0
    assert session.to_public()["records"][0]["answers"] == []  # no keys known: none offered


def test_nothing_is_offered_otherwise() -> None:
    child = Record("task", State.BLOCKED, "permission", None, "codex", None, None, 6.0, 6.0)
    working = Record("", State.WORKING, None, None, "codex", None, None, 6.0, 6.0)
    assert answers(dataclasses.replace(BASE, records=(working, child))) == [[], ["approve", "deny"]]
    assert answers(dataclasses.replace(BASE, records=(blocked(app="pi"),))) == [[]]
    assert answers(dataclasses.replace(BASE, records=(blocked(kind="question"),))) == [[]]
    assert answers(dataclasses.replace(BASE, records=(blocked(),), exit_code=0)) == [[]]
    assert answers(dataclasses.replace(BASE, records=(blocked(),), alive=False)) == [[]]
    assert answers(
        dataclasses.replace(BASE, records=(blocked(),)), AnswerSettings(enabled=False)
    ) == [[]]


def test_the_status_document_uses_the_readers_settings() -> None:
    session = dataclasses.replace(BASE, records=(blocked(),))
    document = status_document([session], AnswerSettings(enabled=False))
    assert document["sessions"][0]["records"][0]["answers"] == []
    shipped = status_document([session], SHIPPED_SETTINGS)
    assert shipped["sessions"][0]["records"][0]["answers"] == ["approve", "deny"]


def test_the_last_answer_goes_through_the_file() -> None:
    session = dataclasses.replace(BASE, answered=Answered("", 5.0, Answer.DENY, 7.5))
    document = json.loads(json.dumps(session.to_file()))
    assert document["answered"] == {"record": "", "since": 5.0, "answer": "deny", "at": 7.5}
    assert Session.from_file(document).answered == Answered("", 5.0, Answer.DENY, 7.5)
    assert "answered" not in session.to_public()
    plain = BASE.to_file()
    assert plain["answered"] is None
    del plain["answered"]
    assert Session.from_file(plain).answered is None


@pytest.mark.parametrize(
    "answered",
    [
        "deny",
        {"record": "", "since": 5.0, "answer": "always", "at": 1.0},
        {"record": 1, "since": 5.0, "answer": "deny", "at": 1.0},
        {"record": "", "since": "x", "answer": "deny", "at": 1.0},
        {"record": "", "since": 5.0, "answer": "deny"},
    ],
)
def test_a_malformed_last_answer_is_a_format_error(answered: object) -> None:
    document = BASE.to_file() | {"answered": answered}
    with pytest.raises(SessionFormatError):
        Session.from_file(document)
