"""PhoneAnswers against the loopback stand-in of ntfy: what a ping becomes on the phone,
and which replies become answers. The app end to end is tests/app/test_app_answer_phone.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.ntfy_standin import FakeNtfy
from helpers.phone import tap
from helpers.waiting import wait_for

from tray.app.messages import Outcome, PhoneReply
from tray.app.phone_answers import PhoneAnswers
from tray.core.answers.phone_tokens import reply_topic
from tray.core.answers.target import AnswerTarget
from tray.core.config.away import AwaySettings
from tray.core.worker.user_actions import Answer

TOPIC = "tray-test-topic-Q7vXk2"
TOKEN = "tk_phoneanswerstest"  # noqa: S105 - made up, hunted for in the log
PROMPT = AnswerTarget("a1b2c3", "", 1_700_000_000.5)
SAID = (PROMPT.session_id, PROMPT.record_id, PROMPT.since)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_001.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ntfy() -> Iterator[FakeNtfy]:
    with FakeNtfy(token=TOKEN) as server:
        yield server


@pytest.fixture
def phone(
    ntfy: FakeNtfy, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> Iterator[tuple[PhoneAnswers, list[PhoneReply], Clock]]:
    caplog.set_level(logging.DEBUG)
    settings = AwaySettings(answer=f"{ntfy.url}/{TOPIC}", answer_token=TOKEN)
    replies: list[PhoneReply] = []
    clock = Clock()
    made = PhoneAnswers(
        settings, tmp_path, "desk", logging.getLogger("tray.test"), replies.append, clock=clock
    )
    made.start()
    try:
        yield made, replies, clock
    finally:
        made.stop()
        logged = caplog.text
        for secret in (TOPIC, reply_topic(TOPIC), TOKEN, "t1."):
            assert secret not in logged


def _published(ntfy: FakeNtfy, count: int) -> list[dict[str, object]]:
    found = wait_for(
        lambda: (m := ntfy.published(TOPIC)) and len(m) >= count and m, what="the publish"
    )
    assert isinstance(found, list)
    return found


def test_a_prompt_goes_with_both_buttons_and_a_tap_comes_back_as_its_answer(
    ntfy: FakeNtfy, phone: tuple[PhoneAnswers, list[PhoneReply], Clock]
) -> None:
    answers, replies, _ = phone
    answers.ping("desk · api-server", "approve Bash: git push", "blocked", PROMPT)
    (message,) = _published(ntfy, 1)
    assert (message["title"], message["message"]) == ("desk · api-server", "approve Bash: git push")
    actions = message["actions"]
    assert isinstance(actions, list)
    assert [a["label"] for a in actions] == ["Approve", "Deny"]
    for action in actions:
        assert action["action"] == "http"
        assert action["method"] == "POST"
        assert action["url"] == f"{ntfy.url}/{reply_topic(TOPIC)}"
        assert action["headers"] == {"Authorization": f"Bearer {TOKEN}"}
    tap(actions[1])
    (reply,) = wait_for(lambda: replies, what="the reply")
    assert answers.reply(reply.text) == Answer(*SAID, "deny", from_phone=True)
    assert answers.reply(reply.text) is None  # the same tap again
    assert answers.reply(str(actions[0]["body"])) is None  # the other button of that prompt


def test_other_pings_go_without_buttons_and_results_come_back_in_words(
    ntfy: FakeNtfy, phone: tuple[PhoneAnswers, list[PhoneReply], Clock]
) -> None:
    answers, _, _ = phone
    answers.ping("desk · build", "tests failed", "error", None)
    answers.told(Answer(*SAID, "approve", from_phone=True), Outcome(True), "api-server")
    refused = "api-server: the prompt has changed; not answered"
    answers.told(Answer(*SAID, "deny", from_phone=True), Outcome(False, refused), "api-server")
    first, second, third = _published(ntfy, 3)
    assert "actions" not in first
    assert (second["message"], third["message"]) == ("api-server: approved", refused)


def test_forged_stale_and_foreign_replies_type_nothing(
    ntfy: FakeNtfy, phone: tuple[PhoneAnswers, list[PhoneReply], Clock]
) -> None:
    answers, _, clock = phone
    answers.ping("desk · api-server", "approve Bash: ls", "blocked", PROMPT)
    (message,) = _published(ntfy, 1)
    actions = message["actions"]
    assert isinstance(actions, list)
    token = str(actions[0]["body"])
    assert answers.reply(token[:-3] + ("AAA" if token[-3:] != "AAA" else "BBB")) is None
    assert answers.reply("hello") is None
    clock.now += 601  # past its ten minutes
    assert answers.reply(token) is None
    clock.now -= 601
    assert answers.reply(token) is not None
