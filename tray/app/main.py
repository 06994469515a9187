"""The tray app's worker: the one thread that refreshes, shows, pings and carries out
the user's actions. :mod:`tray.app.start` makes its parts and hands them to it.

Threads: pystray owns the main thread (macOS requires it). The worker reads the session
files the watcher says changed, or looks at the whole directory on a slow timer for
liveness, and pushes the result to the icon, the menu and the notification policy (one
pass: :class:`tray.core.worker.refresh.Refresh`). A refresh gate folds a storm of changes
into a few refreshes a second. The worker alone touches the policy (which keeps the pause
and the snoozes), the overview and the app's marks: menu items and notification buttons
post the user's actions to it (:mod:`tray.core.worker.user_actions`), handled in
:meth:`TrayApp.handle`. It never waits on another program or machine: focus, answers,
dismissing on a host and the clipboard run on threads of their own
(:mod:`tray.app.background_calls`) and post their outcome back; the watch for a tray
area that comes late is a task on the bus loop (:mod:`tray.desktop.bus_loop`), which
posts its news too. It sleeps on its mailbox until a message, a change, or the earliest
of its deadlines (:class:`tray.core.worker.deadlines.RefreshSchedule`).

Each ``[[hosts]]`` entry has a link thread of its own (:class:`HostLinks`): it hands over
the host's latest sessions and its health (:class:`tray.app.messages.HostInbox`), which
the worker merges with the local ones.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, assert_never

from tray.app.answer_dispatch import AnswerDispatcher
from tray.app.away_routing import NoRouting
from tray.app.background_calls import BackgroundCalls
from tray.app.focus_looks import FocusLooks
from tray.app.messages import (
    AnswerDone,
    Away,
    FocusDone,
    HostInbox,
    Mailbox,
    MenuSide,
    Message,
    PhoneReply,
    TrayAreaFound,
)
from tray.core.hosts.remote_sessions import remote_tmux, split_remote_id
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.ping_icon import ping_icon
from tray.core.policy.wording import Ping
from tray.core.session.model import Session
from tray.core.view.overview import Overview
from tray.core.worker.deadlines import RefreshSchedule
from tray.core.worker.marks import AppMemory
from tray.core.worker.refresh import MenuPacer, Refresh, menu_outline, menu_text, shown_key
from tray.core.worker.user_actions import (
    Answer,
    ClearFinished,
    Copy,
    Dismiss,
    Focus,
    MarkSeen,
    Pause,
    Resume,
    Snooze,
    Unsnooze,
)
from tray.desktop.bus_loop import CLOSE_TIMEOUT, BusLoop, attach
from tray.desktop.focus import FocusResult
from tray.desktop.tray_area import TrayAreaLook
from tray.desktop.tray_icon import TrayIcon
from tray.desktop.tray_menu import MenuExtras, build_menu
from tray.outlets.notifier import Notifier
from tray.remote.link import HostLinks
from tray.state.directory_watcher import DirectoryWatcher
from tray.state.environment import Environment
from tray.state.logs import OnceLog
from tray.state.marks_file import save_marks
from tray.state.session_cache import SessionCache
from tray.state.session_feed import LIVENESS_PERIOD

# While the desktop has no tray area, how often to look for one.
TRAY_AREA_RETRY = 2.0


class PolicyView(Protocol):
    """What may be read of the worker's policy from outside: to be read once the
    worker has ended (the worker alone changes it)."""

    @property
    def paused_until(self) -> float | None: ...

    def snoozed_until(self, session_id: str) -> float | None: ...


@dataclass(frozen=True, slots=True)
class Inputs:
    """Where the worker's news comes from: the session files (read through the cache,
    as the watcher says they changed) and the hosts' links."""

    cache: SessionCache
    watcher: DirectoryWatcher
    links: HostLinks
    inbox: HostInbox


@dataclass(frozen=True, slots=True)
class Outputs:
    """Where the worker's results go, and who carries out what it cannot wait for."""

    icon: TrayIcon
    notifier: Notifier
    routing: NoRouting  # [away]: forwarding, the phone, and the menu's away line
    answers: AnswerDispatcher
    calls: BackgroundCalls
    focus_looks: FocusLooks  # what each Focus item says


