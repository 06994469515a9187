"""Answered through tray: the prompt, its reminders and the state right after are quiet;
what a ping offers to answer it."""

from __future__ import annotations

from helpers.answer_keys import SHIPPED_SETTINGS
from helpers.policy_scenarios import START, make, record, run_until, sess

from tray.core.answers.gate import AnswerSettings
from tray.core.answers.target import AnswerTarget
from tray.core.config.settings import PolicySettings
from tray.core.policy import observe as observing
from tray.core.session.model import Answered, Session
from tray.protocol.records import Record
from tray.protocol.state import Answer, State

# Answered through tray: the prompt, its reminders and the state right after are quiet.


def observe(
    session: Session, label: str, now: float, answering: AnswerSettings = SHIPPED_SETTINGS
) -> list[observing.Observation]:
    """The policy's view with the shipped keys: Claude Code's prompts can be answered."""
    return observing.observe(session, label, now, answering)


def _answered_session(*records: Record, answered: tuple[str, float] | None) -> Session:
    mark = None if answered is None else Answered(answered[0], answered[1], Answer.DENY, START + 5)
    return sess(*records, answered=mark, started_at=START - 600)


def _prompt(since: float = START, msg: str = "approve Bash: ls") -> Record:
    return record("", "blocked", kind="permission", msg=msg, at=since, since=since)


def test_a_prompt_ping_carries_what_answers_it_and_its_reminder_too() -> None:
    policy, clock = make(PolicySettings(remind=30))
    snapshot = observe(_answered_session(_prompt(), answered=None), "api", clock.now)
    shown = [p for _, p in run_until(policy, clock, START + 40, snapshot)]
    assert [p.kind for p in shown] == ["single", "reminder"]
    assert {p.answer for p in shown} == {AnswerTarget("s1", "", START)}


def test_no_answer_for_an_app_without_keys_or_with_answering_off() -> None:
    prompt = _prompt()
    other = Record("", State.BLOCKED, "permission", None, "pi", None, "ok?", START, START)
    assert observe(_answered_session(other, answered=None), "api", START)[0].answer is None
    off = AnswerSettings(enabled=False)
    assert observe(_answered_session(prompt, answered=None), "api", START, off)[0].answer is None
    question = record("", "blocked", kind="question", msg="which?", at=START, since=START)
    assert observe(_answered_session(question, answered=None), "api", START)[0].answer is None


def test_once_answered_the_prompt_and_its_reminders_stop() -> None:
    policy, clock = make(PolicySettings(remind=30))
    snapshot = observe(_answered_session(_prompt(), answered=None), "api", clock.now)
    assert len(run_until(policy, clock, START + 5, snapshot)) == 1
    policy.answered("s1", "", START)
    # The launcher's file may show the prompt a moment longer: still nothing.
    assert run_until(policy, clock, START + 600, snapshot) == []


def test_a_prompt_the_file_says_was_answered_never_pings() -> None:
    policy, clock = make(PolicySettings(remind=30))
    s = _answered_session(_prompt(), answered=("", START))
    assert run_until(policy, clock, START + 600, observe(s, "api", clock.now)) == []


def test_the_state_right_after_an_answer_does_not_ping() -> None:
    policy, clock = make(PolicySettings(done_after=0))
    blocked = _answered_session(_prompt(), answered=None)
    assert len(run_until(policy, clock, START + 3, observe(blocked, "api", clock.now))) == 1
    done = _answered_session(
        record("", "done", msg="stopped", at=START + 6, since=START + 6), answered=("", START)
    )
    assert run_until(policy, clock, START + 60, observe(done, "api", clock.now)) == []


def test_a_later_state_after_the_answer_pings_again() -> None:
    policy, clock = make(PolicySettings(done_after=0))
    blocked = _answered_session(_prompt(), answered=None)
    run_until(policy, clock, START + 3, observe(blocked, "api", clock.now))
    working = _answered_session(
        record("", "working", at=START + 6, since=START + 6), answered=("", START)
    )
    run_until(policy, clock, START + 10, observe(working, "api", clock.now))
    done = _answered_session(
        record("", "done", msg="all set", at=START + 20, since=START + 20), answered=("", START)
    )
    shown = [
        p.title for _, p in run_until(policy, clock, START + 40, observe(done, "api", clock.now))
    ]
    assert shown == ["api finished"]


def test_a_new_prompt_right_after_an_answer_still_pings() -> None:
    policy, clock = make()
    run_until(
        policy,
        clock,
        START + 3,
        observe(_answered_session(_prompt(), answered=None), "api", clock.now),
    )
    # (Another command: the same words again within the dedup window would not ping.)
    again = _answered_session(_prompt(START + 6, "approve Bash: rm x"), answered=("", START))
    shown = run_until(policy, clock, START + 20, observe(again, "api", clock.now))
    assert [p.answer for _, p in shown] == [AnswerTarget("s1", "", START + 6)]


def test_an_answer_of_one_record_leaves_another_prompt_alone() -> None:
    policy, clock = make()
    s = _answered_session(
        record("", "blocked", kind="permission", msg="root asks", at=START, since=START),
        record("agent/1", "blocked", kind="permission", msg="child", at=START, since=START),
        answered=("agent/1", START),
    )
    shown = run_until(policy, clock, START + 20, observe(s, "api", clock.now))
    assert [p.answer for _, p in shown] == [AnswerTarget("s1", "", START)]
