"""What the policy sees of a session (observe, observe_session): the lead record, each
other blocked record, run times; and child prompts pinging on their own."""

from __future__ import annotations

from helpers.answer_keys import SHIPPED_SETTINGS
from helpers.policy_scenarios import BLOCKED, START, ids, make, obs, record, run_until, sess

from tray.core.answers.target import AnswerTarget
from tray.core.policy.observe import Observation, observe, observe_session
from tray.core.policy.wording import Ping
from tray.protocol.records import Record
from tray.protocol.state import State

# -- observing a session ---------------------------------------------------------------


def rec(state: str, record_id: str = "", at: float = 0.0, **extra: str | None) -> Record:
    return Record(
        record_id, State(state), extra.get("kind"), None, "claude-code", None, extra.get("msg"), at
    )


def test_observe_a_blocked_session() -> None:
    s = sess(
        rec("working", at=1100.0, msg="root"),
        rec("blocked", "t/1", at=1200.0, kind="permission", msg="approve"),
        last_input_at=1150.0,
    )
    o = observe_session(s, "L", now=1300.0)
    assert o == Observation(
        "s1", "L", State.BLOCKED, "permission", "approve", None, True, None, 1150.0, record_id="t/1"
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
    policy.update(observe(s, "api-server", clock.now, SHIPPED_SETTINGS))
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
