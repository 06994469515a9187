"""``tray run``: the command on its own pty, its bytes passed through, its reports recorded.

This module does what must come before the command's exec, and nothing more: it checks
the state directory, sets the pty up (size and modes) and the signals, and starts the
command (:mod:`tray.launcher.spawn`, on ptyprocess). Everything else, the session's file,
the config, the answer socket and the loop (:mod:`tray.launcher.attached`), is imported
only then, while the command starts on another core: no work of ours before the exec
holds it up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import termios
from collections.abc import Callable
from typing import TYPE_CHECKING

from tray.base.exit_codes import CANNOT_START, USAGE_ERROR
from tray.launcher.spawn import CannotStartError, child_dispositions, spawn
from tray.launcher.terminal import (
    SignalPipe,
    WindowSize,
    get_size,
    set_size,
    size_from_environ,
)
from tray.state.environment import SESSION_VARIABLE, Environment
from tray.state.private_directory import private_directory_problem
from tray.terminal.raw_mode import IFLAG, LFLAG, OFLAG

if TYPE_CHECKING:
    from tray.core.session.model import Session

__all__ = ["SESSION_VARIABLE", "Launcher", "run_session"]

# Handled only when they were not ignored when we started.
_OPTIONAL_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP)
# SIGALRM is the proxy's timer.
_ALWAYS_SIGNALS = (signal.SIGCHLD, signal.SIGWINCH, signal.SIGCONT, signal.SIGALRM)


def run_session(command: list[str], name: str | None, env: Environment) -> int:
    """Run ``command`` on its own pty until it exits; return the status to exit with."""
    return Launcher(command, name, env).run()


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


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
        self._name = name
        self._env = env
        self._id = f"{os.getpid()}-{os.urandom(3).hex()}"
        self._state_dir = os.fspath(env.state_dir())
        self._on_write = on_write
        self._stdin = env.stdin_fd
        self._stdout: int | None = env.stdout_fd
        self._size_fd: int | None = None

    def run(self) -> int:
        if not self._command:
            self._say("tray: no command to run")
            return USAGE_ERROR
        # A closed stdin or stdout is a number the next open() may reuse: forget it now.
        if not _is_open(self._stdin):
            self._stdin = -1
        if not _is_open(self._env.stdout_fd):
            self._stdout = None
        stdout = -1 if self._stdout is None else self._stdout
        interactive = os.isatty(self._stdin) and os.isatty(stdout)
        self._size_fd = next((fd for fd in (stdout, self._stdin) if os.isatty(fd)), None)
        recording = self._check_state_directory()
        size = self._initial_size()
        setup_terminal = self._child_terminal_setup(interactive, size)
        dispositions = child_dispositions()
        handled = [signum for signum in _OPTIONAL_SIGNALS if dispositions[signum] != signal.SIG_IGN]
        with SignalPipe([*_ALWAYS_SIGNALS, *handled]) as signals:
            try:
                spawned = spawn(self._command, self._child_environ(), setup_terminal, dispositions)
            except CannotStartError as failure:
                self._say(str(failure))
                return CANNOT_START
            # The command is on its way: only now the rest of `tray run`.
            from tray.launcher.attached import (  # noqa: PLC0415 - no work before the exec
                AttachedSession,
                Master,
                Start,
            )

            start = Start(
                command=tuple(self._command),
                name=self._name,
                env=self._env,
                session_id=self._id,
                state_dir=self._state_dir,
                recording=recording,
                stdin=self._stdin,
                stdout=self._stdout,
                size_fd=self._size_fd,
                interactive=interactive,
                tstp_ignored=dispositions[signal.SIGTSTP] == signal.SIG_IGN,
                on_write=self._on_write,
            )
            with Master(spawned.master) as master:
                return AttachedSession(start, spawned).run(master, signals)

    def _check_state_directory(self) -> bool:
        """Whether the session can be recorded: the state directory is made, or is there,
        and is ours alone. When not, the command still runs (the user's work matters more
        than our bookkeeping), and one line on stderr says so now, because once the
        command runs the terminal is its alone."""
        try:
            problem = private_directory_problem(self._state_dir)
        except OSError as error:
            problem = error.strerror or str(error)
        if problem is None:
            return True
        self._say(f"tray: not recording this session: {self._state_dir}: {problem}")
        return False

    def _child_environ(self) -> dict[str, str]:
        environ = dict(self._env.environ)
        environ[SESSION_VARIABLE] = self._id
        environ["TRAY_STATE_DIR"] = self._state_dir
        return environ

    def _child_terminal_setup(self, interactive: bool, size: WindowSize) -> Callable[[int], None]:
        """What the keeper does to the new pty (``fd``) before the command starts."""
        user_attributes = None
        if interactive:
            # The user's own settings (erase key, IUTF8, ...) make line editing in the
            # command behave as it does in their shell.
            with contextlib.suppress(termios.error):
                user_attributes = termios.tcgetattr(self._stdin)

        def setup(fd: int) -> None:
            # Pixels too: a new pty's size is all zeros.
            set_size(fd, size)
            attributes = user_attributes
            if not interactive:
                # Pipe mode: what goes in comes out unchanged. No echo, no "\n" -> "\r\n",
                # and no byte of the data turned into a signal, flow control or a
                # newline. Canonical mode stays on, or VEOF could not deliver an end
                # of file.
                attributes = termios.tcgetattr(fd)
                attributes[LFLAG] &= ~(termios.ECHO | termios.ISIG | termios.IEXTEN)
                attributes[OFLAG] &= ~termios.OPOST
                attributes[IFLAG] &= ~(termios.ICRNL | termios.IXON | termios.IXOFF)
            if attributes is not None:
                termios.tcsetattr(fd, termios.TCSANOW, attributes)

        return setup

    def _initial_size(self) -> WindowSize:
        size = get_size(self._size_fd) if self._size_fd is not None else None
        return size or size_from_environ(self._env.environ)

    def _say(self, line: str) -> None:
        try:
            self._env.stderr.write(line + "\n")
            self._env.stderr.flush()
        except (OSError, ValueError):
            pass  # no stderr to tell: the session still runs
