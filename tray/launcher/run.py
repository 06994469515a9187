"""``tray run``: the command on its own pty, its bytes passed through, its reports recorded.

This module sets a run up and tears it down: the state directory and the session's
file, the pty and its settings, the signals, the command's start. The parts live in
:mod:`tray.launcher.spawn` (keeper and command), :mod:`tray.launcher.proxy` (the loop and job
control) and :mod:`tray.launcher.recorder` (the state file and its pacing).
"""

from __future__ import annotations

import gc
import os
import termios
from contextlib import closing, contextmanager, nullcontext
from typing import TYPE_CHECKING

from tray.base.exit_codes import CANNOT_START, USAGE_ERROR
from tray.core.answer_gate import DEFAULT_SETTINGS, AnswerSettings, Decision, Request, decide
from tray.core.config import Config, ConfigError, PolicySettings
from tray.core.session import Answered, Session
from tray.launcher.answer_socket import AnswerSocket, socket_path
from tray.launcher.proxy import PtyProxy
from tray.launcher.recorder import INPUT_WRITE_INTERVAL, WRITE_INTERVAL, SessionRecorder
from tray.launcher.spawn import CannotStartError, child_dispositions, spawn
from tray.launcher.terminal import (
    IFLAG,
    LFLAG,
    OFLAG,
    RawMode,
    SignalPipe,
    UserTerminal,
    WindowSize,
    get_size,
    set_size,
    size_from_environ,
)
from tray.launcher.terminal_signals import TerminalSignals
from tray.protocol.scanner import Scanner
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.logs import LAUNCHER_LOG_NAME, LauncherLog
from tray.state.store import StateStore, StoreError, process_start_token

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import TracebackType
# signal.py only wraps the C module _signal to turn numbers into enums, and enum costs
# milliseconds of every `tray run`; the functions and constants are the same.
if TYPE_CHECKING:
    import signal
else:
    import _signal as signal

__all__ = [
    "INPUT_WRITE_INTERVAL",
    "WRITE_INTERVAL",
    "Launcher",
    "run_session",
]

# Set for the command: the session it runs in. Seen by a launcher, it means nested.
SESSION_VARIABLE = "TRAY_SESSION_ID"
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
    "GNOME_TERMINAL_SCREEN",
    "GNOME_TERMINAL_SERVICE",
    "KONSOLE_DBUS_SERVICE",
    "KONSOLE_DBUS_SESSION",
    "KONSOLE_DBUS_WINDOW",
    "PTYXIS_VERSION",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "TERM",
    "SSH_TTY",
)

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


