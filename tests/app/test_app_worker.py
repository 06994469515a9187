"""The app's worker owns the policy and the memory: user actions from other threads
reach them as messages, in order, and none is lost while the worker refreshes. Its
mailbox wakes it for a message at once, and for a change unless it lets changes gather.

A real TrayApp on a real state directory (sessions written as a live launcher would),
with its icon host and notifier replaced by small fakes that only write things down.
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from pathlib import Path

import pytest
from helpers.fake_notifier import FakeNotifier
from helpers.fake_tray_icon import FakeTrayIcon
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for

from tray.app.main import TrayApp
from tray.app.messages import Mailbox
from tray.app.start import build_app
from tray.core.worker.user_actions import (
    PAUSE_SECONDS,
    MarkSeen,
    Resume,
    Snooze,
    Unsnooze,
    pause_hour,
    snooze_hour,
)
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.marks_file import FILE_NAME, load_marks
from tray.state.store import StateStore

SESSIONS = 24
THREADS = 6
ROUNDS = 20


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TrayApp:
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")  # menus built without a display
    state = tmp_path / "state"
    store = StateStore(state)
    store.ensure()
    now = time.time()
    for index in range(SESSIONS):
        sid = f"s{index:02}"
        store.write(live_session(sid, blocked(f"approve {sid}", now), now))
    env = Environment(
        environ={"TRAY_STATE_DIR": str(state), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    )
    log = logging.getLogger("test-app-worker")
    return build_app(
        env,
        load_config(env),
        log,
        FakeTrayIcon(),  # type: ignore[arg-type]
        FakeNotifier,  # type: ignore[arg-type]
        refresh_interval=0.0,
    )


def test_snoozes_and_pauses_from_many_threads_are_never_lost(app: TrayApp, tmp_path: Path) -> None:
    app.start_worker()
    ids = [f"s{index:02}" for index in range(SESSIONS)]
    wait_for(lambda: app.refreshes > 0, what="the first refresh")
    start = threading.Barrier(THREADS)

    def refreshed_since(seen: int) -> bool:
        return app.refreshes > seen

    # As the menu's items post, each on the thread it runs on.
    side = app.menu_side

    def user(number: int) -> None:
        mine = ids[number::THREADS]
        start.wait()
        for round_ in range(ROUNDS):
            seen = app.refreshes
            for sid in mine:
                side.post(Unsnooze(sid))
                side.post(snooze_hour((sid,), side.now()))
            side.post(Resume() if round_ % 2 else pause_hour(side.now()))
            side.post(MarkSeen(mine[0], side.now()))
            # Each round lands while the worker is refreshing, or just after it.
            wait_for(partial(refreshed_since, seen), interval=0.001, what="a refresh")

    threads = [threading.Thread(target=user, args=(n,)) for n in range(THREADS)]
    before = app.refreshes
    posted_at = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    side.post(pause_hour(side.now()))  # the last word, after every thread's
    wait_for(lambda: app.waiting == 0, what="every message taken")
    wait_for(lambda: side.paused, what="the last pause")
    app.stop()  # the worker ends once the messages it took are handled
    assert app.refreshes - before >= ROUNDS

    policy = app.policy  # read once the worker has ended
    memory, mutes = load_marks(tmp_path / "state" / FILE_NAME, logging.getLogger("test"))
    for sid in ids:
        until = policy.snoozed_until(sid)
        assert until is not None and until >= posted_at + PAUSE_SECONDS, sid
        assert mutes.snoozed.get(sid) == until, sid
    assert policy.paused_until is not None and policy.paused_until == mutes.paused_until
    assert all(ids[n] in memory.seen for n in range(THREADS))


def test_a_second_snooze_never_shortens_one_in_place(app: TrayApp, tmp_path: Path) -> None:
    app.start_worker()
    now = time.time()
    app.post(Snooze(("s00", "s01"), now + 2 * PAUSE_SECONDS))
    app.post(Snooze(("s00",), now + 60))
    app.post(Unsnooze("s01"))
    wait_for(lambda: app.waiting == 0, what="every message taken")
    app.stop()  # the worker ends once the messages it took are handled
    assert app.policy.snoozed_until("s00") == now + 2 * PAUSE_SECONDS
    assert app.policy.snoozed_until("s01") is None
    _memory, mutes = load_marks(tmp_path / "state" / FILE_NAME, logging.getLogger("test"))
    assert mutes.snoozed == {"s00": now + 2 * PAUSE_SECONDS}


# The mailbox: the one place the worker sleeps.

# Long enough that a wait ended by it is plainly not ended by what the test did.
LONG = 20.0


def timed_wait(mailbox: Mailbox, timeout: float, *, changes: bool) -> float:
    started = time.monotonic()
    mailbox.wait(timeout, changes=changes)
    return time.monotonic() - started


def test_a_message_from_another_thread_wakes_the_worker_whatever_it_listens_for() -> None:
    mailbox = Mailbox()
    for changes in (True, False):
        poster = threading.Timer(0.05, mailbox.post, (Resume(),))
        poster.start()
        assert timed_wait(mailbox, LONG, changes=changes) < LONG / 2
        poster.join()
        assert mailbox.take() == [Resume()]


def test_a_change_wakes_the_worker_only_while_it_listens_for_changes() -> None:
    mailbox = Mailbox()
    setter = threading.Timer(0.05, mailbox.changed.set)
    setter.start()
    assert timed_wait(mailbox, LONG, changes=True) < LONG / 2
    setter.join()
    # Set already: a worker that listens does not sleep at all.
    assert timed_wait(mailbox, LONG, changes=True) < LONG / 2
    # Letting changes gather, it sleeps its time out; many changes are one flag.
    for _ in range(100):
        mailbox.changed.set()
    assert timed_wait(mailbox, 0.2, changes=False) >= 0.2
    assert mailbox.take() == []
    mailbox.changed.clear()
    setter = threading.Timer(0.05, mailbox.changed.set)
    setter.start()
    assert timed_wait(mailbox, 0.5, changes=False) >= 0.5
    setter.join()


def test_closing_wakes_the_worker_for_good_and_later_posts_are_dropped() -> None:
    mailbox = Mailbox()
    closer = threading.Timer(0.05, mailbox.close)
    closer.start()
    assert timed_wait(mailbox, LONG, changes=False) < LONG / 2
    closer.join()
    assert mailbox.closed
    mailbox.post(Resume())
    assert len(mailbox) == 0
    assert timed_wait(mailbox, LONG, changes=False) < LONG / 2
