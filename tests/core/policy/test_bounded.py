"""What the policy remembers stays bounded, and a file missed for one read replays
nothing."""

from __future__ import annotations

from helpers.policy_scenarios import START, att, make, obs, run_until

from tray.core.config.settings import PolicySettings
from tray.core.policy.notification_policy import RETAIN

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
    # The policy's own tables: this is the test of their bounds, and NotificationPolicy
    # has no public view of them.
    sizes = [
        len(policy._seq),
        len(policy._seen_at),
        len(policy._claims),
        len(policy._mutes._snoozes),
    ]
    assert max(sizes) <= 256 + 1  # the sessions kept after they vanish, and the present one
    policy.update([])
    clock.advance(RETAIN + 60)
    policy.update([])
    policy.due()
    assert (policy._seq, policy._seen_at, policy._claims, policy._mutes._snoozes) == (
        {},
        {},
        {},
        {},
    )
    assert (policy._prompts, policy._events, policy._handled) == ({}, {}, {})
