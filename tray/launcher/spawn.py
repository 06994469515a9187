"""Starting the command on its pty, behind a keeper process, and hearing if exec failed.

The process tree is::

    launcher (the user's job)  ──  keeper (session leader of the pty)  ──  command

The keeper exists for job control. A command whose parent sits in another session is
in an orphaned process group, and the kernel discards the SIGTSTP that Ctrl-Z sends to
such a group: Ctrl-Z would do nothing. With the keeper as its parent in the pty's own
session, the command stops as it would under a shell. The keeper then stops itself, the
launcher sees that with ``waitpid(WUNTRACED)`` and hands the terminal back to the user's
shell. The keeper exits with the command's status, or 128+N when signal N killed it.

The keeper is also the pty's session leader, so a hangup reaches it, not the command:
when the launcher dies (SIGKILL, an OOM kill, a crash), the kernel closes the pty's master
and hangs the pty up, which sends the session leader SIGHUP. The keeper passes that on to
the command's process group, as a terminal closing would reach a command that led its
own session, then waits for the command as before. When the keeper exits after it, the
kernel hangs up the group that was in the foreground at the hangup, as it does for any
session leader. A command that ignores SIGHUP lives on, as it would under ``script``;
the keeper goes when it does. ``PR_SET_PDEATHSIG`` would need ctypes and adds nothing:
only the launcher holds the master (close-on-exec), so the kernel closes it however the
launcher ends.

ptyprocess starts the keeper, with ``PtyProcess.spawn``: it makes the pty, the new
session with the pty as controlling terminal on fds 0, 1 and 2, sets the size, closes
every fd it inherited but the report pipe, and returns once the command has exec'd or
failed to (its own exec-error pipe is close-on-exec). ``spawn`` fits the keeper as it is:
its ``preexec_fn`` runs in the pty's session leader, which is what the keeper must be,
so the keeper is that function (:func:`_keep_session`), and its lower layer (``pty.fork``
and the pipe) would only be ``spawn`` written out again here. The function forks the
command and never returns: the keeper waits for the command, and the command execs on
its own (:func:`_become_command`) rather than through ptyprocess's exec, which would give
the command the path PATH lookup found as its ``argv[0]`` and only a Python exception's
text when it fails. The keeper and the command report on a pipe of ours: the keeper the
command's pid, either of them why it could not start.

ptyprocess looks the program up in the launcher's PATH before it forks; it is handed the
path already found in the command's own (:func:`_program_path`), which is also where a
program nothing could run gets its one line, before any fork.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import termios
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ptyprocess import PtyProcess

from tray.base.exit_codes import CANNOT_START, SIGNAL_BASE
from tray.launcher.terminal import DEFAULT_COLUMNS, DEFAULT_ROWS
from tray.terminal.raw_mode import CC

if TYPE_CHECKING:
    from collections.abc import Callable

Dispositions = dict[int, Any]
Mask = set[int | signal.Signals]


# Signals the command gets as the launcher got them: what was ignored stays ignored
# (nohup, background jobs of a non-interactive shell), everything else is the default.
# SIGALRM is here because the launcher uses it as its timer.
INHERITED_SIGNALS = (
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
    signal.SIGALRM,
)
# Python ignores these for itself; no command should inherit that.
_PYTHON_IGNORED = (signal.SIGPIPE, signal.SIGXFSZ)
# The keeper must outlive whatever the terminal sends, to report the command's status.
# SIGHUP it passes on (see the module's docstring).
_KEEPER_IGNORES = (
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
)
# The keeper's own signals: the default for all, then those above ignored.
_KEEPER_DEFAULTS = (*INHERITED_SIGNALS, *_PYTHON_IGNORED)

# What the keeper and the command write on the report pipe, one line each, after the
# letter: the command's pid; the errno its exec failed with; the text of any other error.
_STARTED = b"P"
_EXEC_FAILED = b"E"
_FAILED = b"F"


class CannotStartError(Exception):
    """The command could not be started; the message is the one line for stderr."""


@dataclass(frozen=True, slots=True)
class Spawned:
    """The child's side of a run: the keeper's pid, the command's, the pty's master side
    (the launcher's to read, write and close), and ``veof``, the byte that ends the
    command's input (as the keeper set the pty up)."""

    keeper: int
    child: int
    master: int = -1
    veof: bytes = b"\x04"


def exit_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128+N for signal N."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else SIGNAL_BASE - code


def child_dispositions() -> Dispositions:
    """What the command's signals must be set to, from what ours were at start."""
    dispositions: Dispositions = {
        signum: signal.SIG_IGN if signal.getsignal(signum) == signal.SIG_IGN else signal.SIG_DFL
        for signum in INHERITED_SIGNALS
    }
    for signum in _PYTHON_IGNORED:
        dispositions[signum] = signal.SIG_DFL
    return dispositions


def _cannot_start_message(program: str, code: int) -> str:
    if code == errno.ENOENT and "/" not in program:
        reason = "command not found"
    else:
        reason = os.strerror(code) if code else "could not be started"
    return f"tray: {program}: {reason}"


def _runnable(path: str) -> bool:
    """An executable file, not a directory: what a shell's PATH search takes."""
    try:
        return os.access(path, os.X_OK) and not stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _program_path(program: str, environ: dict[str, str]) -> str:
    """The file to exec for ``program``: itself when it names a path, else the first
    runnable one of that name in the command's PATH, as a shell finds it.

    CannotStartError tells what exec would have said of one that nothing can run: "not
    found" for a name, and for a path its own reason (a directory is one, where exec
    says only "permission denied").
    """
    if "/" in program:
        if _runnable(program):
            return program
        try:
            mode = os.stat(program).st_mode
        except (OSError, ValueError) as error:
            code = getattr(error, "errno", None) or errno.ENOENT
        else:
            code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EACCES
        raise CannotStartError(_cannot_start_message(program, code))
    for directory in environ.get("PATH", os.defpath).split(os.pathsep):
        # An empty entry is the working directory; spelt "." so that the path holds a
        # "/", and ptyprocess takes it as a path, not a name to look up again.
        path = os.path.join(directory or os.curdir, program)
        if _runnable(path):
            return path
    raise CannotStartError(_cannot_start_message(program, errno.ENOENT))


def _report(report: int, kind: bytes, value: bytes) -> None:
    with contextlib.suppress(OSError):  # no launcher is left to read it
        os.write(report, kind + value + b"\n")


def _report_error(report: int, error: BaseException) -> None:
    text = str(error).replace("\n", " ")
    _report(report, _FAILED, text.encode("utf-8", "backslashreplace"))


class _Hangup:
    """The keeper's SIGHUP handler: the command's group gets the hangup (and a SIGCONT,
    as the kernel sends with it, so that a stopped command hears it)."""

    def __init__(self) -> None:
        self.command = 0
        self.hung_up = False

    def __call__(self, signum: int, frame: object) -> None:
        self.hung_up = True
        groups = {self.command}
        # Only a SIGHUP sent by kill(), not a hangup: the terminal still answers then.
        with contextlib.suppress(OSError):
            groups.add(os.tcgetpgrp(0))
        for group in groups:
            for signal_number in (signal.SIGHUP, signal.SIGCONT):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, signal_number)