class _Master:
    """The pty's master side, closed once when the block ends: by the proxy once it has
    been handed over (the proxy closes it itself to hang the command up, and an fd closed
    twice could close whatever reused its number), by this before that."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.proxy: PtyProxy | None = None

    def hand_to(self, proxy: PtyProxy) -> PtyProxy:
        self.proxy = proxy
        return proxy

    def __enter__(self) -> _Master:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.proxy is not None:
            self.proxy.close_master()
        else:
            os.close(self.fd)


class _Ending:
    """The session's end, written when the block ends however it ends: ``code``, the
    command's status once it is known, or None when the launcher failed first."""

    def __init__(self, recorder: SessionRecorder, log: LauncherLog) -> None:
        self._recorder = recorder
        self._log = log
        self.code: int | None = None

    def __enter__(self) -> _Ending:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._recorder.finish(self.code)
        self._log(f"ended status={self.code}")


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
        self._id = f"{os.getpid()}-{os.urandom(3).hex()}"
        # A string, not a Path: pathlib is milliseconds of every start.
        self._state_dir = os.fspath(env.state_dir())
        self._store: StateStore | None = None
        self._log = LauncherLog(None, self._id, env.clock)
        self._on_write = on_write
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
        self._stdin = env.stdin_fd
        self._stdout: int | None = env.stdout_fd
        self._size_fd: int | None = None
        self._answer_settings: AnswerSettings = DEFAULT_SETTINGS

    # ----------------------------------------------------------------- start and end

    def _cwd(self) -> str:
        try:
            return self._env.cwd()
        except OSError:  # the directory was removed under us; the command still runs
            return self._env.environ.get("PWD", "")

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
        recorder = self._open_store()
        with closing(self._log):
            return self._run_on(interactive, recorder)

    def _run_on(self, interactive: bool, recorder: SessionRecorder) -> int:
        """The run's resources, each held by the block it is needed in: they end in the
        reverse order, however the run ends. The terminal's mode first, then the answer
        socket (once the file says ended, nothing may answer), the session's end, the pty,
        and last the signals."""
        size = self._initial_size()
        setup_terminal = self._child_terminal_setup(interactive, size)
        dispositions = child_dispositions()
        handled = [signum for signum in _OPTIONAL_SIGNALS if dispositions[signum] != signal.SIG_IGN]
        with SignalPipe([*_ALWAYS_SIGNALS, *handled]) as signals:
            try:
                spawned = spawn(self._command, self._child_environ(), setup_terminal, dispositions)
            except CannotStartError as failure:
                self._log(f"cannot start: {failure}")
                self._say(str(failure))
                self._forget()
                return CANNOT_START
            with _Master(spawned.master) as master, _Ending(recorder, self._log) as ending:
                # Once the command runs: nothing of ours holds its start up.
                recorder.started(spawned.child)
                with self._answer_socket(recorder, master) as answers:
                    self._log(
                        f"started pid={os.getpid()} child={spawned.child} "
                        f"keeper={spawned.keeper} command={self._command!r}"
                    )
                    raw = RawMode(self._stdin) if interactive else None
                    terminal = UserTerminal(
                        self._stdin,
                        self._stdout,
                        raw,
                        self._size_fd,
                        tstp_ignored=dispositions[signal.SIGTSTP] == signal.SIG_IGN,
                    )
                    proxy = master.hand_to(
                        PtyProxy(
                            terminal,
                            spawned,
                            signals=signals,
                            recorder=recorder,
                            log=self._log,
                            # Inside another `tray run`, that launcher would record every
                            # report a second time: the reports stop here.
                            scanner=Scanner(
                                withhold_reports=bool(self._env.environ.get(SESSION_VARIABLE))
                            ),
                            answers=answers,
                        )
                    )
                    # `tray run` starts with collection off (cli.py): what was made until
                    # now lives as long as the session, so it is frozen out of every
                    # collection to come, and collection goes on for the rest.
                    gc.freeze()
                    gc.enable()
                    try:
                        with raw if raw is not None else nullcontext():
                            ending.code = proxy.run()
                    except Exception:
                        import traceback  # noqa: PLC0415 - only for a crash, off the start-up path

                        self._log("launcher failed: " + traceback.format_exc())
                        proxy.hang_up_child()
                        raise
            return ending.code

    def _forget(self) -> None:
        """No command ran: leave no session behind."""
        if self._store is not None:
            self._store.remove(self._id)

    # ----------------------------------------------------------------- answering

    @contextmanager
    def _answer_socket(
        self, recorder: SessionRecorder, master: _Master
    ) -> Iterator[AnswerSocket | None]:
        """The session's answer socket, beside its state file, closed when the block
        ends; None without one (no state directory, or a path too long for a Unix
        socket): the command runs all the same. It reaches the proxy through ``master``,
        which holds it once it is made."""
        answers = self._open_answers(recorder, master)
        try:
            yield answers
        finally:
            if answers is not None:
                answers.close()

    def _open_answers(self, recorder: SessionRecorder, master: _Master) -> AnswerSocket | None:
        if self._store is None:
            return None

        def gate(request: Request) -> Decision:
            return self._gate(recorder, request, master.proxy is not None and master.proxy.running)

        def type_keys(keys: bytes) -> bool:
            return master.proxy is not None and master.proxy.type_answer(keys)

        try:
            return AnswerSocket(
                socket_path(self._state_dir, self._id),
                gate,
                type_keys,
                lambda decision, answer: self._answered(recorder, decision, answer),
                record_clock=self._env.clock,
            )
        except OSError as error:
            self._log(f"no answer socket, answering off: {error.strerror or error}")
            return None

    def _gate(self, recorder: SessionRecorder, request: Request, alive: bool) -> Decision:
        last = recorder.session.answered
        return decide(
            recorder.records(),
            request,
            recorder.last_input_at,
            self._answer_settings,
            alive=alive,
            answered=None if last is None else (last.record, last.since),
        )

    def _answered(self, recorder: SessionRecorder, decision: Decision, answer: str) -> None:
        assert decision.record is not None
        assert decision.since is not None
        self._log(f"answered {answer} record={decision.record!r} since={decision.since!r}")
        recorder.answered(Answered(decision.record, decision.since, answer, self._env.clock()))

    def _say(self, line: str) -> None:
        try:
            self._env.stderr.write(line + "\n")
            self._env.stderr.flush()
        except (OSError, ValueError):
            pass  # no stderr to tell: the session still runs

    # ----------------------------------------------------------------- setting up

    def _terminal_facts(self) -> dict[str, str]:
        environ = self._env.environ
        facts = {key: environ[key] for key in TERMINAL_VARIABLES if key in environ}
        if not os.isatty(self._env.stdin_fd):
            return facts
        try:
            facts["tty"] = os.ttyname(self._env.stdin_fd)
        except OSError:
            pass
        # The terminal's process, for focusing its window by _NET_WM_PID: the nearest
        # ancestor whose controlling tty is not ours (the shell and its parents share
        # ours), with its /proc start time so that a reused pid is not taken for it.
        try:
            tty, pid = os.fstat(self._env.stdin_fd).st_rdev, os.getppid()
            for _ in range(8):
                with open(f"/proc/{pid}/stat", "rb") as stat_file:
                    # The command name may hold spaces and ")": split after the last ")".
                    fields = stat_file.read().rsplit(b")", 1)[1].split()
                if int(fields[4]) != tty:
                    facts["terminal_pid"] = str(pid)
                    facts["terminal_start"] = fields[19].decode("ascii")
                    break
                pid = int(fields[1])
                if pid <= 1:
                    break
        except (OSError, IndexError, ValueError):
            pass  # no terminal process: focus falls back on the other facts
        return facts

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
            try:
                user_attributes = termios.tcgetattr(self._stdin)
            except termios.error:
                pass

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

    def _open_store(self) -> SessionRecorder:
        """Create the state directory and the session's file, before the command starts;
        the recorder that keeps that file.

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
            # No config is read then: the default threshold for a long shell command.
            return self._make_recorder(None, PolicySettings().done_after)
        self._store = store
        self._log = LauncherLog(
            os.path.join(self._state_dir, LAUNCHER_LOG_NAME), self._id, self._env.clock
        )
        # Ended sessions age out here too, so a machine without `tray status` or the
        # app still never piles up files. A bad config must not stop the command.
        try:
            config = load_config(self._env)
        except ConfigError as error:
            self._log(f"config ignored: {error}")
            config = Config()
        try:
            store.prune(self._env.clock(), config.sessions.keep_ended)
        except OSError as error:
            self._log(f"pruning failed: {error}")
        self._answer_settings = config.answer
        return self._make_recorder(store, config.notify.done_after)

    def _make_recorder(self, store: StateStore | None, done_after: float) -> SessionRecorder:
        watch = TerminalSignals(os.uname().nodename, done_after)
        return SessionRecorder(
            self._session, self._env.clock, self._log, watch, store=store, on_write=self._on_write
        )
