"""The notification policy: settle, dedup, burst, typing, pause, quiet hours, wording."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tray.core.answer_gate import AnswerSettings
from tray.core.answer_target import AnswerTarget
from tray.core.config import PolicySettings
from tray.core.policy.notification_policy import RETAIN, NotificationPolicy
from tray.core.policy.observe import Observation, observe, observe_session
from tray.core.policy.schedule import COALESCE, reminder_offset
from tray.core.policy.wording import (
    Ping,
    attention_ping,
    ping_for,
    reminder_ping,
    summary_ping,
    waited_text,
)
from tray.core.session import Answered, Attention, Session
from tray.protocol.records import Record

START = 1_000_020.0  # an exact multiple of 60, so local minutes are easy to read
BLOCKED = frozenset({"blocked"})


class FakeClock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def utc_minute(moment: float) -> int:
    return int(moment // 60) % 1440


def make(settings_: PolicySettings | None = None) -> tuple[NotificationPolicy, FakeClock]:
    clock = FakeClock()
    policy = NotificationPolicy(settings_ or PolicySettings(), clock, utc_minute)
    # The first snapshot is a baseline; most tests are about what happens after it.
    policy.update([])
    return policy, clock


def obs(
    session_id: str = "s1",
    state: str | None = "blocked",
    *,
    kind: str | None = "permission",
    msg: str | None = "approve Bash: touch notes.txt",
    label: str | None = None,
    exit_code: int | None = None,
    run_seconds: float | None = None,
    last_input_at: float | None = None,
    since: float | None = None,
    focus: str = "unknown",
    record_id: str | None = None,
    child: str | None = None,
    attention: tuple[Attention, ...] = (),
) -> Observation:
    return Observation(
        session_id=session_id,
        label=label or f"claude-code · {session_id}",
        state=state,
        kind=kind if state == "blocked" else None,
        msg=msg,
        exit_code=exit_code,
        alive=True,
        run_seconds=run_seconds,
        last_input_at=last_input_at,
        record_id=record_id,
        lead=child is None,
        child=child,
        since=since,
        focus=focus,
        attention=attention,
    )


def ids(pings: list[Ping]) -> list[tuple[str, ...]]:
    return [p.session_ids for p in pings]


# -- settle ----------------------------------------------------------------------------


def test_a_block_pings_after_it_settles() -> None:
    policy, clock = make()
    policy.update([obs()])
    assert policy.due() == []
    assert policy.next_wakeup() == START + 1.0
    clock.advance(0.5)
    assert policy.due() == []
    clock.advance(0.5)
    assert policy.due() == [
        Ping(
            "claude-code · s1 needs approval",
            "approve Bash: touch notes.txt",
            "critical",
            ("s1",),
            states=BLOCKED,
            label="claude-code · s1",
        )
    ]
    clock.advance(100)
    assert policy.due() == []
    assert policy.next_wakeup() == START + 300.0  # the first reminder


def test_a_block_answered_within_the_window_never_pings() -> None:
    policy, clock = make()
    policy.update([obs()])
    clock.advance(0.9)
    policy.update([obs(state="working", msg="running")])
    assert policy.next_wakeup() is None
    for _ in range(5):
        clock.advance(1)
        assert policy.due() == []


def test_settle_zero_pings_at_the_first_due() -> None:
    policy, _ = make(PolicySettings(settle=0))
    policy.update([obs()])
    assert ids(policy.due()) == [("s1",)]


def test_a_new_message_restarts_the_settle_time() -> None:
    policy, clock = make()
    policy.update([obs(msg="first")])
    clock.advance(0.6)
    policy.update([obs(msg="second")])
    clock.advance(0.6)
    assert policy.due() == []
    clock.advance(0.4)
    assert [p.body for p in policy.due()] == ["second"]


def test_repeated_identical_snapshots_do_not_restart_settle() -> None:
    policy, clock = make()
    for _ in range(4):
        policy.update([obs()])
        clock.advance(0.25)
    assert ids(policy.due()) == [("s1",)]


def test_flapping_faster_than_settle_never_pings() -> None:
    policy, clock = make()
    for _ in range(20):
        policy.update([obs()])
        clock.advance(0.5)
        assert policy.due() == []
        policy.update([obs(state="working")])
        clock.advance(0.5)
        assert policy.due() == []


def test_the_ping_uses_the_latest_snapshot() -> None:
    policy, clock = make()
    policy.update([obs(label="old name")])
    clock.advance(0.5)
    policy.update([obs(label="new name")])
    clock.advance(0.5)
    assert [p.title for p in policy.due()] == ["new name needs approval"]


def test_a_session_that_goes_away_does_not_ping() -> None:
    policy, clock = make()
    policy.update([obs("a"), obs("b")])
    policy.update([obs("b")])
    clock.advance(1)
    assert ids(policy.due()) == [("b",)]


# -- dedup -----------------------------------------------------------------------------


def test_the_same_block_does_not_ping_twice_within_the_dedup_window() -> None:
    policy, clock = make()
    policy.update([obs()])
    clock.advance(1)
    assert len(policy.due()) == 1
    for _ in range(3):  # flaps blocked -> working -> blocked
        policy.update([obs(state="working")])
        clock.advance(2)
        policy.update([obs()])
        clock.advance(2)
        assert policy.due() == []
    # 32 s after the ping, but this occurrence was dropped as a duplicate at 12 s.
    clock.advance(20)
    assert policy.due() == []
    policy.update([obs(state="working")])
    policy.update([obs()])
    clock.advance(1)
    assert ids(policy.due()) == [("s1",)]


def test_dedup_tells_different_questions_apart() -> None:
    policy, clock = make()
    policy.update([obs(msg="first")])
    clock.advance(1)
    assert len(policy.due()) == 1
    policy.update([obs(state="working")])
    policy.update([obs(msg="second")])
    clock.advance(1)
    assert [p.body for p in policy.due()] == ["second"]
    policy.update([obs(state="working")])
    policy.update([obs(msg="second", kind="question")])
    clock.advance(1)
    assert [p.title for p in policy.due()] == ["claude-code · s1 needs an answer"]


def test_dedup_is_per_session() -> None:
    policy, clock = make()
    policy.update([obs("a")])
    clock.advance(1)
    assert ids(policy.due()) == [("a",)]
    policy.update([obs("a"), obs("b")])
    clock.advance(1)
    assert ids(policy.due()) == [("b",)]


def test_dedup_window_edge() -> None:
    policy, clock = make(PolicySettings(settle=0, dedup_window=10))
    policy.update([obs()])
    assert len(policy.due()) == 1
    clock.advance(9.5)
    policy.update([obs(state="working")])
    policy.update([obs()])
    assert policy.due() == []
    clock.advance(0.5)
    policy.update([obs(state="working")])
    policy.update([obs()])
    assert len(policy.due()) == 1


# -- burst -----------------------------------------------------------------------------


def test_twenty_simultaneous_blocks_give_burst_plus_one_notifications() -> None:
    policy, clock = make()
    sessions = [obs(f"s{i:02}") for i in range(20)]
    policy.update(sessions)
    shown: list[Ping] = []
    for _ in range(120):
        clock.advance(0.5)
        shown += policy.due()
        policy.update(sessions)
    assert len(shown) == 3 + 1
    singles, summary = shown[:3], shown[3]
    assert ids(singles) == [("s00",), ("s01",), ("s02",)]
    assert summary.title == "17 sessions need you"
    assert summary.session_ids == tuple(f"s{i:02}" for i in range(3, 20))
    assert summary.urgency == "critical"
    assert summary.body == (
        "claude-code · s03, claude-code · s04, claude-code · s05, claude-code · s06, "
        "claude-code · s07 and 12 more"
    )


@pytest.mark.parametrize("burst", [1, 2, 5])
def test_burst_setting_is_honoured(burst: int) -> None:
    policy, clock = make(PolicySettings(burst=burst))
    policy.update([obs(f"s{i:02}") for i in range(20)])
    clock.advance(1)
    pings = policy.due()
    assert len(pings) == burst + 1
    assert sum(len(p.session_ids) for p in pings) == 20


def test_pings_past_the_summary_wait_for_the_window() -> None:
    policy, clock = make()
    first = [obs(f"a{i}") for i in range(5)]
    policy.update(first)
    clock.advance(1)  # t=1
    assert [len(p.session_ids) for p in policy.due()] == [1, 1, 1, 2]
    clock.advance(1)  # t=2
    policy.update([*first, obs("late1"), obs("late2", state="error", msg=None, exit_code=3)])
    clock.advance(1)  # t=3: ready, but the window is spent
    assert policy.due() == []
    assert policy.next_wakeup() == START + 11.0
    clock.now = START + 10.9
    assert policy.due() == []
    clock.now = START + 11.0
    assert [p.title for p in policy.due()] == [
        "claude-code · late1 needs approval",
        "claude-code · late2 failed",
    ]


def test_every_ping_says_what_states_it_is_about_and_what_kind_it_is() -> None:
    # What a forward by state (the "away" feature) chooses by, reminders and summaries
    # included.
    policy, clock = make(PolicySettings(burst=1, done_after=0, remind=60))
    policy.update(
        [
            obs("ask", kind="question", focus="unfocused"),
            obs("fail", state="error", msg=None),
            obs("done", state="done", msg=None, run_seconds=40),
        ]
    )
    clock.advance(1)
    single, summary = policy.due()
    assert (single.session_ids, single.kind, single.states) == (("ask",), "single", BLOCKED)
    assert not single.reminder
    assert summary.kind == "summary"
    assert summary.states == frozenset({"error", "done"})
    snapshot = [obs("ask", kind="question", focus="unfocused")]
    (reminder,) = [p for _, p in run_until(policy, clock, START + 61, snapshot)]
    assert (reminder.kind, reminder.states, reminder.reminder) == ("reminder", BLOCKED, True)


def test_an_unreachable_hosts_sessions_never_ping_and_keep_the_users_snooze() -> None:
    policy, clock = make(PolicySettings(remind=60))
    policy.update([obs("a"), obs("b")])
    policy.snooze("b", START + 7200)
    policy.set_unreachable({"a", "b"})
    assert policy.unreachable("a")
    assert run_until(policy, clock, START + 600, [obs("a"), obs("b")]) == []
    policy.set_unreachable(set())
    assert not policy.unreachable("a")
    assert policy.snoozed_until("b") == START + 7200
    # The reminders that fell due meanwhile were dropped; the next one (8x remind plus
    # an hour) goes out, and b's snooze still holds it.
    shown = run_until(policy, clock, START + 4100, [obs("a"), obs("b")], step=10)
    assert [(t - START, p.session_ids, p.reminder) for t, p in shown] == [(4080, ("a",), True)]


def test_a_waiting_ping_is_cancelled_when_the_session_moves_on() -> None:
    policy, clock = make(PolicySettings(burst=1, remind=0))
    policy.update([obs("a"), obs("b")])
    clock.advance(1)
    assert len(policy.due()) == 2  # one single, one summary
    policy.update([obs("a"), obs("b"), obs("c")])
    clock.advance(1)
    assert policy.due() == []
    policy.update([obs("a"), obs("b"), obs("c", state="working")])
    assert policy.next_wakeup() is None
    clock.advance(20)
    assert policy.due() == []


def test_singles_go_to_the_most_urgent() -> None:
    policy, clock = make(PolicySettings(burst=2, done_after=0))
    policy.update(
        [
            obs("done", state="done", msg=None, run_seconds=40),
            obs("fail", state="error", msg=None),
            obs("ask", kind="question"),
            obs("perm", kind="permission"),
        ]
    )
    clock.advance(1)
    pings = policy.due()
    assert ids(pings) == [("perm",), ("ask",), ("fail", "done")]
    assert pings[2].title == "1 session failed · 1 finished"
    assert pings[2].urgency == "normal"


@pytest.mark.parametrize(
    ("states", "title"),
    [
        (["blocked", "blocked", "blocked"], "3 sessions need you"),
        (["blocked", "blocked", "error"], "2 sessions need you · 1 failed"),
        (["blocked", "error", "done", "done"], "1 session needs you · 1 failed · 2 finished"),
        (["error", "error"], "2 sessions failed"),
        (["done", "done", "done"], "3 sessions finished"),
    ],
)
def test_summary_wording(states: list[str], title: str) -> None:
    observations = [obs(f"s{i}", state, kind=None) for i, state in enumerate(states)]
    ping = summary_ping([ping_for(o) for o in observations])
    assert ping.title == title
    assert ping.session_ids == tuple(f"s{i}" for i in range(len(states)))
    assert ping.urgency == "normal"


def test_a_summary_of_one_reads_like_a_single_ping() -> None:
    assert summary_ping([ping_for(obs())]) == ping_for(obs())


# -- typing ----------------------------------------------------------------------------


def test_typing_holds_a_ping_back_until_the_grace_ends() -> None:
    policy, clock = make()
    policy.update([obs(last_input_at=START)])
    clock.advance(1)
    assert policy.due() == []
    assert policy.next_wakeup() == START + 5.0  # held back, not dropped
    clock.now = START + 4.9
    policy.update([obs(last_input_at=START)])
    assert policy.due() == []
    clock.now = START + 5.0
    policy.update([obs(last_input_at=START)])
    assert ids(policy.due()) == [("s1",)]


def test_typing_grace_edge() -> None:
    policy, clock = make(PolicySettings(settle=0, typing_grace=5))
    policy.update([obs("a", last_input_at=START - 4.5)])
    assert policy.due() == []
    policy.update([obs("a", last_input_at=START - 4.5), obs("b", last_input_at=START - 5)])
    assert ids(policy.due()) == [("b",)]
    clock.advance(0.5)
    assert ids(policy.due()) == [("a",)]


def test_typing_elsewhere_does_not_suppress() -> None:
    policy, clock = make()
    policy.update([obs("a"), obs("b", state="working", last_input_at=START)])
    clock.advance(1)
    assert ids(policy.due()) == [("a",)]


def test_typing_that_started_during_settle_suppresses() -> None:
    policy, clock = make()
    policy.update([obs()])
    clock.advance(0.8)
    policy.update([obs(last_input_at=clock.now)])
    clock.advance(0.2)
    assert policy.due() == []


def test_a_block_seen_while_typing_stays_quiet_when_it_flaps_back() -> None:
    policy, clock = make()
    policy.update([obs()])
    clock.advance(0.5)
    policy.update([obs(last_input_at=clock.now)])  # typed into it after it appeared
    clock.advance(0.5)
    assert policy.due() == []
    policy.update([obs(state="working", last_input_at=START + 0.5)])
    clock.advance(6)
    policy.update([obs(last_input_at=START + 0.5)])
    clock.advance(1)
    assert policy.due() == []


# -- pause and quiet hours -------------------------------------------------------------


def test_pause_drops_pings_and_ends_on_time() -> None:
    policy, clock = make()
    policy.pause(START + 60)
    assert policy.paused_until == START + 60
    policy.update([obs("a")])
    clock.advance(1)
    assert policy.due() == []
    clock.advance(60)
    assert policy.paused_until is None
    assert policy.due() == []  # dropped, not queued
    policy.update([obs("a"), obs("b")])
    clock.advance(1)
    assert ids(policy.due()) == [("b",)]


def test_a_ping_due_during_a_pause_is_dropped_even_if_asked_later() -> None:
    policy, clock = make()
    policy.update([obs()])
    policy.pause(START + 5)
    clock.advance(30)
    assert policy.due() == []


def test_a_ping_due_after_the_pause_goes_out() -> None:
    policy, clock = make(PolicySettings(settle=10))
    policy.pause(START + 5)
    policy.update([obs()])
    clock.advance(10)
    assert ids(policy.due()) == [("s1",)]


def test_resume_ends_the_pause() -> None:
    policy, clock = make()
    policy.pause(START + 600)
    clock.advance(5)
    policy.resume()
    assert policy.paused_until is None
    policy.update([obs()])
    clock.advance(1)
    assert ids(policy.due()) == [("s1",)]


def test_a_pause_in_the_past_does_nothing() -> None:
    policy, clock = make()
    policy.pause(START - 1)
    assert policy.paused_until is None
    policy.update([obs()])
    clock.advance(1)
    assert len(policy.due()) == 1


def test_a_new_pause_replaces_the_old_one() -> None:
    policy, clock = make()
    policy.pause(START + 600)
    policy.pause(START + 10)
    assert policy.paused_until == START + 10
    clock.advance(10)
    policy.update([obs()])
    clock.advance(1)
    assert len(policy.due()) == 1


def at_minute(minute: int) -> float:
    return START - START % 86400 + 86400 + minute * 60


@pytest.mark.parametrize(
    ("quiet", "minute", "pings"),
    [
        ((22 * 60, 7 * 60), 23 * 60, False),
        ((22 * 60, 7 * 60), 22 * 60, False),
        ((22 * 60, 7 * 60), 3 * 60, False),
        ((22 * 60, 7 * 60), 7 * 60, True),
        ((22 * 60, 7 * 60), 12 * 60, True),
        ((22 * 60, 7 * 60), 21 * 60 + 59, True),
        ((60, 120), 90, False),
        ((60, 120), 59, True),
        ((60, 120), 120, True),
        ((600, 600), 600, False),
        ((600, 600), 0, False),
        (None, 0, True),
    ],
)
def test_quiet_hours(quiet: tuple[int, int] | None, minute: int, pings: bool) -> None:
    clock = FakeClock(at_minute(minute))
    policy = NotificationPolicy(PolicySettings(settle=0, quiet_hours=quiet), clock, utc_minute)
    policy.update([])
    policy.update([obs()])
    assert bool(policy.due()) is pings


def test_quiet_hours_drop_rather_than_postpone() -> None:
    clock = FakeClock(at_minute(6 * 60 + 59))
    policy = NotificationPolicy(PolicySettings(quiet_hours=(22 * 60, 7 * 60)), clock, utc_minute)
    policy.update([])
    policy.update([obs()])
    clock.advance(1)
    assert policy.due() == []
    clock.advance(120)  # quiet hours are over; the block is still there
    policy.update([obs()])
    assert policy.due() == []


# -- which states ping -----------------------------------------------------------------


def test_only_listed_states_ping() -> None:
    policy, clock = make(PolicySettings(states=frozenset({"error"}), done_after=0))
    policy.update(
        [
            obs("b"),
            obs("e", state="error"),
            obs("d", state="done", run_seconds=100),
            obs("w", state="working"),
            obs("i", state="idle"),
            obs("n", state=None),
        ]
    )
    clock.advance(1)
    assert ids(policy.due()) == [("e",)]


def test_working_idle_and_nothing_never_ping() -> None:
    policy, clock = make(PolicySettings(states=frozenset({"working", "idle"})))
    policy.update([obs("w", state="working"), obs("i", state="idle")])
    clock.advance(1)
    assert policy.due() == []


@pytest.mark.parametrize(
    ("run", "pings"), [(29.9, False), (30.0, True), (3600.0, True), (None, True)]
)
def test_done_pings_only_after_a_long_run(run: float | None, pings: bool) -> None:
    policy, clock = make()
    policy.update([obs(state="done", msg=None, run_seconds=run)])
    clock.advance(1)
    assert bool(policy.due()) is pings


def test_disabled_never_pings() -> None:
    policy, _ = make(PolicySettings(enabled=False, settle=0))
    policy.update([obs()])
    assert policy.due() == []
    assert policy.next_wakeup() is None


def test_finished_sessions_in_the_first_snapshot_are_old_news() -> None:
    clock = FakeClock()
    policy = NotificationPolicy(PolicySettings(done_after=0), clock, utc_minute)
    policy.update(
        [
            obs("old-done", state="done", run_seconds=100),
            obs("old-error", state="error"),
            obs("old-block"),
        ]
    )
    clock.advance(1)
    assert ids(policy.due()) == [("old-block",)]
    policy.update(
        [
            obs("old-done", state="done", run_seconds=100),
            obs("old-error", state="error"),
            obs("old-block"),
            obs("new-done", state="done", run_seconds=100),
        ]
    )
    clock.advance(1)
    assert ids(policy.due()) == [("new-done",)]


# -- wording ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "title", "body", "urgency"),
    [
        ("permission", "L needs approval", "Waiting for your approval", "critical"),
        ("question", "L needs an answer", "Waiting for your answer", "normal"),
        ("auth", "L needs you to sign in", "Waiting for you to sign in", "critical"),
        (None, "L needs you", "Waiting for you", "normal"),
    ],
)
def test_blocked_wording(kind: str | None, title: str, body: str, urgency: str) -> None:
    expected = Ping(title, body, urgency, ("s1",), states=BLOCKED, label="L")  # type: ignore[arg-type]
    assert ping_for(obs(kind=kind, msg=None, label="L")) == expected
    assert ping_for(obs(kind=kind, msg="Apply?", label="L")).body == "Apply?"


def finished(state: str, exit_code: int | None, run: float | None, msg: str | None) -> Ping:
    return ping_for(obs(state=state, exit_code=exit_code, run_seconds=run, msg=msg, label="L"))


@pytest.mark.parametrize(
    ("ping", "title", "body"),
    [
        (finished("error", 3, None, None), "L failed", "Exited with status 3"),
        (finished("error", 130, None, None), "L failed", "Exited with status 130"),
        (finished("error", None, None, None), "L failed", "Failed"),
        (finished("error", 0, None, None), "L failed", "Failed"),
        (finished("error", 1, None, "tests failed"), "L failed", "tests failed"),
        (finished("done", 0, 192.0, None), "L finished", "Done in 3m 12s"),
        (finished("done", None, 45.0, None), "L finished", "Done in 45s"),
        (finished("done", None, None, None), "L finished", "Done"),
        (finished("done", None, 45.0, "Plan"), "L finished", "Plan"),
        (finished("done", None, 45.0, "\u200b"), "L finished", "Done in 45s"),
    ],
)
def test_finished_wording(ping: Ping, title: str, body: str) -> None:
    assert (ping.title, ping.body, ping.urgency) == (title, body, "normal")


def test_the_body_is_the_raw_message() -> None:
    raw = "<b>rm</b> & \u202eevil"
    assert ping_for(obs(msg=raw)).body == raw


# -- observing a session ---------------------------------------------------------------


def rec(state: str, record_id: str = "", at: float = 0.0, **extra: str | None) -> Record:
    return Record(
        record_id, state, extra.get("kind"), None, "claude-code", None, extra.get("msg"), at
    )


def sess(*records: Record, **changes: object) -> Session:
    base: dict[str, object] = {
        "id": "s1",
        "name": "claude",
        "command": ("claude",),
        "cwd": "/w",
        "pid": 1,
        "child_pid": 2,
        "started_at": 1000.0,
        "updated_at": 1000.0,
        "source": "program" if records else "launcher",
        "records": records,
    }
    base.update(changes)
    return Session(**base)  # type: ignore[arg-type]


def test_observe_a_blocked_session() -> None:
    s = sess(
        rec("working", at=1100.0, msg="root"),
        rec("blocked", "t/1", at=1200.0, kind="permission", msg="approve"),
        last_input_at=1150.0,
    )
    o = observe_session(s, "L", now=1300.0)
    assert o == Observation(
        "s1", "L", "blocked", "permission", "approve", None, True, None, 1150.0, record_id="t/1"
    )


def test_done_while_running_measures_from_the_last_keystroke() -> None:
    s = sess(rec("done", at=1500.0), last_input_at=1400.0)
    assert observe_session(s, "L", now=1600.0).run_seconds == 100.0


def test_done_nobody_typed_into_measures_from_the_start() -> None:
    s = sess(rec("done", at=1500.0))
    assert observe_session(s, "L", now=1600.0).run_seconds == 500.0


def test_done_after_exit_measures_the_whole_run() -> None:
    s = sess(alive=False, exit_code=0, updated_at=1090.0)
    o = observe_session(s, "L", now=2000.0)
    assert (o.state, o.run_seconds, o.exit_code, o.alive) == ("done", 90.0, 0, False)


def test_typing_after_done_means_no_long_run() -> None:
    s = sess(rec("done", at=1500.0), last_input_at=1550.0)
    assert observe_session(s, "L", now=1600.0).run_seconds == 0.0


def test_only_done_has_a_run_time() -> None:
    s = sess(alive=False, exit_code=1, updated_at=1090.0)
    o = observe_session(s, "L", now=2000.0)
    assert (o.state, o.run_seconds, o.exit_code) == ("error", None, 1)


def test_a_quick_claude_turn_does_not_ping_but_a_long_one_does() -> None:
    policy, clock = make()
    quick = sess(rec("done", at=START - 10), last_input_at=START - 25)
    long = sess(rec("done", at=START - 10), id="s2", last_input_at=START - 50)
    policy.update([observe_session(s, "L", clock.now) for s in (quick, long)])
    clock.advance(1)
    assert ids(policy.due()) == [("s2",)]


# -- properties ------------------------------------------------------------------------

STATE_CHOICES = [None, "idle", "working", "blocked", "blocked", "error", "done"]
SESSIONS = ["a", "b", "c", "d", "e", "f"]


@dataclass
class Scenario:
    settings: PolicySettings
    steps: list[tuple[str, object]] = field(default_factory=list)


snapshot = st.lists(
    st.tuples(
        st.sampled_from(STATE_CHOICES),
        st.sampled_from([None, "permission", "question"]),
        st.sampled_from([None, "x", "y"]),
        st.sampled_from([False, False, False, True]),  # typing right now
        st.sampled_from([None, 10.0, 60.0]),  # run seconds
    ),
    min_size=len(SESSIONS),
    max_size=len(SESSIONS),
)


Snapshot = list[tuple[str | None, str | None, str | None, bool, float | None]]
Tick = tuple[object, Snapshot | None, bool, float]


def flatten(ticks: list[Tick]) -> list[tuple[str, object]]:
    steps: list[tuple[str, object]] = []
    for pause, snapshot_, call_due, seconds in ticks:
        if pause == "resume":
            steps.append(("resume", None))
        elif pause is not None:
            steps.append(("pause", pause))
        if snapshot_ is not None:
            steps.append(("update", snapshot_))
        if call_due:
            steps.append(("due", None))
        steps.append(("advance", seconds))
    return steps


# One tick: maybe pause or resume, maybe a snapshot, maybe ask for pings, then time passes.
tick = st.tuples(
    st.sampled_from([None] * 8 + [0.5, 3.0, 20.0, "resume"]),
    # Mostly no new snapshot, so that states last long enough to settle and ping: the
    # properties below hold only for scenarios that send, and they say so with assume().
    st.one_of(st.none(), st.none(), st.none(), snapshot),
    st.booleans(),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 31.0]),
)
scenarios = st.builds(
    Scenario,
    settings=st.builds(
        PolicySettings,
        settle=st.sampled_from([0.0, 0.5, 1.0, 2.5]),
        dedup_window=st.sampled_from([0.0, 5.0, 30.0]),
        burst=st.integers(min_value=0, max_value=4),
        burst_window=st.sampled_from([2.5, 10.0]),
        done_after=st.sampled_from([0.0, 30.0]),
    ),
    steps=st.lists(tick, max_size=40).map(flatten),
)


@dataclass
class Run:
    pings: list[tuple[int, float, Ping]]  # (step, time, ping)
    history: dict[str, list[tuple[int, float, str | None]]]  # session -> (step, time, state)
    pauses: list[list[float]]  # [start, end) as the test sees them
    paused_pings: list[Ping]  # pings given while a pause was on
    early: list[float]  # times due() gave pings before next_wakeup said it might


def play(scenario: Scenario) -> Run:
    clock = FakeClock()
    policy = NotificationPolicy(scenario.settings, clock, utc_minute)
    run = Run([], {s: [] for s in SESSIONS}, [], [], [])
    promised = float("inf")
    for index, (kind, arg) in enumerate(scenario.steps):
        if kind == "advance":
            assert isinstance(arg, float)
            clock.advance(arg)
            continue
        if kind == "update":
            assert isinstance(arg, list)
            observations = []
            for sid, (state, k, msg, typing, seconds) in zip(SESSIONS, arg, strict=True):
                run.history[sid].append((index, clock.now, state))
                observations.append(
                    Observation(
                        sid,
                        sid.upper(),
                        state,
                        k,
                        msg,
                        None,
                        True,
                        seconds,
                        clock.now if typing else None,
                    )
                )
            policy.update(observations)
        elif kind == "due":
            pings = policy.due()
            if pings and clock.now < promised:
                run.early.append(clock.now)
            run.pings += [(index, clock.now, p) for p in pings]
            if any(start <= clock.now < end for start, end in run.pauses):
                run.paused_pings += pings
        elif kind == "pause":
            assert isinstance(arg, float)
            for pause in run.pauses:
                pause[1] = min(pause[1], clock.now)
            run.pauses.append([clock.now, clock.now + arg])
            policy.pause(clock.now + arg)
        else:
            for pause in run.pauses:
                pause[1] = min(pause[1], clock.now)
            policy.resume()
        wakeup = policy.next_wakeup()
        promised = float("inf") if wakeup is None else wakeup
    return run


def state_entered(
    history: list[tuple[int, float, str | None]], step: int
) -> tuple[str | None, float]:
    """The state a session had at ``step`` and since when, per the updates it got."""
    current: str | None = None
    since = -1.0
    for index, at, state in history:
        if index > step:
            break
        if state != current or since < 0:
            current, since = state, at
    return current, since


# Most generated scenarios send nothing; assume() keeps the ones that do.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios)
def test_never_more_than_burst_plus_one_in_any_window(scenario: Scenario) -> None:
    run = play(scenario)
    # Only a scenario that pings more than once says anything about a window.
    assume(len(run.pings) >= 2)
    times = [t for _, t, _ in run.pings]
    window = scenario.settings.burst_window
    for start in times:
        inside = sum(1 for t in times if start <= t < start + window)
        assert inside <= scenario.settings.burst + 1


# Most generated scenarios send nothing; assume() keeps the ones that do.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios)
def test_no_ping_without_settling_in_a_pinging_state(scenario: Scenario) -> None:
    run = play(scenario)
    assume(run.pings)
    for index, moment, ping in run.pings:
        for session_id in ping.session_ids:
            state, since = state_entered(run.history[session_id], index)
            assert state in {"blocked", "error", "done"}
            assert moment - since >= scenario.settings.settle


# Most generated scenarios send nothing; assume() keeps the ones that do.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios)
def test_no_ping_while_paused(scenario: Scenario) -> None:
    # Only scenarios whose pauses matter: the same steps without pausing would ping
    # inside a pause window.
    unpaused = Scenario(
        scenario.settings, [step for step in scenario.steps if step[0] not in ("pause", "resume")]
    )
    windows = play(scenario).pauses
    would = [t for _, t, _ in play(unpaused).pings if any(a <= t < b for a, b in windows)]
    assume(would)
    assert play(scenario).paused_pings == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios)
def test_the_policy_is_deterministic(scenario: Scenario) -> None:
    first = play(scenario)
    assume(first.pings)  # two runs that send nothing would agree for any policy
    assert play(scenario) == first


@settings(max_examples=300, deadline=None)
@given(scenarios)
def test_next_wakeup_is_never_too_late(scenario: Scenario) -> None:
    assert play(scenario).early == []


@settings(max_examples=200, deadline=None)
@given(scenarios)
def test_every_ping_names_known_sessions_once(scenario: Scenario) -> None:
    for _, _, ping in play(scenario).pings:
        assert ping.session_ids
        assert len(set(ping.session_ids)) == len(ping.session_ids)
        assert set(ping.session_ids) <= set(SESSIONS)
        assert ping.urgency in ("critical", "normal")


# -- helpers for the rules below -------------------------------------------------------


def att(
    seq: int,
    at: float,
    source: str = "osc9",
    *,
    title: str | None = None,
    body: str | None = None,
    condition: str = "always",
    exit_code: int | None = None,
    duration: float | None = None,
) -> Attention:
    return Attention(seq, at, source, title, body, condition, exit_code, duration)


def record(
    record_id: str,
    state: str,
    *,
    kind: str | None = None,
    msg: str | None = None,
    title: str | None = None,
    at: float = START,
    since: float | None = None,
) -> Record:
    return Record(record_id, state, kind, None, "claude-code", title, msg, at, since)


def run_until(
    policy: NotificationPolicy,
    clock: FakeClock,
    end: float,
    snapshot: list[Observation] | None = None,
    step: float = 0.5,
) -> list[tuple[float, Ping]]:
    """Asks for pings every ``step`` seconds up to ``end``, re-sending ``snapshot``."""
    shown: list[tuple[float, Ping]] = []
    while clock.now < end:
        clock.advance(step)
        if snapshot is not None:
            policy.update(snapshot)
        shown += [(clock.now, p) for p in policy.due()]
    return shown


def follow(
    policy: NotificationPolicy,
    clock: FakeClock,
    end: float,
    snapshot: Callable[[], list[Observation]],
) -> list[tuple[float, Ping]]:
    """Wakes exactly when the policy asks to, as the app does, up to ``end``."""
    shown: list[tuple[float, Ping]] = []
    while True:
        wakeup = policy.next_wakeup()
        if wakeup is None or wakeup > end:
            return shown
        clock.now = max(clock.now, wakeup)
        policy.update(snapshot())
        shown += [(clock.now, p) for p in policy.due()]


# -- focus -----------------------------------------------------------------------------


def test_an_unfocused_session_pings_without_typing_grace() -> None:
    policy, clock = make()
    policy.update([obs(focus="unfocused", last_input_at=START - 1)])
    clock.advance(1)
    assert ids(policy.due()) == [("s1",)]


def test_the_same_keystrokes_hold_back_a_session_of_unknown_focus() -> None:
    policy, clock = make()
    policy.update([obs(last_input_at=START - 1)])
    clock.advance(1)
    assert policy.due() == []
    assert policy.next_wakeup() == START + 4.0


def test_a_focused_session_never_pops_up_for_that_prompt() -> None:
    policy, clock = make(PolicySettings(remind=0))
    policy.update([obs(focus="focused")])
    clock.advance(1)
    assert policy.due() == []
    # Looking away later, or the prompt flapping back, does not make it news again.
    shown = run_until(policy, clock, START + 10, [obs(focus="unfocused")])
    policy.update([obs(state="working", focus="unfocused")])
    shown += run_until(policy, clock, START + 20, [obs(focus="unfocused")])
    assert shown == []
    assert policy.next_wakeup() is None


def test_when_focused_pops_up_for_a_focused_session() -> None:
    policy, clock = make(PolicySettings(when_focused=True))
    policy.update([obs(focus="focused")])
    clock.advance(1)
    assert ids(policy.due()) == [("s1",)]


def test_when_focused_still_holds_back_for_typing() -> None:
    policy, clock = make(PolicySettings(when_focused=True))
    policy.update([obs(focus="focused", last_input_at=START - 1)])
    clock.advance(1)
    assert policy.due() == []
    clock.now = START + 4
    assert ids(policy.due()) == [("s1",)]


def test_focus_is_judged_when_the_ping_falls_due() -> None:
    policy, clock = make()
    policy.update([obs(focus="focused")])
    clock.advance(0.5)
    policy.update([obs(focus="unfocused")])  # switched away before it settled
    clock.advance(0.5)
    assert ids(policy.due()) == [("s1",)]


# -- typing holds back -----------------------------------------------------------------


def test_a_prompt_typed_into_after_it_appeared_counts_as_seen() -> None:
    policy, clock = make()
    policy.update([obs(since=START)])
    clock.advance(0.5)
    policy.update([obs(since=START, last_input_at=START + 0.25)])
    assert run_until(policy, clock, START + 60) == []
    assert policy.next_wakeup() == START + 300.0  # only its reminder is left


def test_a_held_back_ping_goes_only_if_the_prompt_still_waits() -> None:
    policy, clock = make()
    policy.update([obs(since=START, last_input_at=START - 1)])
    clock.advance(2)
    assert policy.due() == []
    assert policy.next_wakeup() == START + 4.0
    policy.update([obs(state="working", last_input_at=START - 1)])
    assert policy.next_wakeup() is None
    assert run_until(policy, clock, START + 10) == []


def test_typing_into_a_held_back_prompt_means_it_was_seen() -> None:
    policy, clock = make()
    policy.update([obs(since=START, last_input_at=START - 1)])
    clock.now = START + 3
    policy.update([obs(since=START, last_input_at=START + 3)])
    assert run_until(policy, clock, START + 10) == []


def test_a_held_back_ping_is_dropped_if_a_pause_covers_its_new_time() -> None:
    policy, clock = make()
    policy.update([obs(since=START, last_input_at=START - 1)])
    clock.advance(2)
    policy.pause(START + 5)
    clock.advance(2.5)  # it fell due at START + 4, inside the pause
    assert policy.due() == []
    clock.advance(1)
    assert policy.due() == []


# -- settle counts from the launcher's since -------------------------------------------


def test_settle_counts_from_the_launchers_since() -> None:
    policy, clock = make()
    policy.update([obs(since=START - 0.75)])
    assert policy.next_wakeup() == START + 0.25
    clock.now = START + 0.25
    assert ids(policy.due()) == [("s1",)]


def test_an_old_prompt_seen_now_pings_at_once() -> None:
    policy, _ = make()
    policy.update([obs(since=START - 60)])
    assert ids(policy.due()) == [("s1",)]


def test_a_new_since_is_a_new_occurrence_even_with_the_same_text() -> None:
    policy, clock = make()
    policy.update([obs(since=START)])
    clock.advance(0.75)
    policy.update([obs(since=START + 0.5)])  # it went away and came back unseen
    clock.advance(0.25)
    assert policy.due() == []
    clock.now = START + 1.5
    assert ids(policy.due()) == [("s1",)]


def test_a_since_from_the_future_counts_from_now() -> None:
    policy, clock = make()
    for _ in range(4):
        policy.update([obs(since=START + 100)])
        clock.advance(0.25)
    assert ids(policy.due()) == [("s1",)]


def test_the_launchers_own_state_settles_from_state_since() -> None:
    policy, clock = make()
    ended = sess(alive=False, exit_code=2, updated_at=START - 0.5, state_since=START - 0.5)
    policy.update(observe(ended, "L", clock.now))
    assert policy.next_wakeup() == START + 0.5
    clock.now = START + 0.5
    assert [p.title for p in policy.due()] == ["L failed"]


def program(state: str, since: float, now: float) -> Session:
    blocked = state == "blocked"
    root = record(
        "",
        state,
        kind="permission" if blocked else None,
        msg="approve Bash: npm test" if blocked else None,
        at=now,
        since=since,
    )
    return sess(root, started_at=START - 100, updated_at=now)


def flapping(hertz: float, phase: float, moment: float) -> tuple[str, float]:
    """A program that is blocked for half of every cycle and working for the other half
    for two seconds, from START + phase; then it stays working. Returns the state at
    ``moment`` and the record's since, as the launcher writes it."""
    begin = START + phase
    half = 0.5 / hertz
    if moment < begin:
        return "working", START - 100
    flips = min(math.floor((moment - begin) / half), int(4 * hertz) - 1)
    return ("blocked" if flips % 2 == 0 else "working"), begin + flips * half


