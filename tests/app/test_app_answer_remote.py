"""The app answers another machine's session: its Answer message becomes `tray answer`
there, over a real sshd on loopback, and the remote launcher (a thread of this test
serving the remote state directory's answer socket with the real gate) types, or the
refusal comes back as the app's one short notification.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.fake_launcher import FakeLauncher
from helpers.fake_notifier import FakeNotifier, FakePolicy
from helpers.sshd import Remote, client_environ
from remote.test_answer_remote import SESSION_ID, blocked, remote_launcher

from tray.app.answer_dispatch import AnswerDispatcher, AnswerRoutes
from tray.core.answers.gate import SETTLE
from tray.core.answers.target import AnswerTarget
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.session.model import Session
from tray.core.worker.user_actions import Answer
from tray.state.liveness import process_start_token

APP_ID = f"host:devbox/{SESSION_ID}"
LOG = logging.getLogger("test-app-answer-remote")


@pytest.fixture
def launcher(remote: Remote) -> Iterator[FakeLauncher]:
    played = remote_launcher(remote, [blocked(time.time() - SETTLE - 1)])
    played.thread.start()
    yield played
    played.stop.set()
    played.thread.join(5)
    played.socket.close()


def as_the_app_has_it(since: float) -> Session:
    """The remote session as the app's link hands it over: its id namespaced."""
    return Session(
        id=APP_ID,
        name="api-server",
        name_given=True,
        command=("claude",),
        cwd="/home/me/api-server",
        pid=os.getpid(),
        child_pid=None,
        started_at=1.0,
        updated_at=2.0,
        source="program",
        records=(blocked(since),),
        pid_start=process_start_token(os.getpid()),
    )


def desk(tmp_path: Path, host: HostConfig) -> tuple[AnswerDispatcher, FakeNotifier, FakePolicy]:
    notifier, policy = FakeNotifier(), FakePolicy()
    hosts = {host.name: host}
    where = AnswerRoutes(tmp_path / "local-state", hosts.get, client_environ())
    return AnswerDispatcher(where, notifier, policy, LOG), notifier, policy


def test_the_app_answers_a_remote_prompt_over_ssh(
    tmp_path: Path, host: HostConfig, launcher: FakeLauncher
) -> None:
    since = launcher.records[0].since
    assert since is not None
    handler, notifier, policy = desk(tmp_path, host)
    message = Answer(APP_ID, "", since, "approve")
    outcome = handler.deliver(message, as_the_app_has_it(since), stale=False)
    handler.settle(message, outcome)
    assert outcome.ok, outcome.line
    assert launcher.typed == [b"1"]
    assert notifier.withdrawn == [AnswerTarget(APP_ID, "", since)]
    assert policy.told == [(APP_ID, "", since)]
    assert notifier.sent == []


def test_a_remote_refusal_is_shown_as_the_remote_says_it(
    tmp_path: Path, host: HostConfig, launcher: FakeLauncher
) -> None:
    handler, notifier, policy = desk(tmp_path, host)
    message = Answer(APP_ID, "", 12.5, "deny")
    outcome = handler.deliver(message, as_the_app_has_it(12.5), stale=False)
    handler.settle(message, outcome)
    assert notifier.titles == ["api-server: the prompt has changed; not answered"]
    assert not outcome.ok
    assert launcher.typed == [] and notifier.withdrawn == [] and policy.told == []


def test_an_unreachable_hosts_session_is_not_asked(
    tmp_path: Path, host: HostConfig, launcher: FakeLauncher
) -> None:
    since = launcher.records[0].since
    assert since is not None
    handler, notifier, _policy = desk(tmp_path, host)
    message = Answer(APP_ID, "", since, "approve")
    handler.settle(message, handler.deliver(message, as_the_app_has_it(since), stale=True))
    assert notifier.titles == ["api-server: devbox is unreachable; not answered"]
    assert launcher.typed == []
