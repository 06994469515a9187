"""Answering another machine's session over the link the app already keeps open: the
request on the stream's stdin, its outcome as a frame, and the one-shot ``tray answer``
over ssh when the link cannot carry it.

The stream is tested on real pipes (garbage, bounds, heartbeats), then end to end over
the real loopback sshd, with the remote launcher played by a thread of this test that
serves the real answer socket with the real gate (as in test_answer_remote.py).
"""

from __future__ import annotations

import json
import math
import os
import shlex
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from app.test_app_answer_remote import LOG, as_the_app_has_it
from helpers.fake_launcher import FakeLauncher
from helpers.fake_notifier import FakeNotifier, FakePolicy
from helpers.host_sessions import make_session
from helpers.sshd import Remote, Sshd, client_environ, host_config
from helpers.sshd_fixtures import Recorder
from helpers.waiting import wait_for

from remote.test_answer_remote import SESSION_ID, blocked, remote_launcher
from remote.test_stream import Stream, streaming
from tray.app.answer_dispatch import AnswerDispatcher, AnswerRoutes
from tray.core.answers.gate import SETTLE
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.worker.user_actions import Answer
from tray.remote.frames import (
    ANSWERED,
    ANSWERS_VERSION,
    BEAT,
    MAX_REQUEST,
    STATE,
    TAKES_ANSWERS,
    AnswerRequest,
    Frame,
    encode_answer_request,
    encode_frame,
    parse_answer_reply,
    parse_answer_request,
)
from tray.remote.link import HostLink, LinkTimings
from tray.remote.stream import BUSY, MAX_WAITING, Answerer
from tray.state.store import StateStore

APP_ID = f"host:devbox/{SESSION_ID}"
FAST = LinkTimings(first_retry=0.2, max_retry=0.4)


def request_line(**fields: object) -> bytes:
    payload: dict[str, object] = {
        "v": ANSWERS_VERSION,
        "id": 7,
        "session": SESSION_ID,
        "record": None,
        "since": 12.5,
        "answer": "approve",
    }
    payload.update(fields)
    return encode_frame("answer", {k: v for k, v in payload.items() if v is not ...})


# The request, pure.


def test_a_request_round_trips_with_exactly_its_fields() -> None:
    request = AnswerRequest(3, SESSION_ID, "", 1764470012.5, "deny")
    line = encode_answer_request(request)
    assert len(line) <= MAX_REQUEST
    assert parse_answer_request(line.rstrip(b"\n")) == request
    payload = json.loads(line.split(b" ", 2)[2])
    assert set(payload) == {"v", "id", "session", "record", "since", "answer"}


@pytest.mark.parametrize(
    "line",
    [
        b"approve",
        b"\x1eTRAY1 answer {not json",
        b"\x1eTRAY1 answer []",
        b"\x1eTRAY2 answer {}",
        b"\x1eTRAY1 beat {}",
        b"motd \x1eTRAY1 answer {}",
        request_line(extra=1).rstrip(b"\n"),
        request_line(v=2).rstrip(b"\n"),
        request_line(id=True).rstrip(b"\n"),
        request_line(id=0).rstrip(b"\n"),
        request_line(id="7").rstrip(b"\n"),
        request_line(record=...).rstrip(b"\n"),
        request_line(session="../etc").rstrip(b"\n"),
        request_line(session="a/b").rstrip(b"\n"),
        request_line(session="-oProxyCommand=x").rstrip(b"\n"),
        request_line(session="").rstrip(b"\n"),
        request_line(record="a b").rstrip(b"\n"),
        request_line(record="/etc").rstrip(b"\n"),
        request_line(since="12.5").rstrip(b"\n"),
        request_line(since=True).rstrip(b"\n"),
        request_line(answer="yes").rstrip(b"\n"),
        request_line(answer="1").rstrip(b"\n"),
        # JSON's NaN and Infinity, as Python's reader takes them.
        request_line().rstrip(b"\n").replace(b"12.5", b"NaN"),
        request_line().rstrip(b"\n").replace(b"12.5", b"Infinity"),
        request_line(session="a" * 2000).rstrip(b"\n"),
    ],
)
def test_anything_but_a_valid_request_is_not_one(line: bytes) -> None:
    assert parse_answer_request(line) is None


