"""``tray run``: the command on its own pty, its bytes passed through, its reports recorded.

The process tree is::

    launcher (the user's job)  ──  keeper (session leader of the pty)  ──  command

The keeper exists for job control. A command whose parent sits in another session is
in an orphaned process group, and the kernel discards the SIGTSTP that Ctrl-Z sends to
such a group: Ctrl-Z would do nothing. With the keeper as its parent in the pty's own
session, the command stops as it would under a shell. The keeper then stops itself, the
launcher sees that with ``waitpid(WUNTRACED)`` and hands the terminal back to the user's
shell. The keeper exits with the command's status, or 128+N when signal N killed it.

There are no threads: signals arrive as bytes on a pipe, and one ``poll()`` waits for
the user's input, the command's output, signals and timers alike.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import os
import secrets
import select
import signal
import termios
import time
import traceback
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from tray.config import ConfigError, SessionsConfig, load_config
from tray.environment import Environment
from tray.protocol.records import RecordTable
from tray.protocol.report import parse_body
from tray.protocol.scanner import Event, FullReset, PromptStart, Query, RawReport, Scanner
from tray.session import Session
from tray.store import StateStore, StoreError, process_start_token
from tray.terminal import (
    CC,
    IFLAG,
    LFLAG,
    OFLAG,
    RawMode,
    SignalPipe,
    WindowSize,
    get_size,
    set_size,
    size_from_environ,
)

READ_SIZE = 65536
# Typed bytes the command has not read yet; past this we stop reading stdin, so a
# command that never reads cannot make us block or grow without end.
INPUT_LIMIT = 65536
# How long a possibly split support query is withheld before it is passed on.
HELD_WAIT = 0.03
# After the command exits, a grandchild may still hold the pty open: read until it is
# closed, or quiet this long, but never longer than the limit.
DRAIN_SILENCE = 0.1
DRAIN_LIMIT = 2.0
# State file writes: at most one per interval, and one per the longer interval when only
# the time of the last keystroke changed.
WRITE_INTERVAL = 0.1
INPUT_WRITE_INTERVAL = 2.0
# After a hangup, how long we wait for the command to die before leaving anyway.
HANGUP_WAIT = 2.0
LOG_NAME = "launcher.log"
LOG_LIMIT = 1 << 20

CANNOT_START = 127
HANGUP_STATUS = 128 + signal.SIGHUP

TERMINAL_VARIABLES = (
    "TMUX",
    "TMUX_PANE",
    "WINDOWID",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "KITTY_WINDOW_ID",
    "KITTY_LISTEN_ON",
    "WEZTERM_PANE",
    "WEZTERM_UNIX_SOCKET",
    "TERM",
    "SSH_TTY",
)

# Signals the command gets as the launcher got them: what was ignored stays ignored
# (nohup, background jobs of a non-interactive shell), everything else is the default.
_INHERITED_SIGNALS = (
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGTERM,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
    signal.SIGCHLD,
    signal.SIGWINCH,
    signal.SIGCONT,
)
# Python ignores these for itself; no command should inherit that.
_PYTHON_IGNORED = (signal.SIGPIPE, signal.SIGXFSZ)
# The keeper must outlive whatever the terminal sends, to report the command's status.
_KEEPER_IGNORES = (
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
)
# Handled only when they were not ignored when we started.
_OPTIONAL_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP)
_ALWAYS_SIGNALS = (signal.SIGCHLD, signal.SIGWINCH, signal.SIGCONT)
# In pipe mode the terminal's keys reach us, not the command's pty: pass them on.
_FORWARDED = frozenset({signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP})

_IN = select.POLLIN | select.POLLHUP | select.POLLERR
Dispositions = dict[int, Any]


def run_session(command: list[str], name: str | None, env: Environment) -> int:
    """Run ``command`` on its own pty until it exits; return the status to exit with."""
    return Launcher(command, name, env).run()


def exit_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128+N for signal N."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


class _CannotStartError(Exception):
    """The command could not be started; the message is the one line for stderr."""


class _TerminalGoneError(Exception):
    """The user's terminal went away (SIGHUP, EIO): hang the command up."""


@dataclasses.dataclass(frozen=True)
class _Spawned:
    keeper: int
    child: int


