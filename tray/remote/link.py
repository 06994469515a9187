"""The laptop's end: one ``ssh`` per host, kept up, its frames turned into sessions.

Each :class:`HostLink` runs one thread that starts ``ssh ... REMOTE_COMMAND status
--watch --format jsonl``, reads its frames, and hands the app the host's sessions
through ``on_state`` (at most ten documents a second, the newest winning) and the
link's health through ``on_status``: one change when the host is lost, however many
retries follow, and one when it is back. Callbacks run on the link's thread; they should
store what they get and wake the app, not work there.

ssh's stdin carries one kind of line, an answer request (:meth:`HostLink.answer`), to a
stream that said it takes them; closing it is what ends the remote end, and it closes by
itself if this process dies, so no remote stream outlives the tray.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from tray.core.hosts.remote_sessions import (
    HostStatus,
    RemoteDocumentError,
    RemoteState,
    parse_document,
)
from tray.core.hosts.ssh_commands import HostConfig, stream_argv
from tray.core.hosts.ssh_failures import Failure, classify
from tray.remote.frames import (
    ANSWERED,
    STATE,
    AnswerRequest,
    Backoff,
    Coalescer,
    Frame,
    FrameError,
    encode_answer_request,
    parse_answer_reply,
    takes_answers,
)
from tray.remote.ssh import FrameReader, Ssh, start_ssh
from tray.state.answer_channel import REPLY_TIMEOUT

StateCallback = Callable[[str, RemoteState], None]
StatusCallback = Callable[[str, HostStatus], None]


@dataclass(frozen=True, slots=True)
class LinkTimings:
    dead_after: float = 45.0  # no frame for this long: the link is dead
    first_retry: float = 1.0
    max_retry: float = 60.0
    min_interval: float = 0.1  # between two documents handed to the app
    grace: float = 1.0  # for ssh to end after SIGTERM, before SIGKILL


# The remote launcher's longest wait, and a margin for the link itself.
LINK_ANSWER_TIMEOUT = REPLY_TIMEOUT + 2.0


class _Pending:
    """One answer request sent on the link, until its reply comes or the link ends."""

    __slots__ = ("done", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: tuple[bool, str] | None = None


@dataclass(frozen=True, slots=True)
class _Outcome:
    delivered: bool  # at least one document reached the app: a good connection
    failure: Failure


class HostLink:
    """Keeps one host's sessions flowing to ``on_state`` until :meth:`stop`."""

    def __init__(
        self,
        host: HostConfig,
        on_state: StateCallback,
        on_status: StatusCallback,
        *,
        timings: LinkTimings | None = None,
        clock: Callable[[], float] = time.time,
        environ: Mapping[str, str] | None = None,
        ssh: str = "ssh",
        log: logging.Logger | None = None,
    ) -> None:
        # Checked here as well as in parse_hosts: ssh would read it as an option.
        stream_argv(host, ssh)
        self.host = host
        self._on_state = on_state
        self._on_status = on_status
        self._timings = timings or LinkTimings()
        self._clock = clock
        self._environ = environ
        self._ssh_program = ssh
        self._log = log or logging.getLogger("tray.remote")
        self._stopping = threading.Event()
        # Readable once a stop is asked for; it stays readable, so every later wait ends
        # at once too. Closed only when the thread is known to be gone.
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._lock = threading.Lock()
        self._ssh: Ssh | None = None
        self._status = HostStatus(host.name, "connecting", clock())
        self._state: RemoteState | None = None
        self._last_seen: float | None = None
        self._bad_documents = 0
        # Under the lock: whether this connection's stream said it takes answers, and
        # the requests sent on it that wait for their reply.
        self._takes_answers = False
        self._pending: dict[int, _Pending] = {}
        self._request_ids = itertools.count(1)
        self._thread = threading.Thread(
            target=self._run, name=f"tray-host-{host.name}", daemon=True
        )

    @property
    def status(self) -> HostStatus:
        return self._status

    @property
    def state(self) -> RemoteState | None:
        """The latest sessions received, however old; pair with :attr:`status`."""
        return self._state

    def start(self) -> None:
        self._thread.start()

    def answer(
        self,
        session_id: str,
        answer: str,
        record: str | None,
        since: float | None,
        timeout: float = LINK_ANSWER_TIMEOUT,
    ) -> tuple[bool, str] | None:
        """Answer the host's session ``session_id`` (its id there) over the open link.

        True when the keys reached the program; False and the remote launcher's reason
        (or why the request is bad) when refused; None when it could not go this way
        (not connected, a stream too old to take answers, no reply within ``timeout``,
        the link ended first), and the caller answers by a one-shot ssh instead. The
        remote launcher answers a prompt once, so a retry never types twice. Any thread.
        """
        with self._lock:
            ssh = self._ssh
            if ssh is None or not self._takes_answers or self._status.state != "connected":
                return None
            request_id = next(self._request_ids)
            try:
                line = encode_answer_request(
                    AnswerRequest(request_id, session_id, record, since, answer)
                )
            except ValueError as error:
                return False, str(error)
            pending = self._pending[request_id] = _Pending()
        try:
            if not ssh.send(line) or not pending.done.wait(timeout):
                return None
            return pending.result
        finally:
            with self._lock:
                self._pending.pop(request_id, None)

    def request_stop(self) -> None:
        """Tell the link to end, without waiting for it."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"x")
        with self._lock:
            ssh = self._ssh
        if ssh is not None:
            ssh.terminate()

    def stop(self, timeout: float = 5.0) -> None:
        """End the ssh and the thread; no callback runs once this returns."""
        self.request_stop()
        if self._thread.is_alive():
            self._thread.join(timeout)
        with self._lock:
            if not self._thread.is_alive() and self._wake_read >= 0:
                os.close(self._wake_read)
                os.close(self._wake_write)
                self._wake_read = self._wake_write = -1

    # The thread.

    def _run(self) -> None:
        backoff = Backoff(self._timings.first_retry, self._timings.max_retry)
        self._emit_status(self._status)
        lost_at: float | None = None
        while not self._stopping.is_set():
            started = self._clock()
            try:
                outcome = self._attempt()
            except Exception:  # the link must outlive any one bad attempt
                self._log.exception("%s: link failed", self.host.name)
                outcome = _Outcome(False, Failure("other", "internal error; see the log"))
            if self._stopping.is_set():
                break
            if outcome.delivered:
                backoff.reset()
                # No status yet: if the next attempt gets through, the blip stays unseen.
                lost_at = self._clock()
                self._log.info("%s: link ended: %s", self.host.name, outcome.failure.reason)
            elif self._status.state != "unreachable":
                since = lost_at if lost_at is not None else started
                self._log.warning("%s: unreachable: %s", self.host.name, outcome.failure.line())
                self._set_status(
                    HostStatus(
                        self.host.name,
                        "unreachable",
                        since,
                        outcome.failure,
                        self._last_seen,
                    )
                )
            else:
                # Later failures update what `status` says, and nothing else.
                self._status = HostStatus(
                    self.host.name,
                    "unreachable",
                    self._status.since,
                    outcome.failure,
                    self._last_seen,
                )
            self._stopping.wait(backoff.next())

    def _attempt(self) -> _Outcome:
        started = start_ssh(stream_argv(self.host, self._ssh_program), self._environ)
        if isinstance(started, Failure):
            return _Outcome(False, started)
        ssh = started
        with self._lock:
            self._ssh = ssh
            self._takes_answers = False
        if self._stopping.is_set():
            ssh.terminate()
        timings = self._timings
        reader = FrameReader(self.host)
        coalescer: Coalescer[Frame] = Coalescer(timings.min_interval)
        monotonic = time.monotonic
        deadline = monotonic() + timings.dead_after
        delivered = False
        failure: Failure | None = None
        try:
            while not self._stopping.is_set():
                now = monotonic()
                if now >= deadline:
                    failure = Failure(
                        "no-word",
                        f"no word from {self.host.name} for {timings.dead_after:g} s",
                    )
                    ssh.terminate()
                    break
                wait = deadline - now
                due = coalescer.due_at()
                if due is not None:
                    wait = min(wait, due - now)
                data = ssh.read(wait, self._wake_read)
                if data is None:
                    break
                for frame in reader.feed(data):
                    self._last_seen = self._clock()
                    deadline = monotonic() + timings.dead_after
                    if frame.kind == STATE:
                        coalescer.offer(frame)
                    elif frame.kind == ANSWERED:
                        self._answered(frame)
                if reader.failure is not None:
                    failure = reader.failure
                    ssh.terminate()
                    break
                frame_due = coalescer.take(monotonic())
                if frame_due is not None:
                    delivered = self._deliver(frame_due) or delivered
            # What arrived just before the end is still the host's latest word.
            last = coalescer.take(float("inf"))
            if last is not None and not self._stopping.is_set():
                delivered = self._deliver(last) or delivered
        finally:
            code, stderr = ssh.finish(timings.grace)
            with self._lock:
                self._ssh = None
                self._takes_answers = False
                # Their replies can no longer come: each caller goes the one-shot way.
                for pending in self._pending.values():
                    pending.done.set()
        if failure is None:
            failure = classify(self.host, stderr, code)
        return _Outcome(delivered, failure)

    def _answered(self, frame: Frame) -> None:
        reply = parse_answer_reply(frame)
        if reply is None:
            return
        request_id, ok, reason = reply
        with self._lock:
            pending = self._pending.get(request_id)
            if pending is None or pending.done.is_set():
                return  # a reply nobody waits for (any more): ignored
            pending.result = (True, f"answered on {self.host.name}") if ok else (False, reason)
            pending.done.set()

    def _deliver(self, frame: Frame) -> bool:
        try:
            document = frame.json()
            state = parse_document(self.host.name, document, self._clock())
        except (FrameError, RemoteDocumentError) as error:
            self._bad_documents += 1
            if self._bad_documents == 1:
                self._log.warning("%s: ignoring a bad status document: %s", self.host.name, error)
            return False
        with self._lock:
            self._takes_answers = takes_answers(document)
        if self._state is None:
            state = replace(state, initial=True)
        self._state = state
        if self._status.state != "connected":
            self._set_status(HostStatus(self.host.name, "connected", self._clock()))
        if not self._stopping.is_set():
            try:
                self._on_state(self.host.name, state)
            except Exception:
                self._log.exception("%s: on_state failed", self.host.name)
        return True

    def _set_status(self, status: HostStatus) -> None:
        self._status = status
        self._emit_status(status)

    def _emit_status(self, status: HostStatus) -> None:
        if self._stopping.is_set():
            return
        try:
            self._on_status(self.host.name, status)
        except Exception:
            self._log.exception("%s: on_status failed", self.host.name)


class HostLinks:
    """All configured hosts' links together, for the app to start and stop as one."""

    def __init__(
        self,
        hosts: Sequence[HostConfig],
        on_state: StateCallback,
        on_status: StatusCallback,
        *,
        timings: LinkTimings | None = None,
        environ: Mapping[str, str] | None = None,
        ssh: str = "ssh",
        log: logging.Logger | None = None,
    ) -> None:
        self.links = tuple(
            HostLink(host, on_state, on_status, timings=timings, environ=environ, ssh=ssh, log=log)
            for host in hosts
        )

    def start(self) -> None:
        for link in self.links:
            link.start()

    def stop(self, timeout: float = 5.0) -> None:
        # Every ssh is told to end first, so they wind down together, not one by one.
        for link in self.links:
            link.request_stop()
        for link in self.links:
            link.stop(timeout)

    def get(self, name: str) -> HostLink | None:
        return next((link for link in self.links if link.host.name == name), None)


__all__ = [
    "HostLink",
    "HostLinks",
    "HostStatus",
    "LinkTimings",
]