def test_a_bad_request_is_never_encoded() -> None:
    for bad in (
        AnswerRequest(1, "4242;touch x", None, None, "approve"),
        AnswerRequest(1, SESSION_ID, "$(x)", None, "approve"),
        AnswerRequest(1, SESSION_ID, None, math.nan, "approve"),
        AnswerRequest(1, SESSION_ID, None, None, "always"),
        AnswerRequest(0, SESSION_ID, None, None, "deny"),
    ):
        with pytest.raises(ValueError):
            encode_answer_request(bad)


def test_a_reply_reason_is_cleaned_and_cut() -> None:
    payload = {"v": 1, "id": 7, "ok": False, "reason": "\x1b[31mred\x07" + "x" * 500}
    frame = Frame(1, ANSWERED, json.dumps(payload).encode())
    reply = parse_answer_reply(frame)
    assert reply is not None
    request_id, ok, reason = reply
    assert (request_id, ok) == (7, False)
    assert "\x1b" not in reason and "\x07" not in reason and len(reason) <= 100
    for bad in ({**payload, "ok": "yes"}, {**payload, "id": True}, {**payload, "v": 2}):
        assert parse_answer_reply(Frame(1, ANSWERED, json.dumps(bad).encode())) is None


# The stream's side, on real pipes.


def frames_until(stream: Stream, kind: str, timeout: float = 20.0) -> list[Frame]:
    seen: list[Frame] = []
    for frame in stream.frames(timeout):
        seen.append(frame)
        if frame.kind == kind:
            return seen
    raise AssertionError(f"the stream ended before a {kind} frame")


def test_the_stream_says_it_takes_answers(state_dir: Path) -> None:
    with streaming(state_dir) as stream:
        first = stream.next_frame()
        assert first.kind == STATE
        assert first.json()[TAKES_ANSWERS] == ANSWERS_VERSION


def test_garbage_on_stdin_gets_no_reply_and_the_stream_goes_on(state_dir: Path) -> None:
    StateStore(state_dir).write(make_session("1-ended", alive=False))
    with streaming(state_dir, heartbeat=0.3) as stream:
        assert stream.next_frame().kind == STATE
        garbage = [
            b"hello\n",
            b"\x1eTRAY1 answer {not json\n",
            request_line(extra=1),
            request_line(answer="yes"),
            request_line().replace(b"12.5", b"NaN"),
            b"x" * 100_000 + b"\n",  # far over a request's bound: skipped as it streams
            request_line(session="../../etc/passwd"),
            b"\x00\xff\xfe\n",
        ]
        for line in garbage:
            os.write(stream.to_stdin, line)
        # Heartbeats go on, and no reply came for any of it.
        seen = frames_until(stream, BEAT) + frames_until(stream, BEAT)
        assert ANSWERED not in [frame.kind for frame in seen]
        # The reader is still there: a valid request gets its one reply.
        os.write(stream.to_stdin, request_line(id=9, session="1-ended"))
        replies = [f for f in frames_until(stream, ANSWERED) if f.kind == ANSWERED]
        assert [parse_answer_reply(f) for f in replies] == [(9, False, "the session has ended")]
        os.write(stream.to_stdin, request_line(id=10, session="9-nothing"))
        reply = frames_until(stream, ANSWERED)[-1]
        assert parse_answer_reply(reply) == (10, False, "the session is gone")
        assert stream.thread.is_alive()


def test_answers_go_one_at_a_time_and_too_many_are_refused_at_once() -> None:
    release = threading.Event()
    running: list[int] = []
    sent: list[bytes] = []

    def answer(request: AnswerRequest) -> tuple[bool, str]:
        running.append(request.id)
        release.wait(20)
        return True, ""

    answerer = Answerer(sent.append, answer)
    requests = [AnswerRequest(n, SESSION_ID, None, None, "approve") for n in range(1, 8)]
    answerer.offer(requests[0])
    wait_for(lambda: running == [1], what="the first answer to start")
    for request in requests[1:]:
        answerer.offer(request)
    # One under way, MAX_WAITING behind it; the rest are told at once, nothing typed.
    refused = len(requests) - 1 - MAX_WAITING
    replies = [parse_answer_reply(Frame(1, ANSWERED, line.split(b" ", 2)[2])) for line in sent]
    assert replies == [(n, False, BUSY) for n in range(2 + MAX_WAITING, 2 + MAX_WAITING + refused)]
    assert running == [1]
    release.set()
    wait_for(lambda: len(sent) == len(requests), what="every reply")
    assert running == list(range(1, 2 + MAX_WAITING))
    answerer.close()


