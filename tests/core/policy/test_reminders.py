"""Reminders: a prompt still waiting pings again on a doubling schedule, obeying pause,
snooze, focus, typing and the burst, but not dedup."""

from __future__ import annotations

import pytest
from helpers.policy_scenarios import BLOCKED, START, FakeClock, follow, make, obs, utc_minute

from tray.core.config.settings import PolicySettings
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.observe import Observation
from tray.core.policy.schedule import reminder_offset
from tray.core.policy.wording import Ping, reminder_ping, waited_text

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
