"""A remote status document into safe local sessions: pure, and hostile input throughout."""

from __future__ import annotations

import contextlib
import copy
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.host_sessions import make_session
from hypothesis import given
from hypothesis import strategies as st

from tray.core.hosts.remote_sessions import (
    MAX_SESSIONS,
    RemoteDocumentError,
    RemoteState,
    clip,
    is_remote,
    mark_stale,
    namespaced_id,
    parse_document,
    split_remote_id,
)
from tray.core.policy.notification_policy import observe_session, ping_for
from tray.core.session.labels import session_label
from tray.core.session.model import Session, status_document
from tray.protocol.records import CAPACITY
from tray.protocol.report import MAX_APP, MAX_ID, MAX_MSG_DECODED, MAX_TITLE_DECODED
from tray.remote.stream import stream_document
from tray.state.store import StateStore

NOW = 1764470012.5


def document(*sessions: Session) -> dict[str, Any]:
    return stream_document(list(sessions))


def test_sessions_keep_their_shape_under_a_namespaced_id() -> None:
    original = make_session("4242-a1b2c3", now=NOW)
    state = parse_document("devbox", document(original), received_at=NOW + 1)
    (session,) = state.sessions
    assert session.id == "host:devbox/4242-a1b2c3"
    assert session.state == "blocked"
    assert session.records == original.records
    assert session.to_public() == {**original.to_public(), "id": "host:devbox/4242-a1b2c3"}
    assert session.name_given is True
    assert state == RemoteState("devbox", (session,), NOW + 1, 0)


def test_the_plain_status_document_is_read_too() -> None:
    # `tray status --json` lacks the stream's two extra fields.
    state = parse_document("devbox", status_document([make_session("1-a")]), NOW)
    assert state.sessions[0].name_given is False
    assert state.sessions[0].last_input_at is None


def test_what_only_means_something_on_the_remote_is_dropped() -> None:
    doc = document(make_session("1-a"))
    doc["sessions"][0]["terminal"] = {"TMUX_PANE": "%1", "WINDOWID": "123"}
    doc["sessions"][0]["pid_start"] = "999"
    (session,) = parse_document("devbox", doc, NOW).sessions
    assert session.terminal == {}
    assert session.pid_start is None


@pytest.mark.parametrize(
    "bad_id",
    ["", "../../etc/passwd", "a/b", ".hidden", "-rf", "a b", "x" * 201, "é", 5, None],
)
def test_a_session_with_an_unsafe_id_is_skipped(bad_id: object) -> None:
    doc = document(make_session("1-a"), make_session("2-b"))
    doc["sessions"][0]["id"] = bad_id
    state = parse_document("devbox", doc, NOW)
    assert [s.id for s in state.sessions] == ["host:devbox/2-b"]
    assert state.skipped == 1


@given(st.text(max_size=80))
def test_no_remote_id_ever_names_a_local_file(remote_id: str) -> None:
    doc = document(make_session("1-a"))
    doc["sessions"][0]["id"] = remote_id
    store = StateStore(Path("/nonexistent/state"))
    for session in parse_document("devbox", doc, NOW).sessions:
        with pytest.raises(ValueError, match="invalid session id"):
            store.path_for(session.id)
        assert split_remote_id(session.id) == ("devbox", remote_id)


def test_duplicates_and_malformed_sessions_are_skipped_not_fatal() -> None:
    doc = document(make_session("1-a"), make_session("1-a"), make_session("3-c"))
    doc["sessions"].append("not a session")
    doc["sessions"].append({"id": "4-d"})
    bad_state = copy.deepcopy(doc["sessions"][2])
    bad_state["id"] = "5-e"
    bad_state["records"][0]["state"] = "pwned"
    doc["sessions"].append(bad_state)
    state = parse_document("devbox", doc, NOW)
    assert [s.id for s in state.sessions] == ["host:devbox/1-a", "host:devbox/3-c"]
    assert state.skipped == 4


