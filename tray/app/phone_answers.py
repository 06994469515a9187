"""``[away] answer``: pings to the user's ntfy topic while they are away, with Approve and
Deny on a prompt's, and the replies those buttons send, checked before anything is typed.

The buttons are ntfy's own ``http`` actions: a tap makes the phone POST a signed token
(:mod:`tray.core.answers.phone_tokens`) to a reply topic on the same server, made from the user's
secret topic. :class:`~tray.outlets.ntfy.ReplyStream` hands each reply to :meth:`post`
on its own thread; the worker checks it (:meth:`PhoneAnswers.reply`) and carries out the
answer the way the desktop's button does, through the session's launcher and its gate.
Whatever came of it goes back to the phone as one short message (:meth:`told`).

Publishing and the stream run on threads of their own: nothing here waits on the
network on the worker. The topic, the reply topic and the tokens are never logged: the
log names the server's host and why a reply typed nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tray.app.messages import Outcome, PhoneReply
from tray.core.answers.phone_tokens import (
    LIFETIME,
    Grant,
    Refusal,
    UsedTokens,
    reply_topic,
    sign,
    verify,
)
from tray.core.answers.target import AnswerTarget
from tray.core.config.away import AwaySettings, answer_server, ntfy_topic
from tray.core.worker.user_actions import Answer
from tray.outlets.ntfy import NtfyPublisher, ReplyStream
from tray.protocol.state import ANSWERS, State
from tray.protocol.state import Answer as AnswerWord
from tray.state.phone_key import phone_key

# ntfy's priorities: a prompt waits on the user, a failure is news, the rest is ordinary.
_PRIORITY: dict[str, int] = {State.BLOCKED: 4, State.ERROR: 4, State.DONE: 3}
_TAGS: dict[str, list[str]] = {
    State.BLOCKED: ["raised_hand"],
    State.ERROR: ["x"],
    State.DONE: ["white_check_mark"],
}
_SAID: dict[str, str] = {AnswerWord.APPROVE: "approved", AnswerWord.DENY: "denied"}


class PhoneAnswers:
    """The ntfy side of ``[away]``: built by the app when ``answer`` is set."""

    def __init__(
        self,
        settings: AwaySettings,
        state_dir: Path,
        host: str,
        log: logging.Logger,
        post: Callable[[PhoneReply], None],
        *,
        clock: Callable[[], float] = time.time,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """``environ`` holds the proxy variables the ntfy client honours (none if None)."""
        assert settings.answer is not None
        base, topic = ntfy_topic(settings.answer)
        self._topic = topic
        self._token = settings.answer_token
        self._reply_url = f"{base}/{reply_topic(topic)}"
        self._server = answer_server(settings.answer)
        self._key = phone_key(state_dir)
        self._host = host
        self._log = log
        self._clock = clock
        self._used = UsedTokens()
        proxies = environ or {}
        self._publisher = NtfyPublisher(base, self._token, log, environ=proxies)
        self._stream = ReplyStream(
            base,
            reply_topic(topic),
            self._token,
            lambda text: post(PhoneReply(text)),
            log,
            since=clock(),
            environ=proxies,
        )

    def start(self) -> None:
        self._stream.start()
        self._log.info(
            "away: prompts on the phone take Approve and Deny (ntfy at %s)", self._server
        )

    def stop(self) -> None:
        self._stream.stop()
        self._publisher.stop()

    def ping(self, title: str, body: str, state: str | None, answer: AnswerTarget | None) -> None:
        """Publish one ping to the topic; a prompt that can be answered gets the buttons."""
        message: dict[str, object] = {
            "topic": self._topic,
            "title": title,
            "message": body or title,
            "priority": _PRIORITY.get(state or "", 3),
            "tags": _TAGS.get(state or "", []),
        }
        if answer is not None:
            message["actions"] = [self._button(answer, choice) for choice in ANSWERS]
        self._publisher.publish(message)

    def _button(self, target: AnswerTarget, answer: str) -> dict[str, object]:
        grant = Grant(
            self._host,
            target.session_id,
            target.record_id,
            target.since,
            answer,
            self._clock() + LIFETIME,
        )
        button: dict[str, object] = {
            "action": "http",
            "label": answer.capitalize(),
            "url": self._reply_url,
            "method": "POST",
            "body": sign(self._key, grant),
            "clear": True,
        }
        if self._token:
            button["headers"] = {"Authorization": f"Bearer {self._token}"}
        return button

    def reply(self, text: str) -> Answer | None:
        """The worker's: the answer a reply asks for, once its token holds; None (and
        one line in the log, without the token) when it types nothing."""
        now = self._clock()
        found = verify(self._key, text, now)
        if isinstance(found, Refusal):
            self._log.info("phone: a reply typed nothing (%s)", found.reason)
            return None
        if found.host != self._host:
            self._log.info("phone: a reply typed nothing (made for another host)")
            return None
        if not self._used.take(found, now):
            self._log.info("phone: a reply typed nothing (that prompt was answered already)")
            return None
        return Answer(found.session, found.record, found.since, found.answer, from_phone=True)

    def told(self, answer: Answer, outcome: Outcome, name: str) -> None:
        """What came of an answer from the phone, back to the phone in a few words."""
        line = f"{name}: {_SAID.get(answer.answer, answer.answer)}" if outcome.ok else outcome.line
        self._publisher.publish(
            {"topic": self._topic, "message": line, "priority": 2, "tags": ["tray"]}
        )


__all__ = ["PhoneAnswers"]
