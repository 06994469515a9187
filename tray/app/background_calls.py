"""What the worker asks of other programs and other machines, run off the worker.

Focus talks to a terminal (its D-Bus service, kitty's or WezTerm's socket, tmux,
xdotool) or, for another host's session, to ssh; an answer waits on its launcher's reply
or on ssh; dismissing on a host is one ssh; the clipboard is a program. Any of them can
take seconds, and a slow host all of its timeout, while the icon, the menu and every
ping must go on. So each runs on a daemon thread of its own, bounded by the timeout it
already has, and posts its outcome back to the worker (:class:`FocusDone`,
:class:`AnswerDone`), which applies it: the policy, the notifications and the menu stay
the worker's. Dismissing and copying change nothing there, so they only log how it went.

A thread per call, not a pool: a slow host must not hold up a local focus queued
behind it, and every call ends by its own timeout.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence

from tray.app.answer_dispatch import AnswerDispatcher
from tray.app.messages import AnswerDone, FocusDone, Message
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.session.model import Session
from tray.core.worker.user_actions import Answer
from tray.desktop.clipboard import copy_text
from tray.desktop.focus import FocusResult, focus_session
from tray.remote.actions import dismiss_remote, focus_remote


class BackgroundCalls:
    """Starts each call on its own thread; ``post`` hands its outcome to the worker."""

    def __init__(
        self,
        post: Callable[[Message], None],
        answers: AnswerDispatcher,
        environ: Mapping[str, str],
        log: logging.Logger,
    ) -> None:
        self._post = post
        self._answers = answers
        self._environ = environ
        self._log = log

    def focus(self, session: Session, token: str | None) -> None:
        """Bring a local session's terminal forward (``token``: a click's activation
        token)."""

        def run() -> Message:
            result = focus_session(session.terminal, env=self._environ, activation_token=token)
            return FocusDone(session, result)

        self._start("focus", run)

    def focus_remote(self, host: HostConfig, session: Session, pane: str, socket: str) -> None:
        """Select another host's session's tmux pane there, over ssh."""

        def run() -> Message:
            ok, message = focus_remote(host, pane, socket, environ=self._environ)
            return FocusDone(session, FocusResult(ok, message))

        self._start(f"focus-{host.name}", run)

    def answer(self, message: Answer, session: Session | None, *, stale: bool) -> None:
        """Carry out one answer; ``session`` and ``stale`` as the worker sees them now."""

        def run() -> Message:
            return AnswerDone(message, self._answers.deliver(message, session, stale=stale))

        self._start("answer", run)

    def dismiss(self, host: HostConfig, session_ids: Sequence[str]) -> None:
        """Dismiss sessions on their host too; the app's memory already hides them."""

        def run() -> None:
            ok, message = dismiss_remote(host, session_ids, environ=self._environ)
            if ok:
                self._log.info("%s: dismissed %d session(s)", host.name, len(session_ids))
            else:
                self._log.warning("cannot dismiss on %s: %s", host.name, message)

        self._start(f"dismiss-{host.name}", run)

    def copy(self, text: str) -> None:
        def run() -> None:
            result = copy_text(text, self._environ)
            if not result.ok:
                self._log.warning("copy failed: %s", result.message)

        self._start("copy", run)

    def _start(self, name: str, call: Callable[[], Message | None]) -> None:
        def body() -> None:
            try:
                outcome = call()
            except Exception:  # one failed call must not go unsaid, nor end the app
                self._log.exception("%s failed", name)
                return
            if outcome is not None:
                self._post(outcome)

        threading.Thread(target=body, name=f"tray-{name}", daemon=True).start()


__all__ = ["BackgroundCalls"]
