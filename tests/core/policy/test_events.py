"""Attention events (OSC 9, 777, 99, the bell, long commands) ping, and a report and an
event of one moment ping once."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers.policy_scenarios import (
    BLOCKED,
    START,
    FakeClock,
    at_minute,
    att,
    ids,
    make,
    obs,
    run_until,
    utc_minute,
)

from tray.core.config.settings import PolicySettings
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.observe import Observation
from tray.core.policy.schedule import COALESCE
from tray.core.policy.wording import Ping, attention_ping
from tray.core.session.model import Attention
from tray.protocol.state import State

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
    policy, clock = make(PolicySettings(states=frozenset({State.ERROR})))
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
