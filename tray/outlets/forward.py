"""Forwarding pings to the user's phone (or mail, chat, webhook) through Apprise.

One daemon thread does every send, so ``send`` never waits on a network: it queues and
returns. Each URL is its own target, with a timeout per send, and when one fails it
says so once (one warning per outage), keeps a few pings, and tries again later and
later (5 s, doubling up to 5 min) instead of at every ping. It never sends faster than
pings come, and only the newest few wait through an outage.

The URLs hold secrets, often in the host part (``pover://USER@TOKEN``). They are never
logged: tray's lines name a URL by its scheme and its place in ``away.forward``, and
Apprise's own loggers, which print whole URLs at ERROR and ntfy's Authorization header
at DEBUG, are silenced before Apprise is first imported (see :func:`quiet_apprise`).

Apprise is imported here only, and only when a forwarder is built or a URL checked:
never on the ``tray run`` path, nor by ``tray doctor`` just to say it is missing.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tray.base.check import Check
from tray.core.away.tracker import PRESENT, AwayState, is_forwarded
from tray.core.config.away import AwaySettings, answer_server, scheme_of
from tray.protocol.state import State

SEND_TIMEOUT = 10.0
BACKOFF_FIRST = 5.0
BACKOFF_MAX = 300.0
# Pings kept per URL while it fails; older ones are dropped (their news is stale).
PENDING_LIMIT = 8
STOP_TIMEOUT = 5.0
# Every logger Apprise and its HTTP stack write to; urllib3 names the request's path,
# and a path can hold a token (tgram://BOT_TOKEN/...).
_QUIET_LOGGERS = ("apprise", "urllib3", "requests", "requests_oauthlib")
# Ping states as Apprise's notify types: services colour or prefix by them.
_NOTIFY_TYPES: dict[str, str] = {
    State.BLOCKED: "warning",
    State.ERROR: "failure",
    State.DONE: "success",
}
INSTALL_HINT = f"{sys.executable} -m pip install apprise"


def quiet_apprise() -> None:
    """Keep Apprise's log lines (whole URLs, auth headers) out of app.log and stderr.

    A NullHandler and no propagation stop the records at these loggers, so neither
    tray's handlers nor Python's last-resort stderr handler ever sees them.
    """
    for name in _QUIET_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = [logging.NullHandler()]
        logger.propagate = False
        logger.setLevel(logging.CRITICAL + 1)


def apprise_available() -> bool:
    return importlib.util.find_spec("apprise") is not None


def apprise_accepts(url: str) -> bool:
    """Whether Apprise knows this URL (its scheme, and a form it can parse)."""
    quiet_apprise()
    from apprise import Apprise  # noqa: PLC0415 - only the app pays for Apprise

    return Apprise.instantiate(url, suppress_exceptions=True) is not None


class _Target:
    """One forward URL: its Apprise plugin, its pings waiting, and its outage."""

    def __init__(self, index: int, url: str, plugin: Any, timeout: float) -> None:
        self.name = f"{scheme_of(url)}:// (away.forward[{index}])"
        self.plugin = plugin
        # Apprise's own per-request timeouts: connect, then read.
        plugin.socket_connect_timeout = timeout
        plugin.socket_read_timeout = timeout
        # Apprise keeps each service's least spacing between requests by sleeping in
        # send() (5.5 s for most, so a service never bans the client). Kept here, as a
        # time to wait for, so one URL's spacing never holds up the others.
        self.spacing = max(0.0, float(getattr(plugin, "request_rate_per_sec", 0.0) or 0.0))
        plugin.request_rate_per_sec = 0
        self.pending: deque[tuple[str, str, str]] = deque(maxlen=PENDING_LIMIT)
        self.failing = False
        self.backoff = 0.0
        self.retry_at = 0.0
        self.sent = 0
        self.failures = 0


class Forwarder:
    """Sends (title, body) to every URL, on a thread of its own."""

    def __init__(
        self,
        urls: Sequence[str],
        log: logging.Logger,
        timeout: float = SEND_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        backoff_first: float = BACKOFF_FIRST,
    ) -> None:
        self._log = log
        self._clock = clock
        self._backoff_first = backoff_first
        self._urls = tuple(urls)
        self._timeout = timeout
        self._targets: list[_Target] = []
        self._wake = threading.Condition()
        self._inbox: deque[tuple[str, str, str]] = deque(maxlen=PENDING_LIMIT * 4)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="tray-forward", daemon=True)
        self._thread.start()

    @property
    def schemes(self) -> list[str]:
        return [target.name for target in self._targets]

    def send(self, title: str, body: str, state: str | None = None) -> None:
        """Queue one ping for every URL; returns at once."""
        notify_type = _NOTIFY_TYPES.get(state or "", "info")
        with self._wake:
            self._inbox.append((title, body, notify_type))
            self._wake.notify()

    def stats(self) -> dict[str, tuple[int, int, bool]]:
        """Per target: (sent, failed attempts, failing now). For tests and the bench."""
        with self._wake:
            return {t.name: (t.sent, t.failures, t.failing) for t in self._targets}

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout)

    # -- the forwarding thread ---------------------------------------------------------

    def _load(self) -> None:
        # Here, not in __init__: Apprise takes a second or two to load its plugins.
        quiet_apprise()
        from apprise import Apprise  # noqa: PLC0415 - only the app pays for Apprise

        targets = []
        for index, url in enumerate(self._urls):
            plugin = Apprise.instantiate(url, suppress_exceptions=True)
            if plugin is None:
                # The config check refuses these first; never a traceback, never the URL.
                self._log.warning(
                    "away.forward[%d]: Apprise does not accept a %s:// URL; skipped",
                    index,
                    scheme_of(url),
                )
                continue
            targets.append(_Target(index, url, plugin, self._timeout))
        with self._wake:
            self._targets = targets

    def _run(self) -> None:
        try:
            self._load()
        except Exception:  # Apprise missing or broken: one line, never the URLs
            self._log.warning("forwarding is off: Apprise could not be loaded")
            return
        while True:
            with self._wake:
                while not self._stopping and not self._due():
                    self._wake.wait(self._wait_time())
                if self._stopping:
                    return
                while self._inbox:
                    item = self._inbox.popleft()
                    for target in self._targets:
                        target.pending.append(item)
            now = self._clock()
            for target in self._targets:
                if target.pending and target.retry_at <= now:
                    self._send_pending(target)

    def _due(self) -> bool:
        if self._inbox:
            return True
        now = self._clock()
        return any(t.pending and t.retry_at <= now for t in self._targets)

    def _wait_time(self) -> float | None:
        waiting = [t.retry_at for t in self._targets if t.pending]
        if not waiting:
            return None
        return max(0.0, min(waiting) - self._clock())

    def _send_pending(self, target: _Target) -> None:
        title, body, notify_type = target.pending[0]
        if self._send_one(target, title, body, notify_type):
            with self._wake:
                target.pending.popleft()

    def _send_one(self, target: _Target, title: str, body: str, notify_type: str) -> bool:
        try:
            # Plain text in: the escaping dunst needs is the notifier's, never here,
            # and Apprise converts for services that render markup.
            ok = bool(
                target.plugin.notify(
                    body=body or title, title=title, notify_type=notify_type, body_format="text"
                )
            )
        except Exception:  # a plugin's failure is this target's outage
            # Never the exception's text: requests puts the whole URL in it.
            ok = False
        with self._wake:
            if ok:
                target.sent += 1
                if target.failing:
                    self._log.info("forwarding to %s works again", target.name)
                target.failing = False
                target.backoff = 0.0
                target.retry_at = self._clock() + target.spacing
                return True
            target.failures += 1
            target.backoff = min(BACKOFF_MAX, target.backoff * 2 or self._backoff_first)
            target.retry_at = self._clock() + max(target.backoff, target.spacing)
            if not target.failing:
                target.failing = True
                self._log.warning(
                    "forwarding to %s failed; retrying in %.0f s, then less often",
                    target.name,
                    target.backoff,
                )
            return False


class AwayForwarding:
    """The app's side of ``[away]``: the latest away state (from PresenceMonitor, on its
    thread) and each ping, forwarded when it should be. Thread-safe; never blocks."""

    def __init__(self, settings: AwaySettings, forwarder: Forwarder) -> None:
        self._states = settings.states
        self._forwarder = forwarder
        self._lock = threading.Lock()
        self._away = PRESENT

    @property
    def away(self) -> AwayState:
        with self._lock:
            return self._away

    def set_away(self, state: AwayState) -> None:
        with self._lock:
            self._away = state

    def ping(self, title: str, body: str, state: str | None) -> bool:
        """Forward one ping (a first ping, a reminder or a summary) if the user is away
        and its state is forwarded; True when it was queued."""
        if not is_forwarded(state, self._states, self.away):
            return False
        self._forwarder.send(title, body, state)
        return True

    def stop(self) -> None:
        self._forwarder.stop()


def check_away(
    settings: AwaySettings | None,
    env: Mapping[str, str],
    detect: Callable[[Mapping[str, str], float], str | None] | None = None,
    available: Callable[[], bool] = apprise_available,
) -> Check:
    """``tray doctor``'s ``away`` line: how tray tells here that the user is away, and
    where pings go, by scheme only. ``detect`` is tray.desktop.idle.probe (a test may
    pass its own)."""
    if detect is None:
        from tray.desktop.idle import probe  # noqa: PLC0415 - dbus-fast and Xlib, for doctor only

        detect = probe
    after = 300.0 if settings is None else settings.after
    source = detect(env, after)
    tells = f"tells by {source}" if source else "nothing here tells whether you are away"
    if settings is None or not (settings.forward or settings.answer):
        return Check("ok", "away", f"off (no [away] forward or answer); {tells}")
    states = " and ".join(sorted(settings.states))
    places = [f"{scheme}://" for scheme in settings.schemes]
    if settings.answer is not None:
        # The server's host only: the topic is the user's secret.
        places.append(f"ntfy at {answer_server(settings.answer)}, with Approve and Deny")
    where = ", ".join(places)
    if settings.forward and not available():
        return Check(
            "FAIL", "away", f"forward is set ({where}) but Apprise is not installed", INSTALL_HINT
        )
    for index, url in enumerate(settings.forward):
        if not apprise_accepts(url):
            return Check(
                "FAIL",
                "away",
                f"away.forward[{index}]: Apprise does not accept this {scheme_of(url)}:// URL",
                "see the Apprise wiki for the URL form of that service",
            )
    if not source:
        return Check(
            "warn",
            "away",
            f"{tells}, so nothing is forwarded to {where}",
            "run the app in an X11 session, GNOME, or with a screen saver on D-Bus",
        )
    return Check(
        "ok",
        "away",
        f"after {_minutes(after)} without input or a locked screen ({tells}), "
        f"{states} pings also go to {where}",
    )


def _minutes(seconds: float) -> str:
    if seconds % 60 == 0:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:g} s"


__all__ = [
    "INSTALL_HINT",
    "AwayForwarding",
    "Forwarder",
    "apprise_accepts",
    "apprise_available",
    "check_away",
    "quiet_apprise",
]
