"""``tray app`` from its start: one app per user, its log and its private icon folder,
the icon host with the backend chosen for this desktop, and the app (:mod:`tray.app.main`)
on pystray's main loop until it ends.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tray.app.main import TrayApp
from tray.core.config.settings import Config
from tray.desktop.icon_host import IconHost, NoDisplayError
from tray.desktop.tray_host import backend_for_tray
from tray.outlets.notifier import Notifier
from tray.state.app_lock import hold_app_lock
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.logs import open_app_log
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
        with private_icon_files(store.directory / ICON_FOLDER):
            return _show_icon(env, config, log)
    finally:
        lock.close()


def _show_icon(env: Environment, config: Config, log: logging.Logger) -> int:
    try:
        host = IconHost("tray", None, backend_for_tray(env.environ))
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
    return 0


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
