"""The launcher's tests' terminal: `tray run` on real ptys.

An outer pty, made by ptyprocess, plays the user's terminal: the test holds its master
(what a terminal emulator holds). A tiny job shell leads the outer pty's session, starts
the launcher as a foreground job and reports every ``waitpid(WUNTRACED | WCONTINUED)``
result, as a real shell sees them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ptyprocess import PtyProcess

import tray
from helpers.waiting import wait_for
from tray.core.session.model import Session
from tray.state.store import StateStore

PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent
TIMEOUT = 20.0
T = TypeVar("T")

# Stands in for ``python -m tray run --`` until the CLI is wired to the launcher.
# The same, recording every state file write (the launcher's monotonic time of it, the
# document) into argv[1] at the end.
WRITE_LOG_DRIVER = (
    "import json, sys\n"
    "from tray.state.environment import Environment\n"
    "from tray.launcher.run import Launcher\n"
    "log = []\n"
    "def on_write(session, at):\n"
    "    log.append([at, session.to_file()])\n"
    "code = Launcher(sys.argv[2:], None, Environment(), on_write=on_write).run()\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    json.dump(log, out)\n"
    "sys.exit(code)\n"
)

# The job shell: ptyprocess starts it as the session leader of the test's terminal. It
# reads one job (stdout path or "-" for the tty, stderr path, argv) from its control fd,
# runs it as a foreground job, and reports every ``waitpid(WUNTRACED | WCONTINUED)``
# result on its status fd, as a real shell sees them.
JOB_SHELL = r"""
import json, os, signal, sys
status, control = int(sys.argv[1]), int(sys.argv[2])
for fd in (status, control):
    os.set_inheritable(fd, False)
# Outlive the terminal closing, to report the launcher's end.
signal.signal(signal.SIGHUP, signal.SIG_IGN)
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
with os.fdopen(control, "rb") as job:
    spec = job.read()
if not spec:
    sys.exit(0)
stdout_path, stderr_path, argv = json.loads(spec)
# Forked by hand: ptyprocess's child always leads a session of its own, and a session
# leader's group has no parent in its session, so the kernel would discard Ctrl-Z.
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(0, os.getpid())
    for signum in (signal.SIGHUP, signal.SIGTTOU, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_DFL)
    err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    if stdout_path != "-":
        os.dup2(os.open(stdout_path, os.O_WRONLY | os.O_CREAT, 0o600), 1)
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
    except (FileNotFoundError, ProcessLookupError):
        # Gone before the open, or (ESRCH) between the open and the read.
        return None


def pid_gone(pid: int) -> bool:
    """True once ``pid`` is gone or a zombie nobody we know will wait for."""
    return process_state(pid) in (None, "Z")


class Terminal:
    """The user's terminal: ``master`` is the emulator's side, with the job shell on it.

    ptyprocess makes it, with the job shell as its session leader. Settings and size are
    read and set through the master, which on Linux acts on the tty itself.
    """

    def __init__(self, environ: dict[str, str], cwd: Path) -> None:
        self.environ = environ  # the job shell's, and so the launcher's
        status_read, status_write = os.pipe()
        control_read, self._control = os.pipe()
        for fd in (status_write, control_read):
            os.set_inheritable(fd, True)
        try:
            self.shell = PtyProcess.spawn(
                [sys.executable, "-c", JOB_SHELL, str(status_write), str(control_read)],
                cwd=str(cwd),
                env=environ,
                dimensions=(24, 80),
                pass_fds=(status_write, control_read),
            )
        finally:
            os.close(status_write)
            os.close(control_read)
        # PtyProcess.close() sleeps, then hangs up and kills the shell; closing the
        # terminal must leave the shell alive to report the launcher's end.
        self.shell.delayafterclose = 0
        self.status_fd = status_read
        os.set_blocking(status_read, False)
        self.master: int = self.shell.fd
        os.set_blocking(self.master, False)
        self.path = os.readlink(f"/proc/{self.shell.pid}/fd/0")
        self.output = bytearray()
        self.closed = False

    def run(self, argv: Sequence[str], stdout_path: Path | None, stderr_path: Path) -> None:
        """Hand the job shell its one job."""
        spec = json.dumps([str(stdout_path) if stdout_path else "-", str(stderr_path), [*argv]])
        try:
            os.write(self._control, spec.encode())
        finally:
            self.close_control()

    def close_control(self) -> None:
        if self._control >= 0:
            os.close(self._control)
            self._control = -1

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
        return termios.tcgetattr(self.master)

    def is_raw(self) -> bool:
        lflag = self.attributes()[3]
        return not lflag & (termios.ICANON | termios.ECHO | termios.ISIG)

    def resize(self, rows: int, columns: int, xpixel: int = 0, ypixel: int = 0) -> None:
        winsize = struct.pack("HHHH", rows, columns, xpixel, ypixel)
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, winsize)

    def close_master(self) -> None:
        """The user closes the tab: only the fd goes, not (as in close()) the shell."""
        if not self.closed:
            self.shell.fileobj.close()
            self.closed = True

    def wait_for_shell(self, timeout: float = TIMEOUT) -> None:
        wait_for(lambda: not self.shell.isalive(), timeout, what="the job shell to exit")

    def close(self) -> None:
        self.close_control()
        self.close_master()
        with contextlib.suppress(AssertionError):
            self.wait_for_shell()
        self.shell.close(force=True)
        os.close(self.status_fd)


@dataclass
class Job:
    """The launcher, run by the job shell on ``terminal``."""

    terminal: Terminal
    stderr_path: Path
    pid: int = 0
    statuses: list[int] = field(default_factory=list)
    _pending: bytes = b""

    def pump(self) -> None:
        """Take in whatever the terminal and the job shell have to say."""
        self.terminal.read(0.01)
        try:
            chunk = os.read(self.terminal.status_fd, 4096)
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
        return wait_for(predicate, timeout, what=message, pump=self.pump)

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
        self.terminal.wait_for_shell()
        return code

    def stderr(self) -> str:
        return self.stderr_path.read_text()


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