class TrayApp:
    def __init__(
        self,
        env: Environment,
        log: logging.Logger,
        hosts: Sequence[HostConfig],
        *,
        mailbox: Mailbox,
        menu_side: MenuSide,
        schedule: RefreshSchedule,
        refresh: Refresh,
        memory: AppMemory,
        memory_path: Path,
        inputs: Inputs,
        outputs: Outputs,
    ) -> None:
        self._env = env
        self._log = log
        self._warnings = OnceLog(log)
        self._hosts = hosts
        self._mailbox = mailbox
        self._menu_side = menu_side
        self._schedule = schedule
        self._refresh = refresh
        self._policy: NotificationPolicy = refresh.policy
        # The app's own marks (seen, dismissed) as the file held them, and that file.
        self._memory = memory
        self._memory_path = memory_path
        self._in = inputs
        self._out = outputs
        # The worker's own, like the policy and the marks.
        self._refreshes = 0
        self._sessions: Mapping[str, Session] = {}
        self._stale: frozenset[str] = frozenset()
        self._overview: Overview | None = None
        self._shown_key: object = None
        self._pacer = MenuPacer()
        self._worker = threading.Thread(target=self._run_worker, name="tray-worker", daemon=True)
        # The tray-area watch: a task on the bus loop, not a thread of its own.
        self._bus: BusLoop | None = None
        self._tray_watch: asyncio.Task[None] | None = None

    # Lifecycle

    def start(self) -> None:
        self._in.watcher.start()
        self.start_worker()
        self._in.links.start()
        self._out.routing.start()
        self._start_tray_watch()
        self._log.info("icon shown; watching %s", self._env.state_dir())

    def _start_tray_watch(self) -> None:
        self._bus = bus = attach(self._env.environ)
        backend = self._out.icon.backend_name()

        async def begin() -> asyncio.Task[None]:
            return asyncio.get_running_loop().create_task(self._watch_tray_area(backend))

        try:
            self._tray_watch = bus.run(begin(), CLOSE_TIMEOUT)
        except TimeoutError:  # a loop that cannot start a task cannot look either
            self._log.warning("cannot watch for a tray area: the bus loop did not answer")

    async def _watch_tray_area(self, backend: str | None) -> None:
        """Say so when there is no tray to show the icon in, and have the worker show it
        again in one that comes later: a backend that looked once at start-up may miss
        it. On the bus loop, like the rest of tray's D-Bus work."""
        # In-process, on connections kept between looks: no child, no new connection.
        look = TrayAreaLook(self._env.environ)
        try:
            check = await look.check_on_loop(backend)
            if check.status == "ok":
                return
            self._log.warning("%s", check.line())
            while True:
                await asyncio.sleep(TRAY_AREA_RETRY)
                if (await look.check_on_loop(backend)).status == "ok":
                    self._mailbox.post(TrayAreaFound())
                    return
        finally:
            look.close()

    def _stop_tray_watch(self) -> None:
        """End the watch and wait for it to have closed its look, then let go of the
        loop."""
        bus, self._bus = self._bus, None
        watch, self._tray_watch = self._tray_watch, None
        if bus is None:
            return
        if watch is not None:

            async def end() -> None:
                watch.cancel()
                await asyncio.wait({watch})

            # A loop closed already, or one that does not answer: nothing more to end.
            with contextlib.suppress(TimeoutError, RuntimeError, concurrent.futures.CancelledError):
                bus.run(end(), CLOSE_TIMEOUT)
        bus.detach()

    def start_worker(self) -> None:
        self._worker.start()

    def stop(self) -> None:
        self._stop_tray_watch()
        self._mailbox.close()
        # Before the worker: no host callback may wake a worker that is gone.
        self._in.links.stop()
        self._in.watcher.stop()
        self._worker.join(timeout=5)
        self._out.routing.stop()
        self._out.notifier.close()

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
            if mailbox.changed.is_set():
                schedule.request()
            due = schedule.due(now, self._policy.next_wakeup(), self._pacer.due_at())
            if due:
                rescan = schedule.begin(now, due, watching=self._in.watcher.active)
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
        self._mailbox.changed.clear()
        cache = self._in.cache
        changed = self._in.watcher.take_changes()
        if rescan or changed is None:
            cache.rescan()
        else:
            cache.reload(changed)
        sessions, problems = cache.sessions()
        for problem in problems:
            self._warnings.problem(
                str(problem.path), f"cannot read {problem.path.name}: {problem.reason}"
            )
        self._warnings.cleared({str(problem.path) for problem in problems})
        shown = self._refresh.run(sessions, self._in.inbox.take(), self._memory, now)
        self._memory = shown.memory
        self._menu_side.mutes = shown.mutes
        self._sessions = shown.sessions
        self._stale = shown.stale
        self._show(shown.overview, now)
        for ping in shown.pings:
            self._send(ping)

    def _show(self, overview: Overview, now: float) -> None:
        paused = self._menu_side.paused
        extras = MenuExtras(
            tuple(sorted(self._out.focus_looks.looks(self._sessions).items())),
            self._out.routing.menu_line(),
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
            built = build_menu(overview, self._menu_side, now, extras)
            if self._pacer.offer(outline, menu_text(built), now):
                menu = built
        self._out.icon.apply(overview, menu)

    def _send(self, ping: Ping) -> None:
        key = ping.session_ids[0] if len(ping.session_ids) == 1 else ""
        self._out.notifier.send(
            ping.title,
            ping.body,
            ping.urgency,
            key,
            snooze=ping.session_ids,
            answer=ping.answer,
            icon=ping_icon(ping),
        )
        self._out.routing.ping(ping)

    def _host_config(self, name: str) -> HostConfig | None:
        return next((host for host in self._hosts if host.name == name), None)

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

    @property
    def menu_side(self) -> MenuSide:
        """What the menu reaches: each of its items posts a user action here."""
        return self._menu_side

    def post(self, message: Message) -> None:
        """Hand a message to the worker; safe from any thread."""
        self._mailbox.post(message)

    # The worker's side of the messages.

    def _handle_safely(self, message: Message) -> None:
        try:
            self.handle(message)
        except Exception:  # one bad action must not end the worker
            self._log.exception("cannot handle %s", message)

    def handle(self, message: Message) -> None:
        """Carry out one user action, or apply what came back from one; on the worker's
        thread only. Nothing here waits on another program: the background calls do."""
        policy, routing = self._policy, self._out.routing
        match message:
            case Away(state):
                policy.set_away(state.away)
                if routing.changed(state):
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
                policy.pause(until)
                self._remember()
            case Resume():
                policy.resume()
                self._remember()
            case Snooze(session_ids, until):
                for session_id in session_ids:
                    # A second snooze never shortens one in place.
                    current = policy.snoozed_until(session_id)
                    if current is None or current < until:
                        policy.snooze(session_id, until)
                self._remember()
            case Unsnooze(session_id):
                policy.unsnooze(session_id)
                self._remember()
            case Answer(session_id):
                # The launcher may hold the answer for seconds, and a host take ssh's
                # time: the worker goes on, and settles it when it comes back.
                stale = session_id in self._stale
                self._out.calls.answer(message, self._sessions.get(session_id), stale=stale)
            case PhoneReply(text):
                if (asked := routing.phone_reply(text)) is not None:
                    self.handle(asked)  # as the desktop's button would, checked the same way
            case AnswerDone(answer, outcome):
                self._out.answers.settle(answer, outcome)
                if answer.from_phone:
                    routing.phone_told(answer, outcome, self._sessions.get(answer.session_id))
            case Copy(session_id, record_id):
                self._copy(session_id, record_id)
            case TrayAreaFound():
                self._log.info("a tray area appeared; showing the icon there")
                self._out.icon.reshow()
            case _:
                assert_never(message)

    def _remember(self, change: Callable[[AppMemory], AppMemory] | None = None) -> None:
        """Apply ``change`` to the marks, and save them with the policy's mutes."""
        if change is not None:
            self._memory = change(self._memory)
        self._menu_side.mutes = mutes = self._policy.mutes()
        try:
            save_marks(self._memory_path, self._memory, mutes)
        except OSError as error:
            self._warnings.problem("memory", f"cannot save {self._memory_path}: {error}")
        # The menu shows the change at the next refresh.
        self._schedule.request()

    def _dismiss_remote(self, session_ids: list[str]) -> None:
        """Dismiss remote sessions on their hosts too, one ssh per host, off the worker:
        the app's marks already hide them."""
        batches: dict[str, list[str]] = {}
        for session_id in session_ids:
            parts = split_remote_id(session_id)
            if parts is not None:
                batches.setdefault(parts[0], []).append(session_id)
        for name, batch in batches.items():
            host = self._host_config(name)
            if host is not None:
                self._out.calls.dismiss(host, batch)

    def _copy(self, session_id: str, record_id: str | None) -> None:
        row = self._overview.row(session_id) if self._overview is not None else None
        if row is None:
            return
        text = row.msg if record_id is None else row.message(record_id)
        if text:
            self._out.calls.copy(text)

    def _focus(self, session_id: str, token: str | None = None) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            return
        self.handle(MarkSeen(session_id, self._env.clock()))
        parts = split_remote_id(session_id)
        if parts is None:
            self._out.calls.focus(session, token)
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
        self._out.calls.focus_remote(host, session, *tmux)

    def _focused(self, session: Session, result: FocusResult) -> None:
        if not result.ok:
            self._log.warning("cannot focus %s: %s", session.name, result.message)
        if split_remote_id(session.id) is None and self._out.focus_looks.focused(session, result):
            self._schedule.request()  # the menu says what was left undone
