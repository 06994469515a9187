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

ptyprocess starts the keeper: it makes the pty, the new session and the controlling
terminal, closes every inherited fd but the report pipe, and reports a failed exec. The
keeper is ptyprocess's child itself: its ``preexec_fn`` forks, the parent of that fork
stays behind as the keeper and never returns, and the child returns to ptyprocess as the
command (see ``_become_command`` for its exec). ``os.forkpty`` in ptyprocess's place was
tried: it saves the import of ptyprocess and shutil, about 5 ms of each start, which
does not bring ``tray run`` to its start-up target either, so ptyprocess stays. A keeper
exec'd as a program of its own (``python -I -S keeper.py``, which forks and execs the
command and reports over a pipe) was measured too: ``tray run -- true`` took 81 ms that
way against 67 ms this way, in CPU time 76 ms against 64 ms (``python -I -c pass``:
22 ms; medians of 30 interleaved runs, bytecode cached). The difference is the second
interpreter starting before the command can.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import termios

from ptyprocess import PtyProcess

from tray.launcher.terminal import CC
from tray.value import Value

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final

    Dispositions = dict[int, Any]

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


class _KeeperPty(PtyProcess):  # type: ignore[misc]  # ptyprocess has no type hints
    """ptyprocess's handle on the keeper, reduced to handing over the pid and the fd.

    The launcher owns both: the proxy reads and closes the raw fd, and reaps the keeper
    itself with ``waitpid(WUNTRACED)`` when SIGCHLD comes. PtyProcess's ``close()``,
    which ``__del__`` calls, would sleep 0.1 s and then SIGHUP, SIGINT and SIGKILL the
    keeper, and its ``isalive()`` would take the keeper's exit status before the proxy
    saw it; so neither ever runs here.
    """

    pid: int
    fd: int
    closed: bool
    fileobj: Any

    def __del__(self) -> None:
        self.close_fd()

    def close_fd(self) -> None:
        if not self.closed:
            self.closed = True
            self.fileobj.close()

    def take_fd(self) -> int:
        """The master fd, no longer owned by the file object ptyprocess keeps over it."""
        fd: int = os.dup(self.fd)
        self.close_fd()
        return fd

    def setwinsize(self, rows: int, cols: int) -> None:
        # spawn() calls this once the command runs, with rows and columns only: that
        # would zero the pixel size the keeper set and send the command a SIGWINCH.
        pass


def _cannot_start_message(program: str, error: BaseException) -> str:
    code = error.errno if isinstance(error, OSError) else None
    if isinstance(error, FileNotFoundError) and code is None:
        # ptyprocess looks the command up with shutil.which() before it forks, and says
        # only "not found or not executable": ask the file what exec would have said.
        code = errno.ENOENT
        if "/" in program:
            try:
                mode = os.stat(program).st_mode
            except OSError as missing:
                code = missing.errno or code
            else:
                code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EACCES
    if code == errno.ENOENT and "/" not in program:
        reason = "command not found"
    elif code:
        reason = os.strerror(code)
    else:
        reason = f"could not be started ({error})" if str(error) else "could not be started"
    return f"tray: {program}: {reason}"


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


def _become_command(
    argv: list[str],
    environ: dict[str, str],
    dispositions: Dispositions,
    mask: set[int | signal.Signals],
) -> None:
    """In the command's process: become the pty's foreground job, then exec."""
    os.setpgid(0, 0)
    # SIGTTOU is still ignored here (inherited from the keeper), so a background
    # group may take the terminal. Doing it here, before exec, means the command
    # never runs in the background and never gets SIGTTIN for reading its tty.
    os.tcsetpgrp(0, os.getpid())
    for signum, disposition in dispositions.items():
        signal.signal(signum, disposition)
    # The keeper held SIGHUP back until it could pass it on; the command gets the
    # launcher's own mask.
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    with contextlib.suppress(OSError):
        # `tray init`'s shell code tells its own session from a TRAY_SESSION_ID that a
        # tmux pane inherited by this: the terminal the session's command runs on.
        environ = {**environ, "TRAY_TTY": os.ttyname(0)}
    # ptyprocess execs the path shutil.which() found, with that path as argv[0]. The
    # command gets its argv as typed instead (what a shell gives it, and what `ps` and
    # `$0` show); when this fails, ptyprocess's exec of the same file fails the same
    # way and reports why.
    with contextlib.suppress(OSError):
        os.execvpe(argv[0], argv, environ)  # noqa: S606 - exec is the point


def _stop_unless_hung_up(hangup: _Hangup, mask: set[int | signal.Signals]) -> None:
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