@pytest.mark.parametrize("hertz", [10, 20, 50])
@pytest.mark.parametrize("phase", [-0.005, 0.005, 0.0123])
def test_a_program_flipping_between_blocked_and_working_never_pings(
    hertz: int, phase: float
) -> None:
    policy, clock = make()
    shown: list[Ping] = []
    for step in range(1, 51):  # a snapshot every 100 ms for five seconds
        clock.now = START + step * 0.1
        state, since = flapping(hertz, phase, clock.now)
        policy.update(observe(program(state, since, clock.now), "api-server", clock.now))
        shown += policy.due()
    assert shown == []


@pytest.mark.parametrize("hertz", [10, 20, 50])
def test_sampling_would_make_that_flapping_look_steady_without_since(hertz: int) -> None:
    # At these rates every 100 ms sample lands in a blocked half: only since tells the
    # policy it never held. Guards the test above against passing for the wrong reason.
    policy, clock = make()
    shown: list[Ping] = []
    for step in range(1, 20):  # the two seconds of flapping
        clock.now = START + step * 0.1
        state, since = flapping(hertz, -0.005, clock.now)
        assert state == "blocked"
        seen = observe(program(state, since, clock.now), "api-server", clock.now)
        policy.update([replace(o, since=None) for o in seen])
        shown += policy.due()
    assert len(shown) == 1


