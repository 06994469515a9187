"""``[away]`` in the app: the idle watch, the forwarding, answering from the phone, what
a ping becomes on the phone, and the menu's away line.

The idle watch runs on a thread of its own and only posts each new state to the worker
(``post``); the worker owns everything else here: it tells the forwarding, writes the
log line and shows the menu line. Each ping the desktop shows passes through
:meth:`AwayRouting.ping`, which forwards it only while the user is away and only for
the states in ``[away] states``: nothing goes out while they are at the desk, and
coming back sends nothing.

The URLs are secrets: nothing here logs more of one than its scheme.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from tray.app.messages import Outcome, PhoneReply
from tray.app.phone_answers import PhoneAnswers
from tray.base.safe_text import clean_text
from tray.core.away.tracker import AwayState, is_forwarded, menu_line
from tray.core.config.away import AwaySettings, without_topic
from tray.core.hosts.remote_sessions import clock_time, split_remote_id
from tray.core.policy.wording import Ping
from tray.core.session.labels import session_label
from tray.core.session.model import Session
from tray.core.worker.user_actions import Answer
from tray.desktop.idle import PresenceMonitor
from tray.outlets.forward import AwayForwarding, Forwarder
from tray.protocol.state import PINGED

# The most urgent first: a summary about a prompt and a failure forwards as the prompt.
URGENCY_ORDER = PINGED
# How long the idle watch may take to try every source before the app says none works.
SOURCES_TIMEOUT = 30.0


def most_urgent(states: Iterable[str]) -> str | None:
    """The ping's most urgent state among blocked, error and done; None for none."""
    given = set(states)
    return next((state for state in URGENCY_ORDER if state in given), None)


def forwarded_text(ping: Ping, host: str) -> tuple[str, str]:
    """The title and body that go to the phone: the notification's own, as plain text
    (no markup escaping: that is the notifier's, for servers that render markup).

    A remote session's label already starts with its host ("devbox · build"); a ping
    about this machine's sessions only gets this machine's name in front, so the phone
    tells the machines apart.
    """
    title = clean_text(ping.title)
    local = all(split_remote_id(session_id) is None for session_id in ping.session_ids)
    if local and host:
        title = f"{host} · {title}"
    return title, clean_text(ping.body)


class NoRouting:
    """Without ``[away] forward``: nothing is watched and nothing forwarded."""

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def changed(self, state: AwayState) -> bool:
        return False

    def ping(self, ping: Ping) -> bool:
        return False

    def menu_line(self) -> str | None:
        return None

    def phone_reply(self, text: str) -> Answer | None:
        return None

    def phone_told(self, answer: Answer, outcome: Outcome, session: Session | None) -> None:
        pass