def test_text_is_cut_to_the_limits_of_a_local_report() -> None:
    session = make_session("1-a", msg="m" * 10000)
    doc = document(session)
    entry = doc["sessions"][0]
    entry["name"] = "n" * 5000
    entry["cwd"] = "/" + "d" * 10000
    entry["command"] = ["c" * 5000] * 100
    record = entry["records"][0]
    record["app"] = "a" * 100
    record["title"] = "\u00e9" * 1000  # two bytes each: cut on a character boundary
    record["id"] = "i" * 500
    (got,) = parse_document("devbox", doc, NOW).sessions
    (rec,) = got.records
    assert len(rec.msg or "") == MAX_MSG_DECODED
    assert len(rec.app or "") == MAX_APP
    assert rec.title == "\u00e9" * (MAX_TITLE_DECODED // 2)
    assert len(rec.id) == MAX_ID
    assert len(got.name) == 256
    assert len(got.cwd) == 4096
    assert len(got.command) == 64
    assert all(len(word) == 1024 for word in got.command)


def test_counts_are_bounded() -> None:
    many = [make_session(f"{n}-a") for n in range(MAX_SESSIONS + 10)]
    state = parse_document("devbox", document(*many), NOW)
    assert len(state.sessions) == MAX_SESSIONS
    assert state.skipped == 10
    doc = document(make_session("1-a"))
    record = doc["sessions"][0]["records"][0]
    doc["sessions"][0]["records"] = [{**record, "id": f"r{n:04d}"} for n in range(CAPACITY + 50)]
    (session,) = parse_document("devbox", doc, NOW).sessions
    assert len(session.records) == CAPACITY


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        "x",
        {},
        {"version": 2, "sessions": []},
        {"version": True, "sessions": []},
        {"version": 1.0, "sessions": []},
        {"version": 1},
        {"version": 1, "sessions": {}},
    ],
)
def test_a_document_of_another_shape_is_refused_whole(doc: object) -> None:
    with pytest.raises(RemoteDocumentError):
        parse_document("devbox", doc, NOW)


def test_a_bad_host_name_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="host"):
        parse_document("a/b", document(), NOW)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6)
    ),
    max_leaves=30,
)


@given(json_values)
def test_any_json_is_read_or_refused_cleanly(doc: object) -> None:
    with contextlib.suppress(RemoteDocumentError):
        parse_document("devbox", doc, NOW)


@given(st.lists(st.sampled_from(sorted(make_session("1-a").to_public())), max_size=5), json_values)
def test_any_field_set_to_anything_skips_at_most_that_session(
    fields: list[str], value: object
) -> None:
    doc = document(make_session("1-a"), make_session("2-b"))
    for field in fields:
        doc["sessions"][0][field] = value
    state = parse_document("devbox", doc, NOW)
    assert "host:devbox/2-b" in {s.id for s in state.sessions}
    assert len(state.sessions) + state.skipped == 2


def test_labels_name_the_host_in_the_menu_and_in_notifications() -> None:
    unnamed = make_session("1-a", now=NOW)
    doc = document(unnamed)
    doc["sessions"][0]["name_given"] = False
    state = parse_document("devbox", doc, NOW)
    (labelled,) = state.labelled()
    assert session_label(labelled) == "devbox \u00b7 claude-code \u00b7 api"
    ping = ping_for(observe_session(labelled, session_label(labelled), NOW))
    assert ping.title == "devbox \u00b7 claude-code \u00b7 api needs approval"
    assert ping.body == "approve Bash: touch notes.txt"
    assert ping.session_ids == ("host:devbox/1-a",)


def test_stale_sessions_say_when_they_were_last_seen() -> None:
    state = parse_document("devbox", document(make_session("1-a", now=NOW)), NOW)
    moment = time.mktime((2026, 1, 5, 14, 2, 30, 0, 0, -1))
    (stale,) = mark_stale(state, moment)
    assert stale.name == "devbox \u00b7 api (last seen 14:02)"
    assert stale.alive and stale.state == "blocked"
    assert session_label(stale) == stale.name


def test_remote_ids_are_told_from_local_ones() -> None:
    assert namespaced_id("devbox", "1-a") == "host:devbox/1-a"
    assert split_remote_id("host:devbox/1-a") == ("devbox", "1-a")
    assert is_remote("host:devbox/1-a")
    for local in [
        "1-a",
        "host:",
        "host:devbox",
        "host:devbox/",
        "host:/1-a",
        "host:a b/1-a",
        "host:devbox/a/b",
        "host:devbox/-x",
    ]:
        assert split_remote_id(local) is None
        assert not is_remote(local)


@given(st.text(max_size=50), st.integers(0, 60))
def test_clip_keeps_whole_characters_within_the_byte_limit(text: str, limit: int) -> None:
    got = clip(text, limit)
    assert text.startswith(got)
    assert len(got.encode("utf-8", "surrogatepass")) <= max(
        limit, len(text.encode("utf-8", "surrogatepass")) if got == text else limit
    )
    if len(text.encode("utf-8", "surrogatepass")) <= limit:
        assert got == text