def test_a_steady_prompt_re_sent_every_100_ms_pings_once_after_the_settle() -> None:
    policy, clock = make()
    since = START + 0.35
    shown: list[tuple[float, Ping]] = []
    for step in range(1, 51):
        clock.now = START + step * 0.1
        state = "blocked" if clock.now >= since else "working"
        session = program(state, since if state == "blocked" else START - 100, clock.now)
        policy.update(observe(session, "api-server", clock.now))
        shown += [(clock.now, p) for p in policy.due()]
    assert [p.title for _, p in shown] == ["api-server needs approval"]
    assert since + 1.0 <= shown[0][0] < since + 1.1


@settings(max_examples=200, deadline=None)
@given(
    stretches=st.lists(st.floats(min_value=0.001, max_value=0.999), min_size=1, max_size=40),
    gaps=st.lists(st.floats(min_value=0.001, max_value=0.7), min_size=1, max_size=120),
    settle=st.sampled_from([0.5, 1.0, 2.5]),
    first_blocked=st.booleans(),
)
def test_any_sampling_of_a_flapping_record_never_pings(
    stretches: list[float], gaps: list[float], settle: float, first_blocked: bool
) -> None:
    """Every stretch is shorter than settle; the app samples whenever it likes, and also
    when the policy asks to be woken, always reading the state first as the app does."""
    policy, clock = make(PolicySettings(settle=settle))
    starts = [START + settle * sum(stretches[:i]) for i in range(len(stretches) + 1)]

    def state_at(moment: float) -> tuple[str, float]:
        index = max((i for i, s in enumerate(starts) if s <= moment), default=-1)
        if index < 0 or index == len(stretches):
            return "working", starts[-1] if index >= 0 else START - 100
        blocked = (index % 2 == 0) == first_blocked
        return ("blocked" if blocked else "working"), starts[index]

    samples = [START + sum(gaps[: i + 1]) for i in range(len(gaps))]
    samples.append(starts[-1] + 3 * settle)
    shown: list[Ping] = []
    while samples:
        moment = samples[0]
        wakeup = policy.next_wakeup()
        if wakeup is not None and clock.now < wakeup < moment:
            moment = wakeup
        else:
            samples.pop(0)
        clock.now = max(clock.now, moment)
        state, since = state_at(clock.now)
        policy.update(observe(program(state, since, clock.now), "L", clock.now))
        shown += policy.due()
    assert shown == []


