"""The laptop's end: one ``ssh`` per host, kept up, its frames turned into sessions.

Each :class:`HostLink` runs one thread that starts ``ssh ... REMOTE_COMMAND status
--watch --format jsonl``, reads its frames, and hands the app the host's sessions
through ``on_state`` (at most ten documents a second, the newest winning) and the
link's health through ``on_status``: one change when the host is lost, however many
retries follow, and one when it is back. Callbacks run on the link's thread; they should
store what they get and wake the app, not work there.

ssh's stdin is a pipe that is never written: closing it is what ends the remote end,
and it closes by itself if this process dies, so no remote stream outlives the tray.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import IO, Final, Literal

from tray.remote.failures import NOT_FOUND, SSH_ERROR, Failure, classify, short_line
from tray.remote.frames import (
    MAX_FRAME,
    STATE,
    VERSION,
    Backoff,
    Coalescer,
    Frame,
    FrameError,
    LineSplitter,
    parse_frame,
)
from tray.remote.hosts import HostConfig, dismiss_argv, focus_argv, stream_argv, version_argv
from tray.remote.sessions import (
    RemoteDocumentError,
    RemoteState,
    clock_time,
    parse_document,
    split_remote_id,
)
from tray.text import clean_text, cut

LinkState = Literal["connecting", "connected", "unreachable"]
StateCallback = Callable[[str, RemoteState], None]
StatusCallback = Callable[[str, "HostStatus"], None]

STDERR_KEPT: Final = 8192
READ_CHUNK: Final = 65536
CHECK_TIMEOUT: Final = 15.0
ACTION_TIMEOUT: Final = 15.0
# Focus runs on the app's worker, which shows nothing new while it waits.
FOCUS_TIMEOUT: Final = 5.0
_VERSION_LINE: Final = re.compile(r"tray (\S{1,40})")


@dataclass(frozen=True, slots=True)
class LinkTimings:
    dead_after: float = 45.0  # no frame for this long: the link is dead
    first_retry: float = 1.0
    max_retry: float = 60.0
    min_interval: float = 0.1  # between two documents handed to the app
    grace: float = 1.0  # for ssh to end after SIGTERM, before SIGKILL


@dataclass(frozen=True, slots=True)
class HostStatus:
    host: str
    state: LinkState
    since: float  # when this state began; for "unreachable", when the host was lost
    failure: Failure | None = None  # why it is unreachable, with a fix when there is one
    last_seen: float | None = None  # the last frame from the host, if any ever came

    def line(self, localtime: Callable[[float], time.struct_time] = time.localtime) -> str:
        """ "unreachable since 14:02, retrying: connection refused by ...", one line."""
        if self.state == "connected":
            return f"connected since {clock_time(self.since, localtime)}"
        if self.state == "connecting":
            return "connecting"
        text = f"unreachable since {clock_time(self.since, localtime)}, retrying"
        return f"{text}: {self.failure.reason}" if self.failure is not None else text


class _StderrTail:
    """The last few KiB ssh wrote to stderr: its error is at the end, and a chatty
    remote must not grow memory."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._data = bytearray()
        self._thread = threading.Thread(target=self._drain, name="tray-ssh-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        fd = self._stream.fileno()
        try:
            while chunk := os.read(fd, READ_CHUNK):
                self._data += chunk
                del self._data[:-STDERR_KEPT]
        except OSError:
            pass
        # Closed here, by the only reader: a ProxyCommand may hold the pipe open after
        # ssh is gone, and closing it under a blocked read could hand its number to
        # another file that this thread would then read.
        self._stream.close()

    def text(self, timeout: float) -> str:
        self._thread.join(timeout)
        return bytes(self._data).decode("utf-8", "replace")


class _Ssh:
    """One ssh child in its own process group, so a ProxyCommand goes with it."""

    def __init__(self, argv: Sequence[str], environ: Mapping[str, str] | None) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=None if environ is None else dict(environ),
            start_new_session=True,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._stdout = self.proc.stdout.fileno()
        self._stderr = _StderrTail(self.proc.stderr)
        self._closed = False

    def read(self, timeout: float, wake: int | None = None) -> bytes | None:
        """Whatever came within ``timeout`` seconds (maybe nothing); None at the end.

        A byte on ``wake`` cuts the wait short, so a stop never waits for ssh.
        """
        if self._closed:
            return None
        watched = [self._stdout] if wake is None else [self._stdout, wake]
        ready, _, _ = select.select(watched, [], [], max(0.0, timeout))
        if self._stdout not in ready:
            return b""
        try:
            data = os.read(self._stdout, READ_CHUNK)
        except OSError:
            data = b""
        if not data:
            self._closed = True
            return None
        return data

    def terminate(self) -> None:
        """End the remote side by closing stdin, and ssh itself at once."""
        self._close_stdin()
        self._signal(signal.SIGTERM)

    def _close_stdin(self) -> None:
        # Both the link's thread and stop() may get here; the second close is a no-op.
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()

    def _signal(self, signum: int) -> None:
        # Only while the leader is unreaped: its pid, and so the group id, is still ours.
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signum)

    def finish(self, grace: float) -> tuple[int | None, str]:
        """Wait for ssh (killing it after ``grace``); its exit status and stderr."""
        self._close_stdin()
        try:
            code: int | None = self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGTERM)
            try:
                code = self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                code = self.proc.wait()
        stderr = self._stderr.text(grace)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return (None if code is not None and code < 0 else code), stderr


