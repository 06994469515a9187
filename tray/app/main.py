"""Wires the tray app together; the only module that knows every part.

Threads: pystray owns the main thread (macOS requires it). One worker thread refreshes:
it reads the session files the watcher says changed, or looks at the whole directory on a
slow timer for liveness, and pushes the result to the icon, the menu and the notification
policy. A refresh gate folds a storm of changes into a few refreshes a second.

Each ``[[hosts]]`` entry has a link thread of its own (:class:`HostLinks`): it hands over
the host's latest sessions and its health, which the worker merges with the local ones.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tray.app.clipboard import copy_text
from tray.app.focus import focus_session
from tray.app.icon_host import IconHost, NoDisplayError
from tray.app.instance import hold_app_lock
from tray.app.memory import (
    FILE_NAME,
    forget_missing,
    load_memory,
    save_memory,
    snooze,
    unsnooze,
)
from tray.app.menu import build_menu
from tray.app.notifier import Notifier
from tray.app.overview import AppMemory, Overview, Row, StateSince, build_overview
from tray.app.policy import NotificationPolicy, Ping, observe
from tray.app.refresh import MenuPacer, RefreshGate, menu_text
from tray.app.remote import Hush, OldNews, kept_ids, remote_view
from tray.app.watcher import DirectoryWatcher
from tray.commands.doctor import find_tray_host
from tray.config import Config, load_config
from tray.environment import Environment
from tray.remote.hosts import HostConfig
from tray.remote.link import HostLinks, HostStatus, dismiss_remote, focus_remote
from tray.remote.sessions import RemoteState, remote_tmux, split_remote_id
from tray.session import Session
from tray.store import SessionCache, StateStore

# The whole directory is looked at again this often, and every live session's launcher
# asked after: a SIGKILLed launcher writes nothing, so only this finds it dead, and it
# also catches a change the watcher missed.
LIVENESS_PERIOD = 2.0
PAUSE_SECONDS = 3600.0
# While there is no tray host, how often to look for one.
HOST_RETRY = 2.0
LOG_NAME = "app.log"


def local_minute(timestamp: float) -> int:
    moment = time.localtime(timestamp)
    return moment.tm_hour * 60 + moment.tm_min


class OnceLog:
    """Warns once per problem, not once per event, and notes when it clears."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._active: set[str] = set()

    def problem(self, key: str, message: str) -> None:
        if key not in self._active:
            self._active.add(key)
            self._log.warning("%s", message)

    def cleared(self, keys: set[str]) -> None:
        for key in self._active - keys:
            self._log.info("recovered: %s", key)
        self._active &= keys


