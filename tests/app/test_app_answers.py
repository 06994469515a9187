"""The app's side of answering: an Answer message goes to the session's own launcher over
its answer socket, and the outcome withdraws the notification or says why not.

The launcher's end is the real :class:`AnswerSocket`, bound in a temporary state
directory and served on a thread of the test, with the real gate
(:func:`tray.core.answers.gate.decide`) over records the test sets; its ``type_keys`` writes
down what would have gone into the program.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.fake_launcher import FakeLauncher
from helpers.fake_notifier import FakeNotifier, FakePolicy
from helpers.fake_tray_icon import FakeTrayIcon
from helpers.sessions import live_session
from helpers.waiting import wait_for

from tray.app.answer_dispatch import AnswerDispatcher, AnswerRoutes, Outcome, deliver_answer
from tray.app.start import build_app
from tray.core.answers.gate import CHANGED, TYPED
from tray.core.answers.target import AnswerTarget
from tray.core.session.model import Session
from tray.core.worker.user_actions import Answer
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.store import StateStore

SID = "77-api"
LOG = logging.getLogger("test-app-answers")


def prompt(since: float, app: str = "claude-code") -> Record:
    return Record(
        "", State.BLOCKED, "permission", None, app, None, "approve Bash: ls", since, since
    )


@pytest.fixture
def launcher(state_dir: Path) -> Iterator[Callable[[tuple[Record, ...]], FakeLauncher]]:
    ends: list[FakeLauncher] = []

    def start(records: tuple[Record, ...]) -> FakeLauncher:
        ends.append(FakeLauncher(state_dir, SID, records))
        return ends[-1]

    yield start
    for end in ends:
        end.close()


def session(since: float, name: str = "api-server") -> Session:
    made = live_session(SID, (prompt(since),), time.time())
    return dataclasses.replace(made, name=name)


def where(state_dir: Path) -> AnswerRoutes:
    return AnswerRoutes(state_dir, lambda _name: None)


def desk(state_dir: Path) -> tuple[AnswerDispatcher, FakeNotifier, FakePolicy]:
    notifier, policy = FakeNotifier(), FakePolicy()
    return AnswerDispatcher(where(state_dir), notifier, policy, LOG), notifier, policy


def answer_now(
    handler: AnswerDispatcher, message: Answer, session: Session | None, *, stale: bool = False
) -> Outcome:
    """Both halves, as the app runs them: the delivery (on a thread of its own there),
    then the worker's settling."""
    outcome = handler.deliver(message, session, stale=stale)
    handler.settle(message, outcome)
    return outcome


def test_approve_reaches_the_launcher_for_that_prompt_and_withdraws_its_notification(
    state_dir: Path, launcher: Callable[[tuple[Record, ...]], FakeLauncher]
) -> None:
    since = time.time() - 5  # settled: the launcher types at once
    end = launcher((prompt(since),))
    handler, notifier, policy = desk(state_dir)
    outcome = answer_now(handler, Answer(SID, "", since, "approve"), session(since))
    assert outcome == Outcome(True)
    assert end.typed == [b"1"]
    assert [(r.answer, r.record, r.since) for r in end.requests][:1] == [("approve", "", since)]
    assert notifier.withdrawn == [AnswerTarget(SID, "", since)]
    assert notifier.sent == []
    assert policy.told == [(SID, "", since)]


def test_deny_types_the_apps_deny_key(
    state_dir: Path, launcher: Callable[[tuple[Record, ...]], FakeLauncher]
) -> None:
    since = time.time() - 5
    end = launcher((prompt(since),))
    handler, _notifier, _policy = desk(state_dir)
    assert answer_now(handler, Answer(SID, "", since, "deny"), session(since)).ok
    assert end.typed == [b"\x1b"]


def test_a_changed_prompt_is_refused_with_one_short_notification(
    state_dir: Path, launcher: Callable[[tuple[Record, ...]], FakeLauncher]
) -> None:
    since = time.time() - 5
    end = launcher((prompt(since + 1),))  # a newer prompt stands than the one shown
    handler, notifier, policy = desk(state_dir)
    outcome = answer_now(handler, Answer(SID, "", since, "approve"), session(since))
    assert outcome == Outcome(False, f"api-server: {CHANGED}; not answered")
    assert notifier.texts == [(f"api-server: {CHANGED}; not answered", "", SID)]
    assert notifier.icons == ["blocked"]  # amber: the prompt is the user's again
    assert end.typed == []
    assert notifier.withdrawn == [] and policy.told == []


