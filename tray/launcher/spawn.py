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
the keeper goes when it does. ``PR_SET_PDEATHSIG`` would need ctypes (milliseconds of
every start) and adds nothing: only the launcher holds the master (close-on-exec), so
the kernel closes it however the launcher ends.

The launcher makes the pty (``os.openpty``) and sets it up, then forks the keeper, which
leads a new session with the pty as controlling terminal on fds 0, 1 and 2
(``os.login_tty``). The keeper closes every fd it inherited above those but the report
pipe and forks the command, which execs its argv as typed (see :class:`_Plan` for why the
two children do nothing but system calls). Both report on that pipe: the keeper the
command's pid, the command why its exec failed. The pipe is close-on-exec, so the
launcher's read of it ends once the command runs or has failed to. ptyprocess did this
part until the start-up was measured: importing it costs about 21 ms here (its Python
``signal`` brings enum, its shutil brings fnmatch, re, bz2 and lzma), against 23 ms for
a bare ``python -I -c pass``, and ``tray run`` must start within twice that. A keeper
exec'd as a program of its own (``python -I -S keeper.py``, which forks and execs the
command and reports over a pipe) was measured too, while ptyprocess still started the
keeper: ``tray run -- true`` took 81 ms that way against 67 ms, in CPU time 76 ms
against 64 ms (``python -I -c pass``: 22 ms; medians of 30 interleaved runs, bytecode
cached). The difference is the second interpreter starting before the command can.
"""

from __future__ import annotations

import errno
import os
import stat
import termios

from tray.base.value import Value
from tray.launcher.terminal import CC, DEFAULT_COLUMNS, DEFAULT_ROWS, WindowSize, set_size

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
    from typing import Any, Final, NoReturn

    Dispositions = dict[int, Any]
    Mask = set[int | signal.Signals]
else:
    # signal.py only wraps the C module _signal to turn numbers into enums, and enum costs
    # milliseconds of every start; the functions and constants are the same.
    import _signal as signal

CANNOT_START = 127

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

# What the keeper and the command write on the report pipe, one line each, after the
# letter: the command's pid; the errno its exec failed with; the text of any other error.
_STARTED = b"P"
_EXEC_FAILED = b"E"
_FAILED = b"F"


class CannotStartError(Exception):
    """The command could not be started; the message is the one line for stderr."""


class Spawned(Value):
    """The child's side of a run: the keeper's pid, the command's, the pty's master side
    (the launcher's to read, write and close), and ``veof``, the byte that ends the
    command's input (as the keeper set the pty up)."""

    __slots__ = ("child", "keeper", "master", "veof")

    def __init__(self, keeper: int, child: int, master: int = -1, veof: bytes = b"\x04") -> None:
        self.keeper: Final = keeper
        self.child: Final = child
        self.master: Final = master
        self.veof: Final = veof


def exit_code(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128+N for signal N."""
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


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


def _is_directory(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _search_path(environ: dict[str, str]) -> list[str]:
    """The directories of the command's PATH, as ``os.get_exec_path`` gives them.

    Not that function itself: it imports warnings (milliseconds, in the command's
    process, just before the exec that every start waits for).
    """
    return environ.get("PATH", os.defpath).split(os.pathsep)


def _exec_paths(program: str, environ: dict[str, str]) -> list[str]:
    """Where exec looks for ``program``, in order, as ``os.execvpe`` would look."""
    if "/" in program:
        return [program]
    paths = [os.path.join(directory, program) for directory in _search_path(environ)]
    # Those that are not there are left out here, where a stat is cheap, rather than
    # failed one by one in the command's process (see _Plan); the last stays, so that a
    # program found nowhere fails as it would have.
    return [path for path in paths if _may_exist(path)] or paths[-1:]


def _may_exist(path: str) -> bool:
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except (OSError, ValueError):
        pass  # an exec of it may fail otherwise (EACCES, ELOOP, ...): it says how
    return True


def _exec_first(paths: list[str], argv: list[str], environ: dict[str, str]) -> NoReturn:
    """Exec the first of ``paths`` that runs; when none does, raise the first error that
    was not "no such file", as ``os.execvpe`` does."""
    first_error: OSError | None = None
    last_error: OSError | None = None
    for path in paths:
        try:
            os.execve(path, argv, environ)  # noqa: S606 - exec is the point
        except (FileNotFoundError, NotADirectoryError) as error:
            last_error = error
        except OSError as error:
            last_error = error
            if first_error is None:
                first_error = error
    raise first_error or last_error or FileNotFoundError(errno.ENOENT, "no PATH", argv[0])


def _on_path(program: str, environ: dict[str, str]) -> bool:
    """Whether a directory of the command's PATH has an executable file of that name."""
    for directory in _search_path(environ):
        candidate = os.path.join(directory, program)
        if os.access(candidate, os.X_OK) and not _is_directory(candidate):
            return True
    return False


def _exec_error(program: str, environ: dict[str, str], error: OSError) -> int:
    """The errno to report for a failed exec, as `tray run` has always told it.

    A name that no directory of PATH holds as an executable file is not found, though
    exec says EACCES when one holds it without the x bit or as a directory; and a path
    to a directory is one, where exec only says EACCES.
    """
    code = error.errno or 0
    if "/" not in program:
        return code if _on_path(program, environ) else errno.ENOENT
    if code == errno.EACCES and _is_directory(program):
        return errno.EISDIR
    return code


def _report(report: int, kind: bytes, value: bytes) -> None:
    try:
        os.write(report, kind + value + b"\n")
    except OSError:
        pass  # no launcher is left to read it


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
        try:
            groups.add(os.tcgetpgrp(0))
        except OSError:
            pass
        for group in groups:
            for signal_number in (signal.SIGHUP, signal.SIGCONT):
                try:
                    os.killpg(group, signal_number)
                except (ProcessLookupError, PermissionError):
                    pass


class _Plan(Value):
    """All the command's start needs, made in the launcher before any fork.

    A forked child of a Python process pays a page copy for every page it writes, and
    almost anything Python does writes (reference counts, new objects): the keeper and
    the command each paid milliseconds of every start so. So the launcher does the work
    (the environment, the PATH search, the pty's name and settings), and the children
    only make system calls with what it made.
    """

    __slots__ = ("argv", "dispositions", "environ", "mask", "paths", "report")

    def __init__(
        self,
        report: int,
        argv: list[str],
        environ: dict[str, str],
        dispositions: list[tuple[int, Any]],
        mask: Mask,
    ) -> None:
        self.report: Final = report
        self.argv: Final = argv
        self.environ: Final = environ
        self.paths: Final = _exec_paths(argv[0], environ)
        self.dispositions: Final = dispositions
        self.mask: Final = mask


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
        # The command gets its argv as typed, not the path PATH lookup found: what a
        # shell gives it, and what `ps` and `$0` show.
        try:
            _exec_first(plan.paths, plan.argv, plan.environ)
        except OSError as error:
            code = _exec_error(plan.argv[0], plan.environ, error)
            _report(plan.report, _EXEC_FAILED, b"%d" % code)
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


# The keeper's own signals: the default for all, then these ignored.
_KEEPER_DEFAULTS = (*INHERITED_SIGNALS, *_PYTHON_IGNORED)


def _start_command(plan: _Plan, slave: int, hangup: _Hangup) -> int:
    """In the keeper: lead the pty's session, fork the command; the command's pid."""
    # A new session, the pty its controlling terminal, on fds 0, 1 and 2.
    os.login_tty(slave)
    signal.set_wakeup_fd(-1)
    # Only the tty (0, 1 and 2) and the report pipe stay: the launcher's other fds (the
    # pty's master among them) are not the command's to hold.
    report = plan.report
    os.closerange(3, report)
    os.closerange(report + 1, max(os.sysconf("SC_OPEN_MAX"), report + 1))
    for signum in _KEEPER_DEFAULTS:
        signal.signal(signum, signal.SIG_DFL)
    for signum in _KEEPER_IGNORES:
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, hangup)
    # Signals that came while they were blocked meet the default dispositions now, not
    # the launcher's handlers. SIGHUP stays blocked until the command's pid is known: a
    # hangup before that waits, and is not lost.
    signal.pthread_sigmask(signal.SIG_SETMASK, plan.mask | {signal.SIGHUP})
    child = os.fork()
    if child == 0:
        _become_command(plan)
    hangup.command = child
    signal.pthread_sigmask(signal.SIG_SETMASK, plan.mask)
    return child


def _keep_session(plan: _Plan, slave: int, hangup: _Hangup) -> NoReturn:
    """The keeper's life: start the command, wait for it, exit."""
    try:
        child = _start_command(plan, slave, hangup)
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


def _open_pty(
    argv: list[str], setup_terminal: Callable[[int], None]
) -> tuple[int, int, str | None]:
    """The pty's master, its slave set up (size and modes), and the slave's name."""
    try:
        master, slave = os.openpty()
    except OSError as error:
        raise CannotStartError(f"tray: cannot start {argv[0]}: {error.strerror}") from None
    try:
        name: str | None = os.ttyname(slave)
    except OSError:
        name = None  # the command goes without TRAY_TTY, as it always did then
    try:
        # A new pty is 0 by 0; terminals start at 24 by 80, for a setup_terminal that
        # sets no size.
        set_size(slave, WindowSize(DEFAULT_ROWS, DEFAULT_COLUMNS))
        setup_terminal(slave)
    except BaseException as error:
        os.close(master)
        os.close(slave)
        if not isinstance(error, Exception):
            raise
        text = str(error).replace("\n", " ")
        reason = f"could not be started ({text})" if text else "could not be started"
        raise CannotStartError(f"tray: {argv[0]}: {reason}") from None
    return master, slave, name


def _read_started(fd: int) -> bytes:
    """What the pipe holds up to the keeper's line with the command's pid, or to its end
    when the keeper failed before (its line is the first one written)."""
    data = b""
    while b"\n" not in data and (chunk := os.read(fd, 4096)):
        data += chunk
    return data


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


class StartingCommand:
    """A command whose keeper has forked it, and whose exec may still be under way.

    The launcher gets on with its own start meanwhile (the state file, the answer
    socket), on the other CPU where there is one, and then hears how the exec went.
    """

    def __init__(self, spawned: Spawned, report: int, messages: bytes, program: str) -> None:
        #: The keeper's and the command's pids and the pty: valid once :meth:`wait` says so.
        self.spawned = spawned
        self._report = report
        self._messages = messages
        self._program = program

    def wait(self) -> Spawned:
        """The started command, once its exec ran; CannotStartError when it failed."""
        try:
            messages = self._messages + _read_to_end(self._report)
        finally:
            os.close(self._report)
        _, failure = _failure(self._program, messages)
        if failure is None:
            return self.spawned
        _give_up(self.spawned.keeper, self.spawned.master)
        raise CannotStartError(failure)


def _give_up(keeper: int, master: int) -> None:
    os.close(master)
    os.waitpid(keeper, 0)  # it exits with the command, at once


def start_command(
    argv: list[str],
    environ: dict[str, str],
    setup_terminal: Callable[[int], None],
    dispositions: Dispositions,
) -> StartingCommand:
    """Start keeper and command on a new pty; raise CannotStartError with the stderr line
    when it fails before the command's pid is known (and :meth:`StartingCommand.wait`
    when its exec fails).

    ``setup_terminal`` is called with the pty's fd before the command starts (it sets
    the size, and the modes).
    """
    master, slave, tty_name = _open_pty(argv, setup_terminal)
    # As set up now: termios calls on the master act on the tty.
    veof = termios.tcgetattr(master)[CC][termios.VEOF]
    # The keeper reports the command's pid through this pipe and closes it; the command
    # holds it until its exec, and reports through it if that fails.
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    # `tray init`'s shell code tells its own session from a TRAY_SESSION_ID that a tmux
    # pane inherited by this: the terminal the session's command runs on.
    command_environ = environ if tty_name is None else {**environ, "TRAY_TTY": tty_name}
    hangup = _Hangup()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, INHERITED_SIGNALS)
    plan = _Plan(write_end, argv, command_environ, list(dispositions.items()), mask)
    try:
        keeper = os.fork()
    except OSError as error:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in (read_end, write_end, master, slave):
            os.close(fd)
        raise CannotStartError(f"tray: cannot start {argv[0]}: {error.strerror}") from None
    if keeper == 0:
        # The keeper keeps the signals blocked until its own handlers are set: the
        # launcher's would write to the launcher's signal pipe.
        try:
            _keep_session(plan, slave, hangup)
        finally:
            os._exit(CANNOT_START)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(slave)
    os.close(write_end)
    try:
        messages = _read_started(read_end)
        child, failure = _failure(argv[0], messages)
    except BaseException:
        os.close(read_end)
        _give_up(keeper, master)
        raise
    if child is None or failure is not None:
        os.close(read_end)
        _give_up(keeper, master)
        raise CannotStartError(failure)
    spawned = Spawned(keeper, child, master, veof if isinstance(veof, bytes) else bytes([veof]))
    return StartingCommand(spawned, read_end, messages, argv[0])


def spawn(
    argv: list[str],
    environ: dict[str, str],
    setup_terminal: Callable[[int], None],
    dispositions: Dispositions,
) -> Spawned:
    """:func:`start_command`, and its exec waited for."""
    return start_command(argv, environ, setup_terminal, dispositions).wait()
