"""The refresh gate, the menu pacer and the worker's refresh, driven by an explicit clock."""

from __future__ import annotations

import importlib
import itertools
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.core.config.settings import PolicySettings
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.session.model import Session
from tray.core.view.overview import ChildRow, Mutes, Overview, Row
from tray.core.worker.marks import AppMemory
from tray.core.worker.refresh import (
    MENU_TEXT_PERIOD,
    REFRESH_INTERVAL,
    HostUpdates,
    MenuOutlineItem,
    MenuPacer,
    Refresh,
    RefreshGate,
    age_marks,
    menu_text,
    shown_key,
)
from tray.protocol.records import Record
from tray.protocol.state import State

INTERVAL = 0.25
NOW = 10_000.0


def test_the_interval_is_within_what_a_ping_may_wait() -> None:
    assert 0.1 <= REFRESH_INTERVAL <= 0.25
    assert MENU_TEXT_PERIOD >= REFRESH_INTERVAL


# --- RefreshGate ------------------------------------------------------------------------


def test_a_change_after_a_quiet_spell_refreshes_at_once() -> None:
    gate = RefreshGate(INTERVAL)
    assert not gate.begin(100.0)  # nothing asked for
    gate.request()
    assert gate.ready_at(100.0) <= 100.0  # type: ignore[operator]
    assert gate.begin(100.0)
    assert not gate.pending
    gate.request()
    assert gate.begin(100.0 + INTERVAL)  # a whole interval later is a quiet spell too


def test_changes_within_the_interval_wait_for_its_end_and_share_one_refresh() -> None:
    gate = RefreshGate(INTERVAL)
    gate.request()
    assert gate.begin(10.0)
    for moment in (10.01, 10.1, 10.2):
        gate.request()
        assert not gate.begin(moment)
        assert gate.ready_at(moment) == 10.0 + INTERVAL
    assert gate.begin(10.0 + INTERVAL)
    assert not gate.pending
    assert not gate.begin(10.0 + INTERVAL)  # all three were served by that one


def test_without_a_request_there_is_nothing_to_wait_for() -> None:
    gate = RefreshGate(INTERVAL)
    assert gate.ready_at(5.0) is None
    gate.request()
    gate.begin(5.0)
    assert gate.ready_at(5.1) is None
    assert gate.open_at(5.1) == 5.0 + INTERVAL


def test_a_clock_set_back_opens_the_gate() -> None:
    gate = RefreshGate(INTERVAL)
    gate.request()
    assert gate.begin(1_000_000.0)
    gate.request()
    assert gate.open_at(10.0) == 10.0
    assert gate.begin(10.0)


def test_a_negative_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        RefreshGate(-1.0)


def run_storm(gate: RefreshGate, changes: list[float]) -> list[float]:
    """Feed change times to the gate as the worker does; returns when it refreshed.

    The worker wakes at each change and whenever the gate said a refresh is ready.
    """
    refreshes: list[float] = []
    pending_changes = sorted(changes)
    now = 0.0
    while pending_changes or gate.pending:
        ready = gate.ready_at(now)
        next_change = pending_changes[0] if pending_changes else math.inf
        now = min(next_change, ready if ready is not None else math.inf)
        while pending_changes and pending_changes[0] <= now:
            pending_changes.pop(0)
            gate.request()
        if gate.begin(now):
            refreshes.append(now)
    return refreshes


def test_two_hundred_changes_a_second_give_at_most_one_refresh_per_interval() -> None:
    # Twenty launchers writing ten times a second each, for ten seconds.
    changes = [round(tick * 0.005, 6) for tick in range(2000)]
    refreshes = run_storm(RefreshGate(INTERVAL), changes)
    assert len(refreshes) <= 10 / INTERVAL + 1
    assert len(refreshes) >= 10 / INTERVAL - 1  # and it does keep refreshing
    assert refreshes[0] == 0.0  # the first one at once
    assert refreshes[-1] >= changes[-1]  # the last change is seen


@given(st.lists(st.floats(min_value=0, max_value=20, allow_nan=False), max_size=300))
def test_refreshes_are_spaced_and_every_change_is_seen_within_an_interval(
    changes: list[float],
) -> None:
    refreshes = run_storm(RefreshGate(INTERVAL), changes)
    for earlier, later in itertools.pairwise(refreshes):
        assert later - earlier >= INTERVAL - 1e-9
    for change in changes:
        served = [moment for moment in refreshes if moment >= change]
        assert served, change
        assert served[0] - change <= INTERVAL + 1e-9