# -- attention events ------------------------------------------------------------------


def test_a_terminal_notification_pings_with_the_session_label() -> None:
    policy, clock = make()
    event = att(1, START, body="\n\nClaude needs your permission to use Bash")
    snapshot = [obs(state="working", attention=(event,))]
    policy.update(snapshot)
    assert policy.next_wakeup() == START + 1.0
    clock.advance(1)
    assert policy.due() == [
        Ping(
            "claude-code · s1",
            "\n\nClaude needs your permission to use Bash",
            "normal",
            ("s1",),
            states=BLOCKED,
            label="claude-code · s1",
        )
    ]
    assert run_until(policy, clock, START + 60, snapshot) == []  # handled once, by seq


def test_an_event_told_while_focused_stays_told_once_the_person_looks_away() -> None:
    policy, clock = make()
    event = att(1, START, body="Agent turn complete")
    policy.update([obs(state="working", focus="focused", attention=(event,))])
    assert run_until(policy, clock, START + 60) == []
    later = [obs(state="working", focus="unfocused", attention=(event,))]
    assert run_until(policy, clock, START + 120, later) == []


@pytest.mark.parametrize(
    ("event", "title", "body"),
    [
        (att(1, 0, "osc777", title="Build", body="all green"), "api: Build", "all green"),
        (att(1, 0, "osc99", title="Build"), "api: Build", ""),
        (att(1, 0, "osc9", body="done <b>"), "api", "done <b>"),
        (att(1, 0, "osc9", title="\u200b", body="x"), "api", "x"),
        (att(1, 0, "osc9"), "api", "Sent a notification"),
        (att(1, 0, "bell"), "api rang the bell", "It may need you"),
        (
            att(1, 0, "command", title="make test", exit_code=0, duration=125),
            "api: make test finished",
            "Done in 2m 5s",
        ),
        (
            att(1, 0, "command", title="make lint", exit_code=2, duration=40),
            "api: make lint failed",
            "Exited with status 2",
        ),
        (att(1, 0, "command", exit_code=None, duration=None), "api: command finished", "Done"),
    ],
)
def test_attention_wording(event: Attention, title: str, body: str) -> None:
    state = "error" if event.exit_code else ("done" if event.source == "command" else "blocked")
    expected = Ping(title, body, "normal", ("s9",), states=frozenset({state}), label="api")
    assert attention_ping(event, "api", "s9") == expected


