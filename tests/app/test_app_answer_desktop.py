"""Approve and Deny from the real notification: dunst on a private bus, whose context menu
(a stub dmenu) presses a button by its label.

First the notifier alone, then a real `tray app` process with a session whose launcher
end is a real :class:`AnswerSocket` served by this test, with the real gate over the
records the test sets: the press must reach that socket as an answer to exactly the
prompt the notification shows, and a stale one is refused with a notification that
says why.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.desktop_apps import TIMEOUT, RunningApp, start_app_process
from helpers.desktop_services import BusMonitor, Dunst, MenuDunst, start_menu_dunst, stop_process
from helpers.fake_launcher import FakeLauncher
from helpers.sessions import live_session
from helpers.waiting import barrier, wait_for
from outlets.test_notifier import Recorder

from tray.core.answers.gate import CHANGED
from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL, AnswerTarget
from tray.core.session.model import Answered, Session
from tray.outlets.notifier import SNOOZE_ACTION, SNOOZE_LABEL, Notifier
from tray.protocol.records import Record
from tray.protocol.state import Answer, State
from tray.state.store import StateStore

SID = "4711-api"
SETTLE = 0.5
CONFIG = f"[notify]\nsettle = {SETTLE}\n"
LOG = logging.getLogger("test-answer")


def prompt(since: float) -> Record:
    return Record(
        "", State.BLOCKED, "permission", None, "claude-code", None, "Bash: ls", since, since
    )


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    handler = Recorder()
    handler.log.setLevel(logging.DEBUG)
    handler.log.propagate = False
    handler.log.addHandler(handler)
    yield handler
    handler.log.removeHandler(handler)


def menu_dunst_for(
    pick: str, xvfb_display: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> MenuDunst:
    # A short directory: the bus socket's path has little room.
    started = start_menu_dunst(xvfb_display, tmp_path / "md", pick)
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", started.dunst.address)
    return started


@pytest.mark.parametrize("pick", [APPROVE_LABEL, DENY_LABEL])
def test_the_notification_offers_approve_and_deny_and_hands_back_its_prompt(
    pick: str,
    xvfb_display: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    recorder: Recorder,
) -> None:
    menu_dunst = menu_dunst_for(pick, xvfb_display, tmp_path, monkeypatch)
    dunst = menu_dunst.dunst
    monitor = BusMonitor(dunst.env, tmp_path / "monitor.log")
    clicks: list[str] = []
    answers: list[tuple[AnswerTarget, str]] = []
    notifier = Notifier(
        "tray-test",
        lambda key, _token: clicks.append(key),
        recorder.log,
        on_snooze=lambda _ids: None,
    )
    notifier.on_answer = lambda target, answer: answers.append((target, answer))
    target = AnswerTarget("s-api", "agent/1", 1764470012.5)
    try:
        notifier.send("api needs approval", "Bash: ls", "critical", "s-api", ("s-api",), target)
        [call] = monitor.wait_for_notify(1)
        wait_for(lambda: dunst.count() == 1, what="dunst to show it")
        dunst.ctl("context")  # the stub dmenu picks the button by its label
        expected = "approve" if pick == APPROVE_LABEL else "deny"
        wait_for(lambda: answers == [(target, expected)], what="the answer callback")
        invoked = re.compile(rf'member=ActionInvoked\n\s+uint32 \d+\n\s+string "{expected}"')
        wait_for(lambda: invoked.search(monitor.text()), what="ActionInvoked on the bus")
    finally:
        notifier.close()
        monitor.stop()
        menu_dunst.stop()
    assert call.actions == [
        "default",
        "",
        "approve",
        APPROVE_LABEL,
        "deny",
        DENY_LABEL,
        SNOOZE_ACTION,
        SNOOZE_LABEL,
    ]
    assert clicks == []
    assert recorder.at(logging.ERROR) == []


def test_without_a_prompt_to_answer_there_is_only_snooze(
    dunst: Dunst, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorder: Recorder
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", dunst.address)
    dunst.close_all()
    monitor = BusMonitor(dunst.env, tmp_path / "monitor.log")
    notifier = Notifier(
        "tray-test", lambda _key, _token: None, recorder.log, on_snooze=lambda _ids: None
    )
    notifier.on_answer = lambda _target, _answer: None
    try:
        notifier.send("api needs an answer", "which?", "normal", "s-api", ("s-api",))
        [call] = monitor.wait_for_notify(1)
    finally:
        notifier.close()
        monitor.stop()
    assert call.actions == ["default", "", SNOOZE_ACTION, SNOOZE_LABEL]


def test_withdraw_closes_the_prompts_notifications_only(
    dunst: Dunst, monkeypatch: pytest.MonkeyPatch, recorder: Recorder
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", dunst.address)
    dunst.close_all()
    notifier = Notifier("tray-test", lambda _key, _token: None, recorder.log)
    notifier.on_answer = lambda _target, _answer: None
    answered = AnswerTarget("s-api", "", 100.0)
    other = AnswerTarget("s-docs", "", 100.0)
    try:
        notifier.send("api needs approval", "first", "critical", "s-api", answer=answered)
        notifier.send("api needs approval", "reminder", "critical", "s-api", answer=answered)
        notifier.send("docs needs approval", "other", "critical", "s-docs", answer=other)
        wait_for(lambda: dunst.count() == 3, what="dunst to show all three")
        notifier.withdraw(answered)
        wait_for(lambda: dunst.count() == 1, what="both of the answered prompt's to close")
        notifier.withdraw(answered)  # again: nothing left to close, and no error
        notifier.withdraw(AnswerTarget("s-none", "", 1.0))
    finally:
        notifier.close()
    assert [entry["body"] for entry in dunst.history()[:2]] == ["reminder", "first"]
    assert recorder.at(logging.ERROR) == []


# The real app, and a launcher end served by the test.


def blocked_session(state_dir: Path, since: float) -> Session:
    """A live session (this test stands in for its launcher) blocked on a permission
    prompt of claude-code since ``since``."""
    session = dataclasses.replace(
        live_session(SID, (prompt(since),), time.time()), name="api-server"
    )
    StateStore(state_dir).ensure()
    StateStore(state_dir).write(session)
    return session


def run_app_with_prompt(
    pick: str,
    served: float,
    xvfb_display: str,
    desktop_env: dict[str, str],
    tmp_path: Path,
) -> tuple[MenuDunst, RunningApp, FakeLauncher, BusMonitor, float]:
    """dunst picking ``pick``, a session blocked since a moment ago, its launcher end
    whose prompt stands since that moment plus ``served``, and a real `tray app`."""
    menu_dunst = start_menu_dunst(xvfb_display, tmp_path / "md", pick)
    env = {**desktop_env, **menu_dunst.bus_env}
    since = time.time() - 3  # settled: the launcher need not hold the answer
    state_dir = tmp_path / "state"
    blocked_session(state_dir, since)
    end = FakeLauncher(state_dir, SID, (prompt(since + served),))
    monitor = BusMonitor(env, tmp_path / "monitor.log")
    app = start_app_process(env, tmp_path, CONFIG)
    return menu_dunst, app, end, monitor, since


@pytest.mark.parametrize("case", [(APPROVE_LABEL, b"1"), (DENY_LABEL, b"\x1b")])
def test_a_press_in_the_real_app_answers_exactly_that_prompt(
    case: tuple[str, bytes],
    xvfb_display: str,
    desktop_env: dict[str, str],
    tmp_path: Path,
    trayer: object,
) -> None:
    pick, keys = case
    menu_dunst, app, end, monitor, since = run_app_with_prompt(
        pick, 0.0, xvfb_display, desktop_env, tmp_path
    )
    try:
        [call] = monitor.wait_for_notify(1, TIMEOUT)
        assert call.summary == "api-server needs approval"
        assert "approve" in call.actions and "deny" in call.actions
        dunst = menu_dunst.dunst
        wait_for(lambda: dunst.count() == 1, TIMEOUT, what="dunst to show it")
        dunst.ctl("context")
        wait_for(lambda: end.typed, TIMEOUT, what="the answer at the launcher")
        assert end.typed == [keys]
        answer = "approve" if pick == APPROVE_LABEL else "deny"
        assert (end.requests[0].answer, end.requests[0].record) == (answer, "")
        assert end.requests[0].since == since
        wait_for(lambda: "typed" in app.log, TIMEOUT, what="the app to note it")
        assert len(monitor.notify_calls()) == 1  # no refusal
    finally:
        stop_process(app.proc)
        end.close()
        monitor.stop()
        menu_dunst.stop()
    assert "Traceback" not in app.log, app.log


def test_a_stale_answer_is_refused_and_the_app_says_why(
    xvfb_display: str, desktop_env: dict[str, str], tmp_path: Path, trayer: object
) -> None:
    # The launcher's prompt is a newer one than the notification shows.
    menu_dunst, app, end, monitor, _since = run_app_with_prompt(
        APPROVE_LABEL, 1.0, xvfb_display, desktop_env, tmp_path
    )
    try:
        monitor.wait_for_notify(1, TIMEOUT)
        dunst = menu_dunst.dunst
        wait_for(lambda: dunst.count() == 1, TIMEOUT, what="dunst to show it")
        dunst.ctl("context")
        calls = monitor.wait_for_notify(2, TIMEOUT)
        assert calls[1].summary == f"api-server: {CHANGED}; not answered"
        assert "approve" not in calls[1].actions
        assert end.typed == []
    finally:
        stop_process(app.proc)
        end.close()
        monitor.stop()
        menu_dunst.stop()
    assert "Traceback" not in app.log, app.log
    assert os.path.exists(tmp_path / "state" / "app.log")


def answered_press(
    pick: str,
    config: str,
    xvfb_display: str,
    desktop_env: dict[str, str],
    tmp_path: Path,
) -> tuple[MenuDunst, RunningApp, FakeLauncher, BusMonitor, float]:
    """The app started with ``config``; the prompt's notification pressed and answered."""
    menu_dunst = start_menu_dunst(xvfb_display, tmp_path / "md", pick)
    env = {**desktop_env, **menu_dunst.bus_env}
    since = time.time() - 3
    blocked_session(tmp_path / "state", since)
    end = FakeLauncher(tmp_path / "state", SID, (prompt(since),))
    monitor = BusMonitor(env, tmp_path / "monitor.log")
    app = start_app_process(env, tmp_path, config)
    monitor.wait_for_notify(1, TIMEOUT)
    wait_for(lambda: menu_dunst.dunst.count() == 1, TIMEOUT, what="dunst to show it")
    menu_dunst.dunst.ctl("context")
    wait_for(lambda: end.typed, TIMEOUT, what="the answer at the launcher")
    wait_for(lambda: "typed" in app.log, TIMEOUT, what="the app to note it")
    return menu_dunst, app, end, monitor, since