def _child_dispositions() -> Dispositions:
    dispositions: Dispositions = {
        signum: signal.SIG_IGN if signal.getsignal(signum) == signal.SIG_IGN else signal.SIG_DFL
        for signum in _INHERITED_SIGNALS
    }
    for signum in _PYTHON_IGNORED:
        dispositions[signum] = signal.SIG_DFL
    return dispositions


def _cannot_start_message(program: str, code: int | None) -> str:
    if code is None:
        reason = "could not be started"
    elif code == errno.ENOENT and "/" not in program:
        reason = "command not found"
    else:
        reason = os.strerror(code)
    return f"tray: {program}: {reason}"


def _exec_command(
    argv: list[str], environ: dict[str, str], report: int, dispositions: Dispositions
) -> NoReturn:
    """In the command's process: become the pty's foreground job, then exec."""
    code = errno.ENOEXEC
    try:
        os.setpgid(0, 0)
        # SIGTTOU is still ignored here (inherited from the keeper), so a background
        # group may take the terminal. Doing it here, before exec, means the command
        # never runs in the background and never gets SIGTTIN for reading its tty.
        os.tcsetpgrp(0, os.getpid())
        for signum, disposition in dispositions.items():
            signal.signal(signum, disposition)
        os.execvpe(argv[0], argv, environ)  # noqa: S606 - exec is the point
    except OSError as error:
        code = error.errno or code
    except BaseException:  # noqa: S110 - nothing may escape a forked child
        pass
    with contextlib.suppress(OSError):
        os.write(report, b"E%d\n" % code)
    os._exit(CANNOT_START)


def _keep_session(
    *,
    master: int,
    slave: int,
    report: int,
    argv: list[str],
    environ: dict[str, str],
    dispositions: Dispositions,
) -> NoReturn:
    """In the keeper: lead the pty's session, start the command, mirror its fate."""
    try:
        signal.set_wakeup_fd(-1)
        for signum in (*_INHERITED_SIGNALS, *_PYTHON_IGNORED):
            signal.signal(signum, signal.SIG_DFL)
        for signum in _KEEPER_IGNORES:
            signal.signal(signum, signal.SIG_IGN)
        os.close(master)
        os.login_tty(slave)
        try:
            child = os.fork()
        except OSError as error:
            os.write(report, b"E%d\n" % (error.errno or errno.EAGAIN))
            os._exit(CANNOT_START)
        if child == 0:
            _exec_command(argv, environ, report, dispositions)
        os.write(report, b"P%d\n" % child)
        os.close(report)
        while True:
            _, status = os.waitpid(child, os.WUNTRACED)
            if os.WIFSTOPPED(status):
                # Tell the launcher by stopping too; it continues us on resume.
                os.kill(os.getpid(), signal.SIGSTOP)
                continue
            os._exit(exit_code(status))
    except BaseException:
        os._exit(CANNOT_START)


def _read_to_end(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)


def _spawn(
    argv: list[str],
    environ: dict[str, str],
    master: int,
    slave: int,
    dispositions: Dispositions,
) -> _Spawned:
    # The keeper reports the command's pid, and the command reports a failed exec,
    # through this pipe; a successful exec closes it (CLOEXEC), which ends our read.
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        keeper = os.fork()
    except OSError as error:
        os.close(read_end)
        os.close(write_end)
        raise _CannotStartError(f"tray: cannot start {argv[0]}: {error.strerror}") from None
    if keeper == 0:
        os.close(read_end)
        _keep_session(
            master=master,
            slave=slave,
            report=write_end,
            argv=argv,
            environ=environ,
            dispositions=dispositions,
        )
    os.close(write_end)
    try:
        messages = _read_to_end(read_end)
    finally:
        os.close(read_end)
    child = failure = None
    for line in messages.split(b"\n"):
        if line[:1] == b"P" and line[1:].isdigit():
            child = int(line[1:])
        elif line[:1] == b"E" and line[1:].isdigit():
            failure = int(line[1:])
    if failure is not None or child is None:
        os.waitpid(keeper, 0)
        raise _CannotStartError(_cannot_start_message(argv[0], failure))
    return _Spawned(keeper, child)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _write_all(fd: int, data: bytes) -> None:
    """Write everything, blocking if need be: a slow terminal slows the command down."""
    written = 0
    view: memoryview | None = None
    while written < len(data):
        try:
            if written == 0:
                written = os.write(fd, data)
            else:
                if view is None:
                    view = memoryview(data)
                written += os.write(fd, view[written:])
        except BlockingIOError:
            # Somebody made our stdout non-blocking; wait the way a blocking write would.
            waiter = select.poll()
            waiter.register(fd, select.POLLOUT)
            waiter.poll()