def test_a_long_command_line_is_cut_in_the_title() -> None:
    line = "pytest " + "tests/unit/test_policy.py " * 10
    title = attention_ping(att(1, 0, "command", title=line, duration=60), "api", "s").title
    assert title.startswith("api: pytest tests/unit/")
    assert title.endswith("\u2026 finished")
    assert len(title) < 80


def test_attention_in_the_first_snapshot_is_old_news() -> None:
    clock = FakeClock()
    policy = NotificationPolicy(PolicySettings(), clock, utc_minute)
    old = (att(1, START - 5, body="old"), att(2, START - 1, body="older news"))
    policy.update([obs(state="working", attention=old)])
    clock.advance(2)
    assert policy.due() == []
    policy.update([obs(state="working", attention=(*old, att(3, clock.now, body="new")))])
    clock.advance(1)
    assert [p.body for p in policy.due()] == ["new"]


def test_attention_from_before_the_first_snapshot_is_old_news_in_a_later_session() -> None:
    policy, clock = make()
    clock.advance(1)
    events = (att(1, START - 10, body="before"), att(2, START + 0.5, body="after"))
    policy.update([obs(state="working", attention=events)])
    assert [p.body for _, p in run_until(policy, clock, START + 5)] == ["after"]


def test_terminal_notifications_off_keeps_bells_and_commands() -> None:
    def snapshot() -> list[Observation]:
        return [
            obs("a", "working", focus="unfocused", attention=(att(1, START, "osc9", body="a"),)),
            obs("b", "working", focus="unfocused", attention=(att(1, START, "osc777", title="b"),)),
            obs("c", "working", focus="unfocused", attention=(att(1, START, "osc99", title="c"),)),
            obs("d", "working", focus="unfocused", attention=(att(1, START, "bell"),)),
            obs(
                "e",
                "working",
                focus="unfocused",
                attention=(att(1, START, "command", title="make", exit_code=0, duration=40),),
            ),
        ]

    pinged: dict[bool, list[str]] = {}
    for enabled in (True, False):
        policy, clock = make(PolicySettings(terminal_notifications=enabled, burst=5))
        policy.update(snapshot())
        clock.advance(1)
        pinged[enabled] = sorted(sid for p in policy.due() for sid in p.session_ids)
    assert pinged == {True: ["a", "b", "c", "d", "e"], False: ["d", "e"]}


@pytest.mark.parametrize(
    ("condition", "focus", "when_focused", "typed", "pings"),
    [
        ("unfocused", "unfocused", False, None, True),
        ("unfocused", "focused", False, None, False),
        ("unfocused", "focused", True, None, False),  # the program asked for that
        ("invisible", "focused", True, None, False),
        ("unfocused", "unknown", False, None, True),
        ("unfocused", "unknown", False, -3.0, False),  # typed into just before
        ("invisible", "unknown", False, -3.0, False),
        ("unfocused", "unknown", False, -6.0, True),
        ("unfocused", "unknown", False, 0.5, False),  # typed into just after
        ("always", "focused", False, None, False),
        ("always", "focused", True, None, True),
        ("always", "unknown", False, -3.0, True),  # held back, then shown
        ("always", "unknown", False, 0.5, False),
        ("always", "unfocused", False, -3.0, True),
    ],
)
def test_osc99_condition(
    condition: str, focus: str, when_focused: bool, typed: float | None, pings: bool
) -> None:
    policy, clock = make(PolicySettings(when_focused=when_focused))
    event = att(1, START, "osc99", title="Build", condition=condition)
    before = START + typed if typed is not None and typed < 0 else None
    policy.update([obs(state="working", focus=focus, last_input_at=before, attention=(event,))])
    later = [obs(state="working", focus=focus, last_input_at=before, attention=(event,))]
    if typed is not None and typed > 0:
        clock.now = START + typed
        later = [obs(state="working", focus=focus, last_input_at=clock.now, attention=(event,))]
    shown = run_until(policy, clock, START + 30, later)
    assert len(shown) == (1 if pings else 0)


def test_an_osc99_held_back_by_typing_goes_when_the_grace_ends() -> None:
    policy, clock = make()
    event = att(1, START, "osc99", title="Build")
    snapshot = [obs(state="working", last_input_at=START - 3, attention=(event,))]
    policy.update(snapshot)
    assert policy.next_wakeup() == START + 2.0
    assert [t for t, _ in run_until(policy, clock, START + 10, snapshot, step=0.25)] == [
        START + 2.0
    ]


@pytest.mark.parametrize(
    ("focus", "when_focused", "typed", "pings"),
    [
        ("unfocused", False, None, True),
        ("unfocused", False, -1.0, True),
        ("focused", False, None, False),
        ("focused", True, None, True),
        ("focused", True, -1.0, False),
        ("unknown", False, None, True),
        ("unknown", False, -1.0, False),  # readline's Tab right after a keystroke
        ("unknown", False, -4.5, False),
        ("unknown", False, -5.0, True),
        ("unknown", False, -60.0, True),
    ],
)
def test_the_bell(focus: str, when_focused: bool, typed: float | None, pings: bool) -> None:
    policy, clock = make(PolicySettings(when_focused=when_focused))
    last = None if typed is None else START + typed
    snapshot = [
        obs(state="working", focus=focus, last_input_at=last, attention=(att(1, START, "bell"),))
    ]
    policy.update(snapshot)
    shown = run_until(policy, clock, START + 30, snapshot)
    assert [p.title for _, p in shown] == (["claude-code · s1 rang the bell"] if pings else [])


def test_long_commands_ping_and_short_ones_do_not() -> None:
    policy, clock = make()
    events: list[Attention] = []

    def snapshot() -> list[Observation]:
        return [obs(state="working", focus="unfocused", attention=tuple(events))]

    shown = []
    for at, title, code, seconds in [
        (START, "make test", 0, 125.0),
        (START + 5, "make lint", 2, 31.0),
        (START + 10, "ls", 0, 29.9),
        (START + 15, "sleep", 1, None),
    ]:
        clock.now = at
        events.append(
            att(len(events) + 1, at, "command", title=title, exit_code=code, duration=seconds)
        )
        policy.update(snapshot())
        shown += [(p.title, p.body) for _, p in run_until(policy, clock, at + 4, snapshot())]
    assert shown == [
        ("claude-code · s1: make test finished", "Done in 2m 5s"),
        ("claude-code · s1: make lint failed", "Exited with status 2"),
    ]


def test_commands_follow_the_states_setting() -> None:
    policy, clock = make(PolicySettings(states=frozenset({"error"})))
    events = (
        att(1, START, "command", title="ok", exit_code=0, duration=60),
        att(2, START + 5, "command", title="bad", exit_code=1, duration=60),
    )
    snapshot = [obs(state="working", focus="unfocused", attention=events)]
    policy.update(snapshot)
    assert [p.title for _, p in run_until(policy, clock, START + 20, snapshot)] == [
        "claude-code · s1: bad failed"
    ]


def test_a_command_in_a_focused_session_does_not_pop_up() -> None:
    policy, clock = make()
    events = (att(1, START, "command", title="make", exit_code=0, duration=60),)
    snapshot = [obs(state="working", focus="focused", attention=events)]
    policy.update(snapshot)
    assert run_until(policy, clock, START + 20, snapshot) == []