def test_the_state_right_after_an_answer_does_not_ping(
    xvfb_display: str, desktop_env: dict[str, str], tmp_path: Path, trayer: object
) -> None:
    config = f"[notify]\nsettle = {SETTLE}\ndone_after = 0\n"
    menu_dunst, app, end, monitor, since = answered_press(
        APPROVE_LABEL, config, xvfb_display, desktop_env, tmp_path
    )
    try:
        # As the launcher writes it: the answer noted, and the agent's turn over at once.
        now = time.time()
        done = Record("", State.DONE, None, None, "claude-code", None, "Done.", now, now)
        session = dataclasses.replace(
            live_session(SID, (done,), now),
            name="api-server",
            answered=Answered("", since, Answer.APPROVE, now),
        )
        StateStore(app.state_dir).write(session)
        assert barrier(app.state_dir, monitor, 2, SETTLE) == [
            "api-server needs approval",
            "marker needs approval",
        ]
    finally:
        stop_process(app.proc)
        end.close()
        monitor.stop()
        menu_dunst.stop()
    assert "Traceback" not in app.log, app.log


def test_after_an_answer_its_reminders_stop(
    xvfb_display: str, desktop_env: dict[str, str], tmp_path: Path, trayer: object
) -> None:
    config = f"[notify]\nsettle = {SETTLE}\nremind = 2\n"
    menu_dunst, app, end, monitor, since = answered_press(
        DENY_LABEL, config, xvfb_display, desktop_env, tmp_path
    )
    try:
        # The launcher's file still shows the prompt (it is slow to write): past the
        # moment its next reminder was due, nothing more of it pings.
        answered_at = time.time()
        before = [call.summary for call in monitor.notify_calls()]
        due = next(since + 2 * 2**n for n in range(8) if since + 2 * 2**n > answered_at + 1)
        assert barrier(app.state_dir, monitor, len(before) + 1, SETTLE, after=due) == [
            *before,
            "marker needs approval",
        ]
    finally:
        stop_process(app.proc)
        end.close()
        monitor.stop()
        menu_dunst.stop()
    assert "Traceback" not in app.log, app.log