# Over the real sshd.


def logged_remote(tmp_path: Path, remote: Remote, filter_command: str = "") -> str:
    """A remote command that notes the words of every run (to tell a one-shot ``tray
    answer`` from the link), then runs the remote's tray; ``filter_command``, when
    given, filters the stream's output, to play an older or a silent tray there."""
    runs = tmp_path / "runs"
    script = tmp_path / "logged-tray"
    lines = ["#!/bin/sh", f'echo "$1" >> {shlex.quote(str(runs))}']
    if filter_command:
        lines.append(f'[ "$1" = status ] && exec {remote.tray} "$@" | {filter_command}')
    lines += [f'exec {shlex.quote(str(remote.tray))} "$@"', ""]
    script.write_text("\n".join(lines), encoding="utf-8")
    script.chmod(0o755)
    return shlex.quote(str(script))


def runs(tmp_path: Path) -> list[str]:
    path = tmp_path / "runs"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


@contextmanager
def linked(host: HostConfig, recorder: Recorder) -> Iterator[HostLink]:
    link = HostLink(
        host, recorder.on_state, recorder.on_status, timings=FAST, environ=client_environ()
    )
    link.start()
    try:
        recorder.wait_state(lambda state: any(s.id == APP_ID for s in state.sessions))
        wait_for(lambda: link.status.state == "connected", what="the link to connect")
        yield link
    finally:
        link.stop()


@pytest.fixture
def launcher(remote: Remote) -> Iterator[FakeLauncher]:
    played = remote_launcher(remote, [blocked(time.time() - SETTLE - 1)])
    played.thread.start()
    yield played
    played.stop.set()
    played.thread.join(5)
    played.socket.close()


def since_of(launcher: FakeLauncher) -> float:
    since = launcher.records[0].since
    assert since is not None
    return since


def test_approve_over_the_open_link_types_with_no_new_ssh(
    tmp_path: Path, sshd: Sshd, remote: Remote, recorder: Recorder, launcher: FakeLauncher
) -> None:
    host = host_config(sshd, remote, remote_command=logged_remote(tmp_path, remote))
    with linked(host, recorder) as link:
        assert link.answer(SESSION_ID, "approve", None, since_of(launcher)) == (
            True,
            "answered on devbox",
        )
        assert launcher.typed == [b"1"]
        # The root record named by an empty id, and the prompt standing now.
        assert link.answer(SESSION_ID, "deny", "", None) == (True, "answered on devbox")
        assert launcher.typed == [b"1", b"\x1b"]
        assert runs(tmp_path) == ["status"]  # the link's own ssh, and no other


def test_a_stale_since_is_refused_with_the_launchers_reason(
    tmp_path: Path, sshd: Sshd, remote: Remote, recorder: Recorder, launcher: FakeLauncher
) -> None:
    host = host_config(sshd, remote, remote_command=logged_remote(tmp_path, remote))
    with linked(host, recorder) as link:
        stale = since_of(launcher) - 10
        assert link.answer(SESSION_ID, "approve", None, stale) == (
            False,
            "the prompt has changed",
        )
        assert link.answer("9-nope", "approve", None, None) == (False, "the session is gone")
        # A bad word never leaves this machine.
        assert link.answer("4242;touch pwned", "approve", None, None) == (
            False,
            "not a session id",
        )
        assert launcher.typed == []
        assert runs(tmp_path) == ["status"]


