"""The notification policy: settle, dedup, burst, typing, pause, quiet hours, wording."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tray.app.policy import (
    NotificationPolicy,
    Observation,
    Ping,
    observe_session,
    ping_for,
    summary_ping,
)
from tray.config import PolicySettings
from tray.protocol.records import Record
from tray.session import Session

START = 1_000_020.0  # an exact multiple of 60, so local minutes are easy to read


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
        )
    ]
    clock.advance(100)
    assert policy.due() == []
    assert policy.next_wakeup() is None


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


def test_a_waiting_ping_is_cancelled_when_the_session_moves_on() -> None:
    policy, clock = make(PolicySettings(burst=1))
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
    ping = summary_ping(observations)
    assert ping.title == title
    assert ping.session_ids == tuple(f"s{i}" for i in range(len(states)))
    assert ping.urgency == "normal"


def test_a_summary_of_one_reads_like_a_single_ping() -> None:
    assert summary_ping([obs()]) == ping_for(obs())


# -- typing ----------------------------------------------------------------------------


def test_no_ping_while_the_person_types_into_the_session() -> None:
    policy, clock = make()
    policy.update([obs(last_input_at=START)])
    clock.advance(1)
    assert policy.due() == []
    clock.advance(10)  # dropped, not postponed
    assert policy.due() == []
    assert policy.next_wakeup() is None


def test_typing_grace_edge() -> None:
    policy, _ = make(PolicySettings(settle=0, typing_grace=5))
    policy.update([obs("a", last_input_at=START - 4.5)])
    assert policy.due() == []
    policy.update([obs("a", last_input_at=START - 4.5), obs("b", last_input_at=START - 5)])
    assert ids(policy.due()) == [("b",)]


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
    policy.update([obs(last_input_at=START)])
    clock.advance(1)
    assert policy.due() == []
    policy.update([obs(state="working")])
    clock.advance(6)
    policy.update([obs()])
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
    assert ping_for(obs(kind=kind, msg=None, label="L")) == Ping(title, body, urgency, ("s1",))  # type: ignore[arg-type]
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
    assert o == Observation("s1", "L", "blocked", "permission", "approve", None, True, None, 1150.0)


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
        st.booleans(),  # typing right now
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
    st.one_of(st.none(), snapshot),
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


@settings(max_examples=300, deadline=None)
@given(scenarios)
def test_never_more_than_burst_plus_one_in_any_window(scenario: Scenario) -> None:
    run = play(scenario)
    times = [t for _, t, _ in run.pings]
    window = scenario.settings.burst_window
    for start in times:
        inside = sum(1 for t in times if start <= t < start + window)
        assert inside <= scenario.settings.burst + 1


@settings(max_examples=300, deadline=None)
@given(scenarios)
def test_no_ping_without_settling_in_a_pinging_state(scenario: Scenario) -> None:
    run = play(scenario)
    for index, moment, ping in run.pings:
        for session_id in ping.session_ids:
            state, since = state_entered(run.history[session_id], index)
            assert state in {"blocked", "error", "done"}
            assert moment - since >= scenario.settings.settle


@settings(max_examples=300, deadline=None)
@given(scenarios)
def test_no_ping_while_paused(scenario: Scenario) -> None:
    run = play(scenario)
    assert run.paused_pings == []


@settings(max_examples=200, deadline=None)
@given(scenarios)
def test_the_policy_is_deterministic(scenario: Scenario) -> None:
    assert play(scenario) == play(scenario)


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
