"""The launcher on real ptys.

An outer pty plays the user's terminal: the test holds its master (what a terminal
emulator holds) and keeps its slave open to look at its settings and size. A tiny job
shell, in the outer pty's own session, starts the launcher as a foreground job and
reports every ``waitpid(WUNTRACED | WCONTINUED)`` result, as a real shell sees them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

import tray
from tray.session import Session
from tray.store import StateStore

PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent
TIMEOUT = 20.0
T = TypeVar("T")

# Stands in for ``python -m tray run --`` until the CLI is wired to the launcher.
# The same, recording every state file write (the launcher's monotonic time of it, the
# document) into argv[1] at the end.
WRITE_LOG_DRIVER = (
    "import json, sys\n"
    "from tray.environment import Environment\n"
    "from tray.launcher.run import Launcher\n"
    "log = []\n"
    "def on_write(session, at):\n"
    "    log.append([at, session.to_file()])\n"
    "code = Launcher(sys.argv[2:], None, Environment(), on_write=on_write).run()\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump(log, out)\n"
    "sys.exit(code)\n"
)

# argv: status fd, tty path, stdout path ("-" for the tty), stderr path, command...
JOB_SHELL = r"""
import fcntl, os, signal, sys, termios
status, tty_path, stdout_path, stderr_path = int(sys.argv[1]), *sys.argv[2:5]
argv = sys.argv[5:]
# Outlive the terminal closing, to report the launcher's end.
signal.signal(signal.SIGHUP, signal.SIG_IGN)
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
os.setsid()
tty = os.open(tty_path, os.O_RDWR)
fcntl.ioctl(tty, termios.TIOCSCTTY, 0)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(tty, os.getpid())
    for signum in (signal.SIGHUP, signal.SIGTTOU, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_DFL)
    err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    out = tty if stdout_path == "-" else os.open(stdout_path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.dup2(tty, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.execv(argv[0], argv)
try:
    os.setpgid(pid, pid)
except OSError:
    pass
os.write(status, b"P %d\n" % pid)
while True:
    _, wstatus = os.waitpid(pid, os.WUNTRACED | os.WCONTINUED)
    os.write(status, b"W %d\n" % wstatus)
    if os.WIFEXITED(wstatus) or os.WIFSIGNALED(wstatus):
        break
"""


def launcher_argv(command: Sequence[str], write_log: Path | None = None) -> list[str]:
    if write_log is not None:
        return [sys.executable, "-c", WRITE_LOG_DRIVER, str(write_log), *command]
    return [sys.executable, "-m", "tray", "run", "--", *command]


def wait_for(
    predicate: Callable[[], T | None],
    timeout: float = TIMEOUT,
    message: str = "condition",
    pump: Callable[[], None] | None = None,
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        if pump is not None:
            pump()
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        if pump is None:
            time.sleep(0.01)


def sessions(state_dir: Path) -> list[Session]:
    found, problems = StateStore(state_dir).read_all(time.time())
    assert not problems
    return found


def only_session(state_dir: Path) -> Session | None:
    found = sessions(state_dir)
    assert len(found) <= 1
    return found[0] if found else None


def started_session(state_dir: Path) -> Session | None:
    """The session once its file names the command's pid."""
    session = only_session(state_dir)
    return session if session is not None and session.child_pid is not None else None


def process_state(pid: int) -> str | None:
    """The state letter of proc(5) (R, S, T for stopped, Z...), or None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except FileNotFoundError:
        return None


def pid_gone(pid: int) -> bool:
    """True once ``pid`` is gone or a zombie nobody we know will wait for."""
    return process_state(pid) in (None, "Z")


@dataclass
class Terminal:
    """The user's terminal: ``master`` is the emulator's side, ``slave`` the tty."""

    master: int
    slave: int
    path: str
    output: bytearray = field(default_factory=bytearray)
    closed: bool = False

    def read(self, timeout: float = 0.02) -> None:
        if self.closed:
            return
        ready, _, _ = select.select([self.master], [], [], timeout)
        while ready:
            try:
                chunk = os.read(self.master, 65536)
            except OSError as error:  # EIO: nobody has the tty open
                if error.errno != errno.EIO:
                    raise
                return
            if not chunk:
                return
            self.output += chunk
            ready, _, _ = select.select([self.master], [], [], 0)

    def type(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self.master, view)
            view = view[written:]

    def attributes(self) -> list[Any]:
        return termios.tcgetattr(self.slave)

    def is_raw(self) -> bool:
        lflag = self.attributes()[3]
        return not lflag & (termios.ICANON | termios.ECHO | termios.ISIG)

    def resize(self, rows: int, columns: int) -> None:
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def close_master(self) -> None:
        if not self.closed:
            os.close(self.master)
            self.closed = True


@dataclass
class Job:
    """The launcher, run by the job shell on ``terminal``."""

    terminal: Terminal
    shell: subprocess.Popen[bytes]
    status_fd: int
    stderr_path: Path
    pid: int = 0
    statuses: list[int] = field(default_factory=list)
    _pending: bytes = b""

    def pump(self) -> None:
        """Take in whatever the terminal and the job shell have to say."""
        self.terminal.read(0.01)
        try:
            chunk = os.read(self.status_fd, 4096)
        except BlockingIOError:
            return
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            kind, value = line.split()
            if kind == b"P":
                self.pid = int(value)
            else:
                self.statuses.append(int(value))

    def wait(self, predicate: Callable[[], T | None], message: str, timeout: float = TIMEOUT) -> T:
        return wait_for(predicate, timeout, message, pump=self.pump)

    def expect(self, needle: bytes, timeout: float = TIMEOUT) -> None:
        self.wait(lambda: needle in self.terminal.output, f"{needle!r} on the terminal", timeout)

    def started(self) -> int:
        return self.wait(lambda: self.pid, "the launcher's pid")

    def exit_code(self, timeout: float = TIMEOUT) -> int:
        def ended() -> int | None:
            for status in self.statuses:
                if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                    return os.waitstatus_to_exitcode(status) + 1000
            return None

        code = self.wait(ended, "the launcher to exit", timeout) - 1000
        self.shell.wait(TIMEOUT)
        return code

    def stderr(self) -> str:
        return self.stderr_path.read_text()


@pytest.fixture
def tray_env(tmp_path: Path) -> dict[str, str]:
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in ("LINES", "COLUMNS", "TRAY_STATE_DIR", "TMUX", "TMUX_PANE")
    }
    environ["TRAY_STATE_DIR"] = str(tmp_path / "state")
    environ["PYTHONPATH"] = str(PROJECT_ROOT)
    environ["TERM"] = "xterm-256color"
    return environ


@pytest.fixture
def state_dir(tray_env: dict[str, str]) -> Path:
    return Path(tray_env["TRAY_STATE_DIR"])


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    master, slave = os.openpty()
    os.set_blocking(master, False)
    term = Terminal(master, slave, os.ttyname(slave))
    term.resize(24, 80)
    try:
        yield term
    finally:
        term.close_master()
        os.close(slave)


@pytest.fixture
def job_runner(
    tmp_path: Path, tray_env: dict[str, str], terminal: Terminal, state_dir: Path
) -> Iterator[Callable[..., Job]]:
    """Start launchers as foreground jobs on ``terminal``; clean up whatever is left."""
    jobs: list[Job] = []

    def start(argv: Sequence[str], stdout_path: Path | None = None) -> Job:
        status_read, status_write = os.pipe()
        os.set_blocking(status_read, False)
        stderr_path = tmp_path / f"stderr-{len(jobs)}"
        shell = subprocess.Popen(
            [
                sys.executable,
                "-c",
                JOB_SHELL,
                str(status_write),
                terminal.path,
                str(stdout_path) if stdout_path else "-",
                str(stderr_path),
                *argv,
            ],
            env=tray_env,
            cwd=tmp_path,
            pass_fds=(status_write,),
            stdin=subprocess.DEVNULL,
        )
        os.close(status_write)
        job = Job(terminal, shell, status_read, stderr_path)
        jobs.append(job)
        job.started()
        return job

    yield start
    for job in jobs:
        if job.shell.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(job.pid, signal.SIGKILL)
            job.shell.wait(TIMEOUT)
        os.close(job.status_fd)
    # Commands whose launcher did not see them end (a test failed, or killed it).
    for session in sessions(state_dir) if state_dir.exists() else []:
        if session.child_pid and not pid_gone(session.child_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(session.child_pid, signal.SIGKILL)


def run_piped(
    command: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    data: bytes | None = None,
    stdin: int | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """The launcher with stdin and stdout not terminals (pipes, CI)."""
    return subprocess.run(
        launcher_argv(command),
        input=data,
        stdin=None if data is not None else subprocess.DEVNULL if stdin is None else stdin,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=TIMEOUT,
        check=False,
    )


def read_write_log(path: Path) -> list[tuple[float, dict[str, Any]]]:
    return [(entry[0], entry[1]) for entry in json.loads(path.read_text())]
