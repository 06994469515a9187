"""The ssh children of the remote package, and reading frames from them.

Every ssh runs in a process group of its own (so a ProxyCommand ends with it), from an
argv, never a shell. :class:`Ssh` is a child kept running and read as it goes (the
stream, ``tray status --host``); :func:`run_once` is one short command (dismiss, focus,
``--version``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Final

from tray.core.hosts.ssh_commands import HostConfig
from tray.core.hosts.ssh_failures import Failure
from tray.remote.frames import MAX_FRAME, VERSION, Frame, LineSplitter, parse_frame

STDERR_KEPT: Final = 8192
READ_CHUNK: Final = 65536


def prompt_fix(destination: str) -> str:
    """The fix for an ssh that waits for, or fails without, a password or a host key."""
    return f"check that 'ssh {destination} true' works without a prompt"


def popen_ssh(
    argv: Sequence[str], environ: Mapping[str, str] | None, stdin: int
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with its output piped, in a process group of its own."""
    return subprocess.Popen(
        list(argv),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if environ is None else dict(environ),
        start_new_session=True,
    )


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


class Ssh:
    """One ssh child in its own process group, so a ProxyCommand goes with it."""

    def __init__(self, argv: Sequence[str], environ: Mapping[str, str] | None) -> None:
        self.proc = popen_ssh(argv, environ, subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._stdout = self.proc.stdout.fileno()
        self._stderr = _StderrTail(self.proc.stderr)
        self._closed = False
        # A write never waits on a remote that stopped reading: it fails instead.
        assert self.proc.stdin is not None
        os.set_blocking(self.proc.stdin.fileno(), False)
        self._stdin_lock = threading.Lock()

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

    def send(self, data: bytes) -> bool:
        """Write one whole line to the remote's stdin, from any thread; False when it
        cannot go now (closed, or the pipe is full) and nothing of it was written."""
        with self._stdin_lock:
            stdin = self.proc.stdin
            if stdin is None or stdin.closed or len(data) > select.PIPE_BUF:
                return False
            try:
                # Up to PIPE_BUF bytes go into a pipe whole or not at all.
                return os.write(stdin.fileno(), data) == len(data)
            except OSError:
                return False

    def terminate(self) -> None:
        """End the remote side by closing stdin, and ssh itself at once."""
        self._close_stdin()
        self._signal(signal.SIGTERM)

    def _close_stdin(self) -> None:
        # Both the link's thread and stop() may get here; the second close is a no-op.
        with self._stdin_lock, contextlib.suppress(OSError, ValueError):
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


def no_ssh(program: str, error: OSError) -> Failure:
    return Failure(
        "no-ssh", f"cannot run {program}: {error.strerror or error}", "install the OpenSSH client"
    )


def start_ssh(argv: Sequence[str], environ: Mapping[str, str] | None) -> Ssh | Failure:
    try:
        return Ssh(argv, environ)
    except OSError as error:
        return no_ssh(argv[0], error)


class FrameReader:
    """ssh's output as frames. Lines that are not frames (a MOTD, a chatty profile) are
    skipped; a frame of another protocol version ends the reading, with
    :attr:`failure` saying which side to upgrade."""

    def __init__(self, host: HostConfig) -> None:
        self._host = host
        self._splitter = LineSplitter(MAX_FRAME)
        self.failure: Failure | None = None

    def feed(self, data: bytes) -> Iterator[Frame]:
        for line in self._splitter.feed(data):
            frame = parse_frame(line)
            if frame is None:
                continue
            if frame.version != VERSION:
                self.failure = incompatible(self._host, frame.version)
                return
            yield frame


def incompatible(host: HostConfig, version: int) -> Failure:
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


def run_once(
    host: HostConfig, argv: Sequence[str], timeout: float, environ: Mapping[str, str] | None
) -> tuple[int | None, str, str] | Failure:
    """Run one short ssh to ``host`` with stdin closed; its exit status, stdout and stderr."""
    try:
        proc = popen_ssh(argv, environ, subprocess.DEVNULL)
    except OSError as error:
        return no_ssh(argv[0], error)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Failure(
            "timeout",
            f"no answer within {timeout:g} s",
            prompt_fix(host.destination),
        )
    code = proc.returncode
    return (
        None if code < 0 else code,
        out[-STDERR_KEPT:].decode("utf-8", "replace"),
        err[-STDERR_KEPT:].decode("utf-8", "replace"),
    )
