"""While the user is away from the desk, a focused terminal is not being looked at: its
prompt pings (so it can follow the user to the phone), and so do its reminders."""

from __future__ import annotations

from helpers.policy_scenarios import START, ids, make, obs, run_until

from tray.core.config.settings import PolicySettings
from tray.core.policy.schedule import reminder_offset


def test_a_focused_session_pings_while_the_user_is_away() -> None:
    policy, clock = make(PolicySettings(remind=0))
    policy.set_away(True)
    policy.update([obs(focus="focused")])
    clock.advance(1)
    assert ids(policy.due()) == [("s1",)]


def test_a_focused_prompt_told_while_present_is_reminded_once_the_user_leaves() -> None:
    remind = 60.0
    policy, clock = make(PolicySettings(remind=remind))
    snapshot = [obs(focus="focused")]
    policy.update(snapshot)
    # At the desk, looking at it: neither the ping nor the first reminder shows.
    assert run_until(policy, clock, START + reminder_offset(0, remind) + 1, snapshot) == []
    policy.set_away(True)
    shown = run_until(policy, clock, START + reminder_offset(1, remind) + 1, snapshot)
    assert [(ping.kind, ping.session_ids) for _, ping in shown] == [("reminder", ("s1",))]
    # Back at the desk: the focused prompt is quiet again.
    policy.set_away(False)
    assert run_until(policy, clock, START + reminder_offset(2, remind) + 1, snapshot) == []
