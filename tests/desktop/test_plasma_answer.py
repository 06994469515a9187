"""Approve and Deny from Plasma's own notification, clicked for real: a real `tray app` on
a real KDE Plasma 5.27 (Wayland), a session blocked on a permission prompt whose launcher
end is served by this test (the prompt program and helpers of the dunst answer test), and
a synthetic pointer (KWin's org_kde_kwin_fake_input) that presses the popup's button
where the screen shows it.

The popup is found through KWin's scripting, its buttons in a screenshot
(helpers/plasma_popups.py); the press must reach the launcher's socket as an answer to
exactly the prompt the popup shows.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from app.test_app_answer_desktop import CONFIG, SID, blocked_session, prompt
from helpers.desktop_apps import TIMEOUT, start_app_process
from helpers.desktop_services import BusMonitor, stop_process
from helpers.fake_launcher import FakeLauncher
from helpers.plasma import Plasma
from helpers.plasma_input import FakePointer
from helpers.plasma_popups import hover_button, new_popup, popups, settled_buttons
from helpers.waiting import wait_for

from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL
from tray.outlets.notifier import SNOOZE_ACTION, SNOOZE_LABEL

# The popup's buttons, left to right, in the order of the notification's actions.
ACTIONS = ["default", "", "approve", APPROVE_LABEL, "deny", DENY_LABEL, SNOOZE_ACTION, SNOOZE_LABEL]
BUTTONS = 3


@pytest.mark.parametrize(
    ("button", "answer", "keys"),
    [(0, "approve", b"1"), (1, "deny", b"\x1b")],
    ids=["approve", "deny"],
)
def test_a_click_on_plasmas_button_answers_exactly_that_prompt(
    button: int, answer: str, keys: bytes, plasma: Plasma, tmp_path: Path
) -> None:
    env = dict(plasma.env)
    since = time.time() - 3  # settled: the launcher need not hold the answer
    blocked_session(tmp_path / "state", since)
    end = FakeLauncher(tmp_path / "state", SID, (prompt(since),))
    monitor = BusMonitor(env, tmp_path / "monitor.log")
    before = set(popups(plasma))
    app = start_app_process(env, tmp_path, CONFIG)
    try:
        [call] = monitor.wait_for_notify(1, TIMEOUT)
        assert call.summary == "api-server needs approval"
        assert call.actions == ACTIONS
        popup = new_popup(plasma, before)
        _box, buttons = settled_buttons(plasma, popup, BUTTONS)
        with FakePointer(env) as pointer:
            hover_button(plasma, pointer, buttons[button])
            pointer.press()
            pointer.rest()

        wait_for(lambda: end.typed, TIMEOUT, what="the answer at the launcher")
        assert end.typed == [keys]
        assert (end.requests[0].answer, end.requests[0].since) == (answer, since)
        invoked = re.compile(rf'member=ActionInvoked\n\s+uint32 \d+\n\s+string "{answer}"')
        assert invoked.search(monitor.text()), monitor.text()[-2000:]
        wait_for(lambda: popup not in popups(plasma), TIMEOUT, what="the popup to close")
        wait_for(lambda: "typed" in app.log, TIMEOUT, what="the app to note it")
        assert len(monitor.notify_calls()) == 1  # no refusal
    finally:
        stop_process(app.proc)
        end.close()
        monitor.stop()
    assert "Traceback" not in app.log, app.log