def _visible(session: Session) -> dict[str, Any]:
    view = session.to_public()
    del view["updated_at"]
    return view


class _Log:
    """Diagnostics, one line per event, in the state directory: never on the terminal."""

    def __init__(self, path: Path | None, session_id: str, clock: Callable[[], float]) -> None:
        self._path = path
        self._session_id = session_id
        self._clock = clock
        self._fd = -1

    def __call__(self, message: str) -> None:
        if self._path is None:
            return
        stamp = datetime.fromtimestamp(self._clock()).isoformat(timespec="milliseconds")
        line = f"{stamp} {self._session_id} {' '.join(message.split())}\n"
        try:
            if self._fd < 0:
                self._open(self._path)
            os.write(self._fd, line.encode("utf-8", "replace"))
        except OSError:
            self._path = None

    def _open(self, path: Path) -> None:
        with contextlib.suppress(OSError):
            if path.stat().st_size > LOG_LIMIT:
                os.replace(path, path.with_name(path.name + ".1"))
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class Launcher:
    """One ``tray run``.

    ``on_write`` sees every session written, with the monotonic time the launcher took
    as the time of that write (tests check the spacing of writes with it).
    """

    def __init__(
        self,
        command: list[str],
        name: str | None,
        env: Environment,
        on_write: Callable[[Session, float], None] | None = None,
    ) -> None:
        self._command = list(command)
        self._env = env
        self._on_write = on_write
        self._id = f"{os.getpid()}-{secrets.token_hex(3)}"
        self._state_dir = env.state_dir()
        self._store: StateStore | None = None
        self._log = _Log(None, self._id, env.clock)
        self._write_failed = False
        now = env.clock()
        self._session = Session(
            id=self._id,
            name=name or (os.path.basename(command[0]) if command else ""),
            command=tuple(command),
            cwd=self._cwd(),
            pid=os.getpid(),
            child_pid=None,
            started_at=now,
            updated_at=now,
            pid_start=process_start_token(os.getpid()),
            terminal=self._terminal_facts(),
            name_given=name is not None,
        )
        self._table = RecordTable()
        self._scanner = Scanner()
        self._source = "launcher"
        self._changed_at = now
        self._last_input_at: float | None = None
        # Persistence bookkeeping (monotonic clock).
        self._view_dirty = False
        self._input_dirty = False
        self._last_write = -math.inf
        self._written_view: dict[str, Any] | None = None
        # The pty loop.
        self._stdin = env.stdin_fd
        self._stdout: int | None = env.stdout_fd
        self._stdin_open = False
        self._size_fd: int | None = None
        self._master = -1
        self._slave = -1
        self._master_eof = False
        self._spawned: _Spawned | None = None
        self._signals: SignalPipe | None = None
        self._raw: RawMode | None = None
        self._tstp_ignored = False
        self._veof = b"\x04"
        self._to_child = bytearray()
        self._eof_pending = False
        self._last_input_newline = True
        self._held_deadline: float | None = None
        self._status: int | None = None
        self._drain_deadline = math.inf
        self._drain_limit = math.inf
        self._hanging_up = False
        self._poller = select.poll()
        self._master_mask = 0
        self._stdin_mask = 0

    # ----------------------------------------------------------------- start and end

    def _cwd(self) -> str:
        try:
            return self._env.cwd()
        except OSError:  # the directory was removed under us; the command still runs
            return self._env.environ.get("PWD", "")

    def run(self) -> int:
        if not self._command:
            self._say("tray: no command to run")
            return 2
        # A closed stdin or stdout is a number the next open() may reuse: forget it now.
        self._stdin_open = _is_open(self._stdin)
        if not self._stdin_open:
            self._stdin = -1
            self._eof_pending = True  # no input at all: the command sees an empty one
        if not _is_open(self._env.stdout_fd):
            self._stdout = None
        stdout = -1 if self._stdout is None else self._stdout
        interactive = os.isatty(self._stdin) and os.isatty(stdout)
        self._size_fd = next((fd for fd in (stdout, self._stdin) if os.isatty(fd)), None)
        self._open_store()
        try:
            self._master, self._slave = os.openpty()
        except OSError as error:
            self._say(f"tray: cannot open a pseudo-terminal: {error.strerror}")
            self._forget()
            return CANNOT_START
        try:
            return self._run_on(interactive)
        finally:
            self._close_slave()
            if self._master >= 0:
                os.close(self._master)
                self._master = -1
            self._log.close()

    def _close_slave(self) -> None:
        # Only the command's side may keep it open, or we would never see its end (EIO).
        if self._slave >= 0:
            os.close(self._slave)
            self._slave = -1

    def _run_on(self, interactive: bool) -> int:
        slave = self._slave
        set_size(self._master, self._initial_size())
        self._veof = self._configure_child_terminal(slave, interactive)
        dispositions = _child_dispositions()
        self._tstp_ignored = dispositions[signal.SIGTSTP] == signal.SIG_IGN
        handled = [signum for signum in _OPTIONAL_SIGNALS if dispositions[signum] != signal.SIG_IGN]
        with SignalPipe([*_ALWAYS_SIGNALS, *handled]) as signals:
            self._signals = signals
            try:
                self._spawned = _spawn(
                    self._command, self._child_environ(), self._master, slave, dispositions
                )
            except _CannotStartError as failure:
                self._log(f"cannot start: {failure}")
                self._say(str(failure))
                self._forget()
                return CANNOT_START
            finally:
                self._close_slave()
            self._started()
            self._raw = RawMode(self._stdin) if interactive else None
            try:
                with self._raw or contextlib.nullcontext():
                    code = self._proxy()
            except Exception:
                self._log("launcher failed: " + traceback.format_exc())
                self._hang_up_child()
                self._finish(None)
                raise
        self._finish(code)
        return code

    def _terminal_facts(self) -> dict[str, str]:
        environ = self._env.environ
        facts = {key: environ[key] for key in TERMINAL_VARIABLES if key in environ}
        if os.isatty(self._env.stdin_fd):
            with contextlib.suppress(OSError):
                facts["tty"] = os.ttyname(self._env.stdin_fd)
        return facts

    def _child_environ(self) -> dict[str, str]:
        environ = dict(self._env.environ)
        environ["TRAY_SESSION_ID"] = self._id
        environ["TRAY_STATE_DIR"] = str(self._state_dir)
        return environ

    def _configure_child_terminal(self, slave: int, interactive: bool) -> bytes:
        attributes = termios.tcgetattr(slave)
        if interactive:
            # The user's own settings (erase key, IUTF8, ...) make line editing in the
            # command behave as it does in their shell.
            with contextlib.suppress(termios.error):
                attributes = termios.tcgetattr(self._stdin)
        else:
            # Pipe mode: what goes in comes out unchanged. No echo, no "\n" -> "\r\n",
            # and no byte of the data turned into a signal, flow control or a newline.
            # Canonical mode stays on, or VEOF could not deliver an end of file.
            attributes[LFLAG] &= ~(termios.ECHO | termios.ISIG | termios.IEXTEN)
            attributes[OFLAG] &= ~termios.OPOST
            attributes[IFLAG] &= ~(termios.ICRNL | termios.IXON | termios.IXOFF)
        termios.tcsetattr(slave, termios.TCSANOW, attributes)
        veof = attributes[CC][termios.VEOF]
        return veof if isinstance(veof, bytes) else bytes([veof])

    def _initial_size(self) -> WindowSize:
        size = get_size(self._size_fd) if self._size_fd is not None else None
        return size or size_from_environ(self._env.environ)

    def _open_store(self) -> None:
        """Create the state directory and the session's file, before the command starts.

        When that fails the command still runs: the user's work matters more than our
        bookkeeping. One line on stderr says so now, because once the command runs the
        terminal is its alone.
        """
        store = StateStore(self._state_dir)
        try:
            store.ensure()
            store.write(self._session)
        except (OSError, StoreError) as error:
            reason = error.strerror or str(error) if isinstance(error, OSError) else str(error)
            self._say(f"tray: not recording this session: {self._state_dir}: {reason}")
            return
        self._store = store
        self._log = _Log(self._state_dir / LOG_NAME, self._id, self._env.clock)
        # Ended sessions age out here too, so a machine without `tray status` or the
        # app still never piles up files. A bad config must not stop the command.
        try:
            keep_ended = load_config(self._env).sessions.keep_ended
        except ConfigError as error:
            self._log(f"config ignored: {error}")
            keep_ended = SessionsConfig().keep_ended
        try:
            store.prune(self._env.clock(), keep_ended)
        except OSError as error:
            self._log(f"pruning failed: {error}")

    def _forget(self) -> None:
        """No command ran: leave no session behind."""
        if self._store is not None:
            self._store.remove(self._id)

    def _started(self) -> None:
        assert self._spawned is not None
        self._session = dataclasses.replace(self._session, child_pid=self._spawned.child)
        self._log(
            f"started pid={os.getpid()} child={self._spawned.child} "
            f"keeper={self._spawned.keeper} command={self._command!r}"
        )
        self._write(self._snapshot())

    def _finish(self, code: int | None) -> None:
        self._table.end_of_run()
        self._write(self._snapshot().ended(code, self._env.clock()))
        self._log(f"ended status={code}")

    def _say(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._env.stderr.write(line + "\n")
            self._env.stderr.flush()

    # ----------------------------------------------------------------- the pty loop

    def _proxy(self) -> int:
        assert self._signals is not None
        os.set_blocking(self._master, False)
        self._poller.register(self._signals.fileno(), select.POLLIN)
        self._reap()  # it may have exited before our SIGCHLD handler mattered
        self._flush_to_child()
        try:
            while True:
                now = time.monotonic()
                self._on_timers(now)
                if self._status is not None and (self._master_eof or now >= self._drain_deadline):
                    break
                self._update_poll()
                for fd, events in self._poller.poll(self._timeout(now)):
                    if fd == self._master:
                        self._on_master(events)
                    elif fd == self._stdin:
                        self._on_stdin()
                    else:
                        self._on_signals()
            self._pass_on(self._scanner.flush_held())
        except _TerminalGoneError as reason:
            return self._hang_up(str(reason))
        assert self._status is not None
        return self._status

    def _update_poll(self) -> None:
        running = not self._master_eof
        master_mask = (select.POLLIN | (select.POLLOUT if self._to_child else 0)) if running else 0
        stdin_mask = (
            select.POLLIN
            if self._stdin_open
            and running
            and self._status is None
            and len(self._to_child) < INPUT_LIMIT
            else 0
        )
        if master_mask != self._master_mask:
            self._set_mask(self._master, self._master_mask, master_mask)
            self._master_mask = master_mask
        if stdin_mask != self._stdin_mask:
            self._set_mask(self._stdin, self._stdin_mask, stdin_mask)
            self._stdin_mask = stdin_mask

    def _set_mask(self, fd: int, old: int, new: int) -> None:
        if not new:
            self._poller.unregister(fd)
        elif old:
            self._poller.modify(fd, new)
        else:
            self._poller.register(fd, new)

    def _timeout(self, now: float) -> int | None:
        deadline = self._drain_deadline
        if self._held_deadline is not None:
            deadline = min(deadline, self._held_deadline)
        write_due = self._next_write()
        if write_due is not None:
            deadline = min(deadline, write_due)
        if deadline == math.inf:
            return None
        return max(0, math.ceil((deadline - now) * 1000))

    def _on_timers(self, now: float) -> None:
        if self._held_deadline is not None and now >= self._held_deadline:
            self._held_deadline = None
            self._pass_on(self._scanner.flush_held())
        self._maybe_persist(now)

    def _on_master(self, events: int) -> None:
        if events & select.POLLOUT:
            self._flush_to_child()
        if events & _IN:
            self._read_master()

    def _read_master(self) -> bool:
        """Pass on one chunk of the command's output; False when there is none now."""
        try:
            data = os.read(self._master, READ_SIZE)
        except BlockingIOError:
            return False
        except OSError:  # EIO: no process has the pty open any more
            data = b""
        if not data:
            self._master_eof = True
            self._to_child.clear()
            return False
        result = self._scanner.feed(data)
        if result.events:
            self._on_events(result.events)
        if result.output:
            self._pass_on(result.output)
        if self._scanner.held:
            if self._held_deadline is None:
                self._held_deadline = time.monotonic() + HELD_WAIT
        else:
            self._held_deadline = None
        if self._status is not None:
            self._drain_deadline = min(self._drain_limit, time.monotonic() + DRAIN_SILENCE)
        return True

    def _pass_on(self, data: bytes) -> None:
        if not data or self._stdout is None:
            return
        try:
            _write_all(self._stdout, data)
        except OSError as error:
            raise _TerminalGoneError(f"writing output: {error.strerror}") from None

    def _on_events(self, events: Iterable[Event]) -> None:
        now = self._env.clock()
        answered = False
        for event in events:
            if isinstance(event, Query):
                # Straight into the command's input, ahead of whatever this chunk's
                # output makes the terminal answer (the DA1 that follows the query).
                self._to_child += event.answer
                self._source = "program"
                answered = True
            elif isinstance(event, RawReport):
                self._source = "program"
                report = parse_body(event.body)
                if report is not None:
                    self._table.apply(report, now)
            elif isinstance(event, PromptStart):
                self._table.end_of_run()
            elif isinstance(event, FullReset):
                self._table.reset()
        self._changed_at = now
        self._view_dirty = True
        if answered:
            self._flush_to_child()

    def _on_stdin(self) -> None:
        try:
            data = os.read(self._stdin, READ_SIZE)
        except BlockingIOError:
            return
        except OSError:  # EIO from a terminal that hung up
            data = b""
        if not data:
            self._stdin_open = False
            if self._raw is not None:
                raise _TerminalGoneError("end of input from the terminal")
            # Like a person pressing Ctrl-D: on an empty line once is enough, after a
            # partial line the first only ends that line.
            self._eof_pending = True
            self._flush_to_child()
            return
        self._last_input_at = self._env.clock()
        self._input_dirty = True
        self._last_input_newline = data.endswith(b"\n")
        self._to_child += data
        self._flush_to_child()

    def _flush_to_child(self) -> None:
        while True:
            if not self._to_child:
                if not self._eof_pending:
                    return
                self._eof_pending = False
                self._to_child += self._veof * (1 if self._last_input_newline else 2)
            try:
                written = os.write(self._master, self._to_child)
            except BlockingIOError:
                return
            except OSError:  # the command's side is gone; nobody will read this
                self._to_child.clear()
                self._eof_pending = False
                return
            del self._to_child[:written]

    # ----------------------------------------------------------------- signals

    def _on_signals(self) -> None:
        assert self._signals is not None and self._spawned is not None
        for signum in self._signals.read():
            if signum == signal.SIGCHLD:
                self._reap()
            elif signum == signal.SIGWINCH:
                self._copy_size()
            elif signum == signal.SIGCONT:
                self._resumed()
            elif signum == signal.SIGTERM:
                self._log("SIGTERM: passed on to the command")
                self._kill(self._spawned.child, signal.SIGTERM)
            elif signum in _FORWARDED:
                self._log(f"{signal.Signals(signum).name}: passed on to the foreground group")
                self._kill_group(self._foreground(), signum)
            elif signum == signal.SIGHUP:
                raise _TerminalGoneError("SIGHUP")

    def _reap(self) -> None:
        if self._status is not None or self._spawned is None:
            return
        try:
            pid, status = os.waitpid(self._spawned.keeper, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:  # pragma: no cover - only if someone else reaped it
            pid, status = self._spawned.keeper, 1 << 8
        if pid == 0:
            return
        if os.WIFSTOPPED(status):
            self._child_stopped()
            return
        self._status = exit_code(status)
        now = time.monotonic()
        self._drain_limit = now + DRAIN_LIMIT
        self._drain_deadline = min(self._drain_limit, now + DRAIN_SILENCE)
        self._log(f"command exited status={self._status}")

    def _child_stopped(self) -> None:
        """The command stopped (Ctrl-Z): give the user's shell the terminal, as it would."""
        if not self._hanging_up and not self._tstp_ignored:
            assert self._signals is not None
            self._log("command stopped: suspending")
            # What the command's pty echoed as it stopped ("^Z") belongs before the
            # shell's "Stopped" line, as it would appear without us.
            # Bounded: something outside the stopped group may be writing without end.
            for _ in range(16):
                if self._master < 0 or self._master_eof or not self._read_master():
                    break
            if self._raw is not None:
                self._raw.restore()
            # If our own process group is orphaned (no job-control shell above us), the
            # kernel discards this SIGTSTP and we simply carry on, as would the command.
            with self._signals.default(signal.SIGTSTP):
                os.kill(os.getpid(), signal.SIGTSTP)
            self._log("resumed")
            self._resumed()
        self._continue_child()

    def _resumed(self) -> None:
        if self._raw is not None:
            try:
                self._raw.enter()
            except (OSError, termios.error):
                raise _TerminalGoneError("terminal unusable on resume") from None
        self._copy_size()

    def _continue_child(self) -> None:
        assert self._spawned is not None
        self._kill(self._spawned.keeper, signal.SIGCONT)
        for group in {self._foreground(), self._spawned.child}:
            self._kill_group(group, signal.SIGCONT)

    def _copy_size(self) -> None:
        if self._size_fd is None or self._master < 0:
            return
        size = get_size(self._size_fd)
        if size is not None:
            with contextlib.suppress(OSError):
                set_size(self._master, size)

    def _foreground(self) -> int:
        assert self._spawned is not None
        try:
            group = os.tcgetpgrp(self._master)
        except OSError:
            return self._spawned.child
        return group if group > 0 else self._spawned.child

    @staticmethod
    def _kill(pid: int, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)

    @staticmethod
    def _kill_group(group: int, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signum)

    def _hang_up_child(self) -> None:
        assert self._spawned is not None
        if self._status is None:
            for group in {self._foreground(), self._spawned.child}:
                self._kill_group(group, signal.SIGHUP)
                self._kill_group(group, signal.SIGCONT)
            self._kill(self._spawned.keeper, signal.SIGCONT)
        if self._master >= 0:
            os.close(self._master)
            self._master = -1

    def _hang_up(self, reason: str) -> int:
        """The user's terminal is gone: hang the command up as a closing terminal would."""
        assert self._signals is not None
        self._log(f"hangup ({reason})")
        self._hanging_up = True
        self._stdout = None
        self._hang_up_child()
        deadline = time.monotonic() + HANGUP_WAIT
        waiter = select.poll()
        waiter.register(self._signals.fileno(), select.POLLIN)
        self._reap()
        while self._status is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self._log("command still running after hangup; leaving it")
                return HANGUP_STATUS
            waiter.poll(math.ceil(left * 1000))  # SIGCHLD wakes us
            self._signals.read()
            self._reap()
        return self._status

    # ----------------------------------------------------------------- the state file

    def _snapshot(self) -> Session:
        return dataclasses.replace(
            self._session,
            updated_at=self._changed_at,
            source=self._source,
            records=tuple(self._table.records()),
            last_input_at=self._last_input_at,
        )

    def _next_write(self) -> float | None:
        if self._view_dirty:
            return self._last_write + WRITE_INTERVAL
        if self._input_dirty:
            return self._last_write + INPUT_WRITE_INTERVAL
        return None

    def _maybe_persist(self, now: float) -> None:
        due = self._next_write()
        if due is None or now < due:
            return
        session = self._snapshot()
        input_due = self._input_dirty and now >= self._last_write + INPUT_WRITE_INTERVAL
        if self._view_dirty and not input_due and _visible(session) == self._written_view:
            self._view_dirty = False  # reports that changed nothing anyone can see
            return
        self._write(session)

    def _write(self, session: Session) -> None:
        self._view_dirty = self._input_dirty = False
        self._last_write = time.monotonic()
        self._written_view = _visible(session)
        if self._store is not None:
            try:
                self._store.write(session)
            except OSError as error:
                if not self._write_failed:
                    self._log(f"cannot write the state file: {error}")
                self._write_failed = True
        if self._on_write is not None:
            self._on_write(session, self._last_write)