def test_garbage_on_the_links_stdin_is_ignored_and_the_link_goes_on(
    tmp_path: Path, sshd: Sshd, remote: Remote, recorder: Recorder, launcher: FakeLauncher
) -> None:
    host = host_config(sshd, remote, remote_command=logged_remote(tmp_path, remote))
    with linked(host, recorder) as link:
        ssh = link._ssh
        assert ssh is not None
        for line in (b"rm -rf /\n", request_line(answer="always"), b"\x1eTRAY1 answer {}\n"):
            assert ssh.send(line)
        assert link.answer(SESSION_ID, "approve", None, since_of(launcher)) == (
            True,
            "answered on devbox",
        )
        assert launcher.typed == [b"1"]
        assert link.status.state == "connected"
        assert runs(tmp_path) == ["status"]


def app_desk(tmp_path: Path, host: HostConfig, link: HostLink | None) -> AnswerDispatcher:
    where = AnswerRoutes(
        tmp_path / "local-state",
        {host.name: host}.get,
        client_environ(),
        host_link=lambda name: link if name == host.name else None,
    )
    return AnswerDispatcher(where, FakeNotifier(), FakePolicy(), LOG)


def test_the_app_answers_over_the_link(
    tmp_path: Path, sshd: Sshd, remote: Remote, recorder: Recorder, launcher: FakeLauncher
) -> None:
    host = host_config(sshd, remote, remote_command=logged_remote(tmp_path, remote))
    since = since_of(launcher)
    with linked(host, recorder) as link:
        desk = app_desk(tmp_path, host, link)
        refused = desk.deliver(
            Answer(APP_ID, "", 12.5, "deny"), as_the_app_has_it(12.5), stale=False
        )
        assert refused.line == "api-server: the prompt has changed; not answered"
        outcome = desk.deliver(
            Answer(APP_ID, "", since, "approve"), as_the_app_has_it(since), stale=False
        )
        assert outcome.ok, outcome.line
        assert launcher.typed == [b"1"]
        assert runs(tmp_path) == ["status"]


def test_with_the_link_down_the_app_answers_by_one_ssh(
    tmp_path: Path, sshd: Sshd, remote: Remote, recorder: Recorder, launcher: FakeLauncher
) -> None:
    host = host_config(sshd, remote, remote_command=logged_remote(tmp_path, remote))
    since = since_of(launcher)
    # A link never started: not connected, so it carries nothing.
    down = HostLink(host, recorder.on_state, recorder.on_status, environ=client_environ())
    assert down.answer(SESSION_ID, "approve", None, since) is None
    desk = app_desk(tmp_path, host, down)
    outcome = desk.deliver(
        Answer(APP_ID, "", since, "approve"), as_the_app_has_it(since), stale=False
    )
    assert outcome.ok, outcome.line
    assert launcher.typed == [b"1"]
    assert runs(tmp_path) == ["answer"]
    down.stop()


def test_an_older_remote_is_answered_by_one_ssh(
    tmp_path: Path, sshd: Sshd, remote: Remote, recorder: Recorder, launcher: FakeLauncher
) -> None:
    # An older tray there says nothing of answers in its documents.
    older = logged_remote(tmp_path, remote, "sed -u 's/,\"takes_answers\":1//'")
    host = host_config(sshd, remote, remote_command=older)
    since = since_of(launcher)
    with linked(host, recorder) as link:
        assert link.answer(SESSION_ID, "approve", None, since) is None
        outcome = app_desk(tmp_path, host, link).deliver(
            Answer(APP_ID, "", since, "approve"), as_the_app_has_it(since), stale=False
        )
        assert outcome.ok, outcome.line
        assert launcher.typed == [b"1"]
        assert runs(tmp_path) == ["status", "answer"]


def test_no_reply_in_time_is_left_to_the_one_shot(
    tmp_path: Path, sshd: Sshd, remote: Remote, recorder: Recorder
) -> None:
    # A stream there that takes requests, but whose replies never arrive.
    silent = logged_remote(tmp_path, remote, "grep --line-buffered -v answered")
    host = host_config(sshd, remote, remote_command=silent)
    remote.write(make_session(SESSION_ID, alive=False))
    with linked(host, recorder) as link:
        # No reply ever comes: only the answer's own timeout returns.
        assert link.answer(SESSION_ID, "approve", None, None, timeout=1.0) is None
        assert link.status.state == "connected"