def test_events_obey_pause_snooze_quiet_hours_and_dedup() -> None:
    policy, clock = make()
    policy.pause(START + 10)
    policy.snooze("b", START + 100)
    events = {
        "a": (att(1, START, "osc9", body="paused"), att(2, START + 20, "osc9", body="again")),
        "b": (att(1, START + 20, "osc9", body="snoozed"),),
        "c": (att(1, START + 20, "osc9", body="same"), att(2, START + 25, "osc9", body="same")),
    }
    snapshot = [obs(sid, "working", focus="unfocused", attention=e) for sid, e in events.items()]
    policy.update(snapshot)
    shown = run_until(policy, clock, START + 40, snapshot)
    assert [(p.session_ids, p.body) for _, p in shown] == [
        (("a",), "again"),
        (("c",), "same"),
    ]
    clock_ = FakeClock(at_minute(23 * 60))
    quiet = NotificationPolicy(PolicySettings(quiet_hours=(22 * 60, 7 * 60)), clock_, utc_minute)
    quiet.update([])
    quiet.update([obs("a", "working", attention=(att(1, clock_.now, "bell"),))])
    assert run_until(quiet, clock_, clock_.now + 10) == []


# -- one event, one ping ---------------------------------------------------------------


def test_a_report_and_a_notification_together_ping_once_with_the_reports_words() -> None:
    policy, clock = make()
    event = att(1, START, body="Claude needs your permission")
    snapshot = [obs(since=START, attention=(event,))]
    policy.update(snapshot)
    clock.advance(1)
    assert policy.due() == [
        Ping(
            "claude-code · s1 needs approval",
            "approve Bash: touch notes.txt",
            "critical",
            ("s1",),
            states=BLOCKED,
            label="claude-code · s1",
        )
    ]
    assert run_until(policy, clock, START + 60, snapshot) == []


def test_a_notification_just_before_the_report_waits_for_it() -> None:
    policy, clock = make()
    event = att(1, START, body="Claude needs your permission")
    policy.update([obs(state="working", attention=(event,))])
    clock.now = START + 0.5
    policy.update([obs(since=START + 0.5, attention=(event,))])
    clock.now = START + 1.0
    assert policy.due() == []
    assert policy.next_wakeup() == START + 1.5
    clock.now = START + 1.5
    assert [p.title for p in policy.due()] == ["claude-code · s1 needs approval"]
    assert run_until(policy, clock, START + 20, [obs(since=START + 0.5, attention=(event,))]) == []


def test_a_notification_whose_report_went_away_pings_on_its_own() -> None:
    policy, clock = make()
    event = att(1, START, body="Claude needs your permission")
    policy.update([obs(since=START + 0.5, attention=(event,))])
    clock.now = START + 0.9
    policy.update([obs(state="working", attention=(event,))])
    clock.now = START + 1.0
    assert [p.body for p in policy.due()] == ["Claude needs your permission"]


@pytest.mark.parametrize(("later", "pings"), [(1.5, 1), (COALESCE, 1), (2.5, 2)])
def test_a_bell_after_a_report_that_pinged(later: float, pings: int) -> None:
    policy, clock = make()
    policy.update([obs(since=START, focus="unfocused")])
    clock.advance(1)
    assert len(policy.due()) == 1
    bell = att(1, START + later, "bell")
    snapshot = [obs(since=START, focus="unfocused", attention=(bell,))]
    clock.now = START + later
    policy.update(snapshot)
    assert len(run_until(policy, clock, START + 20, snapshot)) == pings - 1


@pytest.mark.parametrize(("later", "pings"), [(1.8, 1), (2.5, 2)])
def test_a_report_after_a_notification_that_pinged(later: float, pings: int) -> None:
    policy, clock = make()
    event = att(1, START, body="heads up")
    policy.update([obs(state="working", attention=(event,))])
    clock.advance(1)
    assert len(policy.due()) == 1
    clock.now = START + later
    snapshot = [obs(since=START + later, attention=(event,))]
    policy.update(snapshot)
    assert len(run_until(policy, clock, START + 20, snapshot)) == pings - 1


def test_a_bell_and_a_notification_ping_once_and_the_notification_wins() -> None:
    policy, clock = make()
    bell = att(1, START, "bell")
    note = att(2, START + 0.5, "osc9", body="Agent turn complete")
    policy.update([obs(state="working", attention=(bell,))])
    clock.now = START + 0.5
    snapshot = [obs(state="working", attention=(bell, note))]
    policy.update(snapshot)
    clock.now = START + 1.0
    assert policy.due() == []
    assert policy.next_wakeup() == START + 1.5
    clock.now = START + 1.5
    assert [p.body for p in policy.due()] == ["Agent turn complete"]
    assert run_until(policy, clock, START + 20, snapshot) == []


def test_coalescing_is_per_session() -> None:
    policy, clock = make()
    policy.update([obs("a", since=START), obs("b", "working", attention=(att(1, START, "bell"),))])
    clock.advance(1)
    assert ids(policy.due()) == [("a",), ("b",)]


def test_a_duplicate_report_absorbs_its_notification() -> None:
    policy, clock = make()
    policy.update([obs(since=START)])
    clock.advance(1)
    assert len(policy.due()) == 1
    policy.update([obs(state="working")])
    clock.now = START + 3
    again = [obs(since=START + 3, attention=(att(1, START + 3, body="needs you"),))]
    policy.update(again)
    assert run_until(policy, clock, START + 20, again) == []


def test_a_notification_absorbed_by_a_report_told_by_focus_stays_quiet() -> None:
    policy, clock = make(PolicySettings(remind=0))
    snapshot = [obs(since=START, focus="focused", attention=(att(1, START, body="x"),))]
    policy.update(snapshot)
    unfocused = [replace(o, focus="unfocused") for o in snapshot]
    clock.advance(1)
    assert policy.due() == []
    assert run_until(policy, clock, START + 20, unfocused) == []


# -- child records ---------------------------------------------------------------------


def test_observe_gives_the_lead_and_every_other_blocked_record() -> None:
    s = sess(
        record("", "blocked", kind="question", msg="root asks", at=1100.0, since=1100.0),
        record(
            "agent/1",
            "blocked",
            kind="permission",
            msg="approve Bash: npm test",
            title="test-runner",
            at=1200.0,
            since=1190.0,
        ),
        record("agent/2", "blocked", kind="question", msg="which branch?", at=1300.0, since=1300.0),
        record("agent/3", "working", at=1350.0),
        record("agent/4", "blocked", title="  ", at=1000.0, since=1000.0),
        focus="unfocused",
        last_input_at=1050.0,
    )
    lead, *others = observe(s, "api-server", 1400.0)
    assert lead == observe_session(s, "api-server", 1400.0)
    assert (lead.record_id, lead.lead, lead.child, lead.since) == ("agent/2", True, None, 1300.0)
    assert [(o.record_id, o.lead, o.child, o.since, o.msg) for o in others] == [
        ("", False, None, 1100.0, "root asks"),
        ("agent/1", False, "test-runner", 1190.0, "approve Bash: npm test"),
        ("agent/4", False, "agent/4", 1000.0, None),
    ]
    assert all((o.focus, o.last_input_at, o.attention) == ("unfocused", 1050.0, ()) for o in others)


def test_observe_gives_only_the_session_when_it_is_not_blocked() -> None:
    s = sess(record("", "working"), record("agent/1", "done", at=1100.0))
    assert [o.record_id for o in observe(s, "L", 1400.0)] == [""]


def test_a_blocked_child_pings_with_its_own_title() -> None:
    policy, clock = make()
    s = sess(
        record("", "blocked", kind="question", msg="Which database?", at=START, since=START),
        record(
            "agent/1",
            "blocked",
            kind="permission",
            msg="approve Bash: npm test",
            title="test-runner",
            at=START - 1,
            since=START - 1,
        ),
    )
    policy.update(observe(s, "api-server", clock.now))
    clock.advance(1)
    assert policy.due() == [
        Ping(
            "api-server · test-runner needs approval",
            "approve Bash: npm test",
            "critical",
            ("s1",),
            "agent/1",
            states=BLOCKED,
            label="api-server",
            # A permission prompt of claude-code: the notification can answer it.
            answer=AnswerTarget("s1", "agent/1", START - 1),
        ),
        Ping(
            "api-server needs an answer",
            "Which database?",
            "normal",
            ("s1",),
            None,
            states=BLOCKED,
            label="api-server",
        ),
    ]


def test_a_prompt_is_never_pinged_twice_when_it_stops_leading() -> None:
    policy, clock = make()
    first = record("agent/1", "blocked", kind="permission", msg="approve A", at=START, since=START)
    second = record("agent/2", "blocked", kind="question", msg="B?", at=START + 5, since=START + 5)
    answered = record("agent/2", "working", at=START + 10, since=START + 10)
    script = [(START, (first,)), (START + 5, (first, second)), (START + 10, (first, answered))]
    shown: list[tuple[float, Ping]] = []
    for index, (at, records) in enumerate(script):
        clock.now = at
        end = script[index + 1][0] if index + 1 < len(script) else START + 60
        snapshot = observe(sess(*records), "api", at)
        policy.update(snapshot)
        shown += run_until(policy, clock, end - 0.5, snapshot)
    assert [(t - START, p.title, p.record_id) for t, p in shown] == [
        (1.0, "api needs approval", None),
        (6.0, "api needs an answer", None),
    ]


def test_each_child_prompt_settles_on_its_own() -> None:
    policy, clock = make()
    snapshot = [
        obs(state="working"),
        obs(since=START, record_id="a/1", child="one", msg="first"),
        obs(since=START + 0.5, record_id="a/2", child="two", msg="second"),
    ]
    clock.now = START + 0.5
    policy.update(snapshot)
    shown = run_until(policy, clock, START + 5, snapshot, step=0.25)
    assert [(t - START, p.title, p.record_id) for t, p in shown] == [
        (1.0, "claude-code · s1 · one needs approval", "a/1"),
        (1.5, "claude-code · s1 · two needs approval", "a/2"),
    ]


# -- reminders -------------------------------------------------------------------------


def test_the_reminder_schedule() -> None:
    assert [reminder_offset(k, 300) / 60 for k in range(7)] == [5, 10, 20, 40, 100, 160, 220]
    assert [reminder_offset(k, 3600) / 3600 for k in range(6)] == [1, 2, 4, 8, 9, 10]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(45.5, "45s"), (60, "1m"), (1504.9, "25m"), (6000, "1h 40m"), (90061, "1d 1h")],
)
def test_waited_text(seconds: float, text: str) -> None:
    assert waited_text(seconds) == text


def test_reminder_wording() -> None:
    ping = reminder_ping(obs(kind="question", msg=None, label="L"), 1500.4)
    assert ping == Ping(
        "L needs an answer",
        "Waiting for your answer (still waiting, 25m)",
        "normal",
        ("s1",),
        None,
        "reminder",
        BLOCKED,
        "L",
    )


