"""The launcher's answer socket on real Unix sockets: who may use it, and what it types.

The test plays the launcher: it owns the socket, polls its fds as the byte loop does,
and records what ``type_keys`` would have written into the program's input. Clients are
real sockets in threads, or forked processes running as ``nobody``.
"""

from __future__ import annotations

import json
import math
import os
import select
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.answer_keys import SHIPPED_SETTINGS
from helpers.processes import ask_as_nobody

from tray.core.answers.gate import SETTLE, Decision, Request, decide
from tray.launcher.answer_socket import AnswerHandler, AnswerSocket
from tray.launcher.loop_seat import LoopGuest
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.answer_channel import (
    HOLD_LIMIT,
    MAX_REQUEST,
    REQUEST_TIMEOUT,
    socket_path,
)


class Launcher:
    """The launcher's side: live records, the user's last key, and what it typed."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.now = time.monotonic()
        self.records = [self.blocked(since=self.now - SETTLE - 1)]
        self.last_input_at: float | None = None
        self.typed: list[bytes] = []
        self.answered: tuple[str, float] | None = None
        self.can_type = True
        self.socket = AnswerSocket(
            socket_path(directory, "4242-abc"), self.gate, self.type_keys, self.on_answered
        )

    @staticmethod
    def blocked(since: float, msg: str | None = None, record_id: str = "") -> Record:
        return Record(
            record_id, State.BLOCKED, "permission", None, "claude-code", None, msg, since, since
        )

    def gate(self, request: Request) -> Decision:
        return decide(
            tuple(self.records),
            request,
            self.last_input_at,
            SHIPPED_SETTINGS,
            answered=self.answered,
        )

    def type_keys(self, keys: bytes) -> bool:
        if not self.can_type:
            return False
        self.typed.append(keys)
        return True

    def on_answered(self, decision: Decision, answer: str) -> None:
        assert decision.record is not None
        assert decision.since is not None
        self.answered = (decision.record, decision.since)

    @property
    def since(self) -> float:
        since = self.records[0].since
        assert since is not None
        return since

    def poll(self, seconds: float, until: threading.Event | None = None) -> None:
        """Run the loop's share for the socket, as the byte loop does.

        Every fd it hands the loop is non-blocking, each time: a call on one then never
        waits for a peer, whatever the peer does (the byte loop must not stall)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and until.is_set()):
            wait = self.socket.timeout()
            wait = 0.05 if wait is None else min(wait, 0.05)
            fds = self.socket.fds()
            assert not [fd for fd in fds if os.get_blocking(fd)], "a blocking fd in the loop"
            ready, _, _ = select.select(fds, [], [], wait)
            for fd in ready:
                self.socket.on_readable(fd)
            self.socket.tick()


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Launcher]:
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    running = Launcher(directory)
    yield running
    running.socket.close()


def ask(path: str, payload: bytes, results: list[dict[str, object]], done: threading.Event) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(10)
        client.connect(path)
        client.sendall(payload)
        data = b""
        while not data.endswith(b"\n"):
            chunk = client.recv(4096)
            if not chunk:
                break
            data += chunk
    results.append(json.loads(data) if data else {})
    done.set()


def request(launcher: Launcher, payload: bytes, seconds: float = 8.0) -> dict[str, object]:
    results: list[dict[str, object]] = []
    done = threading.Event()
    thread = threading.Thread(target=ask, args=(launcher.socket.path, payload, results, done))
    thread.start()
    launcher.poll(seconds, until=done)
    thread.join(5)
    assert results, "no reply"
    return results[0]


def line(**fields: object) -> bytes:
    return json.dumps(fields).encode() + b"\n"


def test_the_socket_is_private(launcher: Launcher) -> None:
    mode = os.stat(launcher.socket.path).st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


