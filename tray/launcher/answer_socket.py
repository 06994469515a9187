"""The launcher's answer socket: the one channel from the desktop back into a session.

A Unix socket in the state directory, ``<session id>.answer``, mode 0600 in the 0700
directory, that only a peer of the launcher's own uid may use (``SO_PEERCRED``). A
connection carries one request, one JSON line of at most :data:`MAX_REQUEST` bytes::

    {"answer": "approve", "record": "", "since": 1764470012.5}

and gets one JSON line back before it is closed: ``{"ok": true, "record": ..., "since":
...}`` once the keys went into the program's input, or ``{"ok": false, "reason": ...}``.

Nothing here blocks. The launcher's poll loop watches :meth:`AnswerSocket.fds`, calls
:meth:`AnswerSocket.on_readable` for each ready one, and :meth:`AnswerSocket.tick` when
:meth:`AnswerSocket.timeout` has passed. The request only names a prompt; the keys come
from the gate (:func:`tray.core.answers.gate.decide`, asked through the launcher's ``gate``
callback both when the request arrives and again at the moment of typing), and go in
through the launcher's ``type_keys`` callback, which writes them in one write between the
user's own keystrokes, or says not now.
"""

from __future__ import annotations

import math
import os
import socket
import struct
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from tray.base.safe_text import clean_text, cut
from tray.core.answers.gate import ANSWERS, Decision, Request
from tray.core.session.model import Session
from tray.state.store import ANSWER_SUFFIX, StateStore, valid_session_id, with_liveness

SUFFIX = ANSWER_SUFFIX
MAX_REQUEST = 512
# From the connection's start: time to send the request, and for an early answer to wait
# for its prompt to settle. A peer that stalls is cut off, never waited for.
REQUEST_TIMEOUT = 2.0
HOLD_LIMIT = 5.0
# The client's wait: a request's time, the longest hold, and a margin.
REPLY_TIMEOUT = REQUEST_TIMEOUT + HOLD_LIMIT + 2.0
MAX_REPLY = 4096
MAX_CONNECTIONS = 8
# Accepted per readable event, so a flood cannot keep the byte loop in accept().
ACCEPT_BURST = 8
# struct ucred: pid, uid, gid.
_UCRED = struct.Struct("iII")


class _Connection:
    __slots__ = ("buffer", "deadline", "fd", "request", "sock")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.buffer = b""
        self.deadline = deadline
        self.request: Request | None = None


def socket_path(state_dir: str | os.PathLike[str], session_id: str) -> str:
    """The socket of ``session_id`` in ``state_dir``, as a string."""
    return os.path.join(state_dir, f"{session_id}{SUFFIX}")


def parse_request(line: bytes) -> Request | str:
    """A request line, or why it is not one. Only these three fields, strictly."""
    import json  # noqa: PLC0415 - only a request needs it, and most sessions get none

    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "bad request: not JSON"
    if not isinstance(data, dict) or set(data) - {"answer", "record", "since"}:
        return "bad request: unknown fields"
    answer, record, since = data.get("answer"), data.get("record"), data.get("since")
    if answer not in ANSWERS:
        return "bad request: answer must be approve or deny"
    if record is not None and (not isinstance(record, str) or len(record) > 128):
        return "bad request: record"
    if since is not None:
        if isinstance(since, bool) or not isinstance(since, (int, float)):
            return "bad request: since"
        if not math.isfinite(float(since)):
            return "bad request: since"
        since = float(since)
    return Request(str(answer), record, since)