def test_a_waiting_prompt_is_reminded_on_schedule() -> None:
    policy, clock = make()
    snapshot = [obs(since=START, focus="unfocused")]
    policy.update(snapshot)
    shown = follow(policy, clock, START + 4 * 3600, lambda: snapshot)
    assert [(t - START, p.body, p.reminder) for t, p in shown] == [
        (1.0, "approve Bash: touch notes.txt", False),
        (300.0, "approve Bash: touch notes.txt (still waiting, 5m)", True),
        (600.0, "approve Bash: touch notes.txt (still waiting, 10m)", True),
        (1200.0, "approve Bash: touch notes.txt (still waiting, 20m)", True),
        (2400.0, "approve Bash: touch notes.txt (still waiting, 40m)", True),
        (6000.0, "approve Bash: touch notes.txt (still waiting, 1h 40m)", True),
        (9600.0, "approve Bash: touch notes.txt (still waiting, 2h 40m)", True),
        (13200.0, "approve Bash: touch notes.txt (still waiting, 3h 40m)", True),
    ]
    assert {p.title for _, p in shown} == {"claude-code · s1 needs approval"}


def test_remind_zero_turns_reminders_off() -> None:
    policy, clock = make(PolicySettings(remind=0))
    snapshot = [obs(since=START, focus="unfocused")]
    policy.update(snapshot)
    assert len(follow(policy, clock, START + 86400, lambda: snapshot)) == 1
    assert policy.next_wakeup() is None


def test_finished_states_are_not_reminded() -> None:
    policy, clock = make()
    snapshot = [obs("e", "error", since=START), obs("d", "done", since=START, run_seconds=99)]
    policy.update(snapshot)
    assert len(follow(policy, clock, START + 86400, lambda: snapshot)) == 2
    assert policy.next_wakeup() is None


def test_an_answered_prompt_is_not_reminded() -> None:
    policy, clock = make()
    policy.update([obs(since=START)])
    clock.advance(1)
    assert len(policy.due()) == 1
    clock.advance(100)
    policy.update([obs(state="working")])
    assert policy.next_wakeup() is None


def test_a_reminder_for_a_focused_session_is_skipped_and_the_next_keeps_its_time() -> None:
    policy, clock = make()
    focus = {"now": "unfocused"}

    def snapshot() -> list[Observation]:
        return [obs(since=START, focus=focus["now"])]

    policy.update(snapshot())
    shown = follow(policy, clock, START + 299, snapshot)
    focus["now"] = "focused"
    shown += follow(policy, clock, START + 599, snapshot)
    focus["now"] = "unfocused"
    shown += follow(policy, clock, START + 600, snapshot)
    assert [(t - START, p.reminder) for t, p in shown] == [(1.0, False), (600.0, True)]


def test_a_prompt_the_person_saw_is_still_reminded_once_they_look_away() -> None:
    policy, clock = make()
    focus = {"now": "focused"}

    def snapshot() -> list[Observation]:
        return [obs(since=START, focus=focus["now"])]

    policy.update(snapshot())
    assert follow(policy, clock, START + 100, snapshot) == []
    focus["now"] = "unfocused"
    shown = follow(policy, clock, START + 300, snapshot)
    assert [(t - START, p.body) for t, p in shown] == [
        (300.0, "approve Bash: touch notes.txt (still waiting, 5m)")
    ]


def test_reminders_are_dropped_while_paused_and_carry_on_after() -> None:
    policy, clock = make()
    snapshot = [obs(since=START, focus="unfocused")]
    policy.update(snapshot)
    clock.advance(1)
    assert len(policy.due()) == 1
    clock.now = START + 250
    policy.pause(START + 700)
    shown = follow(policy, clock, START + 1200, lambda: snapshot)
    assert [t - START for t, _ in shown] == [1200.0]


def test_reminders_skip_dedup_but_not_the_burst() -> None:
    policy, clock = make(PolicySettings(burst=1, dedup_window=3600))
    snapshot = [obs(f"s{i}", since=START, focus="unfocused") for i in range(4)]
    policy.update(snapshot)
    clock.advance(1)
    assert [len(p.session_ids) for p in policy.due()] == [1, 3]
    clock.now = START + 300
    policy.update(snapshot)
    pings = policy.due()
    assert [len(p.session_ids) for p in pings] == [1, 3]
    assert pings[0].reminder
    assert pings[1].title == "3 sessions need you"


def test_typing_holds_a_reminder_back() -> None:
    policy, clock = make()
    policy.update([obs(since=START)])
    clock.advance(1)
    assert len(policy.due()) == 1
    clock.now = START + 299
    typed = [obs(since=START, last_input_at=START + 299)]
    policy.update(typed)
    assert policy.next_wakeup() == START + 304
    shown = follow(policy, clock, START + 400, lambda: typed)
    assert [(t - START, p.body) for t, p in shown] == [
        (304.0, "approve Bash: touch notes.txt (still waiting, 5m)")
    ]


def test_a_late_first_ping_is_not_followed_at_once_by_a_reminder() -> None:
    clock = FakeClock()
    policy = NotificationPolicy(PolicySettings(), clock, utc_minute)
    snapshot = [obs(since=START - 295, focus="unfocused")]
    policy.update(snapshot)  # the tray starts while the prompt has waited for 295 s
    assert len(policy.due()) == 1
    assert policy.next_wakeup() == START + 305  # the 10-minute one; 5 s later is too soon


def test_a_child_prompt_gets_reminders_of_its_own() -> None:
    policy, clock = make(PolicySettings(remind=60))
    snapshot = [
        obs(state="working", focus="unfocused"),
        obs(
            since=START,
            record_id="agent/1",
            child="test-runner",
            msg="approve Bash: npm test",
            label="api-server",
            focus="unfocused",
        ),
    ]
    policy.update(snapshot)
    shown = follow(policy, clock, START + 60, lambda: snapshot)
    assert shown[-1] == (
        START + 60,
        Ping(
            "api-server · test-runner needs approval",
            "approve Bash: npm test (still waiting, 1m)",
            "critical",
            ("s1",),
            "agent/1",
            "reminder",
            BLOCKED,
            "api-server",
        ),
    )


# -- snooze ----------------------------------------------------------------------------


def test_snooze_mutes_one_session_and_its_reminders_carry_on_after() -> None:
    policy, clock = make()
    policy.snooze("a", START + 3600)
    assert policy.snoozed_until("a") == START + 3600
    assert policy.snoozed_until("b") is None
    snapshot = [obs("a", since=START, focus="unfocused"), obs("b", "error", since=START)]
    policy.update(snapshot)
    shown = follow(policy, clock, START + 7200, lambda: snapshot)
    assert [(t - START, p.session_ids, p.reminder) for t, p in shown] == [
        (1.0, ("b",), False),
        (6000.0, ("a",), True),
    ]
    assert policy.snoozed_until("a") is None


def test_unsnooze_ends_the_snooze() -> None:
    policy, clock = make()
    policy.snooze("s1", START + 3600)
    clock.advance(5)
    policy.unsnooze("s1")
    assert policy.snoozed_until("s1") is None
    policy.update([obs()])
    clock.advance(1)
    assert ids(policy.due()) == [("s1",)]


def test_a_ping_due_during_a_snooze_is_dropped_even_if_asked_later() -> None:
    policy, clock = make()
    policy.update([obs()])
    policy.snooze("s1", START + 5)
    clock.advance(30)
    assert policy.due() == []


def test_a_snooze_in_the_past_does_nothing() -> None:
    policy, clock = make()
    policy.snooze("s1", START - 1)
    assert policy.snoozed_until("s1") is None
    policy.update([obs()])
    clock.advance(1)
    assert len(policy.due()) == 1


# -- bounded ---------------------------------------------------------------------------


def test_a_session_missing_from_one_snapshot_does_not_replay_its_events() -> None:
    policy, clock = make()
    events = (att(1, START, body="one"),)
    policy.update([obs(state="working", attention=events)])
    clock.advance(2)
    assert len(policy.due()) == 1
    policy.update([])  # a read that missed the file
    clock.advance(1)
    policy.update([obs(state="working", attention=events)])
    assert run_until(policy, clock, START + 20) == []


def test_state_stays_bounded_as_sessions_come_and_go() -> None:
    policy, clock = make(PolicySettings(settle=0, done_after=0))
    for index in range(2000):
        sid = f"s{index}"
        events = (att(1, clock.now, "bell"), att(2, clock.now, "osc9", body=sid))
        policy.update([obs(sid, "error", focus="unfocused", attention=events)])
        policy.snooze(sid, clock.now + 5)
        policy.due()
        clock.advance(0.5)
    # The policy's own tables: this is the test of their bounds.
    sizes = [len(policy._seq), len(policy._seen_at), len(policy._claims), len(policy._snoozes)]
    assert max(sizes) <= 256 + 1  # the sessions kept after they vanish, and the present one
    policy.update([])
    clock.advance(RETAIN + 60)
    policy.update([])
    policy.due()
    assert (policy._seq, policy._seen_at, policy._claims, policy._snoozes) == ({}, {}, {}, {})
    assert (policy._prompts, policy._events, policy._handled) == ({}, {}, {})


# -- properties over every kind of input -----------------------------------------------

RICH_SESSIONS = ["a", "b", "c", "d"]
EVENT_SOURCES = ["osc9", "osc777", "osc99", "bell", "command"]

# A new attention event: source, OSC 99 condition, exit status, whether it has a title.
new_event = st.tuples(
    st.sampled_from(EVENT_SOURCES),
    st.sampled_from(["always", "unfocused", "invisible"]),
    st.sampled_from([0, 2]),
    st.booleans(),
)
rich_snapshot = st.lists(
    st.tuples(
        st.sampled_from(STATE_CHOICES),
        st.sampled_from([None, "permission", "question"]),
        st.sampled_from([None, "x", "y"]),
        st.booleans(),  # typing right now
        st.sampled_from(["focused", "unfocused", "unknown"]),
        st.one_of(st.none(), new_event),
        st.booleans(),  # whether since is reported
        st.booleans(),  # a blocked child record besides
    ),
    min_size=len(RICH_SESSIONS),
    max_size=len(RICH_SESSIONS),
)
EventSpec = tuple[str, str, int, bool]
SessionSpec = tuple[str | None, str | None, str | None, bool, str, EventSpec | None, bool, bool]
Action = tuple[str, str, float]  # (what, session, seconds)
RichTick = tuple[Action | None, list[SessionSpec] | None, bool, float]
action = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.tuples(st.just("pause"), st.just(""), st.sampled_from([3.0, 60.0])),
    st.just(("resume", "", 0.0)),
    st.tuples(st.just("snooze"), st.sampled_from(RICH_SESSIONS), st.sampled_from([3.0, 400.0])),
    st.tuples(st.just("unsnooze"), st.sampled_from(RICH_SESSIONS), st.just(0.0)),
)
rich_tick = st.tuples(
    action,
    st.one_of(st.none(), rich_snapshot),
    st.booleans(),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.5, 5.0, 31.0, 200.0]),
)
rich_settings = st.builds(
    PolicySettings,
    settle=st.sampled_from([0.0, 0.5, 1.0]),
    dedup_window=st.sampled_from([0.0, 5.0, 30.0]),
    burst=st.integers(min_value=0, max_value=4),
    burst_window=st.sampled_from([2.5, 10.0]),
    typing_grace=st.sampled_from([0.0, 5.0]),
    done_after=st.sampled_from([0.0, 30.0]),
    when_focused=st.booleans(),
    terminal_notifications=st.booleans(),
    remind=st.sampled_from([0.0, 5.0, 60.0]),
)