class TrayApp:
    def __init__(
        self,
        env: Environment,
        config: Config,
        log: logging.Logger,
        host: IconHost,
        notifier_factory: Callable[
            [Callable[[str], None], Callable[[tuple[str, ...]], None]], Notifier
        ],
    ) -> None:
        self._env = env
        self._config = config
        self._log = log
        self._store = StateStore(env.state_dir())
        self._cache = SessionCache(self._store)
        self._gate = RefreshGate()
        self._next_rescan = -math.inf
        self._memory_path = env.state_dir() / FILE_NAME
        self._memory = load_memory(self._memory_path, log, env.clock())
        self._changed = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._watcher = DirectoryWatcher(env.state_dir(), self._changed, log)
        self._policy = NotificationPolicy(config.notify, env.clock, local_minute)
        if self._memory.paused_until is not None:
            self._policy.pause(self._memory.paused_until)
        for session_id, until in self._memory.snoozed.items():
            self._policy.snooze(session_id, until)
        self._since = StateSince()
        self._sessions: dict[str, Session] = {}
        self._overview: Overview | None = None
        self._shown_key: object = None
        self._pacer = MenuPacer()
        self._warnings = OnceLog(log)
        self._host = host
        self._notifier = notifier_factory(self.focus, self._snooze)
        self._focus_requests: deque[str] = deque(maxlen=8)
        # Written by the links' threads under the lock, read by the worker.
        self._host_states: dict[str, RemoteState] = {}
        self._host_statuses: dict[str, HostStatus] = {}
        self._first_states: list[RemoteState] = []
        # The worker's own.
        self._old_news = OldNews()
        self._hush = Hush()
        # Also read by the menu's actions: replaced whole, never changed in place.
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
        self._worker.start()
        self._links.start()
        threading.Thread(target=self._watch_tray_host, name="tray-host", daemon=True).start()
        self._log.info("icon shown; watching %s", self._store.directory)

    def _watch_tray_host(self) -> None:
        """Say so when there is no tray to show the icon in, and show it again in one
        that comes later: a backend that looked once at start-up may miss it."""
        backend = self._host.backend_name()
        check = find_tray_host(self._env.environ, backend)
        if check.status == "ok":
            return
        self._log.warning("%s", check.line())
        while not self._stopping.wait(HOST_RETRY):
            if find_tray_host(self._env.environ, backend).status == "ok":
                self._log.info("a tray host appeared; showing the icon there")
                self._host.reshow()
                return

    def stop(self) -> None:
        self._stopping.set()
        self._changed.set()
        # Before the worker: no host callback may wake a worker that is gone.
        self._links.stop()
        self._watcher.stop()
        self._worker.join(timeout=5)
        self._notifier.close()

    def _run_worker(self) -> None:
        while not self._stopping.is_set():
            while self._focus_requests:
                self._focus_now(self._focus_requests.popleft())
            now = self._env.clock()
            wakeup = self._policy.next_wakeup()
            if wakeup is not None and wakeup <= now:
                self._gate.request()
            held = self._pacer.due_at()
            if held is not None and held <= now:
                self._gate.request()
            rescan = now >= self._next_rescan or not self._watcher.active
            if self._gate.begin(now):
                self._refresh_safely(now, rescan)
            elif now >= self._next_rescan and self._gate.open_at(now) <= now:
                # The timed look at everything runs when the gate is open, and leaves
                # it open: a change right after it must not wait for the interval.
                self._refresh_safely(now, rescan=True)
            timeout = self._timeout(now, wakeup)
            if self._gate.pending:
                # A refresh is due at the interval's end; changes until then join it,
                # so they need not wake this thread one by one.
                self._stopping.wait(timeout)
            elif self._changed.wait(timeout):
                self._gate.request()

    def _refresh_safely(self, now: float, rescan: bool) -> None:
        if rescan:
            self._next_rescan = now + LIVENESS_PERIOD
        try:
            self.refresh(rescan=rescan)
        except Exception:  # the icon must outlive any one bad refresh
            self._log.exception("refresh failed")

    def _timeout(self, now: float, wakeup: float | None) -> float:
        opens = self._gate.open_at(now)
        moments = [max(self._next_rescan, opens)]
        if wakeup is not None:
            moments.append(max(wakeup, opens))
        held = self._pacer.due_at()
        if held is not None:
            moments.append(max(held, opens))
        ready = self._gate.ready_at(now)
        if ready is not None:
            moments.append(ready)
        return min(LIVENESS_PERIOD, max(0.0, min(moments) - self._env.clock()))

    # One pass: read, show, notify.

    def refresh(self, rescan: bool = True) -> None:
        """Read what changed (everything, with ``rescan``), then show and notify."""
        now = self._env.clock()
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
        keep_ended = self._config.sessions.keep_ended
        sessions = [s for s in sessions if s.alive or now - s.updated_at <= keep_ended]
        with self._lock:
            states = dict(self._host_states)
            statuses = dict(self._host_statuses)
            first_states, self._first_states = self._first_states, []
        view = remote_view(self._config.hosts, states, statuses, now, keep_ended)
        sessions += view.sessions
        for state in first_states:
            self._old_news.note(state, now)
        present = {s.id for s in sessions}
        self._old_news.keep(present)
        with self._lock:
            kept = kept_ids(self._memory, present, view.waiting)
            self._memory = forget_missing(self._memory, kept, now)
            memory = self._memory
            self._sessions = {s.id: s for s in sessions}
            self._stale = view.stale
        shown = [s for s in sessions if s.id not in memory.dismissed]
        since = self._since.update(shown, now)
        overview = build_overview(shown, memory, since, now, stale=view.stale, hosts=view.hosts)
        self._show(overview, now)
        labels = {row.session_id: row.label for row in overview.rows}
        self._hush.apply(self._policy, view.stale, memory, now)
        # Every prompt (child records too) and every request for attention.
        observations = [o for s in shown for o in observe(s, labels[s.id], now)]
        self._policy.update(self._old_news.quiet(observations))
        for ping in self._policy.due():
            self._send(ping)

    def _show(self, overview: Overview, now: float) -> None:
        with self._lock:
            paused = self.paused
        key = (overview, paused, [int((now - row.since) // 60) for row in overview.rows])
        held = self._pacer.due_at()
        if key == self._shown_key and (held is None or held > now):
            return
        self._shown_key = key
        self._overview = overview
        # What must reach the menu at once. The session ids are in it also because two
        # sessions with the same words can swap places, and their actions must follow.
        outline = (
            overview.icon_state,
            overview.blocked_count,
            paused,
            tuple(
                (row.session_id, row.state, row.alive, row.unseen, row.stale)
                for row in overview.rows
            ),
            overview.hosts,
        )
        menu = None
        if self._pacer.ready(outline, now):
            built = build_menu(overview, self, now)
            if self._pacer.offer(outline, menu_text(built), now):
                menu = built
        self._host.apply(overview, menu)

    def _send(self, ping: Ping) -> None:
        key = ping.session_ids[0] if len(ping.session_ids) == 1 else ""
        self._notifier.send(ping.title, ping.body, ping.urgency, key, snooze=ping.session_ids)

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

    # Menu actions (MenuActions) and notification clicks. They run on pystray's or the
    # notifier's thread, so they only change memory and wake the worker.

    @property
    def paused(self) -> bool:
        until = self._policy.paused_until
        return until is not None and until > self._env.clock()

    def _remember(self, change: Callable[[AppMemory], AppMemory]) -> None:
        with self._lock:
            self._memory = change(self._memory)
            memory = self._memory
        try:
            save_memory(self._memory_path, memory)
        except OSError as error:
            self._warnings.problem("memory", f"cannot save {self._memory_path}: {error}")
        self._changed.set()

    def mark_seen(self, session_id: str) -> None:
        now = self._env.clock()
        self._remember(lambda m: replace(m, seen={**m.seen, session_id: now}))

    def dismiss(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is not None and session.running:
            return
        self._remember(lambda m: replace(m, dismissed=m.dismissed | {session_id}))
        self._dismiss_remote([session_id])

    def clear_finished(self) -> None:
        # A lost host's sessions are left alone: what they show may be long out of date.
        stale = self._stale
        ended = {s.id for s in self._sessions.values() if not s.running and s.id not in stale}
        self._remember(lambda m: replace(m, dismissed=m.dismissed | ended))
        self._dismiss_remote(sorted(ended))

    def _dismiss_remote(self, session_ids: list[str]) -> None:
        """Dismiss remote sessions on their hosts too, one ssh per host, in the
        background: the app's memory already hides them, and a slow host must not hold
        up the menu."""
        batches: dict[str, list[str]] = {}
        for session_id in session_ids:
            parts = split_remote_id(session_id)
            if parts is not None:
                batches.setdefault(parts[0], []).append(session_id)
        for name, batch in batches.items():
            host = self._host_config(name)
            if host is not None:
                threading.Thread(
                    target=self._dismiss_on_host,
                    args=(host, batch),
                    name=f"tray-dismiss-{name}",
                    daemon=True,
                ).start()

    def _dismiss_on_host(self, host: HostConfig, session_ids: list[str]) -> None:
        ok, message = dismiss_remote(host, session_ids, environ=self._env.environ)
        if ok:
            self._log.info("%s: dismissed %d session(s)", host.name, len(session_ids))
        else:
            self._log.warning("cannot dismiss on %s: %s", host.name, message)

    def copy_message(self, session_id: str) -> None:
        row = self._row(session_id)
        if row is None or not row.msg:
            return
        self._copy(row.msg)

    def copy_record_message(self, session_id: str, record_id: str) -> None:
        row = self._row(session_id)
        message = row.message(record_id) if row is not None else None
        if message:
            self._copy(message)

    def _copy(self, text: str) -> None:
        result = copy_text(text, self._env.environ)
        if not result.ok:
            self._log.warning("copy failed: %s", result.message)

    def focus(self, session_id: str) -> None:
        # Focusing runs outside tools with timeouts; the worker does it, so neither the
        # menu's thread nor the notifier's is held up.
        self._focus_requests.append(session_id)
        self._changed.set()

    def _focus_now(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        self.mark_seen(session_id)
        parts = split_remote_id(session_id)
        if parts is not None:
            self._focus_remote(parts[0], session)
            return
        result = focus_session(session.terminal, env=self._env.environ)
        if not result.ok:
            self._log.warning("cannot focus %s: %s", session.name, result.message)

    def _focus_remote(self, name: str, session: Session) -> None:
        host = self._host_config(name)
        tmux = remote_tmux(session)
        if host is None or tmux is None:
            self._log.warning("cannot focus %s: no tmux pane recorded on %s", session.name, name)
            return
        if session.id in self._stale:
            self._log.warning("cannot focus %s: %s is unreachable", session.name, name)
            return
        ok, message = focus_remote(host, *tmux, environ=self._env.environ)
        if not ok:
            self._log.warning("cannot focus %s: %s", session.name, message)

    def pause_hour(self) -> None:
        until = self._env.clock() + PAUSE_SECONDS
        self._policy.pause(until)
        self._remember(lambda m: replace(m, paused_until=until))

    def resume(self) -> None:
        self._policy.resume()
        self._remember(lambda m: replace(m, paused_until=None))

    def snooze_hour(self, session_id: str) -> None:
        self._snooze((session_id,))

    def _snooze(self, session_ids: tuple[str, ...]) -> None:
        until = self._env.clock() + PAUSE_SECONDS
        for session_id in session_ids:
            self._policy.snooze(session_id, until)
        self._remember(lambda m: snooze(m, session_ids, until))

    def unsnooze(self, session_id: str) -> None:
        self._policy.unsnooze(session_id)
        self._remember(lambda m: unsnooze(m, session_id))

    def quit(self) -> None:
        self._host.stop()

    def _row(self, session_id: str) -> Row | None:
        overview = self._overview
        if overview is None:
            return None
        return next((row for row in overview.rows if row.session_id == session_id), None)


def _open_log(state_dir: Path) -> logging.Logger:
    log = logging.getLogger("tray.app")
    log.setLevel(logging.INFO)
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    # Started in the background (by `tray demo`, autostart, systemd), stderr is a file
    # or a journal, and app.log already has every line.
    if sys.stderr is not None and sys.stderr.isatty():
        stream = logging.StreamHandler()
        stream.setFormatter(formatter)
        log.addHandler(stream)
    try:
        fd = os.open(state_dir / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
        handler.setFormatter(formatter)
        log.addHandler(handler)
    except OSError:
        pass
    return log


def run_app(env: Environment) -> int:
    # GTK's main loop does not return to Python for a KeyboardInterrupt; Ctrl-C on a
    # foreground `tray app` should still end it at once.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    config = load_config(env)
    store = StateStore(env.state_dir())
    store.ensure()
    lock = hold_app_lock(store.directory)
    if lock is None:
        print("tray app is already running", file=env.stdout)
        return 0
    log = _open_log(store.directory)
    try:
        host = IconHost("tray", None)
    except NoDisplayError as error:
        print(f"tray app: {error}", file=env.stderr)
        return 1
    backend = host.backend_name()
    log.info("tray backend: %s", backend)
    if backend == "xorg":
        log.warning(
            "the xorg tray backend has no menu and no clicks; for both, install PyGObject "
            "with AppIndicator: pip install 'tray[gtk]' and the system package "
            "gir1.2-ayatanaappindicator3-0.1"
        )
    app = TrayApp(
        env,
        config,
        log,
        host,
        lambda on_click, on_snooze: Notifier("tray", on_click, log, on_snooze),
    )
    try:
        host.run(app.start)
    finally:
        app.stop()
        lock.close()
    return 0