def _no_ssh(program: str, error: OSError) -> Failure:
    return Failure(
        "no-ssh", f"cannot run {program}: {error.strerror or error}", "install the OpenSSH client"
    )


def _start_ssh(argv: Sequence[str], environ: Mapping[str, str] | None) -> _Ssh | Failure:
    try:
        return _Ssh(argv, environ)
    except OSError as error:
        return _no_ssh(argv[0], error)


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
        self._ssh: _Ssh | None = None
        self._status = HostStatus(host.name, "connecting", clock())
        self._state: RemoteState | None = None
        self._last_seen: float | None = None
        self._bad_documents = 0
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
        started = _start_ssh(stream_argv(self.host, self._ssh_program), self._environ)
        if isinstance(started, Failure):
            return _Outcome(False, started)
        ssh = started
        with self._lock:
            self._ssh = ssh
        if self._stopping.is_set():
            ssh.terminate()
        timings = self._timings
        splitter = LineSplitter(MAX_FRAME)
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
                for line in splitter.feed(data):
                    frame = parse_frame(line)
                    if frame is None:
                        continue  # a MOTD, a chatty profile: not ours
                    if frame.version != VERSION:
                        failure = _incompatible(self.host, frame.version)
                        ssh.terminate()
                        break
                    self._last_seen = self._clock()
                    deadline = monotonic() + timings.dead_after
                    if frame.kind == STATE:
                        coalescer.offer(frame)
                if failure is not None:
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
        if failure is None:
            failure = classify(self.host, stderr, code)
        return _Outcome(delivered, failure)

    def _deliver(self, frame: Frame) -> bool:
        try:
            state = parse_document(self.host.name, frame.json(), self._clock())
        except (FrameError, RemoteDocumentError) as error:
            self._bad_documents += 1
            if self._bad_documents == 1:
                self._log.warning("%s: ignoring a bad status document: %s", self.host.name, error)
            return False
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


def _incompatible(host: HostConfig, version: int) -> Failure:
    if version > VERSION:
        return Failure(
            "incompatible",
            f"the tray on {host.name} is newer than this one",
            "upgrade tray here (pipx upgrade tray)",
        )
    return Failure(
        "old-tray",
        f"the tray on {host.name} is too old for remote sessions",
        "upgrade tray there (pipx upgrade tray)",
    )


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


# One-shot commands: `tray doctor`, `tray status --host`, and the menu's actions.


def _run_once(
    argv: Sequence[str], timeout: float, environ: Mapping[str, str] | None
) -> tuple[int | None, str, str] | Failure:
    """Run one short ssh with stdin closed; its exit status, stdout and stderr."""
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=None if environ is None else dict(environ),
            start_new_session=True,
        )
    except OSError as error:
        return _no_ssh(argv[0], error)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Failure(
            "timeout",
            f"no answer within {timeout:g} s",
            "check that 'ssh DESTINATION true' works without a prompt",
        )
    code = proc.returncode
    return (
        None if code < 0 else code,
        out[-STDERR_KEPT:].decode("utf-8", "replace"),
        err[-STDERR_KEPT:].decode("utf-8", "replace"),
    )


@dataclass(frozen=True, slots=True)
class HostCheck:
    ok: bool
    found: str  # "tray 0.1.0 on me@devbox", or what went wrong
    fix: str | None = None

    def line(self) -> str:
        return f"{self.found}; fix: {self.fix}" if self.fix else self.found


def diagnose_host(
    host: HostConfig,
    timeout: float = CHECK_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
) -> HostCheck:
    """One ``REMOTE_COMMAND --version`` over ssh, with ``timeout``, for `tray doctor`."""
    result = _run_once(version_argv(host, ssh), timeout, environ)
    if isinstance(result, Failure):
        if result.kind == "timeout":
            return HostCheck(
                False,
                f"no answer from {host.destination} within {timeout:g} s",
                f"check that 'ssh {host.destination} true' works without a prompt",
            )
        return HostCheck(False, result.reason, result.fix)
    code, out, err = result
    if code == 0:
        for line in reversed(out.splitlines()):
            match = _VERSION_LINE.fullmatch(line.strip())
            if match is not None:
                version = clean_text(match.group(1))
                return HostCheck(True, f"tray {version} on {host.destination}")
        command = cut(clean_text(host.remote_command), 60)
        return HostCheck(
            False,
            f"'{command} --version' on {host.name} did not print a tray version",
            "point remote_command at the tray program there",
        )
    failure = classify(host, err, code)
    return HostCheck(False, failure.reason, failure.fix)


