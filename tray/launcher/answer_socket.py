"""The launcher's answer socket: the one channel from the desktop back into a session.

The server's side of :mod:`tray.state.answer_channel`, whose wire format and client it
speaks: a Unix socket that only a peer of the launcher's own uid may use (``SO_PEERCRED``).

Nothing here blocks. The pty's poll loop (:class:`tray.launcher.proxy.PtyProxy`) serves
the socket through :class:`AnswerHandler`, its guest there: the loop watches
:meth:`AnswerSocket.fds`, calls :meth:`AnswerSocket.on_readable` for each ready one, and
:meth:`AnswerSocket.tick` when :meth:`AnswerSocket.timeout` has passed. The request only
names a prompt; the keys come from the gate (:func:`tray.core.answers.gate.decide`, asked
through the launcher's ``gate`` callback both when the request arrives and again at the
moment of typing), and go in through the launcher's ``type_keys`` callback, which writes
them in one write between the user's own keystrokes, or says not now.
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

from tray.core.answers.gate import Decision, Request
from tray.launcher.loop_seat import Seat
from tray.state.answer_channel import (
    HOLD_LIMIT,
    MAX_REQUEST,
    REQUEST_TIMEOUT,
    encode_line,
    parse_request,
)

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
        # One small line into an empty socket buffer: it fits, or the peer is gone.
        with suppress(OSError):
            sock.send(encode_line(reply), socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
        sock.close()

    def close(self) -> None:
        for connection in list(self._connections.values()):
            self._finish(connection, {"ok": False, "reason": "the session has ended"})
        self._listener.close()
        with suppress(OSError):  # removed already, or the directory with it
            os.unlink(self.path)


class AnswerHandler:
    """The answer socket as a guest of the pty's loop: what the socket waits on is polled
    there, and its next tick is among the loop's timers.

    A bug in the socket turns answering off, in one line of ``log``: it must never end the
    user's session.
    """

    def __init__(self, answers: AnswerSocket, log: Callable[[str], None]) -> None:
        self._answers: AnswerSocket | None = answers
        self._log = log
        self._seat: Seat | None = None
        self._fds: set[int] = set()

    def join(self, seat: Seat) -> None:
        self._seat = seat
        self._sync()

    def wake(self) -> None:
        answers = self._answers
        if answers is None:
            return
        try:
            answers.tick()
        except Exception as error:  # a bug here must not end the user's session
            self._failed(error)
            return
        self._sync()

    def _on_readable(self, fd: int) -> None:
        answers = self._answers
        if answers is None:
            return
        try:
            answers.on_readable(fd)
        except Exception as error:  # a bug here must not end the user's session
            self._failed(error)
            return
        self._sync()

    def _sync(self) -> None:
        """Poll what the socket waits on now, and time its next tick."""
        answers, seat = self._answers, self._seat
        assert answers is not None
        assert seat is not None
        wanted = set(answers.fds())
        for fd in self._fds - wanted:
            seat.unwatch(fd)
        for fd in wanted - self._fds:
            seat.watch(fd, self._handler(fd))
        self._fds = wanted
        delay = answers.timeout()
        seat.wake_at(self, math.inf if delay is None else time.monotonic() + delay)

    def _handler(self, fd: int) -> Callable[[int], None]:
        return lambda events: self._on_readable(fd)

    def _failed(self, error: Exception) -> None:
        self._log(f"answer socket failed, answering off: {type(error).__name__}: {error}")
        answers, seat = self._answers, self._seat
        assert answers is not None
        assert seat is not None
        for fd in self._fds:
            seat.unwatch(fd)
        self._fds = set()
        seat.wake_at(self, math.inf)
        self._answers = None
        # A broken socket must not end the session.
        with suppress(Exception):
            answers.close()
