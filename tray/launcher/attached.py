"""``tray run`` once the command is on its way: the session's file and its recorder, the
answer socket, and the loop between the user's terminal and the pty (:mod:`tray.launcher.proxy`).

:mod:`tray.launcher.run` imports this module only after the command's exec, so that none
of it (the store, the config, the scanner, the answer gate) holds the command's start
up: it loads on one core while the command starts on another.
"""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, nullcontext, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from tray.core.answers.gate import DEFAULT_SETTINGS, AnswerSettings, Decision, Request, decide
from tray.core.config.settings import Config, ConfigError, PolicySettings
from tray.core.session.model import Answered, Session
from tray.launcher.answer_socket import AnswerHandler, AnswerSocket
from tray.launcher.proxy import PtyProxy
from tray.launcher.recorder import SessionRecorder
from tray.launcher.spawn import Spawned
from tray.launcher.terminal import SignalPipe, UserTerminal
from tray.launcher.terminal_signals import TerminalSignals
from tray.protocol.scanner import Scanner
from tray.protocol.state import Answer
from tray.state.answer_channel import socket_path
from tray.state.config_file import load_config
from tray.state.environment import SESSION_VARIABLE, Environment
from tray.state.liveness import process_start_token
from tray.state.logs import LAUNCHER_LOG_NAME, LauncherLog
from tray.state.store import StateStore, StoreError
from tray.terminal.raw_mode import RawMode
from tray.terminal.variables import TERMINAL_VARIABLES

if TYPE_CHECKING:
    from tray.core.agents.rules import AgentBook
    from tray.core.agents.tracker import AgentTracker

# When the agents' rules are read, after the loop has started: the program's start (and
# a `tray run -- true` that is over by then) never waits for them, and an agent's first
# prompt comes long after. An answer asked for sooner reads them at once.
AGENT_RULES_AFTER = 0.05


@dataclass(frozen=True, slots=True)
class Start:
    """What :mod:`tray.launcher.run` settled before the command's exec."""

    command: tuple[str, ...]
    name: str | None
    env: Environment
    session_id: str
    state_dir: str
    recording: bool  # the state directory is there and ours
    stdin: int  # -1: closed
    stdout: int | None  # None: closed
    size_fd: int | None  # the user's terminal, for its window size
    interactive: bool
    tstp_ignored: bool
    on_write: Callable[[Session, float], None] | None = None