def test_an_answer_for_the_standing_prompt_is_typed_once(launcher: Launcher) -> None:
    reply = request(launcher, line(answer="approve", record="", since=launcher.since))
    assert reply == {"ok": True, "record": "", "since": launcher.since}
    assert launcher.typed == [b"1"]
    again = request(launcher, line(answer="deny", since=launcher.since))
    assert again["ok"] is False
    assert "answered" in str(again["reason"])
    assert launcher.typed == [b"1"]


def test_deny_types_esc_alone(launcher: Launcher) -> None:
    assert request(launcher, line(answer="deny"))["ok"] is True
    assert launcher.typed == [b"\x1b"]


def test_a_stale_since_is_refused_and_nothing_typed(launcher: Launcher) -> None:
    reply = request(launcher, line(answer="approve", since=launcher.since - 3))
    assert reply == {"ok": False, "reason": "the prompt has changed"}
    assert launcher.typed == []


def test_typing_since_the_prompt_is_refused(launcher: Launcher) -> None:
    launcher.last_input_at = launcher.since + 0.5
    reply = request(launcher, line(answer="approve"))
    assert reply["reason"] == "you typed into the session since it appeared"
    assert launcher.typed == []


def test_a_hostile_msg_never_becomes_keys(launcher: Launcher) -> None:
    since = launcher.since
    launcher.records = [launcher.blocked(since, msg="\x1b[201~2\r rm -rf ~\r")]
    assert request(launcher, line(answer="approve"))["ok"] is True
    assert launcher.typed == [b"1"]


def test_an_early_answer_waits_for_the_prompt_to_settle(launcher: Launcher) -> None:
    launcher.records = [launcher.blocked(time.monotonic())]
    start = time.monotonic()
    assert request(launcher, line(answer="approve"))["ok"] is True
    assert time.monotonic() - start >= SETTLE * 0.9
    assert launcher.typed == [b"1"]


def test_a_key_of_the_users_during_the_wait_cancels_it(launcher: Launcher) -> None:
    launcher.records = [launcher.blocked(time.monotonic())]
    results: list[dict[str, object]] = []
    done = threading.Event()
    payload = line(answer="approve")
    thread = threading.Thread(target=ask, args=(launcher.socket.path, payload, results, done))
    thread.start()
    launcher.poll(0.3)
    launcher.last_input_at = time.monotonic()
    launcher.poll(5, until=done)
    thread.join(5)
    assert results[0]["reason"] == "you typed into the session since it appeared"
    assert launcher.typed == []


def test_inside_a_users_sequence_the_keys_wait_then_time_out(launcher: Launcher) -> None:
    launcher.can_type = False
    start = time.monotonic()
    reply = request(launcher, line(answer="approve"), seconds=HOLD_LIMIT + 3)
    assert reply == {"ok": False, "reason": "timed out"}
    assert time.monotonic() - start >= HOLD_LIMIT * 0.9  # held that long, tried all along
    assert launcher.typed == []


@pytest.mark.parametrize(
    "payload",
    [
        b"\n",
        b"hello\n",
        b"\xff\xfe\n",
        b"[]\n",
        line(answer="always"),
        line(answer="approve", keys="2"),
        line(answer="approve", since="now"),
        line(answer="approve", since=True),
        line(answer="approve", record=7),
        b'{"answer": "approve", "since": NaN}\n',
        b'{"answer": "approve", "since": 1e999}\n',
    ],
)
def test_garbage_is_refused_and_never_typed(launcher: Launcher, payload: bytes) -> None:
    reply = request(launcher, payload)
    assert reply["ok"] is False
    assert str(reply["reason"]).startswith("bad request")
    assert launcher.typed == []


def test_an_oversized_request_is_cut_off(launcher: Launcher) -> None:
    reply = request(launcher, b'{"answer": "approve", "record": "' + b"a" * MAX_REQUEST * 4)
    assert reply == {"ok": False, "reason": "bad request: too large"}
    assert launcher.typed == []


def test_one_request_per_connection(launcher: Launcher) -> None:
    reply = request(launcher, line(answer="approve") + line(answer="deny"))
    assert reply["ok"] is True
    assert launcher.typed == [b"1"]