# --- MenuPacer --------------------------------------------------------------------------


def test_the_first_menu_and_a_new_outline_go_at_once() -> None:
    pacer = MenuPacer(1.0)
    assert pacer.ready("a", 0.0)
    assert pacer.offer("a", "text 1", 0.0)
    assert pacer.ready("b", 0.1)  # a session changed state, say
    assert pacer.offer("b", "text 2", 0.1)
    assert pacer.due_at() is None


def test_a_text_change_within_the_period_is_held_then_goes() -> None:
    pacer = MenuPacer(1.0)
    pacer.offer("a", "text 1", 0.0)
    assert not pacer.ready("a", 0.3)
    assert pacer.due_at() == 1.0
    assert not pacer.ready("a", 0.6)  # still held; only the latest will be built
    assert pacer.ready("a", 1.0)
    assert pacer.offer("a", "text 3", 1.0)
    assert pacer.due_at() is None


def test_a_text_change_after_a_quiet_period_goes_at_once() -> None:
    pacer = MenuPacer(1.0)
    pacer.offer("a", "text 1", 0.0)
    assert pacer.ready("a", 5.0)
    assert pacer.offer("a", "text 2", 5.0)


def test_a_menu_the_tray_already_shows_is_not_handed_again() -> None:
    pacer = MenuPacer(1.0)
    assert pacer.offer("a", "text", 0.0)
    assert not pacer.ready("a", 0.5)
    assert pacer.ready("a", 2.0)
    assert not pacer.offer("a", "text", 2.0)  # the change went back to what is shown
    assert pacer.due_at() is None
    assert pacer.ready("a", 2.1)  # nothing was handed since 0.0: still quiet
    assert pacer.offer("a", "other", 2.1)


def test_a_clock_set_back_lets_a_held_menu_go() -> None:
    pacer = MenuPacer(1.0)
    pacer.offer("a", "text 1", 500.0)
    assert pacer.ready("a", 10.0)


def test_a_stream_of_text_changes_is_handed_over_once_per_period() -> None:
    pacer = MenuPacer(MENU_TEXT_PERIOD)
    handed = 0
    # A refresh every quarter second for ten seconds, each with new words in the menu.
    for step in range(40):
        now = step * 0.25
        if pacer.ready("same outline", now) and pacer.offer("same outline", step, now):
            handed += 1
    assert handed <= 10 / MENU_TEXT_PERIOD + 1
    assert handed >= 10 / MENU_TEXT_PERIOD - 1


# --- menu_text --------------------------------------------------------------------------


