"""The notification policy's burst budget: at most ``burst`` single pings a window, the
rest in one summary, the most urgent first."""

from __future__ import annotations

import pytest
from helpers.policy_scenarios import BLOCKED, START, ids, make, obs, run_until

from tray.core.config.settings import PolicySettings
from tray.core.policy.wording import Ping, ping_for, summary_ping

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