@dataclass
class RichRun:
    pings: list[tuple[float, Ping]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def play_rich(config: PolicySettings, ticks: list[RichTick]) -> RichRun:
    """Drives the policy as the app would, checking after each due() what must hold."""
    clock = FakeClock()
    policy = NotificationPolicy(config, clock, utc_minute)
    run = RichRun()
    pauses: list[list[float]] = []
    snoozes: dict[str, list[list[float]]] = {s: [] for s in RICH_SESSIONS}
    focus = dict.fromkeys(RICH_SESSIONS, "unknown")
    typed: dict[str, float | None] = dict.fromkeys(RICH_SESSIONS)
    conditions: dict[str, tuple[str | None, ...]] = {}
    since: dict[str, float] = {}
    events: dict[str, list[Attention]] = {s: [] for s in RICH_SESSIONS}
    promised: float = math.inf

    def end(spans: list[list[float]]) -> None:
        for span in spans:
            span[1] = min(span[1], clock.now)

    for act, snapshot_, call_due, seconds in ticks:
        if act is not None:
            what, target, length = act
            if what == "pause":
                end(pauses)
                pauses.append([clock.now, clock.now + length])
                policy.pause(clock.now + length)
            elif what == "resume":
                end(pauses)
                policy.resume()
            elif what == "snooze":
                end(snoozes[target])
                snoozes[target].append([clock.now, clock.now + length])
                policy.snooze(target, clock.now + length)
            else:
                end(snoozes[target])
                policy.unsnooze(target)
        if snapshot_ is not None:
            observations: list[Observation] = []
            for sid, entry in zip(RICH_SESSIONS, snapshot_, strict=True):
                state, kind, msg, typing, seen, event, report, child = entry
                focus[sid] = seen
                if typing:
                    typed[sid] = clock.now
                if conditions.get(sid) != (state, kind, msg):
                    conditions[sid] = (state, kind, msg)
                    since[sid] = clock.now
                if event is not None:
                    source, condition, code, titled = event
                    command = source == "command"
                    events[sid].append(
                        Attention(
                            len(events[sid]) + 1,
                            clock.now,
                            source,
                            "T" if titled else None,
                            "B",
                            condition,
                            code if command else None,
                            40.0 if command else None,
                        )
                    )
                lead = Observation(
                    session_id=sid,
                    label=sid.upper(),
                    state=state,
                    kind=kind,
                    msg=msg,
                    run_seconds=60.0,
                    last_input_at=typed[sid],
                    record_id="" if state in ("blocked", "error", "done") else None,
                    since=since[sid] if report else None,
                    focus=seen,
                    attention=tuple(events[sid][-8:]),
                )
                observations.append(lead)
                if child:
                    observations.append(
                        replace(
                            lead,
                            state="blocked",
                            kind="permission",
                            msg="child",
                            record_id="agent/1",
                            lead=False,
                            child="helper",
                            since=START,
                            attention=(),
                        )
                    )
            policy.update(observations)
        if act is not None or snapshot_ is not None:
            # A new snapshot or a pause changes what may come; the promise is renewed.
            wakeup = policy.next_wakeup()
            promised = math.inf if wakeup is None else wakeup
        if call_due:
            pings = policy.due()
            if pings and clock.now < promised:
                run.violations.append(f"early at {clock.now}")
            for ping in pings:
                run.pings.append((clock.now, ping))
                if any(a <= clock.now < b for a, b in pauses):
                    run.violations.append(f"paused at {clock.now}")
                for sid in ping.session_ids:
                    if any(a <= clock.now < b for a, b in snoozes[sid]):
                        run.violations.append(f"{sid} snoozed at {clock.now}")
                    if focus[sid] == "focused" and not config.when_focused:
                        run.violations.append(f"{sid} focused at {clock.now}")
                if len(set(ping.session_ids)) != len(ping.session_ids) or not ping.session_ids:
                    run.violations.append(f"bad session ids {ping.session_ids}")
        wakeup = policy.next_wakeup()
        promised = math.inf if wakeup is None else wakeup
        clock.advance(seconds)
    return run


@settings(max_examples=400, deadline=None)
@given(rich_settings, st.lists(rich_tick, max_size=40))
def test_rich_nothing_while_paused_snoozed_or_focused_and_never_early(
    config: PolicySettings, ticks: list[RichTick]
) -> None:
    assert play_rich(config, ticks).violations == []


@settings(max_examples=300, deadline=None)
@given(rich_settings, st.lists(rich_tick, max_size=40))
def test_rich_never_more_than_burst_plus_one_in_any_window(
    config: PolicySettings, ticks: list[RichTick]
) -> None:
    times = [t for t, _ in play_rich(config, ticks).pings]
    for start in times:
        inside = sum(1 for t in times if start <= t < start + config.burst_window)
        assert inside <= config.burst + 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(rich_settings, st.lists(rich_tick, max_size=40))
def test_rich_the_policy_is_deterministic(config: PolicySettings, ticks: list[RichTick]) -> None:
    first = play_rich(config, ticks)
    assume(first.pings)  # as above: only runs that send something say anything
    assert play_rich(config, ticks) == first


# Answered through tray: the prompt, its reminders and the state right after are quiet.


def _answered_session(*records: Record, answered: tuple[str, float] | None) -> Session:
    mark = None if answered is None else Answered(answered[0], answered[1], "deny", START + 5)
    return sess(*records, answered=mark, started_at=START - 600)


def _prompt(since: float = START, msg: str = "approve Bash: ls") -> Record:
    return record("", "blocked", kind="permission", msg=msg, at=since, since=since)


def test_a_prompt_ping_carries_what_answers_it_and_its_reminder_too() -> None:
    policy, clock = make(PolicySettings(remind=30))
    snapshot = observe(_answered_session(_prompt(), answered=None), "api", clock.now)
    shown = [p for _, p in run_until(policy, clock, START + 40, snapshot)]
    assert [p.kind for p in shown] == ["single", "reminder"]
    assert {p.answer for p in shown} == {AnswerTarget("s1", "", START)}


def test_no_answer_for_an_app_without_keys_or_with_answering_off() -> None:
    prompt = _prompt()
    other = Record("", "blocked", "permission", None, "aider", None, "ok?", START, START)
    assert observe(_answered_session(other, answered=None), "api", START)[0].answer is None
    off = AnswerSettings(enabled=False)
    assert observe(_answered_session(prompt, answered=None), "api", START, off)[0].answer is None
    question = record("", "blocked", kind="question", msg="which?", at=START, since=START)
    assert observe(_answered_session(question, answered=None), "api", START)[0].answer is None


def test_once_answered_the_prompt_and_its_reminders_stop() -> None:
    policy, clock = make(PolicySettings(remind=30))
    snapshot = observe(_answered_session(_prompt(), answered=None), "api", clock.now)
    assert len(run_until(policy, clock, START + 5, snapshot)) == 1
    policy.answered("s1", "", START)
    # The launcher's file may show the prompt a moment longer: still nothing.
    assert run_until(policy, clock, START + 600, snapshot) == []


def test_a_prompt_the_file_says_was_answered_never_pings() -> None:
    policy, clock = make(PolicySettings(remind=30))
    s = _answered_session(_prompt(), answered=("", START))
    assert run_until(policy, clock, START + 600, observe(s, "api", clock.now)) == []


def test_the_state_right_after_an_answer_does_not_ping() -> None:
    policy, clock = make(PolicySettings(done_after=0))
    blocked = _answered_session(_prompt(), answered=None)
    assert len(run_until(policy, clock, START + 3, observe(blocked, "api", clock.now))) == 1
    done = _answered_session(
        record("", "done", msg="stopped", at=START + 6, since=START + 6), answered=("", START)
    )
    assert run_until(policy, clock, START + 60, observe(done, "api", clock.now)) == []


def test_a_later_state_after_the_answer_pings_again() -> None:
    policy, clock = make(PolicySettings(done_after=0))
    blocked = _answered_session(_prompt(), answered=None)
    run_until(policy, clock, START + 3, observe(blocked, "api", clock.now))
    working = _answered_session(
        record("", "working", at=START + 6, since=START + 6), answered=("", START)
    )
    run_until(policy, clock, START + 10, observe(working, "api", clock.now))
    done = _answered_session(
        record("", "done", msg="all set", at=START + 20, since=START + 20), answered=("", START)
    )
    shown = [
        p.title for _, p in run_until(policy, clock, START + 40, observe(done, "api", clock.now))
    ]
    assert shown == ["api finished"]


def test_a_new_prompt_right_after_an_answer_still_pings() -> None:
    policy, clock = make()
    run_until(
        policy,
        clock,
        START + 3,
        observe(_answered_session(_prompt(), answered=None), "api", clock.now),
    )
    # (Another command: the same words again within the dedup window would not ping.)
    again = _answered_session(_prompt(START + 6, "approve Bash: rm x"), answered=("", START))
    shown = run_until(policy, clock, START + 20, observe(again, "api", clock.now))
    assert [p.answer for _, p in shown] == [AnswerTarget("s1", "", START + 6)]


def test_an_answer_of_one_record_leaves_another_prompt_alone() -> None:
    policy, clock = make()
    s = _answered_session(
        record("", "blocked", kind="permission", msg="root asks", at=START, since=START),
        record("agent/1", "blocked", kind="permission", msg="child", at=START, since=START),
        answered=("agent/1", START),
    )
    shown = run_until(policy, clock, START + 20, observe(s, "api", clock.now))
    assert [p.answer for _, p in shown] == [AnswerTarget("s1", "", START)]