@pytest.fixture
def pystray(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """pystray's pure classes; the dummy backend imports without a display."""
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    yield importlib.import_module("pystray")


def test_menu_text_reads_words_flags_and_submenus(pystray: Any) -> None:
    item, menu = pystray.MenuItem, pystray.Menu
    paused = [False]
    built = menu(
        item("Focus", None, default=True, visible=False),
        item("api — working", menu(item("Copy", None, enabled=False))),
        item(lambda _item: "Resume" if paused[0] else "Pause", None),
    )
    assert menu_text(built) == (
        MenuOutlineItem("Focus", (True, False, True, None, False), None),
        MenuOutlineItem(
            "api — working",
            (True, True, False, None, False),
            (MenuOutlineItem("Copy", (False, True, False, None, False), None),),
        ),
        MenuOutlineItem("Pause", (True, True, False, None, False), None),
    )
    paused[0] = True  # a callable label is read each time
    assert menu_text(built)[2].text == "Resume"
    assert menu_text(None) == ()


# --- Refresh: the worker's own pass, fed sessions and a clock ---------------------------


def _session(
    session_id: str, *records: Record, alive: bool = True, updated_at: float = 1000.0
) -> Session:
    return Session(
        id=session_id,
        name=session_id,
        name_given=True,
        command=("agent",),
        cwd="/tmp",
        pid=1000,
        child_pid=None,
        started_at=900.0,
        updated_at=updated_at,
        alive=alive,
        source="program",
        records=records,
    )


def _record(state: str, record_id: str = "", at: float = 1000.0, msg: str | None = None) -> Record:
    return Record(record_id, State(state), None, None, "agent", None, msg, at, at)


def _refresh(clock: list[float], **settings: Any) -> Refresh:
    policy = NotificationPolicy(
        PolicySettings(**{"settle": 0.0, "done_after": 0.0, **settings}),
        lambda: clock[0],
        lambda _: 0,
    )
    return Refresh((), 60.0, policy)


def test_the_refresh_shows_sessions_and_pings_what_is_due() -> None:
    clock = [1000.0]
    refresh = _refresh(clock)
    first = refresh.run([_session("a", _record("working"))], HostUpdates(), AppMemory(), clock[0])
    assert [row.session_id for row in first.overview.rows] == ["a"]
    assert first.pings == []
    clock[0] = 1001.0
    blocked = _session("a", _record("blocked", msg="approve?", at=1001.0), updated_at=1001.0)
    shown = refresh.run([blocked], HostUpdates(), first.memory, clock[0])
    assert [ping.title for ping in shown.pings] == ["a needs you"]
    assert shown.pings[0].states == frozenset({"blocked"})
    assert shown.overview.icon_state == State.BLOCKED


def test_the_refresh_hides_dismissed_and_long_ended_sessions_and_forgets_gone_marks() -> None:
    clock = [1000.0]
    refresh = _refresh(clock)
    memory = AppMemory(seen={"a": 1.0, "gone": 1.0}, dismissed=frozenset({"b"}))
    ended = _session("old", _record("done"), alive=False, updated_at=1000.0 - 61)
    sessions = [_session("a", _record("working")), _session("b", _record("working")), ended]
    shown = refresh.run(sessions, HostUpdates(), memory, clock[0])
    assert [row.session_id for row in shown.overview.rows] == ["a"]
    assert set(shown.sessions) == {"a", "b"}  # dismissed, but still there to act on
    assert dict(shown.memory.seen) == {"a": 1.0}


def test_the_refresh_shows_the_pause_and_the_snoozes_the_policy_keeps() -> None:
    clock = [1000.0]
    refresh = _refresh(clock)
    refresh.policy.pause(1600.0)
    refresh.policy.snooze("a", 4600.0)
    refresh.policy.snooze("b", 1500.0)
    refresh.policy.unsnooze("b")
    sessions = [_session("a", _record("working")), _session("b", _record("working"))]
    shown = refresh.run(sessions, HostUpdates(), AppMemory(), clock[0])
    assert shown.mutes == Mutes(1600.0, {"a": 4600.0})
    assert shown.overview.tooltip.endswith(" · notifications paused")
    snoozed = {row.session_id: row.snoozed_until for row in shown.overview.rows}
    assert snoozed == {"a": 4600.0, "b": None}
    refresh.policy.resume()
    clock[0] = 1001.0
    shown = refresh.run(sessions, HostUpdates(), shown.memory, clock[0])
    assert shown.mutes == Mutes(None, {"a": 4600.0})
    assert "paused" not in shown.overview.tooltip


def _child(record_id: str, since: float) -> ChildRow:
    return ChildRow(record_id, record_id, State.WORKING, None, None, None, since)


def _row(session_id: str, since: float, children: tuple[ChildRow, ...] = ()) -> Row:
    return Row(
        session_id,
        session_id,
        State.WORKING,
        None,
        since,
        None,
        True,
        None,
        False,
        False,
        children=children,
    )


def test_age_marks_cover_sessions_and_children() -> None:
    kids = (_child("t1", since=NOW - 125), _child("t2", since=NOW - 5))
    rows = (_row("a", since=NOW - 300, children=kids), _row("b", since=NOW - 59))
    assert age_marks(Overview(State.WORKING, 0, "", rows), NOW) == (5, 2, 0, 0)


def test_a_childs_age_alone_moving_changes_what_the_menu_shows() -> None:
    # The session's minute stays put while its child's turns: the menu must still be
    # rebuilt, or the child's age would go stale for up to a minute.
    overview = Overview(State.WORKING, 0, "", (_row("a", NOW - 30, (_child("t", NOW - 50),)),))
    assert shown_key(overview, False, NOW) != shown_key(overview, False, NOW + 15)
    assert shown_key(overview, False, NOW) == shown_key(overview, False, NOW + 5)