class AwayRouting(NoRouting):
    """The app's ``[away]``, built when ``forward`` or ``answer`` is set. ``post``
    receives each new away state on the idle watch's thread; it must only hand it to the
    worker, which then calls :meth:`changed`. ``phone`` is the ntfy side, for ``answer``."""

    def __init__(
        self,
        settings: AwaySettings,
        environ: Mapping[str, str],
        log: logging.Logger,
        post: Callable[[AwayState], None],
        *,
        hostname: str | None = None,
        clock: Callable[[], float] = time.time,
        phone: PhoneAnswers | None = None,
    ) -> None:
        self._settings = settings
        self._log = log
        self._phone = phone
        forward = settings.forward
        if settings.answer is not None and phone is not None:
            # The answer topic gets each ping once, with its buttons: not from Apprise too.
            kept = (without_topic(url, settings.answer) for url in forward)
            forward = tuple(url for url in kept if url is not None)
        self._forwarding = AwayForwarding(settings, Forwarder(forward, log))
        self._watch = PresenceMonitor(settings.after, post, environ, clock=clock, log=log)
        self._host = clean_text(hostname if hostname is not None else socket.gethostname())
        self._away = AwayState(False)
        self._stopped = threading.Event()

    def start(self) -> None:
        self._watch.start()
        places = [f"{scheme}://" for scheme in self._settings.schemes]
        if self._phone is not None:
            self._phone.start()
            places.append("your ntfy topic")
        states = " and ".join(sorted(self._settings.states))
        self._log.info(
            "away: after %g s without input or a locked screen, %s pings also go to %s",
            self._settings.after,
            states,
            ", ".join(places) or "nowhere",
        )
        threading.Thread(target=self._say_source, name="tray-away-sources", daemon=True).start()

    def _say_source(self) -> None:
        # Every source is tried within a few seconds; until one answers, nobody is away.
        found = self._watch.wait_ready(SOURCES_TIMEOUT)
        if self._stopped.is_set():
            return
        if found:
            self._log.info("away: tells by %s", self._watch.describe())
        else:
            self._log.warning(
                "away: nothing here tells whether you are away, so nothing is forwarded"
            )

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()
        self._forwarding.stop()
        if self._phone is not None:
            self._phone.stop()

    @property
    def away(self) -> AwayState:
        return self._away

    def changed(self, state: AwayState) -> bool:
        """The worker's: the user left or came back. True when that changed anything
        (the menu's line then changes too)."""
        if state == self._away:
            return False
        self._away = state
        self._forwarding.set_away(state)
        if state.away and state.since is not None:
            self._log.info(
                "away (since %s, by %s)", clock_time(state.since), self._watch.describe()
            )
        elif not state.away:
            self._log.info("back")
        return True

    def ping(self, ping: Ping) -> bool:
        """Forward one ping the desktop shows, if it should go; True when queued."""
        title, body = forwarded_text(ping, self._host)
        state = most_urgent(ping.states)
        queued = self._forwarding.ping(title, body, state)
        if queued:
            # By state only: the title names sessions, the URL holds secrets. One line
            # a forward lets the log show what went to the phone, and when.
            self._log.info("away: forwarding a %s ping", state)
        if self._phone is not None and is_forwarded(state, self._settings.states, self._away):
            self._phone.ping(title, body, state, ping.answer)
            queued = True
        return queued

    def phone_reply(self, text: str) -> Answer | None:
        """The worker's: the answer a reply from the phone asks for, once it holds."""
        return None if self._phone is None else self._phone.reply(text)

    def phone_told(self, answer: Answer, outcome: Outcome, session: Session | None) -> None:
        """The worker's: what came of an answer from the phone goes back there."""
        if self._phone is not None:
            name = session_label(session) if session is not None else answer.session_id
            self._phone.told(answer, outcome, name)

    def menu_line(self) -> str | None:
        """ "Away since 14:02: pings also go to your phone" while away, else None."""
        since = self._away.since
        return menu_line(self._away, True, clock_time(since) if since is not None else None)


def build_routing(
    settings: AwaySettings | None,
    environ: Mapping[str, str],
    log: logging.Logger,
    post: Callable[[AwayState], None],
    *,
    state_dir: Path | None = None,
    post_reply: Callable[[PhoneReply], None] | None = None,
) -> NoRouting:
    """The routing for ``[away]``; one that does nothing when there is nowhere to
    forward to and no phone to answer from."""
    if settings is None or not (settings.forward or settings.answer):
        return NoRouting()
    phone = None
    if settings.answer is not None and state_dir is not None and post_reply is not None:
        host = clean_text(socket.gethostname())
        try:
            phone = PhoneAnswers(settings, state_dir, host, log, post_reply, environ=environ)
        except OSError as error:  # no key, so no buttons: said once, and the rest goes on
            log.warning(
                "away: nothing goes to the answer topic: no key in the state directory (%s)",
                error.strerror,
            )
    return AwayRouting(settings, environ, log, post, phone=phone)


__all__ = [
    "AwayRouting",
    "NoRouting",
    "build_routing",
    "forwarded_text",
    "most_urgent",
]