def test_a_silent_peer_is_timed_out(launcher: Launcher) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(launcher.socket.path)
        client.sendall(b'{"answer": ')
        # The peer sends nothing more while the loop runs: a call that waited for it would
        # never return. The reply is sent in the loop's time, or never.
        launcher.poll(REQUEST_TIMEOUT + 1)
        client.settimeout(1)
        reply = json.loads(client.recv(4096))
    assert reply == {"ok": False, "reason": "timed out"}
    assert launcher.typed == []


def test_a_flood_never_stalls_the_loop_and_never_types(launcher: Launcher) -> None:
    clients = []
    for number in range(200):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.setblocking(False)
        try:
            client.connect(launcher.socket.path)
            client.send(b"x" * (number % 40))
        except (BlockingIOError, ConnectionRefusedError, OSError):
            pass
        clients.append(client)
        if number % 20 == 0:
            launcher.poll(0.01)
    launcher.poll(REQUEST_TIMEOUT + 1)
    for client in clients:
        client.close()
    assert launcher.typed == []
    # Still answering afterwards.
    assert request(launcher, line(answer="approve"))["ok"] is True


def test_another_user_cannot_even_reach_the_socket(launcher: Launcher) -> None:
    assert os.getuid() == 0, "needs root to become nobody"
    result: list[str] = []
    thread = threading.Thread(
        target=lambda: result.append(ask_as_nobody(launcher.socket.path, line(answer="approve")))
    )
    thread.start()
    while thread.is_alive():
        launcher.poll(0.05)
    assert result == ["EACCES"]
    assert launcher.typed == []


def test_another_user_is_refused_by_peer_credentials() -> None:
    # Opened up on purpose, to show the uid check stands on its own behind the modes.
    directory = Path(tempfile.mkdtemp(prefix="tray-answer-"))
    directory.chmod(0o755)
    launcher = Launcher(directory)
    os.chmod(launcher.socket.path, 0o666)  # noqa: S103 - opened up on purpose
    try:
        _refused_by_uid(launcher)
    finally:
        launcher.socket.close()
        directory.rmdir()


def _refused_by_uid(launcher: Launcher) -> None:
    result: list[str] = []
    thread = threading.Thread(
        target=lambda: result.append(ask_as_nobody(launcher.socket.path, line(answer="approve")))
    )
    thread.start()
    while thread.is_alive():
        launcher.poll(0.05)
    assert json.loads(result[0]) == {"ok": False, "reason": "refused: another user"}
    assert launcher.typed == []


def test_close_removes_the_socket(tmp_path: Path) -> None:
    running = Launcher(tmp_path)
    path = running.socket.path
    assert os.path.exists(path)
    running.socket.close()
    assert not os.path.exists(path)


def test_a_held_answer_reads_the_records_clock(tmp_path: Path) -> None:
    # Records' ``since`` is the launcher's wall clock; connections run on the monotonic one.
    offset = 1_000_000.0
    running = Launcher(tmp_path)
    running.socket.close()
    running.records = [running.blocked(time.monotonic() + offset)]
    running.socket = AnswerSocket(
        socket_path(tmp_path, "4242-wall"),
        running.gate,
        running.type_keys,
        record_clock=lambda: time.monotonic() + offset,
    )
    try:
        start = time.monotonic()
        assert request(running, line(answer="approve"))["ok"] is True
        # On the monotonic clock the prompt would stand a million seconds ahead: the
        # answer would be held until it timed out, not typed.
        assert time.monotonic() - start >= SETTLE * 0.9
    finally:
        running.socket.close()


def test_a_held_request_leaves_the_poll_set(launcher: Launcher) -> None:
    # A client that sends more, or hangs up, while its answer is held must not keep the
    # loop waking: only the listener and connections still sending are polled.
    launcher.records = [launcher.blocked(time.monotonic())]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(launcher.socket.path)
        client.sendall(line(answer="approve") + b"more")
        launcher.poll(0.2)
        assert launcher.socket.fds() == [launcher.socket.fileno()]
        client.shutdown(socket.SHUT_WR)
        ready, _, _ = select.select(launcher.socket.fds(), [], [], 0.1)
        assert ready == []
        launcher.poll(SETTLE + 0.5)
        client.settimeout(2)
        assert json.loads(client.recv(4096))["ok"] is True
    assert launcher.typed == [b"1"]