def _keep_session(
    *,
    report: int,
    argv: list[str],
    environ: dict[str, str],
    dispositions: Dispositions,
    mask: set[int | signal.Signals],
    setup_terminal: Callable[[int], None],
) -> None:
    """ptyprocess's preexec_fn: the keeper forks the command, which returns, and stays."""
    os.write(report, b"K%d\n" % os.getpid())
    signal.set_wakeup_fd(-1)
    for signum in (*INHERITED_SIGNALS, *_PYTHON_IGNORED):
        signal.signal(signum, signal.SIG_DFL)
    for signum in _KEEPER_IGNORES:
        signal.signal(signum, signal.SIG_IGN)
    hangup = _Hangup()
    signal.signal(signal.SIGHUP, hangup)
    # Signals that came while they were blocked (SIGWINCH from ptyprocess's setwinsize)
    # meet the default dispositions now, not the launcher's handlers. SIGHUP stays
    # blocked until the command's pid is known: a hangup before that waits, and is not
    # lost.
    signal.pthread_sigmask(signal.SIG_SETMASK, mask | {signal.SIGHUP})
    setup_terminal(0)
    child = os.fork()
    if child == 0:
        _become_command(argv, environ, dispositions, mask)
        return
    hangup.command = child
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        # Only the tty and the report pipe stay: ptyprocess's exec-error pipe, still
        # open here, would hold spawn() up until the keeper exits.
        os.closerange(3, report)
        os.closerange(report + 1, os.sysconf("SC_OPEN_MAX"))
        os.write(report, b"P%d\n" % child)
        os.close(report)
        while True:
            _, status = os.waitpid(child, os.WUNTRACED)
            if os.WIFSTOPPED(status):
                _stop_unless_hung_up(hangup, mask)
                continue
            os._exit(exit_code(status))
    except BaseException:
        os._exit(CANNOT_START)


def _exit_if_child(launcher: int) -> None:
    # ptyprocess lets an exception raised in its child before the preexec_fn (its
    # setwinsize, say) propagate: it would come back here in a second launcher.
    if os.getpid() != launcher:
        os._exit(CANNOT_START)


def _read_to_end(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 4096):
        chunks.append(chunk)
    return b"".join(chunks)


def spawn(
    argv: list[str],
    environ: dict[str, str],
    setup_terminal: Callable[[int], None],
    dispositions: Dispositions,
) -> Spawned:
    """Start keeper and command on a new pty; raise CannotStartError with the stderr line.

    ``setup_terminal`` runs in the keeper on the pty's fd before the command starts (it
    sets the size: ptyprocess's own is rows and columns only).
    """
    # The keeper reports its pid and the command's through this pipe, and closes it.
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    launcher = os.getpid()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, INHERITED_SIGNALS)
    process: _KeeperPty | None = None
    failure: Exception | None = None
    try:
        process = _KeeperPty.spawn(
            argv,
            env=environ,
            preexec_fn=lambda: _keep_session(
                report=write_end,
                argv=argv,
                environ=environ,
                dispositions=dispositions,
                mask=mask,
                setup_terminal=setup_terminal,
            ),
            pass_fds=(write_end,),
        )
    except Exception as error:
        failure = error
    finally:
        _exit_if_child(launcher)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(write_end)
    try:
        messages = _read_to_end(read_end)
    finally:
        os.close(read_end)
    keeper = child = None
    for line in messages.split(b"\n"):
        if line[:1] == b"K" and line[1:].isdigit():
            keeper = int(line[1:])
        elif line[:1] == b"P" and line[1:].isdigit():
            child = int(line[1:])
    if process is None or child is None:
        if process is not None:
            process.close_fd()
        if keeper is not None:
            os.waitpid(keeper, 0)  # it exits with the command, at once
        elif isinstance(failure, OSError) and failure.errno:
            # No keeper, yet an error number: making the pty or forking failed.
            raise CannotStartError(f"tray: cannot start {argv[0]}: {failure.strerror}")
        raise CannotStartError(
            _cannot_start_message(argv[0], failure or OSError("no command started"))
        )
    master = process.take_fd()
    try:
        # Only the launcher may hold the master: a copy in a child of ours would keep
        # the pty from hanging up when we die.
        os.set_inheritable(master, False)
        # As the keeper left them: termios calls on the master act on the tty.
        veof = termios.tcgetattr(master)[CC][termios.VEOF]
    except BaseException:
        os.close(master)
        raise
    return Spawned(process.pid, child, master, veof if isinstance(veof, bytes) else bytes([veof]))
