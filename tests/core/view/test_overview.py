"""Sessions plus the tray's memory give the icon, tooltip and menu rows."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.core.session.labels import session_label
from tray.core.session.model import Attention, Session
from tray.core.view.overview import (
    CHILDREN_SHOWN,
    ChildRow,
    Mutes,
    Overview,
    Row,
    StateSince,
    build_overview,
    estimated_since,
)
from tray.core.worker.marks import AppMemory
from tray.protocol.records import Record
from tray.protocol.state import State

NOW = 10_000.0


def record(
    state: str,
    record_id: str = "",
    *,
    kind: str | None = None,
    app: str | None = None,
    msg: str | None = None,
    at: float = 100.0,
    title: str | None = None,
    progress: int | None = None,
    since: float | None = None,
) -> Record:
    return Record(record_id, State(state), kind, progress, app, title, msg, at, since)


def session(
    session_id: str = "s1",
    *records: Record,
    name: str = "claude",
    name_given: bool = False,
    cwd: str = "/home/me/api-server",
    alive: bool = True,
    exit_code: int | None = None,
    started_at: float = 50.0,
    updated_at: float = 100.0,
    terminal: Mapping[str, str] | None = None,
    attention: tuple[Attention, ...] = (),
    last_input_at: float | None = None,
    terminal_progress: int | None = None,
) -> Session:
    return Session(
        id=session_id,
        name=name,
        command=(name,),
        cwd=cwd,
        pid=1000,
        child_pid=1001,
        started_at=started_at,
        updated_at=updated_at,
        alive=alive,
        exit_code=exit_code,
        source="program" if records else "launcher",
        records=records,
        terminal=terminal or {},
        name_given=name_given,
        attention=attention,
        last_input_at=last_input_at,
        terminal_progress=terminal_progress,
    )


def overview(*sessions: Session, memory: AppMemory | None = None) -> Overview:
    return build_overview(sessions, memory or AppMemory(), {}, NOW)


# -- labels ----------------------------------------------------------------------------


def test_label_is_the_given_name() -> None:
    s = session("s1", record("working", app="claude-code"), name="deploy", name_given=True)
    assert session_label(s) == "deploy"


def test_label_is_root_app_and_directory() -> None:
    s = session("s1", record("working", app="claude-code"), record("working", "t1", app="sub"))
    assert session_label(s) == "claude-code · api-server"


def test_label_falls_back_to_any_records_app() -> None:
    s = session("s1", record("working", "a"), record("working", "b", app="codex"))
    assert session_label(s) == "codex · api-server"


def test_label_falls_back_to_the_derived_name() -> None:
    assert session_label(session("s1", name="make")) == "make"
    assert session_label(session("s1", record("done"), name="make")) == "make"


def test_a_shell_that_reported_its_directory_is_known_by_it() -> None:
    reported = dataclasses.replace(
        session("s1", name="fish", cwd="/home/me/web"), cwd_reported=True
    )
    assert session_label(reported) == "fish · web"
    assert session_label(dataclasses.replace(reported, cwd_reported=False)) == "fish"


@pytest.mark.parametrize(
    ("cwd", "label"),
    [
        ("/home/me/api-server/", "pi · api-server"),
        ("/", "pi"),
        ("relative", "pi · relative"),
        ("/srv/evil\u202etxt.exe", "pi · eviltxt.exe"),
    ],
)
def test_label_directory_edge_cases(cwd: str, label: str) -> None:
    assert session_label(session("s1", record("idle", app="pi"), cwd=cwd)) == label


def test_given_name_is_cleaned() -> None:
    s = session("s1", name="my\u202ename\n", name_given=True)
    assert session_label(s) == "myname"


# -- icon and tooltip --------------------------------------------------------------------


def test_nothing_is_calm() -> None:
    result = overview()
    assert (result.icon_state, result.blocked_count, result.tooltip) == (
        "calm",
        0,
        "Nothing needs you",
    )
    assert result.rows == ()


def test_idle_and_seen_sessions_are_calm() -> None:
    done = session("d", record("done", at=100.0))
    idle = session("i", record("idle"))
    result = overview(done, idle, memory=AppMemory(seen={"d": 100.0}))
    assert result.icon_state == "calm"
    assert result.tooltip == "Nothing needs you"


@pytest.mark.parametrize(
    ("states", "icon"),
    [
        (["working"], "working"),
        (["done"], "done"),
        (["error"], "error"),
        (["blocked"], "blocked"),
        (["done", "working"], "working"),
        (["working", "error"], "error"),
        (["error", "blocked", "working", "done"], "blocked"),
        (["done", "error"], "error"),
        (["idle", "done"], "done"),
    ],
)
def test_icon_priority(states: list[str], icon: str) -> None:
    sessions = [session(f"s{i}", record(state)) for i, state in enumerate(states)]
    assert overview(*sessions).icon_state == icon


def test_seen_error_gives_way_to_working() -> None:
    failed = session("f", record("error", at=100.0))
    busy = session("w", record("working"))
    assert overview(failed, busy).icon_state == State.ERROR
    assert overview(failed, busy, memory=AppMemory(seen={"f": 100.0})).icon_state == State.WORKING


def test_tooltip_counts_everything_that_matters() -> None:
    sessions = [
        session("b1", record("blocked", kind="permission")),
        session("b2", record("blocked")),
        session("w", record("working")),
        session("e", record("error")),
        session("d1", record("done")),
        session("d2", record("done")),
        session("i", record("idle")),
    ]
    result = overview(*sessions)
    assert result.tooltip == "2 need you · 1 failed · 1 working · 2 finished"
    assert result.blocked_count == 2


@pytest.mark.parametrize(
    ("states", "tooltip"),
    [
        (["blocked"], "1 needs you"),
        (["blocked", "working"], "1 needs you · 1 working"),
        (["error"], "1 failed"),
        (["done"], "1 finished"),
        (["working", "working"], "2 working"),
    ],
)
def test_tooltip_wording(states: list[str], tooltip: str) -> None:
    sessions = [session(f"s{i}", record(state)) for i, state in enumerate(states)]
    assert overview(*sessions).tooltip == tooltip


def test_tooltip_says_when_notifications_are_paused() -> None:
    paused = build_overview((), AppMemory(), {}, NOW, mutes=Mutes(paused_until=NOW + 60))
    assert paused.tooltip == "Nothing needs you · notifications paused"
    resumed = build_overview((), AppMemory(), {}, NOW, mutes=Mutes(paused_until=NOW - 1))
    assert resumed.tooltip == "Nothing needs you"


def test_dismissed_sessions_are_ignored_entirely() -> None:
    blocked = session("b", record("blocked"))
    done = session("d", record("done"))
    result = overview(blocked, done, memory=AppMemory(dismissed=frozenset({"b"})))
    assert [row.session_id for row in result.rows] == ["d"]
    assert result.icon_state == State.DONE
    assert result.blocked_count == 0
    assert result.tooltip == "1 finished"


# -- rows ------------------------------------------------------------------------------


def test_rows_most_urgent_first() -> None:
    seen = AppMemory(seen={"old-error": 500.0, "old-done": 500.0})
    sessions = [
        session("idle", record("idle")),
        session("old-done", record("done", at=200.0)),
        session("working", record("working")),
        session("done", record("done")),
        session("old-error", record("error", at=200.0)),
        session("none", record("working", "x"), alive=True),
        session("blocked", record("blocked")),
        session("error", record("error")),
    ]
    ids = [row.session_id for row in overview(*sessions, memory=seen).rows]
    assert ids == [
        "blocked",
        "error",
        "none",
        "working",
        "done",
        "old-done",
        "old-error",
        "idle",
    ]


def test_blocked_rows_longest_wait_first_and_others_freshest_first() -> None:
    sessions = [
        session("b-new", record("blocked", at=300.0)),
        session("b-old", record("blocked", at=100.0)),
        session("d-old", record("done", at=100.0)),
        session("d-new", record("done", at=300.0)),
    ]
    ids = [row.session_id for row in overview(*sessions).rows]
    assert ids == ["b-old", "b-new", "d-new", "d-old"]


def test_row_fields() -> None:
    s = session(
        "s1",
        record("working", app="claude-code", msg="thinking", at=90.0),
        record("blocked", "task/1", kind="permission", msg="approve Bash:\ntouch x", at=95.0),
        exit_code=None,
        terminal={"TMUX_PANE": "%3"},
    )
    (row,) = overview(s).rows
    assert row.label == "claude-code · api-server"
    assert row.state == "blocked"
    assert row.kind == "permission"
    assert row.msg == "approve Bash: touch x"
    assert row.since == 95.0
    assert row.alive is True
    assert row.exit_code is None
    assert row.unseen is False
    assert row.focusable is True


def test_row_msg_is_the_most_urgent_records() -> None:
    s = session(
        "s1",
        record("working", msg="root works", at=10.0),
        record("error", "a", msg="a failed", at=5.0),
        record("done", "b", msg="b done", at=20.0),
    )
    (row,) = overview(s).rows
    assert (row.state, row.msg) == ("error", "a failed")


def test_row_msg_absent_or_invisible_is_none() -> None:
    (row,) = overview(session("s1", record("blocked", msg="\u200b\u202e"))).rows
    assert row.msg is None
    (row,) = overview(session("s2")).rows
    assert (row.state, row.msg, row.kind) == ("working", None, None)


@pytest.mark.parametrize(
    ("terminal", "focusable"),
    [
        ({}, False),
        ({"TMUX_PANE": "%1"}, True),
        ({"WINDOWID": "4194311"}, True),
        ({"TMUX_PANE": ""}, False),
        ({"TERM": "xterm"}, False),
    ],
)
def test_focusable(terminal: dict[str, str], focusable: bool) -> None:
    (row,) = overview(session("s1", terminal=terminal)).rows
    assert row.focusable is focusable


@pytest.mark.parametrize(
    ("state", "since", "seen", "unseen"),
    [
        ("done", 200.0, None, True),
        ("done", 200.0, 199.0, True),
        ("done", 200.0, 200.0, False),
        ("done", 200.0, 300.0, False),
        ("error", 200.0, 150.0, True),
        ("error", 200.0, 250.0, False),
        ("blocked", 200.0, None, False),
        ("working", 200.0, None, False),
    ],
)
def test_unseen(state: str, since: float, seen: float | None, unseen: bool) -> None:
    memory = AppMemory(seen={} if seen is None else {"s1": seen})
    s = session("s1", record(state, at=50.0))
    (row,) = build_overview([s], memory, {"s1": since}, NOW).rows
    assert row.unseen is unseen
    assert row.since == since


def test_launcher_sessions_have_rows() -> None:
    running = session("run", started_at=40.0, updated_at=70.0)
    ok = session("ok", alive=False, exit_code=0, updated_at=80.0)
    failed = session("bad", alive=False, exit_code=2, updated_at=90.0)
    rows = {row.session_id: row for row in overview(running, ok, failed).rows}
    assert (rows["run"].state, rows["run"].since) == ("working", 40.0)
    assert (rows["ok"].state, rows["ok"].since, rows["ok"].unseen) == ("done", 80.0, True)
    assert (rows["bad"].state, rows["bad"].exit_code, rows["bad"].alive) == ("error", 2, False)


# -- when a state began ---------------------------------------------------------------


def test_estimated_since() -> None:
    assert estimated_since(session("s", record("blocked", at=70.0))) == 70.0
    two = session("s", record("blocked", at=70.0), record("blocked", "x", at=80.0))
    assert estimated_since(two) == 80.0
    assert estimated_since(session("s", started_at=5.0, updated_at=9.0)) == 5.0
    assert estimated_since(session("s", alive=False, exit_code=1, updated_at=9.0)) == 9.0


def test_state_since_first_sight_uses_the_sessions_own_times() -> None:
    tracker = StateSince()
    since = tracker.update([session("s", record("done", at=70.0))], now=1000.0)
    assert since == {"s": 70.0}


def test_state_since_never_in_the_future() -> None:
    tracker = StateSince()
    since = tracker.update([session("s", record("done", at=2000.0))], now=1000.0)
    assert since == {"s": 1000.0}


def test_state_since_keeps_the_time_while_the_state_holds() -> None:
    tracker = StateSince()
    tracker.update([session("s", record("working", msg="a", at=70.0))], now=100.0)
    since = tracker.update(
        [session("s", record("working", msg="b", at=150.0), updated_at=150.0)], now=200.0
    )
    assert since == {"s": 70.0}


def test_state_since_a_change_lands_between_two_snapshots() -> None:
    tracker = StateSince()
    tracker.update([session("s", record("working", at=70.0))], now=100.0)
    # The file says when the change was written.
    since = tracker.update([session("s", record("blocked", at=150.0), updated_at=150.0)], now=200.0)
    assert since == {"s": 150.0}
    # A stale updated_at cannot put the change before the previous snapshot.
    since = tracker.update([session("s", record("working", at=10.0), updated_at=10.0)], now=300.0)
    assert since == {"s": 200.0}
    # Nor after this one.
    since = tracker.update([session("s", record("done", at=999.0), updated_at=999.0)], now=400.0)
    assert since == {"s": 400.0}


def test_state_since_forgets_sessions_that_are_gone() -> None:
    tracker = StateSince()
    tracker.update([session("a"), session("b")], now=100.0)
    assert set(tracker.update([session("b")], now=200.0)) == {"b"}
    # Coming back is a first sight again.
    assert tracker.update([session("a", started_at=5.0)], now=300.0) == {"a": 5.0}


def test_state_since_feeds_the_unseen_rule() -> None:
    tracker = StateSince()
    s = session("s", record("working", at=50.0))
    since = tracker.update([s], now=100.0)
    memory = AppMemory(seen={"s": 120.0})
    done = session("s", record("done", at=150.0), updated_at=150.0)
    since = tracker.update([done], now=160.0)
    (row,) = build_overview([done], memory, since, 160.0).rows
    assert row.unseen is True
    (row,) = build_overview([done], AppMemory(seen={"s": 160.0}), since, 160.0).rows
    assert row.unseen is False


STATES = st.sampled_from(["idle", "working", "done", "blocked", "error"])


@given(
    st.lists(st.tuples(STATES, st.booleans(), st.booleans()), max_size=12),
)
def test_overview_properties(specs: list[tuple[str, bool, bool]]) -> None:
    sessions = [session(f"s{i}", record(state)) for i, (state, _, _) in enumerate(specs)]
    dismissed = frozenset(f"s{i}" for i, (_, gone, _) in enumerate(specs) if gone)
    seen = {f"s{i}": 1e9 for i, (_, _, looked) in enumerate(specs) if looked}
    result = build_overview(sessions, AppMemory(seen=seen, dismissed=dismissed), {}, NOW)
    shown = [(f"s{i}", spec) for i, spec in enumerate(specs) if f"s{i}" not in dismissed]
    assert {row.session_id for row in result.rows} == {sid for sid, _ in shown}
    blocked = sum(1 for _, (state, _, _) in shown if state == "blocked")
    assert result.blocked_count == blocked
    unseen_error = any(state == "error" and not looked for _, (state, _, looked) in shown)
    working = any(state == "working" for _, (state, _, _) in shown)
    unseen_done = any(state == "done" and not looked for _, (state, _, looked) in shown)
    expected = (
        "blocked"
        if blocked
        else "error"
        if unseen_error
        else "working"
        if working
        else "done"
        if unseen_done
        else "calm"
    )
    assert result.icon_state == expected
    assert (result.tooltip == "Nothing needs you") == (expected == "calm")
    leading = [row.state == "blocked" for row in result.rows]
    assert leading == sorted(leading, reverse=True)


# -- sub-agents and tasks ------------------------------------------------------------------


def only_row(*sessions: Session, memory: AppMemory | None = None, now: float = NOW) -> Row:
    (row,) = build_overview(sessions, memory or AppMemory(), {}, now).rows
    return row


def test_children_are_the_records_below_the_root_most_urgent_first() -> None:
    s = session(
        "s1",
        record("working", msg="root"),
        record("done", "a", title="lint", msg="clean", at=300.0),
        record("working", "b", at=200.0, since=150.0, progress=40),
        record("blocked", "c", kind="permission", msg="approve rm", at=400.0),
        record("blocked", "d", at=100.0),
        record("done", "e", at=500.0),
        record("idle", "f/g", title="  \u202e", at=600.0),
    )
    row = only_row(s)
    assert row.state == "blocked"
    assert [child.record_id for child in row.children] == ["d", "c", "b", "e", "a", "f/g"]
    assert row.more_children == 0
    children = {child.record_id: child for child in row.children}
    assert children["a"] == ChildRow("a", "lint", State.DONE, None, None, "clean", 300.0)
    assert children["b"] == ChildRow("b", "b", State.WORKING, None, 40, None, 150.0)
    assert children["c"].kind == "permission"
    assert children["c"].msg == "approve rm"
    # A title with nothing visible in it names the record by its id.
    assert children["f/g"].label == "f/g"


def test_the_session_line_keeps_the_most_urgent_state_and_its_message() -> None:
    s = session(
        "s1",
        record("working", msg="root works", at=90.0),
        record("blocked", "task", kind="question", msg="which branch?", at=95.0),
    )
    row = only_row(s)
    assert (row.state, row.kind, row.msg) == ("blocked", "question", "which branch?")
    assert row.message() == "which branch?"
    assert row.message("task") == "which branch?"
    assert row.message("missing") is None


def test_children_are_bounded_with_a_count_of_the_rest() -> None:
    records = [record("working", f"t{i:02}", at=100.0 + i) for i in range(CHILDREN_SHOWN + 3)]
    records.append(record("error", "zz", msg="boom"))
    row = only_row(session("s1", record("working"), *records))
    assert len(row.children) == CHILDREN_SHOWN
    assert row.more_children == 4
    # The failure comes first, then the freshest working ones.
    assert [c.record_id for c in row.children[:3]] == ["zz", "t10", "t09"]
    assert row.message("zz") == "boom"


def test_a_session_without_children_has_none() -> None:
    assert only_row(session("s1", record("working"))).children == ()
    assert only_row(session("s1")).children == ()


def test_an_ended_session_keeps_only_children_that_outlive_it() -> None:
    s = session(
        "s1",
        record("done"),
        record("working", "a"),
        record("error", "b", msg="crashed"),
        record("blocked", "c"),
        alive=False,
        exit_code=0,
    )
    row = only_row(s)
    assert [c.record_id for c in row.children] == ["b"]
    assert row.state == "error"


# -- a bell needs you ----------------------------------------------------------------------


def bell(at: float, seq: int = 1, source: str = "bell") -> Attention:
    return Attention(seq=seq, at=at, source=source)


@pytest.mark.parametrize(
    ("attention", "typed", "seen", "expected"),
    [
        ((), None, None, False),
        ((bell(500.0),), None, None, True),
        ((bell(500.0),), 400.0, None, True),
        ((bell(500.0),), 500.0, None, False),
        ((bell(500.0),), 600.0, None, False),
        ((bell(500.0),), None, 500.0, False),
        ((bell(500.0),), 100.0, 499.0, True),
        # The newest bell counts, whatever order the file lists them in.
        ((bell(700.0, 2), bell(300.0, 1)), 500.0, None, True),
        ((bell(300.0, 1), bell(400.0, 2)), 500.0, None, False),
        # Terminal notifications and finished commands tell news; they ask for no one.
        ((bell(500.0, 1, "osc9"),), None, None, False),
        ((bell(500.0, 1, "command"),), None, None, False),
        ((bell(500.0, 1, "osc777"), bell(200.0, 2)), 300.0, None, False),
    ],
)
def test_needs_you_after_a_bell(
    attention: tuple[Attention, ...], typed: float | None, seen: float | None, expected: bool
) -> None:
    s = session("s1", attention=attention, last_input_at=typed)
    memory = AppMemory(seen={} if seen is None else {"s1": seen})
    assert only_row(s, memory=memory).needs_you is expected


def test_a_bell_from_a_program_that_is_gone_needs_no_one() -> None:
    s = session("s1", alive=False, exit_code=0, attention=(bell(500.0),))
    assert only_row(s).needs_you is False


def test_a_session_that_rang_comes_right_after_blocked_ones() -> None:
    sessions = [
        session("working", record("working")),
        session("error", record("error")),
        session("rang", record("working"), attention=(bell(500.0),)),
        session("blocked", record("blocked")),
    ]
    ids = [row.session_id for row in overview(*sessions).rows]
    assert ids == ["blocked", "rang", "error", "working"]
    # The icon and the tooltip still speak of blocked sessions only.
    assert overview(sessions[2]).icon_state == State.WORKING


# -- progress ------------------------------------------------------------------------------


def test_a_launcher_session_shows_the_terminals_progress() -> None:
    assert only_row(session("s1", terminal_progress=42)).progress == 42
    assert only_row(session("s1")).progress is None
    ended = session("s1", alive=False, exit_code=0, terminal_progress=42)
    assert only_row(ended).progress is None


def test_a_program_session_shows_its_lead_records_progress() -> None:
    s = session("s1", record("working", progress=70), terminal_progress=10)
    assert only_row(s).progress == 70
    s = session("s1", record("working"), terminal_progress=10)
    assert only_row(s).progress is None


# -- snooze --------------------------------------------------------------------------------


def test_a_snoozed_session_says_until_when() -> None:
    s = session("s1", record("blocked"))
    mutes = Mutes(snoozed={"s1": NOW + 600, "other": NOW + 600})
    (row,) = build_overview([s], AppMemory(), {}, NOW, mutes=mutes).rows
    assert row.snoozed_until == NOW + 600
    (row,) = build_overview([s], AppMemory(), {}, NOW, mutes=Mutes(snoozed={"s1": NOW})).rows
    assert row.snoozed_until is None
    assert only_row(s).snoozed_until is None


def test_overview_finds_a_row_by_session() -> None:
    result = overview(session("a", record("working")), session("b", record("done")))
    found = result.row("b")
    assert found is not None
    assert found.state == "done"
    assert result.row("c") is None