class Master:
    """The pty's master side, closed once when the block ends: by the proxy once it has
    been handed over (the proxy closes it itself to hang the command up, and an fd closed
    twice could close whatever reused its number), by this before that."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.proxy: PtyProxy | None = None

    def hand_to(self, proxy: PtyProxy) -> PtyProxy:
        self.proxy = proxy
        return proxy

    def __enter__(self) -> Master:
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


class AttachedSession:
    """One ``tray run`` from the command's exec to its end."""

    def __init__(self, start: Start, spawned: Spawned) -> None:
        self._start = start
        self._env = start.env
        self._id = start.session_id
        self._state_dir = start.state_dir
        self._spawned = spawned
        self._store: StateStore | None = None
        self._log = LauncherLog(None, self._id, self._env.clock)
        self._answer_settings: AnswerSettings = DEFAULT_SETTINGS
        self._agent_rules_read = False
        self._scanner: Scanner | None = None
        now = self._env.clock()
        command = start.command
        self._session = Session(
            id=self._id,
            name=start.name or (os.path.basename(command[0]) if command else ""),
            command=command,
            cwd=self._cwd(),
            pid=os.getpid(),
            child_pid=None,
            started_at=now,
            updated_at=now,
            pid_start=process_start_token(os.getpid()),
            terminal=self._terminal_facts(),
            name_given=start.name is not None,
        )

    def _cwd(self) -> str:
        try:
            return self._env.cwd()
        except OSError:  # the directory was removed under us; the command still runs
            return self._env.environ.get("PWD", "")

    def run(self, master: Master, signals: SignalPipe) -> int:
        recorder = self._open_store()
        with closing(self._log):
            return self._run_on(master, signals, recorder)

    def _run_on(self, master: Master, signals: SignalPipe, recorder: SessionRecorder) -> int:
        """The run's resources, each held by the block it is needed in: they end in the
        reverse order, however the run ends. The terminal's mode first, then the answer
        socket (once the file says ended, nothing may answer), then the session's end; the
        pty and the signals are held by :mod:`tray.launcher.run` around this."""
        spawned = self._spawned
        start = self._start
        with _Ending(recorder, self._log) as ending:
            recorder.started(spawned.child)
            with self._answer_socket(recorder, master) as answers:
                self._log(
                    f"started pid={os.getpid()} child={spawned.child} "
                    f"keeper={spawned.keeper} command={list(start.command)!r}"
                )
                raw = RawMode(start.stdin) if start.interactive else None
                terminal = UserTerminal(
                    start.stdin,
                    start.stdout,
                    raw,
                    start.size_fd,
                    tstp_ignored=start.tstp_ignored,
                )
                # Inside another `tray run`, that launcher would record every report a
                # second time: the reports stop here.
                self._scanner = Scanner(
                    withhold_reports=bool(self._env.environ.get(SESSION_VARIABLE))
                )
                proxy = master.hand_to(
                    PtyProxy(
                        terminal,
                        spawned,
                        signals=signals,
                        recorder=recorder,
                        log=self._log,
                        scanner=self._scanner,
                        guests=() if answers is None else (AnswerHandler(answers, self._log),),
                        later=(AGENT_RULES_AFTER, lambda: self._read_agent_rules(recorder)),
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

    @contextmanager
    def _answer_socket(
        self, recorder: SessionRecorder, master: Master
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

    def _open_answers(self, recorder: SessionRecorder, master: Master) -> AnswerSocket | None:
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
        self._read_agent_rules(recorder)  # their keys answer
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
        recorder.answered(
            Answered(decision.record, decision.since, Answer(answer), self._env.clock())
        )

    def _terminal_facts(self) -> dict[str, str]:
        environ = self._env.environ
        facts = {key: environ[key] for key in TERMINAL_VARIABLES if key in environ}
        if not os.isatty(self._env.stdin_fd):
            return facts
        with suppress(OSError):
            facts["tty"] = os.ttyname(self._env.stdin_fd)
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

    def _open_store(self) -> SessionRecorder:
        """The session's file, written as the command starts, and the recorder that keeps
        it.

        When that fails the command still runs: the user's work matters more than our
        bookkeeping. A state directory that is not there or not ours was said on stderr
        before the command started (:mod:`tray.launcher.run`), since once it runs the
        terminal is its alone; a file that cannot be written after all goes to the log.
        """
        if not self._start.recording:
            # No config is read then: the default threshold for a long shell command.
            return self._make_recorder(None, PolicySettings().done_after)
        store = StateStore(self._state_dir)
        try:
            store.write(self._session)
        except (OSError, StoreError) as error:
            reason = error.strerror or str(error) if isinstance(error, OSError) else str(error)
            self._log(f"not recording this session: {reason}")
            return self._make_recorder(None, PolicySettings().done_after)
        self._store = store
        self._log = LauncherLog(
            os.path.join(self._state_dir, LAUNCHER_LOG_NAME), self._id, self._env.clock
        )
        # Ended sessions age out here too, so a machine without `tray status` or the
        # app still never piles up files. A bad config must not stop the command.
        try:
            # The agents' keys come with their rules, later (_read_agent_rules).
            config = load_config(self._env, agent_keys={})
        except ConfigError as error:
            self._log(f"config ignored: {error}")
            config = Config()
        try:
            store.prune(self._env.clock(), config.sessions.keep_ended)
        except OSError as error:
            self._log(f"pruning failed: {error}")
        self._answer_settings = config.answer
        return self._make_recorder(store, config.notify.done_after)

    def _read_agent_rules(self, recorder: SessionRecorder) -> None:
        """Once: the agents' rules, their answer keys under the user's, and the rules of
        the agent the command is, which the recorder and the scanner then read by."""
        if self._agent_rules_read or self._store is None:
            return
        self._agent_rules_read = True
        from tray.state.agent_files import load_agent_book  # noqa: PLC0415 - see AGENT_RULES_AFTER

        book = load_agent_book(self._env)
        with suppress(ConfigError):  # said in the log at the start
            self._answer_settings = load_config(self._env, book.answer_keys()).answer
        recorder.watch_agent(self._agent(book))
        if self._scanner is not None:
            meanings = recorder.title_meanings()
            self._scanner.read_titles(meanings is not None, meanings)

    def _agent(self, book: AgentBook) -> AgentTracker | None:
        """The rules of the agent this command starts, when tray knows it and it speaks
        no OSC 7501 (one that does reports for itself)."""
        command = self._start.command
        if not command:
            return None
        for problem in book.problems:
            self._log(f"agent rules ignored: {problem}")
        name = os.path.basename(command[0])
        rules = book.recognise(name, None)
        if rules is None:
            # Not by its name: by the file it runs (a node script behind a symlink).
            program = shutil.which(command[0], path=self._env.environ.get("PATH", os.defpath))
            if program is not None:
                rules = book.recognise(name, os.path.realpath(program))
        if rules is None or not rules.infers:
            return None
        self._log(f"agent {rules.app}: reading its title, notifications and bell")
        from tray.core.agents.tracker import AgentTracker  # noqa: PLC0415 - see AGENT_RULES_AFTER

        return AgentTracker(rules)

    def _make_recorder(self, store: StateStore | None, done_after: float) -> SessionRecorder:
        watch = TerminalSignals(os.uname().nodename, done_after)
        return SessionRecorder(
            self._session,
            self._env.clock,
            self._log,
            watch,
            store=store,
            on_write=self._start.on_write,
        )
