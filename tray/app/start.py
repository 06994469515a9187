"""``tray app`` from its start: one app per user, its log and its private icon folder,
the icon host with the backend chosen for this desktop, and the app (:mod:`tray.app.main`)
on pystray's main loop until it ends. :func:`build_app` makes the app's parts and hands
them to its worker: the only place that knows every part.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tray.app.answer_dispatch import AnswerDispatcher, AnswerRoutes
from tray.app.away_routing import build_routing
from tray.app.background_calls import BackgroundCalls
from tray.app.focus_looks import FocusLooks
from tray.app.main import Inputs, Outputs, TrayApp
from tray.app.messages import Away, HostInbox, Mailbox, MenuSide
from tray.core.config.settings import Config
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.worker.deadlines import RefreshSchedule
from tray.core.worker.refresh import REFRESH_INTERVAL, Refresh
from tray.core.worker.user_actions import Focus, answer_to, snooze_hour
from tray.desktop.bus_loop import attached
from tray.desktop.tray_area import backend_for_tray
from tray.desktop.tray_icon import NoDisplayError, TrayIcon
from tray.outlets.notifier import Notifier
from tray.remote.link import HostLinks
from tray.state.app_lock import hold_app_lock
from tray.state.config_file import load_config
from tray.state.directory_watcher import DirectoryWatcher
from tray.state.environment import Environment
from tray.state.logs import open_app_log
from tray.state.marks_file import FILE_NAME, load_marks
from tray.state.session_cache import SessionCache
from tray.state.session_feed import LIVENESS_PERIOD
from tray.state.store import StateStore

# Beside the sessions (the state directory is the user's alone): the icon's pictures.
ICON_FOLDER = "icons"


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
    log = open_app_log(store.directory)
    try:
        # The one D-Bus loop, held for the whole run: every part's bus work shares it.
        with private_icon_files(store.directory / ICON_FOLDER), attached(env.environ):
            return _show_icon(env, config, log)
    finally:
        lock.close()


def _show_icon(env: Environment, config: Config, log: logging.Logger) -> int:
    try:
        host = TrayIcon("tray", None, backend_for_tray(env.environ))
    except NoDisplayError as error:
        print(f"tray app: {error}", file=env.stderr)
        return 1
    # Ended by SIGTERM, the app still cleans up after itself (its icon pictures among
    # others): GLib's loop wakes for a signal, so the handler runs at once.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: host.stop())
    backend = host.backend_name()
    log.info("tray backend: %s", backend)
    if backend == "xorg":
        log.warning(
            "the xorg tray backend has no menu and no clicks; for both, install PyGObject "
            "with AppIndicator: pip install 'tray[gtk]' and the system package "
            "gir1.2-ayatanaappindicator3-0.1"
        )
    app = build_app(
        env,
        config,
        log,
        host,
        lambda on_click, on_snooze: Notifier("tray", on_click, log, on_snooze, environ=env.environ),
    )
    try:
        host.run(app.start)
    finally:
        app.stop()
    return 0


# The notifier, made with what a click on a notification does and what its Snooze does.
NotifierFactory = Callable[
    [Callable[[str, str | None], None], Callable[[tuple[str, ...]], None]], Notifier
]


def local_minute(timestamp: float) -> int:
    moment = time.localtime(timestamp)
    return moment.tm_hour * 60 + moment.tm_min


def build_app(
    env: Environment,
    config: Config,
    log: logging.Logger,
    icon: TrayIcon,
    notifier_factory: NotifierFactory,
    *,
    refresh_interval: float = REFRESH_INTERVAL,
) -> TrayApp:
    """The app, its parts made and wired: every callback of another thread (the menu,
    the notifier, idle, the phone, the hosts' links, the watcher) posts to its mailbox
    or sets its change flag."""
    state_dir = env.state_dir()
    mailbox = Mailbox()
    post = mailbox.post
    menu_side = MenuSide(post, env.clock, icon.stop)
    saved = load_marks(state_dir / FILE_NAME, log, env.clock())
    policy = NotificationPolicy(config.notify, env.clock, local_minute)
    # The pause and the snoozes live in the policy from here on; the file only keeps
    # them between runs.
    if saved.mutes.paused_until is not None:
        policy.pause(saved.mutes.paused_until)
    for session_id, until in saved.mutes.snoozed.items():
        policy.snooze(session_id, until)
    menu_side.mutes = policy.mutes()
    inbox = HostInbox(mailbox.changed, log)
    links = HostLinks(config.hosts, inbox.on_state, inbox.on_status, environ=env.environ, log=log)

    def host_config(name: str) -> HostConfig | None:
        return next((host for host in config.hosts if host.name == name), None)

    # A click, Snooze (for every session the notification speaks for), and Approve and
    # Deny on a prompt's notification: each posts the user's action, as the menu does.
    notifier = notifier_factory(
        lambda session_id, token: post(Focus(session_id, token)),
        lambda session_ids: post(snooze_hour(session_ids, env.clock())),
    )
    notifier.on_answer = lambda target, answer: post(answer_to(target, answer))
    # A host's answers go over its open link first.
    where = AnswerRoutes(state_dir, host_config, env.environ, links.get)
    answers = AnswerDispatcher(where, notifier, policy, log)
    routing = build_routing(
        config.away,
        env.environ,
        log,
        lambda state: mailbox.post(Away(state)),
        state_dir=state_dir,
        post_reply=post,
    )
    return TrayApp(
        env,
        log,
        config.hosts,
        mailbox=mailbox,
        menu_side=menu_side,
        schedule=RefreshSchedule(env.clock, LIVENESS_PERIOD, refresh_interval),
        refresh=Refresh(config.hosts, config.sessions.keep_ended, policy, answering=config.answer),
        memory=saved.memory,
        memory_path=state_dir / FILE_NAME,
        inputs=Inputs(
            SessionCache(StateStore(state_dir)),
            DirectoryWatcher(state_dir, mailbox.changed, log),
            links,
            inbox,
        ),
        outputs=Outputs(
            icon,
            notifier,
            routing,
            answers,
            BackgroundCalls(post, answers, env.environ, log),
            FocusLooks(env.environ, log),
        ),
    )


@contextmanager
def private_icon_files(folder: Path) -> Iterator[Path]:
    """Keep the backends' icon pictures in ``folder``, the app's own, while in the block.

    pystray's gtk and appindicator backends write every picture they show with
    ``tempfile.mktemp()``: into /tmp by default, readable by everyone, and left there
    by an app that a signal ended. Pointing the process's temporary files at a private
    0700 folder keeps them to the user; the folder is emptied first (what a killed run
    left: only one app runs per state directory) and removed at the end. Should it not
    be made there (a file or a link in the way), a fresh private temporary folder is
    used instead.
    """
    shutil.rmtree(folder, ignore_errors=True)
    try:
        os.mkdir(folder, 0o700)
    except OSError:
        folder = Path(tempfile.mkdtemp(prefix="tray-icons-"))
    previous = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = previous
        shutil.rmtree(folder, ignore_errors=True)
