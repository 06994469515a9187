"""The notification policy's pause, quiet hours and snooze: they drop, never postpone,
what falls due under them."""

from __future__ import annotations

import pytest
from helpers.policy_scenarios import START, FakeClock, at_minute, follow, ids, make, obs, utc_minute

from tray.core.config.settings import PolicySettings
from tray.core.policy.notification_policy import NotificationPolicy

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
