"""Starting the command on its pty, behind a keeper process, and hearing if exec failed.

The process tree is::

    launcher (the user's job)  ──  keeper (session leader of the pty)  ──  command

The keeper exists for job control. A command whose parent sits in another session is
in an orphaned process group, and the kernel discards the SIGTSTP that Ctrl-Z sends to
such a group: Ctrl-Z would do nothing. With the keeper as its parent in the pty's own
session, the command stops as it would under a shell. The keeper then stops itself, the
launcher sees that with ``waitpid(WUNTRACED)`` and hands the terminal back to the user's
shell. The keeper exits with the command's status, or 128+N when signal N killed it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import signal
from typing import Any, NoReturn

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
_KEEPER_IGNORES = (
    signal.SIGHUP,
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
)

Dispositions = dict[int, Any]


class CannotStartError(Exception):
    """The command could not be started; the message is the one line for stderr."""


@dataclasses.dataclass(frozen=True)
class Spawned:
    keeper: int
    child: int


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
        for signum in (*INHERITED_SIGNALS, *_PYTHON_IGNORED):
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


def spawn(
    argv: list[str],
    environ: dict[str, str],
    master: int,
    slave: int,
    dispositions: Dispositions,
) -> Spawned:
    """Start keeper and command; raise CannotStartError with the line for stderr."""
    # The keeper reports the command's pid, and the command reports a failed exec,
    # through this pipe; a successful exec closes it (CLOEXEC), which ends our read.
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        keeper = os.fork()
    except OSError as error:
        os.close(read_end)
        os.close(write_end)
        raise CannotStartError(f"tray: cannot start {argv[0]}: {error.strerror}") from None
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
        raise CannotStartError(_cannot_start_message(argv[0], failure))
    return Spawned(keeper, child)
