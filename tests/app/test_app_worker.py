"""The app's worker owns the policy and the memory: user actions from other threads
reach them as messages, in order, and none is lost while the worker refreshes.

A real TrayApp on a real state directory (sessions written as a live launcher would),
with its icon host and notifier replaced by small fakes that only write things down.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for

from tray.app.main import PAUSE_SECONDS, TrayApp
from tray.core.view.overview import Overview
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.marks_file import FILE_NAME, load_memory
from tray.state.store import StateStore

SESSIONS = 24
THREADS = 6
ROUNDS = 20


class FakeHost:
    """An IconHost that writes down what it was given."""

    def __init__(self) -> None:
        self.applied: list[Overview] = []

    def apply(self, overview: Overview, menu: Any | None) -> None:
        self.applied.append(overview)

    def backend_name(self) -> str:
        return "fake"

    def reshow(self) -> None:
        pass

    def stop(self) -> None:
        pass


class FakeNotifier:
    def __init__(self, *_callbacks: Callable[..., None]) -> None:
        self.sent: list[tuple[str, Sequence[str]]] = []

    def send(  # noqa: PLR0917 - as Notifier.send
        self,
        title: str,
        body: str,
        urgency: str,
        key: str,
        snooze: Sequence[str] = (),
        answer: object = None,
    ) -> None:
        self.sent.append((title, snooze))

    def close(self) -> None:
        pass


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
    return TrayApp(
        env,
        load_config(env),
        log,
        FakeHost(),  # type: ignore[arg-type]
        FakeNotifier,  # type: ignore[arg-type]
        refresh_interval=0.0,
    )


def test_snoozes_and_pauses_from_many_threads_are_never_lost(app: TrayApp) -> None:
    policy = app._policy  # read only once the worker has ended, below
    due = policy.due
    rounds = [0]

    def counted() -> Any:
        rounds[0] += 1
        return due()

    policy.due = counted  # type: ignore[method-assign]
    app.start_worker()
    ids = [f"s{index:02}" for index in range(SESSIONS)]
    wait_for(lambda: rounds[0] > 0, what="the first refresh")
    start = threading.Barrier(THREADS)

    def refreshed_since(seen: int) -> bool:
        return rounds[0] > seen

    def user(number: int) -> None:
        mine = ids[number::THREADS]
        start.wait()
        for round_ in range(ROUNDS):
            seen = rounds[0]
            for sid in mine:
                app.unsnooze(sid)
                app.snooze_hour(sid)
            if round_ % 2:
                app.resume()
            else:
                app.pause_hour()
            app.mark_seen(mine[0])
            # Each round lands while the worker is refreshing, or just after it.
            wait_for(partial(refreshed_since, seen), interval=0.001, what="a refresh")

    threads = [threading.Thread(target=user, args=(n,)) for n in range(THREADS)]
    before = rounds[0]
    posted_at = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    app.pause_hour()  # the last word, after every thread's
    wait_for(lambda: len(app._mailbox) == 0, what="every message handled")
    wait_for(lambda: app.paused, what="the last pause")
    app.stop()
    assert rounds[0] - before >= ROUNDS

    memory = load_memory(app._memory_path, logging.getLogger("test"))
    for sid in ids:
        until = policy.snoozed_until(sid)
        assert until is not None and until >= posted_at + PAUSE_SECONDS, sid
        assert memory.snoozed.get(sid) == until, sid
    assert policy.paused_until is not None and policy.paused_until == memory.paused_until
    assert all(ids[n] in memory.seen for n in range(THREADS))
    assert (app._memory_path.parent / FILE_NAME) == app._memory_path
