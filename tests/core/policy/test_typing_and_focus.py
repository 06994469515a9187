"""The notification policy and the person at the terminal: typing holds a ping back or
means it was seen, and a focused session never pops up."""

from __future__ import annotations

from helpers.policy_scenarios import START, ids, make, obs, run_until

from tray.core.config.settings import PolicySettings

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