def check_host(
    host: HostConfig,
    timeout: float = CHECK_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
) -> tuple[bool, str]:
    """Whether ``host`` can be reached and runs tray, and one line saying so."""
    check = diagnose_host(host, timeout, environ=environ, ssh=ssh)
    return check.ok, check.line()


def _stderr_lines(err: str) -> list[str]:
    """A remote command's own complaints, each cut to one safe line."""
    return [short_line(line) for line in err.splitlines() if clean_text(line)]


def dismiss_remote(
    host: HostConfig,
    session_ids: Sequence[str],
    timeout: float = ACTION_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
) -> tuple[bool, str]:
    """``tray dismiss ID...`` on ``host`` for its sessions, ids as the app has them
    (``host:devbox/<id>``) or as the remote does; every id is checked before use."""
    remote_ids: list[str] = []
    for session_id in session_ids:
        parts = split_remote_id(session_id)
        if parts is not None:
            if parts[0] != host.name:
                return False, f"{short_line(session_id, 80)} is not a session of {host.name}"
            remote_ids.append(parts[1])
        else:
            remote_ids.append(session_id)
    try:
        argv = dismiss_argv(host, remote_ids, ssh)
    except ValueError as error:
        return False, short_line(str(error), 120)
    result = _run_once(argv, timeout, environ)
    if isinstance(result, Failure):
        return False, result.line()
    code, _, err = result
    if code == 0:
        return True, f"dismissed on {host.name}"
    if code == 1:
        # tray dismiss's own answer: "still running", "no session ...".
        lines = _stderr_lines(err)
        return False, lines[-1] if lines else f"dismiss failed on {host.name}"
    return False, classify(host, err, code).line()


def focus_remote(
    host: HostConfig,
    pane: str,
    socket: str,
    timeout: float = FOCUS_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
) -> tuple[bool, str]:
    """Select a remote session's tmux window and pane on ``host``; whether it worked,
    and one line saying so. ``pane`` and ``socket`` are checked before use."""
    try:
        argv = focus_argv(host, pane, socket, ssh)
    except ValueError as error:
        return False, short_line(str(error), 120)
    result = _run_once(argv, timeout, environ)
    if isinstance(result, Failure):
        return False, result.line()
    code, _, err = result
    if code == 0:
        return True, f"selected tmux pane {pane} on {host.name}"
    if code == SSH_ERROR:
        return False, classify(host, err, code).line()
    # tmux's own complaint: "can't find pane: %9", "no server running on ...".
    lines = _stderr_lines(err)
    if code == NOT_FOUND and not lines:
        return False, f"tmux is not installed on {host.name}"
    return False, lines[0] if lines else f"tmux failed on {host.name} with status {code}"


class RemoteError(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.line())
        self.failure = failure


def fetch_state(
    host: HostConfig,
    timeout: float = CHECK_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
    clock: Callable[[], float] = time.time,
) -> RemoteState:
    """The host's sessions once, for `tray status --host`: the stream's first document.

    Raises :class:`RemoteError` with the reason and the fix when there is none in time.
    """
    started = _start_ssh(stream_argv(host, ssh), environ)
    if isinstance(started, Failure):
        raise RemoteError(started)
    deadline = time.monotonic() + timeout
    splitter = LineSplitter(MAX_FRAME)
    failure: Failure | None = None
    state: RemoteState | None = None
    try:
        while state is None and failure is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                failure = Failure(
                    "timeout",
                    f"no sessions from {host.name} within {timeout:g} s",
                    f"check that 'ssh {host.destination} true' works without a prompt",
                )
                break
            data = started.read(remaining)
            if data is None:
                break
            for line in splitter.feed(data):
                frame = parse_frame(line)
                if frame is None:
                    continue
                if frame.version != VERSION:
                    failure = _incompatible(host, frame.version)
                    break
                if frame.kind != STATE:
                    continue
                try:
                    state = parse_document(host.name, frame.json(), clock())
                except (FrameError, RemoteDocumentError) as error:
                    failure = Failure("other", f"{host.name} sent a bad status document: {error}")
                break
    finally:
        if state is not None or failure is not None:
            started.terminate()
        # After the end of its output, ssh is left to exit by itself: its status and
        # last words are what explain the failure.
        code, stderr = started.finish(1.0)
    if state is not None:
        return state
    raise RemoteError(failure or classify(host, stderr, code))


__all__ = [
    "HostCheck",
    "HostLink",
    "HostLinks",
    "HostStatus",
    "LinkTimings",
    "RemoteError",
    "check_host",
    "diagnose_host",
    "dismiss_remote",
    "fetch_state",
    "focus_remote",
]