class AnswerSocket:
    """The listening socket and its open connections.

    ``gate(request)`` is the launcher's own call of :func:`tray.core.answers.gate.decide` with
    its live records and last-input time; ``type_keys(keys)`` writes them into the
    program's input in one write and returns True, or returns False when it cannot now
    (inside one of the user's escape sequences), and the socket tries again on the next
    tick; ``on_answered(decision, answer)`` is told after keys went in.

    ``clock`` times connections (monotonic); ``record_clock`` is the clock of the
    records' ``since`` (the launcher's wall clock), against which a held answer's
    ``not_before`` is read.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        gate: Callable[[Request], Decision],
        type_keys: Callable[[bytes], bool],
        on_answered: Callable[[Decision, str], None] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        record_clock: Callable[[], float] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self._gate = gate
        self._type_keys = type_keys
        self._on_answered = on_answered
        self._clock = clock
        self._record_clock = clock if record_clock is None else record_clock
        self._connections: dict[int, _Connection] = {}
        self._listener = self._listen(self.path)

    @staticmethod
    def _listen(path: str) -> socket.socket:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        # A stale socket of an earlier launcher with the same id; never another file.
        if Path(path).is_socket():
            with suppress(FileNotFoundError):  # gone meanwhile
                os.unlink(path)
        # Created 0600 from the start: a chmod after bind would leave a window.
        old = os.umask(0o177)
        try:
            listener.bind(path)
        except OSError:
            listener.close()
            raise
        finally:
            os.umask(old)
        listener.listen(MAX_CONNECTIONS)
        listener.setblocking(False)
        return listener

    def fileno(self) -> int:
        return self._listener.fileno()

    def fds(self) -> list[int]:
        """Every fd to poll for reading: the listener, then the connections still sending
        their request. A held one is left out: more bytes or its end would keep it readable
        and spin the loop, and it gets nothing more read anyway."""
        waiting = [fd for fd, c in self._connections.items() if c.request is None]
        return [self._listener.fileno(), *waiting]

    def timeout(self) -> float | None:
        """Seconds until :meth:`tick` has work, or None when no connection is open."""
        if not self._connections:
            return None
        now = self._clock()
        soonest = min(self._next_moment(c) for c in self._connections.values())
        return max(0.0, soonest - now)

    def _next_moment(self, connection: _Connection) -> float:
        if connection.request is None:
            return connection.deadline
        # A held answer is retried often: its prompt settles, or the user's sequence ends.
        return min(connection.deadline, self._clock() + 0.02)

    def on_readable(self, fd: int) -> None:
        if fd == self._listener.fileno():
            self._accept()
            return
        connection = self._connections.get(fd)
        if connection is not None and connection.request is None:
            self._read(connection)

    def tick(self) -> None:
        """Expire stalled connections and type held answers whose moment has come."""
        now = self._clock()
        for connection in list(self._connections.values()):
            if connection.request is not None:
                self._try_answer(connection)
            if self._connections.get(connection.fd) is connection and now >= connection.deadline:
                self._finish(connection, {"ok": False, "reason": "timed out"})

    def _accept(self) -> None:
        for _ in range(ACCEPT_BURST):
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                # Out of fds, an aborted peer and the like: never worth the launcher.
                return
            sock.setblocking(False)
            if not self._same_uid(sock):
                self._reply_and_close(sock, {"ok": False, "reason": "refused: another user"})
                continue
            if len(self._connections) >= MAX_CONNECTIONS:
                self._reply_and_close(sock, {"ok": False, "reason": "busy"})
                continue
            connection = _Connection(sock, self._clock() + REQUEST_TIMEOUT)
            self._connections[connection.fd] = connection

    @staticmethod
    def _same_uid(sock: socket.socket) -> bool:
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
        except OSError:
            return False
        if len(raw) != _UCRED.size:
            return False
        _, uid, _ = _UCRED.unpack(raw)
        return bool(uid == os.getuid())

    def _read(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(MAX_REQUEST + 1 - len(connection.buffer))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(connection)
            return
        if not data:
            self._finish(connection, {"ok": False, "reason": "bad request: no line"})
            return
        connection.buffer += data
        line, newline, _ = connection.buffer.partition(b"\n")
        if not newline:
            if len(connection.buffer) > MAX_REQUEST:
                self._finish(connection, {"ok": False, "reason": "bad request: too large"})
            return
        request = parse_request(line)
        if isinstance(request, str):
            self._finish(connection, {"ok": False, "reason": request})
            return
        connection.request = request
        connection.deadline = min(connection.deadline, self._clock()) + HOLD_LIMIT
        self._try_answer(connection)

    def _try_answer(self, connection: _Connection) -> None:
        request = connection.request
        assert request is not None
        decision = self._gate(request)
        if decision.keys is None:
            self._finish(connection, {"ok": False, "reason": decision.reason or "refused"})
            return
        if decision.not_before is not None and self._record_clock() < decision.not_before:
            return  # held: the prompt has only just appeared
        if not self._type_keys(decision.keys):
            return  # held: inside one of the user's sequences
        if self._on_answered is not None:
            self._on_answered(decision, request.answer)
        self._finish(connection, {"ok": True, "record": decision.record, "since": decision.since})

    def _finish(self, connection: _Connection, reply: dict[str, object]) -> None:
        self._connections.pop(connection.fd, None)
        self._reply_and_close(connection.sock, reply)

    def _drop(self, connection: _Connection) -> None:
        self._connections.pop(connection.fd, None)
        connection.sock.close()

    @staticmethod
    def _reply_and_close(sock: socket.socket, reply: dict[str, object]) -> None:
        import json  # noqa: PLC0415 - see parse_request

        # One small line into an empty socket buffer: it fits, or the peer is gone.
        with suppress(OSError):
            sock.send(json.dumps(reply).encode() + b"\n", socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
        sock.close()

    def close(self) -> None:
        for connection in list(self._connections.values()):
            self._finish(connection, {"ok": False, "reason": "the session has ended"})
        self._listener.close()
        with suppress(OSError):  # removed already, or the directory with it
            os.unlink(self.path)


def send_answer(
    path: str | os.PathLike[str],
    answer: str,
    record: str | None,
    since: float | None,
    timeout: float = REPLY_TIMEOUT,
) -> tuple[bool, str]:
    """The client's side, for ``tray answer`` and the tray app: one request on a
    launcher's socket. True when the keys went in; else False and one short line why."""
    import json  # noqa: PLC0415 - see parse_request

    request = {"answer": answer, "record": record, "since": since}
    deadline = time.monotonic() + timeout
    data = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC) as client:
        client.settimeout(timeout)
        try:
            client.connect(os.fspath(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return False, "its launcher takes no answers (an older tray?)"
        except OSError as error:
            return False, cut(clean_text(error.strerror or str(error)), 80)
        try:
            client.sendall(json.dumps(request).encode() + b"\n")
            while not data.endswith(b"\n") and len(data) < MAX_REPLY:
                client.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = client.recv(MAX_REPLY)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            return False, "no reply from its launcher"
        except OSError as error:
            if not data:
                return False, cut(clean_text(error.strerror or str(error)), 80)
    try:
        reply = json.loads(data)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        return False, "no reply from its launcher"
    if reply.get("ok") is True:
        return True, ""
    reason = reply.get("reason")
    # The launcher's words, but shown as text only, and short.
    return False, cut(clean_text(reason), 100) if isinstance(reason, str) else "refused"


# What answer_stored_session says happened.
ANSWERED = "answered"
NOT_AN_ID = "not a session id"
NO_SESSION = "no such session"
UNREADABLE = "unreadable"
HAS_ENDED = "ended"
REFUSED = "refused"


def answer_stored_session(
    state_dir: str | os.PathLike[str],
    session_id: str,
    answer: str,
    record: str | None,
    since: float | None,
) -> tuple[str, str, Session | None]:
    """The client's whole way for a session of this machine, for ``tray answer`` and the
    remote stream: read its state file and, while it runs, :func:`send_answer`.

    Returns one of the outcomes above; the read error or the launcher's reason (else
    ""); and the session once it was read. Each caller words the outcome its own way.
    """
    if not valid_session_id(session_id):
        return NOT_AN_ID, "", None
    store = StateStore(os.fspath(state_dir))
    try:
        session = with_liveness(store.read(store.path_for(session_id)))
    except FileNotFoundError:
        return NO_SESSION, "", None
    except (OSError, ValueError) as error:
        return UNREADABLE, str(error), None
    if not session.running:
        return HAS_ENDED, "", session
    ok, reason = send_answer(socket_path(state_dir, session_id), answer, record, since)
    return (ANSWERED, "", session) if ok else (REFUSED, reason, session)