@dataclass(frozen=True, slots=True)
class _Plan:
    """All the keeper and the command need, made in the launcher before the fork: a
    forked child of a Python process pays a page copy for each page it writes, so the
    children do little but system calls with what the launcher made (besides
    ptyprocess's own lines and the terminal's setup)."""

    report: int
    argv: list[str]
    path: str
    environ: dict[str, str]
    dispositions: list[tuple[int, Any]]
    mask: Mask
    setup_terminal: Callable[[int], None]


def _become_command(plan: _Plan) -> NoReturn:
    """In the command's process: become the pty's foreground job, then exec."""
    try:
        os.setpgid(0, 0)
        # SIGTTOU is still ignored here (inherited from the keeper), so a background
        # group may take the terminal. Doing it here, before exec, means the command
        # never runs in the background and never gets SIGTTIN for reading its tty.
        os.tcsetpgrp(0, os.getpid())
        for signum, disposition in plan.dispositions:
            signal.signal(signum, disposition)
        # The keeper held SIGHUP back until it could pass it on; the command gets the
        # launcher's own mask.
        signal.pthread_sigmask(signal.SIG_SETMASK, plan.mask)
        environ = plan.environ
        # `tray init`'s shell code tells its own session from a TRAY_SESSION_ID that
        # a tmux pane inherited by this: the terminal the session's command runs on.
        with contextlib.suppress(OSError):
            environ = {**environ, "TRAY_TTY": os.ttyname(0)}
        # The command gets its argv as typed, not the path PATH lookup found: what a
        # shell gives it, and what `ps` and `$0` show.
        try:
            os.execve(plan.path, plan.argv, environ)  # noqa: S606 - exec is the point
        except OSError as error:
            _report(plan.report, _EXEC_FAILED, b"%d" % (error.errno or 0))
    except BaseException as error:
        _report_error(plan.report, error)
    os._exit(CANNOT_START)


