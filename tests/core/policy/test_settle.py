"""The notification policy's settle and dedup: a condition pings once it has held for
``settle``, counted from the launcher's ``since`` (so flapping never pings however it
is sampled), and the same news pings at most once per ``dedup_window``."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from helpers.policy_scenarios import BLOCKED, START, ids, make, obs, record, sess
from hypothesis import given, settings
from hypothesis import strategies as st

from tray.core.config.settings import PolicySettings
from tray.core.policy.observe import observe
from tray.core.policy.wording import Ping
from tray.core.session.model import Session

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
