"""A session's state per contract.md, its JSON shape, and reading state files back."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tray.core.session.model import (
    ATTENTION_CONDITIONS,
    ATTENTION_KEPT,
    ATTENTION_SOURCES,
    FOCUS_STATES,
    FORMAT_VERSION,
    Attention,
    Session,
    SessionFormatError,
    session_state,
)
from tray.protocol.records import Record
from tray.protocol.report import KINDS, STATES
from tray.protocol.state import State

SETTINGS = settings(max_examples=150, deadline=None)


def rec(
    state: str,
    record_id: str = "",
    *,
    kind: str | None = None,
    progress: int | None = None,
    app: str | None = None,
    title: str | None = None,
    msg: str | None = None,
    updated_at: float = 1.0,
) -> Record:
    return Record(record_id, State(state), kind, progress, app, title, msg, updated_at)


BASE = Session(
    id="4242-abc123",
    name="claude",
    command=("claude", "--permission-mode", "default"),
    cwd="/home/me/project",
    pid=4242,
    child_pid=4243,
    started_at=1764470000.125,
    updated_at=1764470012.5,
)


def program(*records: Record, **changes: Any) -> Session:
    return dataclasses.replace(BASE, source="program", records=records, **changes)


# --- state --------------------------------------------------------------------------------


def test_launcher_source_follows_the_command() -> None:
    assert BASE.source == "launcher"
    assert BASE.state == "working"
    assert BASE.ended(0, 2.0).state == "done"
    for code in (1, 2, 127, 130, 255):
        assert BASE.ended(code, 2.0).state == "error"
    # Found dead, with no exit status: never still working.
    assert BASE.ended(None, 2.0).state == "error"


def test_program_source_without_records_while_running_is_null() -> None:
    assert program().state is None
    assert program().to_public()["state"] is None


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        (["idle"], "idle"),
        (["done", "idle"], "done"),
        (["working", "done", "idle"], "working"),
        (["error", "working", "done", "idle"], "error"),
        (["blocked", "error", "working", "done", "idle"], "blocked"),
        (["idle", "blocked"], "blocked"),
        (["done", "error"], "error"),
    ],
)
def test_records_give_the_most_urgent_state(states: list[str], expected: str) -> None:
    records = tuple(rec(state, f"r{n}") for n, state in enumerate(states))
    assert program(*records).state == expected
    assert session_state(records, "program", True, None) == expected


def test_root_done_while_a_child_works_is_working() -> None:
    assert program(rec("done"), rec("working", "task")).state == "working"


@pytest.mark.parametrize("dropped", ["working", "blocked", "idle"])
@pytest.mark.parametrize(("code", "launcher"), [(0, "done"), (1, "error"), (None, "error")])
def test_after_exit_the_launcher_applies_when_no_done_or_error_remains(
    dropped: str, code: int | None, launcher: str
) -> None:
    ended = program(rec(dropped), rec(dropped, "child")).ended(code, 9.0)
    assert ended.records == ()
    assert ended.state == launcher
    assert program().ended(code, 9.0).state == launcher


@pytest.mark.parametrize("code", [0, 1, None])
def test_after_exit_a_remaining_done_or_error_record_wins(code: int | None) -> None:
    session = program(rec("working"), rec("done", "a"), rec("blocked", "b"))
    ended = session.ended(code, 9.0)
    assert [r.id for r in ended.records] == ["a"]
    assert ended.state == "done"
    ended = program(rec("idle"), rec("error", "e"), rec("done", "d")).ended(code, 9.0)
    assert ended.state == "error"


def test_a_stopped_program_never_shows_working_even_with_stale_records() -> None:
    # A file written before the exit was recorded still holds working and blocked.
    stale = program(rec("blocked"), rec("working", "w"), alive=False, exit_code=0)
    assert stale.state == "done"
    assert session_state(stale.records, "program", False, 3) == "error"
    assert session_state((rec("blocked"), rec("done", "d")), "program", False, 3) == "done"


def test_ended_keeps_facts_and_stamps_the_time() -> None:
    ended = program(rec("done"), rec("working", "w")).ended(7, 99.5)
    assert (ended.alive, ended.exit_code, ended.updated_at) == (False, 7, 99.5)
    assert ended.records == (rec("done"),)
    assert (ended.id, ended.command, ended.started_at) == (BASE.id, BASE.command, BASE.started_at)


# --- the public shape ------------------------------------------------------------------------


def test_to_public_has_the_contract_shape() -> None:
    record = rec(
        "blocked",
        kind="permission",
        app="claude-code",
        msg="approve Bash: touch notes.txt",
        updated_at=1764470012.5,
    )
    public = program(record).to_public()
    assert public == {
        "id": "4242-abc123",
        "name": "claude",
        "command": ["claude", "--permission-mode", "default"],
        "cwd": "/home/me/project",
        "pid": 4242,
        "child_pid": 4243,
        "started_at": 1764470000.125,
        "updated_at": 1764470012.5,
        "alive": True,
        "exit_code": None,
        "state": "blocked",
        "source": "program",
        "records": [
            {
                "id": "",
                "state": "blocked",
                "kind": "permission",
                "progress": None,
                "app": "claude-code",
                "title": None,
                "msg": "approve Bash: touch notes.txt",
                "updated_at": 1764470012.5,
                "since": None,
                "answers": [],
            }
        ],
        "focus": "unknown",
        "focus_since": None,
        "state_since": None,
        "terminal_progress": None,
        "attention": [],
    }
    assert json.loads(json.dumps(public)) == public


def test_to_file_adds_version_and_private_fields() -> None:
    session = dataclasses.replace(
        BASE, pid_start="12345", last_input_at=3.5, terminal={"tmux": "%1"}
    )
    document = session.to_file()
    assert document["version"] == FORMAT_VERSION
    assert {k: v for k, v in document.items() if k in session.to_public()} == session.to_public()
    assert (document["pid_start"], document["last_input_at"], document["terminal"]) == (
        "12345",
        3.5,
        {"tmux": "%1"},
    )


# --- reading files ----------------------------------------------------------------------------

texts = st.text(max_size=12)
finite = st.floats(allow_nan=False, allow_infinity=False)
small_ints = st.integers(-(2**63), 2**63)


@st.composite
def records(draw: st.DrawFn) -> Record:
    state = draw(st.sampled_from(STATES))
    return Record(
        id=draw(texts),
        state=state,
        kind=draw(st.one_of(st.none(), st.sampled_from(KINDS))),
        progress=draw(st.one_of(st.none(), st.integers(0, 100))),
        app=draw(st.one_of(st.none(), texts)),
        title=draw(st.one_of(st.none(), texts)),
        msg=draw(st.one_of(st.none(), texts)),
        updated_at=draw(finite),
        since=draw(st.one_of(st.none(), finite)),
    )


@st.composite
def attentions(draw: st.DrawFn) -> Attention:
    return Attention(
        seq=draw(small_ints),
        at=draw(finite),
        source=draw(st.sampled_from(ATTENTION_SOURCES)),
        title=draw(st.one_of(st.none(), texts)),
        body=draw(st.one_of(st.none(), texts)),
        condition=draw(st.sampled_from(ATTENTION_CONDITIONS)),
        exit_code=draw(st.one_of(st.none(), st.integers(-255, 255))),
        duration=draw(st.one_of(st.none(), finite)),
    )


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    return Session(
        id=draw(texts),
        name=draw(texts),
        command=tuple(draw(st.lists(texts, max_size=4))),
        cwd=draw(texts),
        pid=draw(small_ints),
        child_pid=draw(st.one_of(st.none(), small_ints)),
        started_at=draw(finite),
        updated_at=draw(finite),
        alive=draw(st.booleans()),
        exit_code=draw(st.one_of(st.none(), st.integers(-255, 255))),
        source=draw(st.sampled_from(["launcher", "program"])),
        records=tuple(draw(st.lists(records(), max_size=4))),
        pid_start=draw(st.one_of(st.none(), texts)),
        last_input_at=draw(st.one_of(st.none(), finite)),
        terminal=draw(st.dictionaries(texts, texts, max_size=3)),
        focus=draw(st.sampled_from(FOCUS_STATES)),
        focus_since=draw(st.one_of(st.none(), finite)),
        state_since=draw(st.one_of(st.none(), finite)),
        attention=tuple(draw(st.lists(attentions(), max_size=ATTENTION_KEPT))),
        terminal_progress=draw(st.one_of(st.none(), st.integers(0, 100))),
        cwd_reported=draw(st.booleans()),
    )


@SETTINGS
@given(sessions())
def test_file_round_trip(session: Session) -> None:
    document = json.loads(json.dumps(session.to_file()))
    assert Session.from_file(document) == session
    assert Session.from_file(document).to_file() == document


def test_round_trip_of_a_whole_session() -> None:
    session = program(
        rec("done", "a", app="x", title="T", msg="m", updated_at=5.0),
        rec("blocked", kind="question", progress=40),
        pid_start="99",
        last_input_at=1.0,
        terminal={"tmux_pane": "%3", "window": "0x1c00007"},
    ).ended(0, 10.0)
    assert Session.from_file(json.loads(json.dumps(session.to_file()))) == session


def test_new_fields_are_checked_when_read() -> None:
    good = valid_document()
    for key, value in (
        ("focus", "away"),
        ("focus_since", "later"),
        ("terminal_progress", 101),
        ("attention", [{"seq": 1, "at": 1.0, "source": "fax"}]),
        ("attention", [{"seq": 1, "at": 1.0, "source": "bell", "condition": "maybe"}]),
        ("attention", [{"seq": "1", "at": 1.0, "source": "bell"}]),
    ):
        with pytest.raises(SessionFormatError):
            Session.from_file({**good, key: value})
    # A file from before these fields existed reads with their defaults.
    for key in ("focus", "focus_since", "state_since", "terminal_progress", "attention"):
        del good[key]
    session = Session.from_file(good)
    assert (session.focus, session.attention, session.terminal_progress) == ("unknown", (), None)


def valid_document() -> dict[str, Any]:
    session = program(rec("done", "a", kind="auth", progress=3), pid_start="1")
    return json.loads(json.dumps(session.to_file()))  # type: ignore[no-any-return]


def test_a_minimal_document_is_read() -> None:
    document = valid_document()
    for optional in ("child_pid", "exit_code", "pid_start", "last_input_at", "terminal"):
        del document[optional]
    for optional in ("kind", "progress", "app", "title", "msg"):
        del document["records"][0][optional]
    session = Session.from_file(document)
    assert session.child_pid is None
    assert session.records[0] == rec("done", "a", updated_at=1.0)


def test_integer_times_are_read_as_floats() -> None:
    document = valid_document()
    document["started_at"] = 17
    session = Session.from_file(document)
    assert session.started_at == 17.0
    assert isinstance(session.started_at, float)


MALFORMED: list[tuple[str, Any]] = [
    ("version", 2),
    ("version", 0),
    ("version", "1"),
    ("version", True),
    ("version", 1.0),
    ("version", None),
    ("version", [1]),
    ("version", 10**400),
    ("id", 5),
    ("id", None),
    ("name", ["n"]),
    ("command", "claude"),
    ("command", ["claude", 1]),
    ("command", None),
    ("cwd", 0),
    ("pid", "4242"),
    ("pid", 4242.0),
    ("pid", True),
    ("pid", None),
    ("child_pid", "1"),
    ("child_pid", False),
    ("started_at", "now"),
    ("started_at", float("nan")),
    ("started_at", float("inf")),
    ("started_at", -float("inf")),
    ("started_at", 10**400),
    ("started_at", True),
    ("updated_at", None),
    ("alive", 1),
    ("alive", "true"),
    ("alive", None),
    ("exit_code", 0.0),
    ("exit_code", "0"),
    ("exit_code", True),
    ("source", "user"),
    ("source", None),
    ("source", "x" * 10_000),
    ("records", {}),
    ("records", None),
    ("records", [None]),
    ("records", ["done"]),
    ("pid_start", 5),
    ("last_input_at", "then"),
    ("last_input_at", float("nan")),
    ("last_input_at", 10**400),
    ("terminal", ["tmux"]),
    ("terminal", {"tmux": 1}),
    ("terminal", "tmux"),
]


def short_id(value: object) -> str:
    return repr(value)[:24]


@pytest.mark.parametrize(("key", "value"), MALFORMED, ids=short_id)
def test_malformed_top_level_field_is_rejected(key: str, value: Any) -> None:
    document = valid_document()
    document[key] = value
    with pytest.raises(SessionFormatError):
        Session.from_file(document)


@pytest.mark.parametrize(
    "key",
    [
        "version",
        "id",
        "name",
        "command",
        "cwd",
        "pid",
        "started_at",
        "updated_at",
        "alive",
        "source",
        "records",
    ],
)
def test_missing_required_field_is_rejected(key: str) -> None:
    document = valid_document()
    del document[key]
    with pytest.raises(SessionFormatError):
        Session.from_file(document)


RECORD_MALFORMED: list[tuple[str, Any]] = [
    ("id", None),
    ("id", 3),
    ("state", "clear"),
    ("state", "DONE"),
    ("state", None),
    ("kind", "dance"),
    ("kind", 1),
    ("progress", 101),
    ("progress", -1),
    ("progress", 4.5),
    ("progress", "5"),
    ("progress", True),
    ("app", 1),
    ("title", ["t"]),
    ("msg", {"m": 1}),
    ("updated_at", None),
    ("updated_at", float("nan")),
    ("updated_at", 10**400),
]


@pytest.mark.parametrize(("key", "value"), RECORD_MALFORMED, ids=short_id)
def test_malformed_record_field_is_rejected(key: str, value: Any) -> None:
    document = valid_document()
    document["records"][0][key] = value
    with pytest.raises(SessionFormatError):
        Session.from_file(document)


@pytest.mark.parametrize("key", ["id", "state", "updated_at"])
def test_record_missing_a_required_field_is_rejected(key: str) -> None:
    document = valid_document()
    del document["records"][0][key]
    with pytest.raises(SessionFormatError):
        Session.from_file(document)


@pytest.mark.parametrize("document", [None, 1, "session", [], [valid_document()], True, 1.5])
def test_a_document_that_is_not_an_object_is_rejected(document: object) -> None:
    with pytest.raises(SessionFormatError):
        Session.from_file(document)


def test_error_messages_are_one_short_line() -> None:
    cases = [*MALFORMED, ("source", "a\nb" * 1000)]
    for key, value in cases:
        document = valid_document()
        document[key] = value
        with pytest.raises(SessionFormatError) as error:
            Session.from_file(document)
        message = str(error.value)
        assert message
        assert "\n" not in message
        assert len(message) < 200, message


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.text(max_size=8),
        st.sampled_from([FORMAT_VERSION, "program", "launcher", "done", "blocked", 10**400]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@SETTINGS
@given(json_values)
def test_arbitrary_json_values_raise_nothing_but_the_format_error(document: object) -> None:
    try:
        session = Session.from_file(document)
    except SessionFormatError:
        return
    assert isinstance(session, Session)


@st.composite
def damaged_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid document with one field replaced, removed or added, at the top or in a record."""
    document = valid_document()
    target: dict[str, Any] = document["records"][0] if draw(st.booleans()) else document
    key = draw(st.one_of(st.sampled_from(sorted(target)), st.text(max_size=6)))
    if draw(st.booleans()) and key in target:
        del target[key]
    else:
        target[key] = draw(json_values)
    return document


@SETTINGS
@given(damaged_documents())
def test_damaged_documents_raise_nothing_but_the_format_error(document: dict[str, Any]) -> None:
    try:
        session = Session.from_file(document)
    except SessionFormatError:
        return
    # Whatever is accepted is a session that writes back as a readable document.
    again = Session.from_file(json.loads(json.dumps(session.to_file())))
    assert again == session
    assert all(math.isfinite(r.updated_at) for r in session.records)