def _stop_unless_hung_up(hangup: _Hangup, mask: Mask) -> None:
    """The command stopped: tell the launcher by stopping too; it continues us on resume.

    After a hangup no launcher may be left to do that, so the keeper waits on, running.
    SIGHUP is held back from the look to the stop: one that comes between them is seen
    pending instead of being handled a moment too late (its SIGCONT would then come
    before the SIGSTOP, and nothing would continue us).
    """
    signal.pthread_sigmask(signal.SIG_SETMASK, mask | {signal.SIGHUP})
    try:
        if not hangup.hung_up and signal.SIGHUP not in signal.sigpending():
            os.kill(os.getpid(), signal.SIGSTOP)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _start_command(plan: _Plan, hangup: _Hangup) -> int:
    """In the keeper: set the pty up, fork the command; the command's pid."""
    signal.set_wakeup_fd(-1)
    for signum in _KEEPER_DEFAULTS:
        signal.signal(signum, signal.SIG_DFL)
    for signum in _KEEPER_IGNORES:
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, hangup)
    # Signals that came while they were blocked (SIGWINCH from ptyprocess's size) meet
    # the default dispositions now, not the launcher's handlers. SIGHUP stays blocked
    # until the command's pid is known: a hangup before that waits, and is not lost.
    signal.pthread_sigmask(signal.SIG_SETMASK, plan.mask | {signal.SIGHUP})
    plan.setup_terminal(0)
    child = os.fork()
    if child == 0:
        _become_command(plan)
    hangup.command = child
    signal.pthread_sigmask(signal.SIG_SETMASK, plan.mask)
    # Only the tty (0, 1 and 2) and the report pipe stay: ptyprocess's exec-error pipe,
    # still open here, would hold spawn() up until the keeper exits.
    report = plan.report
    os.closerange(3, report)
    os.closerange(report + 1, max(os.sysconf("SC_OPEN_MAX"), report + 1))
    return child


def _keep_session(plan: _Plan) -> NoReturn:
    """ptyprocess's ``preexec_fn``, the keeper's life: start the command, wait, exit."""
    hangup = _Hangup()
    try:
        child = _start_command(plan, hangup)
        os.write(plan.report, _STARTED + b"%d\n" % child)
        os.close(plan.report)
    except BaseException as error:
        _report_error(plan.report, error)
        os._exit(CANNOT_START)
    try:
        while True:
            _, status = os.waitpid(child, os.WUNTRACED)
            if os.WIFSTOPPED(status):
                _stop_unless_hung_up(hangup, plan.mask)
                continue
            os._exit(exit_code(status))
    except BaseException:
        os._exit(CANNOT_START)


class _KeeperPty(PtyProcess):  # type: ignore[misc]  # ptyprocess has no type hints
    """ptyprocess's handle on the keeper, reduced to handing over the pid and the fd.

    The launcher owns both: the proxy reads and closes the raw fd, and reaps the keeper
    itself with ``waitpid(WUNTRACED)`` when SIGCHLD comes. PtyProcess's ``close()``,
    which its ``__del__`` calls, would sleep 0.1 s and then SIGHUP, SIGINT and SIGKILL
    the keeper, and its ``isalive()`` would take the keeper's exit status before the
    proxy saw it; so neither ever runs here (:meth:`take_master`).
    """

    pid: int
    fd: int
    closed: bool
    fileobj: Any

    def setwinsize(self, rows: int, cols: int) -> None:
        # spawn() calls this once the command runs, with rows and columns only: that
        # would zero the pixel size the keeper set, and send the command a SIGWINCH.
        pass

    def take_master(self) -> int:
        """The master fd, no longer owned by the file object ptyprocess keeps over it;
        not inherited by any child of the launcher (a copy there would keep the pty from
        hanging up when the launcher dies)."""
        master = os.dup(self.fd)  # close-on-exec, as every fd Python makes
        self.fileobj.close()
        self.closed = True
        return master


