"""Wires the tray app together; the only module that knows every part.

Threads: pystray owns the main thread (macOS requires it). One worker thread refreshes:
it reads the session files the watcher says changed, or looks at the whole directory on a
slow timer for liveness, and pushes the result to the icon, the menu and the notification
policy (one pass: :class:`tray.core.worker.refresh.Refresh`). A refresh gate folds a storm of
changes into a few refreshes a second. The worker alone touches the policy, the overview
and the app's memory: menu items and notification buttons post messages to it
(:mod:`tray.app.messages`), handled in :meth:`TrayApp.handle`. It never waits on another
program or machine: focus, answers, dismissing on a host and the clipboard run on
threads of their own (:mod:`tray.app.errands`) and post their outcome back. It sleeps on
its mailbox until a message, a change, or the earliest of its deadlines
(:class:`tray.core.worker.deadlines.RefreshSchedule`).

Each ``[[hosts]]`` entry has a link thread of its own (:class:`HostLinks`): it hands over
the host's latest sessions and its health, which the worker merges with the local ones.

``tray app`` itself starts in :mod:`tray.app.start`, which builds the icon host and this.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Protocol, assert_never

from tray.app.answer_dispatch import AnswerDispatcher, AnswerRoutes
from tray.app.away_routing import build_routing
from tray.app.errands import Errands
from tray.app.focus_looks import FocusLooks
from tray.app.messages import (
    Answer,
    AnswerDone,
    Away,
    ClearFinished,
    Copy,
    Dismiss,
    Focus,
    FocusDone,
    Mailbox,
    MarkSeen,
    Message,
    Pause,
    PhoneReply,
    Resume,
    Snooze,
    Unsnooze,
)
from tray.core.answers.target import AnswerTarget
from tray.core.config.settings import Config
from tray.core.hosts.remote_sessions import HostStatus, RemoteState, remote_tmux, split_remote_id
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.ping_icon import ping_icon
from tray.core.policy.wording import Ping
from tray.core.session.model import Session
from tray.core.view.marks import snooze, unsnooze
from tray.core.view.overview import AppMemory, Overview
from tray.core.worker.deadlines import RefreshSchedule
from tray.core.worker.refresh import (
    REFRESH_INTERVAL,
    HostUpdates,
    MenuPacer,
    Refresh,
    menu_outline,
    menu_text,
    shown_key,
)
from tray.desktop.focus import FocusResult
from tray.desktop.icon_host import IconHost
from tray.desktop.tray_host import TrayHostLook
from tray.desktop.tray_menu import MenuExtras, build_menu
from tray.outlets.notifier import Notifier
from tray.remote.link import HostLink, HostLinks
from tray.state.directory_watcher import DirectoryWatcher
from tray.state.environment import Environment
from tray.state.logs import OnceLog
from tray.state.marks_file import FILE_NAME, load_memory, save_memory
from tray.state.session_cache import SessionCache
from tray.state.session_feed import LIVENESS_PERIOD
from tray.state.store import StateStore

PAUSE_SECONDS = 3600.0
# While there is no tray host, how often to look for one.
HOST_RETRY = 2.0


class PolicyView(Protocol):
    """What may be read of the worker's policy from outside: to be read once the
    worker has ended (the worker alone changes it)."""

    @property
    def paused_until(self) -> float | None: ...

    def snoozed_until(self, session_id: str) -> float | None: ...


def local_minute(timestamp: float) -> int:
    moment = time.localtime(timestamp)
    return moment.tm_hour * 60 + moment.tm_min


class TrayApp:
    def __init__(
        self,
        env: Environment,
        config: Config,
        log: logging.Logger,
        host: IconHost,
        notifier_factory: Callable[
            [Callable[[str, str | None], None], Callable[[tuple[str, ...]], None]], Notifier
        ],
        *,
        refresh_interval: float = REFRESH_INTERVAL,
    ) -> None:
        self._env = env
        self._config = config
        self._log = log
        self._store = StateStore(env.state_dir())
        self._cache = SessionCache(self._store)
        self._schedule = RefreshSchedule(env.clock, LIVENESS_PERIOD, refresh_interval)
        self._refreshes = 0
        self._memory_path = env.state_dir() / FILE_NAME
        self._memory = load_memory(self._memory_path, log, env.clock())
        self._stopping = threading.Event()
        self._mailbox = Mailbox()
        # Set by the watcher and the hosts' links; wakes the worker.
        self._changed = self._mailbox.changed
        self._lock = threading.Lock()
        self._watcher = DirectoryWatcher(env.state_dir(), self._changed, log)
        self._policy = NotificationPolicy(config.notify, env.clock, local_minute)
        if self._memory.paused_until is not None:
            self._policy.pause(self._memory.paused_until)
        for session_id, until in self._memory.snoozed.items():
            self._policy.snooze(session_id, until)
        self._refresh = Refresh(
            config.hosts, config.sessions.keep_ended, self._policy, answering=config.answer
        )
        # The worker's own, like the policy and the memory; menu and notifier callbacks
        # post messages instead (tray.app.messages).
        self._sessions: Mapping[str, Session] = {}
        self._overview: Overview | None = None
        self._shown_key: object = None
        self._pacer = MenuPacer()
        self._warnings = OnceLog(log)
        self._host = host
        self._notifier = notifier_factory(self.focus, self._snooze)
        self._notifier.on_answer = self.answer  # Approve and Deny on a prompt's notification
        # A host's answers go over its open link first.
        where = AnswerRoutes(env.state_dir(), self._host_config, env.environ, self._host_link)
        self._answers = AnswerDispatcher(where, self._notifier, self._policy, log)
        self._errands = Errands(self.post, self._answers, env.environ, log)
        # The worker's too: what each Focus item says, and [away] (idle without forward).
        self._focus_looks = FocusLooks(env.environ, log)
        self._routing = build_routing(
            config.away,
            env.environ,
            log,
            lambda state: self.post(Away(state)),
            state_dir=env.state_dir(),
            post_reply=self.post,
        )
        # Written by the links' threads under the lock, read by the worker.
        self._host_states: dict[str, RemoteState] = {}
        self._host_statuses: dict[str, HostStatus] = {}
        self._first_states: list[RemoteState] = []
        self._stale: frozenset[str] = frozenset()
        self._links = HostLinks(
            config.hosts,
            self._on_host_state,
            self._on_host_status,
            environ=env.environ,
            log=log,
        )
        self._worker = threading.Thread(target=self._run_worker, name="tray-worker", daemon=True)

    # Lifecycle

    def start(self) -> None:
        self._watcher.start()
        self.start_worker()
        self._links.start()
        self._routing.start()
        threading.Thread(target=self._watch_tray_host, name="tray-host", daemon=True).start()
        self._log.info("icon shown; watching %s", self._store.directory)

    def _watch_tray_host(self) -> None:
        """Say so when there is no tray to show the icon in, and show it again in one
        that comes later: a backend that looked once at start-up may miss it."""
        backend = self._host.backend_name()
        # In-process, on connections kept between looks: no child, no new connection.
        look = TrayHostLook(self._env.environ)
        try:
            check = look.check(backend)
            if check.status == "ok":
                return
            self._log.warning("%s", check.line())
            while not self._stopping.wait(HOST_RETRY):
                if look.check(backend).status == "ok":
                    self._log.info("a tray host appeared; showing the icon there")
                    self._host.reshow()
                    return
        finally:
            look.close()

    def start_worker(self) -> None:
        self._worker.start()

    def stop(self) -> None:
        self._stopping.set()
        self._mailbox.close()
        # Before the worker: no host callback may wake a worker that is gone.
        self._links.stop()
        self._watcher.stop()
        self._worker.join(timeout=5)
        self._routing.stop()
        self._notifier.close()

    def _run_worker(self) -> None:
        # What exists by now (modules, the toolkit's wrappers, the settings) lives as long
        # as the app: frozen, it is left out of every collection, which otherwise walks
        # it again and again while busy sessions make garbage (about 0.5% of a core with
        # twenty busy launchers).
        gc.freeze()
        mailbox, schedule = self._mailbox, self._schedule
        while not mailbox.closed:
            for message in mailbox.take():
                self._handle_safely(message)
            now = self._env.clock()
            if self._changed.is_set():
                schedule.request()
            due = schedule.due(now, self._policy.next_wakeup(), self._pacer.due_at())
            if due:
                rescan = schedule.begin(now, due, watching=self._watcher.active)
                try:
                    self.refresh(rescan=rescan)
                except Exception:  # the icon must outlive any one bad refresh
                    self._log.exception("refresh failed")
                # The refresh moved the deadlines, and messages may have come meanwhile.
                continue
            # While a refresh waits for the gate, changes join it without waking this
            # thread one by one; a message still does.
            mailbox.wait(schedule.wait_time(LIVENESS_PERIOD), changes=not schedule.gathering)

    # One pass: read, show, notify.

    def refresh(self, rescan: bool = True) -> None:
        """Read what changed (everything, with ``rescan``), then show and notify."""
        now = self._env.clock()
        self._refreshes += 1
        # Cleared before the watcher's names are taken: a change noted after this is
        # a new request, never lost, and one noted before is read now.
        self._changed.clear()
        changed = self._watcher.take_changes()
        if rescan or changed is None:
            self._cache.rescan()
        else:
            self._cache.reload(changed)
        sessions, problems = self._cache.sessions()
        for problem in problems:
            self._warnings.problem(
                str(problem.path), f"cannot read {problem.path.name}: {problem.reason}"
            )
        self._warnings.cleared({str(problem.path) for problem in problems})
        with self._lock:
            news = HostUpdates(
                dict(self._host_states), dict(self._host_statuses), self._first_states
            )
            self._first_states = []
        shown = self._refresh.run(sessions, news, self._memory, now)
        self._memory = shown.memory
        self._sessions = shown.sessions
        self._stale = shown.stale
        self._show(shown.overview, now)
        for ping in shown.pings:
            self._send(ping)

    def _show(self, overview: Overview, now: float) -> None:
        paused = self.paused
        extras = MenuExtras(
            tuple(sorted(self._focus_looks.looks(self._sessions).items())),
            self._routing.menu_line(),
        )
        key = (shown_key(overview, paused, now), extras)
        held = self._pacer.due_at()
        if key == self._shown_key and (held is None or held > now):
            return
        self._shown_key = key
        self._overview = overview
        outline = (menu_outline(overview, paused), extras)
        menu = None
        if self._pacer.ready(outline, now):
            built = build_menu(overview, self, now, extras)
            if self._pacer.offer(outline, menu_text(built), now):
                menu = built
        self._host.apply(overview, menu)

    def _send(self, ping: Ping) -> None:
        key = ping.session_ids[0] if len(ping.session_ids) == 1 else ""
        self._notifier.send(
            ping.title,
            ping.body,
            ping.urgency,
            key,
            snooze=ping.session_ids,
            answer=ping.answer,
            icon=ping_icon(ping),
        )
        self._routing.ping(ping)

    # The hosts' links call these on their own threads.

    def _on_host_state(self, host: str, state: RemoteState) -> None:
        with self._lock:
            self._host_states[host] = state
            if state.initial:
                self._first_states.append(state)
        self._changed.set()

    def _on_host_status(self, host: str, status: HostStatus) -> None:
        with self._lock:
            self._host_statuses[host] = status
        # The link itself warns once when a host is lost; this notes when it is back.
        if status.state == "connected":
            self._log.info("%s: connected", host)
        self._changed.set()

    def _host_config(self, name: str) -> HostConfig | None:
        return next((host for host in self._config.hosts if host.name == name), None)

    def _host_link(self, name: str) -> HostLink | None:
        return self._links.get(name)

    # A look from outside, read-only: how far the worker has got.

    @property
    def refreshes(self) -> int:
        """How many refreshes the worker has run."""
        return self._refreshes

    @property
    def waiting(self) -> int:
        """Messages posted that the worker has not yet taken."""
        return len(self._mailbox)

    @property
    def policy(self) -> PolicyView:
        return self._policy

    # Menu actions (MenuActions) and notification clicks. They run on pystray's or the
    # notifier's thread, so they only post a message; the worker does the rest.

    @property
    def paused(self) -> bool:
        # Read on the menu's thread too: the memory is replaced whole, never changed.
        until = self._memory.paused_until
        return until is not None and until > self._env.clock()

    def post(self, message: Message) -> None:
        """Hand a user's action to the worker; safe from any thread."""
        self._mailbox.post(message)

    def mark_seen(self, session_id: str) -> None:
        self.post(MarkSeen(session_id, self._env.clock()))

    def dismiss(self, session_id: str) -> None:
        self.post(Dismiss(session_id))

    def clear_finished(self) -> None:
        self.post(ClearFinished())

    def focus(self, session_id: str, activation_token: str | None = None) -> None:
        self.post(Focus(session_id, activation_token))

    def pause_hour(self) -> None:
        self.post(Pause(self._env.clock() + PAUSE_SECONDS))

    def resume(self) -> None:
        self.post(Resume())

    def snooze_hour(self, session_id: str) -> None:
        self._snooze((session_id,))

    def _snooze(self, session_ids: tuple[str, ...]) -> None:
        self.post(Snooze(session_ids, self._env.clock() + PAUSE_SECONDS))

    def unsnooze(self, session_id: str) -> None:
        self.post(Unsnooze(session_id))

    def copy_message(self, session_id: str) -> None:
        self.post(Copy(session_id))

    def copy_record_message(self, session_id: str, record_id: str) -> None:
        self.post(Copy(session_id, record_id))

    def quit(self) -> None:
        self._host.stop()

    def answer(self, target: AnswerTarget, answer: str) -> None:
        self.post(Answer(target.session_id, target.record_id, target.since, answer))

    # The worker's side of those messages.

    def _handle_safely(self, message: Message) -> None:
        try:
            self.handle(message)
        except Exception:  # one bad action must not end the worker
            self._log.exception("cannot handle %s", message)

    def handle(self, message: Message) -> None:
        """Carry out one user action, or apply what came back from one; on the worker's
        thread only. Nothing here waits on another program: that is the errands'."""
        match message:
            case Away(state):
                self._policy.set_away(state.away)
                if self._routing.changed(state):
                    self._schedule.request()  # the menu's away line
            case Focus(session_id, token):
                self._focus(session_id, token)
            case FocusDone(focused, result):
                self._focused(focused, result)
            case MarkSeen(session_id, at):
                self._remember(lambda m: replace(m, seen={**m.seen, session_id: at}))
            case Dismiss(session_id):
                session = self._sessions.get(session_id)
                if session is not None and session.running:
                    return
                self._remember(lambda m: replace(m, dismissed=m.dismissed | {session_id}))
                self._dismiss_remote([session_id])
            case ClearFinished():
                # A lost host's sessions are left alone: what they show may be long out
                # of date.
                ended = {
                    s.id
                    for s in self._sessions.values()
                    if not s.running and s.id not in self._stale
                }
                self._remember(lambda m: replace(m, dismissed=m.dismissed | ended))
                self._dismiss_remote(sorted(ended))
            case Pause(until):
                self._policy.pause(until)
                self._remember(lambda m: replace(m, paused_until=until))
            case Resume():
                self._policy.resume()
                self._remember(lambda m: replace(m, paused_until=None))
            case Snooze(session_ids, until):
                for session_id in session_ids:
                    self._policy.snooze(session_id, until)
                self._remember(lambda m: snooze(m, session_ids, until))
            case Unsnooze(session_id):
                self._policy.unsnooze(session_id)
                self._remember(lambda m: unsnooze(m, session_id))
            case Answer(session_id):
                # The launcher may hold the answer for seconds, and a host take ssh's
                # time: the worker goes on, and settles it when it comes back.
                stale = session_id in self._stale
                self._errands.answer(message, self._sessions.get(session_id), stale=stale)
            case PhoneReply(text):
                if (asked := self._routing.phone_reply(text)) is not None:
                    self.handle(asked)  # as the desktop's button would, checked the same way
            case AnswerDone(answer, outcome):
                self._answers.settle(answer, outcome)
                if answer.from_phone:
                    self._routing.phone_told(answer, outcome, self._sessions.get(answer.session_id))
            case Copy(session_id, record_id):
                self._copy(session_id, record_id)
            case _:
                assert_never(message)

    def _remember(self, change: Callable[[AppMemory], AppMemory]) -> None:
        self._memory = memory = change(self._memory)
        try:
            save_memory(self._memory_path, memory)
        except OSError as error:
            self._warnings.problem("memory", f"cannot save {self._memory_path}: {error}")
        # The menu shows the change at the next refresh.
        self._schedule.request()

    def _dismiss_remote(self, session_ids: list[str]) -> None:
        """Dismiss remote sessions on their hosts too, one ssh per host, off the worker:
        the app's memory already hides them."""
        batches: dict[str, list[str]] = {}
        for session_id in session_ids:
            parts = split_remote_id(session_id)
            if parts is not None:
                batches.setdefault(parts[0], []).append(session_id)
        for name, batch in batches.items():
            host = self._host_config(name)
            if host is not None:
                self._errands.dismiss(host, batch)

    def _copy(self, session_id: str, record_id: str | None) -> None:
        row = self._overview.row(session_id) if self._overview is not None else None
        if row is None:
            return
        text = row.msg if record_id is None else row.message(record_id)
        if text:
            self._errands.copy(text)

    def _focus(self, session_id: str, token: str | None = None) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        self.handle(MarkSeen(session_id, self._env.clock()))
        parts = split_remote_id(session_id)
        if parts is None:
            self._errands.focus(session, token)
            return
        name = parts[0]
        host = self._host_config(name)
        tmux = remote_tmux(session)
        if host is None or tmux is None:
            self._log.warning("cannot focus %s: no tmux pane recorded on %s", session.name, name)
            return
        if session.id in self._stale:
            self._log.warning("cannot focus %s: %s is unreachable", session.name, name)
            return
        self._errands.focus_remote(host, session, *tmux)

    def _focused(self, session: Session, result: FocusResult) -> None:
        if not result.ok:
            self._log.warning("cannot focus %s: %s", session.name, result.message)
        if split_remote_id(session.id) is None and self._focus_looks.focused(session, result):
            self._schedule.request()  # the menu says what was left undone