def test_typing_since_the_prompt_appeared_is_refused(
    state_dir: Path, launcher: Callable[[tuple[Record, ...]], FakeLauncher]
) -> None:
    since = time.time() - 5
    end = launcher((prompt(since),))
    end.last_input_at = since + 1
    handler, notifier, _policy = desk(state_dir)
    assert not answer_now(handler, Answer(SID, "", since, "approve"), session(since)).ok
    assert notifier.texts == [(f"api-server: {TYPED}; not answered", "", SID)]
    assert end.typed == []


def test_no_launcher_socket_is_refused(state_dir: Path) -> None:
    since = time.time() - 5
    outcome = deliver_answer(
        session(since), AnswerTarget(SID, "", since), "approve", where(state_dir), stale=False
    )
    assert outcome == Outcome(
        False, "api-server: its launcher takes no answers (an older tray?); not answered"
    )


def test_an_ended_or_vanished_session_is_refused_without_asking(
    state_dir: Path, launcher: Callable[[tuple[Record, ...]], FakeLauncher]
) -> None:
    since = time.time() - 5
    end = launcher((prompt(since),))
    target = AnswerTarget(SID, "", since)
    ended = dataclasses.replace(session(since), alive=False, exit_code=0)
    refused = deliver_answer(ended, target, "approve", where(state_dir), stale=False)
    assert refused.line == "api-server: the session has ended; not answered"
    gone = deliver_answer(None, target, "approve", where(state_dir), stale=False)
    assert gone.line == f"{SID}: the session is gone; not answered"
    assert end.requests == [] and end.typed == []


def test_a_session_id_that_is_not_one_never_becomes_a_path(tmp_path: Path) -> None:
    bad = dataclasses.replace(session(1.0), id="../elsewhere")
    target = AnswerTarget("../elsewhere", "", 1.0)
    outcome = deliver_answer(bad, target, "approve", where(tmp_path), stale=False)
    assert outcome.line == "api-server: not a session id; not answered"


def test_another_hosts_session_needs_its_host_and_a_link(tmp_path: Path) -> None:
    remote_id = "host:devbox/abc-1"
    remote = dataclasses.replace(session(1.0), id=remote_id)
    target = AnswerTarget(remote_id, "", 1.0)
    unknown = deliver_answer(remote, target, "approve", where(tmp_path), stale=False)
    assert unknown.line == "api-server: no [[hosts]] entry named devbox; not answered"


# Through the app itself: its worker, the state directory's socket path.


def test_the_app_offers_the_answer_and_carries_it_out(
    state_dir: Path,
    launcher: Callable[[tuple[Record, ...]], FakeLauncher],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    since = time.time() - 5
    StateStore(state_dir).write(session(since))
    end = launcher((prompt(since),))
    env = Environment(
        environ={"TRAY_STATE_DIR": str(state_dir), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    )
    notifier = FakeNotifier()
    app = build_app(
        env,
        load_config(env),
        LOG,
        FakeTrayIcon(),  # type: ignore[arg-type]
        lambda *_callbacks: notifier,  # type: ignore[arg-type]
        refresh_interval=0.0,
    )
    target = AnswerTarget(SID, "", since)
    app.start_worker()
    try:
        # The ping offers Approve and Deny for it.
        wait_for(lambda: notifier.answers == [target], what="the prompt's notification")
        notifier.on_answer(target, "approve")  # as the notification's button does
        wait_for(lambda: notifier.withdrawn, what="the notification withdrawn")
    finally:
        app.stop()
    assert [(r.answer, r.record, r.since) for r in end.requests] == [("approve", "", since)]
    assert end.typed == [b"1"]
    assert notifier.withdrawn == [target]
    assert notifier.texts == [("api-server needs approval", "approve Bash: ls", SID)]
    assert notifier.icons == ["blocked"]