def _read_to_end(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)


def _failure(program: str, messages: bytes) -> tuple[int | None, str | None]:
    """From the report pipe's lines: the command's pid, and the stderr line if it failed."""
    child = failure = None
    for line in messages.split(b"\n"):
        kind, value = line[:1], line[1:]
        if kind == _STARTED and value.isdigit():
            child = int(value)
        elif kind == _EXEC_FAILED and value.isdigit():
            failure = _cannot_start_message(program, int(value))
        elif kind == _FAILED:
            text = value.decode("utf-8", "replace")
            reason = f"could not be started ({text})" if text else "could not be started"
            failure = f"tray: {program}: {reason}"
    if child is None and failure is None:
        failure = f"tray: {program}: could not be started (no command started)"
    return child, failure


def _spawn_keeper(plan: _Plan) -> _KeeperPty:
    """ptyprocess's spawn of the keeper; CannotStartError when it could not make one."""
    launcher = os.getpid()
    try:
        process: _KeeperPty = _KeeperPty.spawn(
            [plan.path, *plan.argv[1:]],
            env=plan.environ,
            preexec_fn=lambda: _keep_session(plan),
            dimensions=(DEFAULT_ROWS, DEFAULT_COLUMNS),
            pass_fds=(plan.report,),
        )
    except OSError as error:
        # Out of ptys, or of processes. (Not its lookup of the program: _program_path
        # found the file ptyprocess looks up again, unless it went meanwhile.)
        reason = error.strerror or str(error)
        raise CannotStartError(f"tray: cannot start {plan.argv[0]}: {reason}") from None
    except Exception as error:
        text = str(error).replace("\n", " ")
        raise CannotStartError(f"tray: {plan.argv[0]}: could not be started ({text})") from None
    finally:
        # An exception ptyprocess lets out of its child before our preexec_fn (its
        # window size, say) would come back here in a second launcher.
        if os.getpid() != launcher:
            os._exit(CANNOT_START)
    return process


def spawn(
    argv: list[str],
    environ: dict[str, str],
    setup_terminal: Callable[[int], None],
    dispositions: Dispositions,
) -> Spawned:
    """Start keeper and command on a new pty, and return once the command has exec'd;
    raise CannotStartError with the stderr line when it could not be started.

    ``setup_terminal`` is called in the keeper with the pty's fd before the command
    starts (it sets the size, pixels too, and the modes); without it the pty is 24 by
    80, as terminals start.
    """
    program = argv[0]
    path = _program_path(program, environ)
    # The keeper reports the command's pid through this pipe and closes it; the command
    # holds it until its exec, and reports through it if that fails.
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, INHERITED_SIGNALS)
    plan = _Plan(write_end, argv, path, environ, list(dispositions.items()), mask, setup_terminal)
    try:
        # The keeper keeps the signals blocked until its own handlers are set: the
        # launcher's would write to the launcher's signal pipe.
        process = _spawn_keeper(plan)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(write_end)
    master = process.take_master()
    try:
        # spawn() returned after the exec, so every line is written, or soon will be:
        # the keeper's pid line comes just after its fork.
        child, failure = _failure(program, _read_to_end(read_end))
        # As the keeper set the pty up: termios calls on the master act on the tty.
        veof = termios.tcgetattr(master)[CC][termios.VEOF]
    except BaseException:
        _give_up(process.pid, master)
        raise
    finally:
        os.close(read_end)
    if child is None or failure is not None:
        _give_up(process.pid, master)
        raise CannotStartError(failure)
    return Spawned(process.pid, child, master, veof if isinstance(veof, bytes) else bytes([veof]))


def _give_up(keeper: int, master: int) -> None:
    os.close(master)
    os.waitpid(keeper, 0)  # it exits with the command, at once
