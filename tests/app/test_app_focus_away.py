"""A real TrayApp's menu carries the worker's Focus plans and the away line.

The app is real (its worker, policy, refresh and menu, on a real state directory);
its icon host and notifier are the small fakes of test_app_worker, which only write
down what they were given. The away state is posted as the idle watch would post it.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.fake_notifier import FakeNotifier
from helpers.fake_tray_icon import FakeTrayIcon
from helpers.receiver import start_receiver
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for

from tray.app.main import TrayApp
from tray.app.messages import Away
from tray.app.start import build_app
from tray.base.safe_text import clean_text
from tray.core.away.tracker import PRESENT, AwayState
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.store import StateStore


def _texts(menu: Any) -> list[str]:
    found: list[str] = []
    for item in menu.items:
        found.append(str(item.text))
        if item.submenu is not None:
            found += _texts(item.submenu)
    return found


def _item(menu: Any, text: str) -> Any:
    for item in menu.items:
        if str(item.text) == text:
            return item
        if item.submenu is not None:
            inner = _item(item.submenu, text)
            if inner is not None:
                return inner
    return None


@pytest.fixture
def app_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Environment, StateStore, FakeTrayIcon]:
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    state = tmp_path / "state"
    store = StateStore(state)
    store.ensure()
    env = Environment(
        environ={
            "TRAY_STATE_DIR": str(state),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PATH": "/usr/bin:/bin",
        }
    )
    return env, store, FakeTrayIcon()


def _app(env: Environment, host: FakeTrayIcon) -> TrayApp:
    return build_app(
        env,
        load_config(env),
        logging.getLogger("test-app-focus-away"),
        host,  # type: ignore[arg-type]
        FakeNotifier,  # type: ignore[arg-type]
        refresh_interval=0.0,
    )


def test_the_menu_disables_focus_with_the_plans_reason(
    app_parts: tuple[Environment, StateStore, FakeTrayIcon],
) -> None:
    env, store, host = app_parts
    now = time.time()
    kitty = live_session("kitty", blocked("approve kitty", now), now)
    store.write(dataclasses.replace(kitty, terminal={"KITTY_WINDOW_ID": "3"}))
    tmux = live_session("tmux", blocked("approve tmux", now), now)
    store.write(
        dataclasses.replace(tmux, terminal={"TMUX": "/tmp/tmux-1/default,1,0", "TMUX_PANE": "%1"})
    )
    app = _app(env, host)
    app.start_worker()
    try:
        wait_for(
            lambda: (
                host.menu is not None
                and "Focus (kitty: remote control is off)" in _texts(host.menu)
            ),
            what="the menu with the kitty session's reason",
        )
    finally:
        app.stop()
    assert not _item(host.menu, "Focus (kitty: remote control is off)").enabled
    assert _item(host.menu, "Focus").enabled  # the tmux session's


def test_the_away_line_shows_while_away_and_goes_on_coming_back(
    app_parts: tuple[Environment, StateStore, FakeTrayIcon], tmp_path: Path
) -> None:
    env, _store, host = app_parts
    config = tmp_path / "config" / "tray"
    config.mkdir(parents=True)
    # Port 9 (discard) on the loopback: nothing is sent in this test, nor could be.
    (config / "config.toml").write_text('[away]\nafter = "1m"\nforward = ["json://127.0.0.1:9/"]\n')
    app = _app(env, host)
    app.start_worker()  # the idle watch starts with start(); this test posts its states
    since = time.time() - 60
    line = (
        f"Away since {time.strftime('%H:%M', time.localtime(since))}: pings also go to your phone"
    )
    try:
        wait_for(lambda: host.menu is not None, what="the first menu")
        assert line not in _texts(host.menu)
        app.post(Away(AwayState(True, since)))
        wait_for(lambda: _texts(host.menu)[0] == line, what="the away line")
        assert not _item(host.menu, line).enabled
        app.post(Away(PRESENT))
        wait_for(lambda: line not in _texts(host.menu), what="the away line to go")
    finally:
        app.stop()


def test_while_away_single_pings_and_a_burst_summary_are_forwarded(
    app_parts: tuple[Environment, StateStore, FakeTrayIcon], tmp_path: Path
) -> None:
    env, store, host = app_parts
    receiver = start_receiver()
    config = tmp_path / "config" / "tray"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        "[notify]\nsettle = 0\nburst = 2\nburst_window = 30\n"
        f'[away]\nafter = "1m"\nforward = ["json://127.0.0.1:{receiver.port}/"]\n'
    )
    now = time.time()
    for index in range(4):
        store.write(live_session(f"s{index}", blocked(f"approve <{index}>", now), now))
    app = _app(env, host)
    # Handled before the first refresh: the user is away from the start.
    app.post(Away(AwayState(True, now - 60)))
    app.start_worker()
    try:
        wait_for(lambda: len(receiver.requests) >= 3, what="three forwarded pings")
    finally:
        app.stop()
        receiver.server.shutdown()
        receiver.server.server_close()
    machine = clean_text(socket.gethostname())
    forwarded = [(r.body["title"], r.body["message"]) for r in receiver.requests]
    assert forwarded == [
        (f"{machine} · s0 needs approval", "approve <0>"),
        (f"{machine} · s1 needs approval", "approve <1>"),
        (f"{machine} · 2 sessions need you", "s2, s3"),
    ]
