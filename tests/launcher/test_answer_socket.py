"""The launcher's answer socket on real Unix sockets: who may use it, and what it types.

The test plays the launcher: it owns the socket, polls its fds as the byte loop does,
and records what ``type_keys`` would have written into the program's input. Clients are
real sockets in threads, or forked processes running as ``nobody``.
"""

from __future__ import annotations

import json
import os
import select
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.answer_keys import SHIPPED_SETTINGS
from helpers.processes import ask_as_nobody

from tray.core.answers.gate import SETTLE, Decision, Request, decide
from tray.launcher.answer_socket import (
    HOLD_LIMIT,
    MAX_REQUEST,
    REQUEST_TIMEOUT,
    AnswerSocket,
    parse_request,
    send_answer,
    socket_path,
)
from tray.protocol.records import Record

# No single call may take this long: a blocking one would take a timeout's seconds, and
# the margin is for a loaded machine of 2 cores.
STALL = 0.2


class Launcher:
    """The launcher's side: live records, the user's last key, and what it typed."""

    def __init__(self, directory: Path) -> None:
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
            record_id, "blocked", "permission", None, "claude-code", None, msg, since, since
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

    def poll(self, seconds: float, until: threading.Event | None = None) -> float:
        """Run the loop's share for the socket; returns the longest single call."""
        longest = 0.0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not (until and until.is_set()):
            wait = self.socket.timeout()
            wait = 0.05 if wait is None else min(wait, 0.05)
            ready, _, _ = select.select(self.socket.fds(), [], [], wait)
            for fd in ready:
                start = time.monotonic()
                self.socket.on_readable(fd)
                longest = max(longest, time.monotonic() - start)
            start = time.monotonic()
            self.socket.tick()
            longest = max(longest, time.monotonic() - start)
        return longest


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
    assert time.monotonic() - start <= HOLD_LIMIT + 1
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
        start = time.monotonic()
        longest = launcher.poll(REQUEST_TIMEOUT + 1)
        client.settimeout(1)
        reply = json.loads(client.recv(4096))
    assert reply == {"ok": False, "reason": "timed out"}
    assert longest < STALL
    assert time.monotonic() - start < REQUEST_TIMEOUT + 1.5
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
            assert launcher.poll(0.01) < STALL
    longest = launcher.poll(REQUEST_TIMEOUT + 1)
    assert longest < STALL
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


def test_parse_request_is_strict() -> None:
    assert parse_request(b'{"answer": "deny"}') == Request("deny", None, None)
    assert parse_request(b'{"answer": "approve", "record": "a/b", "since": 5}') == Request(
        "approve", "a/b", 5.0
    )
    assert isinstance(parse_request(b'{"answer": "approve", "record": "' + b"a" * 129 + b'"}'), str)


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
        assert SETTLE * 0.9 <= time.monotonic() - start < SETTLE + 1
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


def test_the_client_shows_a_reply_as_plain_short_text(tmp_path: Path) -> None:
    path = tmp_path / "fake.answer"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)

        def reply() -> None:
            peer, _ = server.accept()
            with peer:
                peer.recv(4096)
                reason = "\x1b[31mred\r\nline\u202e" + "x" * 300
                peer.sendall(json.dumps({"ok": False, "reason": reason}).encode() + b"\n")

        thread = threading.Thread(target=reply)
        thread.start()
        ok, reason = send_answer(path, "approve", None, None, timeout=5)
        thread.join(5)
    assert ok is False
    assert reason.isprintable()
    assert "\u202e" not in reason
    assert len(reason) <= 100


def test_the_client_without_a_launcher(tmp_path: Path) -> None:
    assert send_answer(tmp_path / "none.answer", "deny", None, None) == (
        False,
        "its launcher takes no answers (an older tray?)",
    )


def test_socket_path_is_a_string_from_a_string_or_a_path(tmp_path: Path) -> None:
    expected = f"{tmp_path}/4242-abc.answer"
    assert socket_path(str(tmp_path), "4242-abc") == expected
    assert socket_path(tmp_path, "4242-abc") == expected


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
