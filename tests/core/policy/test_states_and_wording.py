"""Which states ping (blocked, error, done after a long run; old news does not), and
what a ping says."""

from __future__ import annotations

import pytest
from helpers.policy_scenarios import BLOCKED, FakeClock, ids, make, obs, utc_minute

from tray.core.config.settings import PolicySettings
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.wording import Ping, ping_for
from tray.protocol.state import State

# -- which states ping -----------------------------------------------------------------


def test_only_listed_states_ping() -> None:
    policy, clock = make(PolicySettings(states=frozenset({State.ERROR}), done_after=0))
    policy.update(
        [
            obs("b"),
            obs("e", state="error"),
            obs("d", state="done", run_seconds=100),
            obs("w", state="working"),
            obs("i", state="idle"),
            obs("n", state=None),
        ]
    )
    clock.advance(1)
    assert ids(policy.due()) == [("e",)]


def test_working_idle_and_nothing_never_ping() -> None:
    policy, clock = make(PolicySettings(states=frozenset({State.WORKING, State.IDLE})))
    policy.update([obs("w", state="working"), obs("i", state="idle")])
    clock.advance(1)
    assert policy.due() == []


@pytest.mark.parametrize(
    ("run", "pings"), [(29.9, False), (30.0, True), (3600.0, True), (None, True)]
)
def test_done_pings_only_after_a_long_run(run: float | None, pings: bool) -> None:
    policy, clock = make()
    policy.update([obs(state="done", msg=None, run_seconds=run)])
    clock.advance(1)
    assert bool(policy.due()) is pings


def test_disabled_never_pings() -> None:
    policy, _ = make(PolicySettings(enabled=False, settle=0))
    policy.update([obs()])
    assert policy.due() == []
    assert policy.next_wakeup() is None


def test_finished_sessions_in_the_first_snapshot_are_old_news() -> None:
    clock = FakeClock()
    policy = NotificationPolicy(PolicySettings(done_after=0), clock, utc_minute)
    policy.update(
        [
            obs("old-done", state="done", run_seconds=100),
            obs("old-error", state="error"),
            obs("old-block"),
        ]
    )
    clock.advance(1)
    assert ids(policy.due()) == [("old-block",)]
    policy.update(
        [
            obs("old-done", state="done", run_seconds=100),
            obs("old-error", state="error"),
            obs("old-block"),
            obs("new-done", state="done", run_seconds=100),
        ]
    )
    clock.advance(1)
    assert ids(policy.due()) == [("new-done",)]


# -- wording ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "title", "body", "urgency"),
    [
        ("permission", "L needs approval", "Waiting for your approval", "critical"),
        ("question", "L needs an answer", "Waiting for your answer", "normal"),
        ("auth", "L needs you to sign in", "Waiting for you to sign in", "critical"),
        (None, "L needs you", "Waiting for you", "normal"),
    ],
)
def test_blocked_wording(kind: str | None, title: str, body: str, urgency: str) -> None:
    expected = Ping(title, body, urgency, ("s1",), states=BLOCKED, label="L")  # type: ignore[arg-type]
    assert ping_for(obs(kind=kind, msg=None, label="L")) == expected
    assert ping_for(obs(kind=kind, msg="Apply?", label="L")).body == "Apply?"


def finished(state: str, exit_code: int | None, run: float | None, msg: str | None) -> Ping:
    return ping_for(obs(state=state, exit_code=exit_code, run_seconds=run, msg=msg, label="L"))


@pytest.mark.parametrize(
    ("ping", "title", "body"),
    [
        (finished("error", 3, None, None), "L failed", "Exited with status 3"),
        (finished("error", 130, None, None), "L failed", "Exited with status 130"),
        (finished("error", None, None, None), "L failed", "Failed"),
        (finished("error", 0, None, None), "L failed", "Failed"),
        (finished("error", 1, None, "tests failed"), "L failed", "tests failed"),
        (finished("done", 0, 192.0, None), "L finished", "Done in 3m 12s"),
        (finished("done", None, 45.0, None), "L finished", "Done in 45s"),
        (finished("done", None, None, None), "L finished", "Done"),
        (finished("done", None, 45.0, "Plan"), "L finished", "Plan"),
        (finished("done", None, 45.0, "\u200b"), "L finished", "Done in 45s"),
    ],
)
def test_finished_wording(ping: Ping, title: str, body: str) -> None:
    assert (ping.title, ping.body, ping.urgency) == (title, body, "normal")


def test_the_body_is_the_raw_message() -> None:
    raw = "<b>rm</b> & \u202eevil"
    assert ping_for(obs(msg=raw)).body == raw