def test_a_stale_socket_is_replaced_and_another_file_is_not(tmp_path: Path) -> None:
    path = socket_path(tmp_path, "4242-abc")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(path)  # an earlier launcher's, killed before it could remove it
    os.chmod(path, 0o644)
    # Binding over it would fail (address in use): it was removed, and this one is new.
    launcher = Launcher(tmp_path)
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_ISSOCK(os.stat(path).st_mode)
    finally:
        launcher.socket.close()
    with open(path, "w") as other:
        other.write("not a socket")
    with pytest.raises(OSError):
        Launcher(tmp_path)
    with open(path) as other:
        assert other.read() == "not a socket"


# The socket as a guest of the pty's loop.


class FakeSeat:
    """The pty loop's seat, as its guest sees it: what is watched, and when it is woken."""

    def __init__(self) -> None:
        self.handlers: dict[int, Callable[[int], None]] = {}
        self.wake: float | None = None

    def watch(self, fd: int, handler: Callable[[int], None]) -> None:
        assert fd not in self.handlers
        self.handlers[fd] = handler

    def unwatch(self, fd: int) -> None:
        del self.handlers[fd]

    def wake_at(self, guest: LoopGuest, when: float) -> None:
        self.wake = when

    def serve(self, until: threading.Event, guest: LoopGuest) -> None:
        """The loop's part, as PtyProxy plays it: the watched fds, then the wake-up."""
        while not until.is_set():
            ready, _, _ = select.select(list(self.handlers), [], [], 0.05)
            for fd in ready:
                if fd in self.handlers:
                    self.handlers[fd](select.POLLIN)
            if self.wake is not None and time.monotonic() >= self.wake:
                self.wake = None
                guest.wake()


def test_the_handler_puts_the_socket_and_its_connections_in_the_loop(launcher: Launcher) -> None:
    seat = FakeSeat()
    log: list[str] = []
    handler = AnswerHandler(launcher.socket, log=log.append)
    handler.join(seat)
    assert list(seat.handlers) == [launcher.socket.fileno()]
    assert seat.wake == math.inf  # no connection: nothing to time
    results: list[dict[str, object]] = []
    done = threading.Event()
    payload = line(answer="approve")
    thread = threading.Thread(target=ask, args=(launcher.socket.path, payload, results, done))
    thread.start()
    seat.serve(done, handler)
    thread.join(5)
    assert results == [{"ok": True, "record": "", "since": launcher.since}]
    assert launcher.typed == [b"1"]
    assert list(seat.handlers) == [launcher.socket.fileno()]
    assert log == []


def test_a_bug_in_the_socket_turns_answering_off_in_one_line(launcher: Launcher) -> None:
    def broken_gate(request: Request) -> Decision:
        raise RuntimeError("a bug")

    launcher.socket.close()
    launcher.socket = AnswerSocket(
        socket_path(launcher.directory, "4242-bug"), broken_gate, launcher.type_keys
    )
    seat = FakeSeat()
    log: list[str] = []
    handler = AnswerHandler(launcher.socket, log=log.append)
    handler.join(seat)
    results: list[dict[str, object]] = []
    done = threading.Event()
    thread = threading.Thread(
        target=ask, args=(launcher.socket.path, line(answer="approve"), results, done)
    )
    thread.start()
    seat.serve(done, handler)
    thread.join(5)
    assert log == ["answer socket failed, answering off: RuntimeError: a bug"]
    assert seat.handlers == {}
    assert seat.wake == math.inf
    assert not os.path.exists(launcher.socket.path)
    assert results == [{"ok": False, "reason": "the session has ended"}]
    assert launcher.typed == []
