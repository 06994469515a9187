"""Answering a permission prompt from the notification or the menu: what can be
answered, and carrying out one answer.

The app only names the prompt (session, record, and the ``since`` that names it); the
session's own launcher decides whether to type, and what (:mod:`tray.core.answers.gate`). A
local session is asked over its answer socket, whose path comes from the state directory
and the checked session id, never from a state file; another host's over the host's
open link (:meth:`tray.remote.link.HostLink.answer`), or, when that cannot carry it, one
ssh of its own (:func:`tray.remote.actions.answer_remote`); both check every word first.

:func:`deliver_answer` may block for as long as the launcher holds an answer (a few seconds
at most), or ssh takes: a thread of its own calls it (:mod:`tray.app.background_calls`), never the
worker, the menu's or the notifier's thread. The worker then applies the outcome
(:meth:`AnswerDispatcher.settle`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tray.app.messages import Outcome
from tray.base.safe_text import clean_text, cut
from tray.core.answers.gate import ENDED
from tray.core.answers.target import AnswerTarget
from tray.core.hosts.remote_sessions import split_remote_id
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.session.labels import session_label
from tray.core.session.model import Session
from tray.core.view.overview import IconState
from tray.core.worker.user_actions import Answer
from tray.protocol.state import State
from tray.remote.actions import answer_remote
from tray.state.answer_channel import send_answer, socket_path
from tray.state.store import valid_session_id

# Room for the name, then the reason, in a refusal's notification; the name gives way first.
_NAME_CELLS = 40
_REASON_CELLS = 100
NOT_ANSWERED = "not answered"


def refusal_line(name: str, reason: str) -> str:
    shown = cut(clean_text(name), _NAME_CELLS)
    return f"{shown}: {cut(clean_text(reason), _REASON_CELLS)}; {NOT_ANSWERED}"


class LinkAnswers(Protocol):
    """A host's open link, as :class:`tray.remote.link.HostLink` answers over it."""

    def answer(
        self, session_id: str, answer: str, record: str | None, since: float | None
    ) -> tuple[bool, str] | None: ...


@dataclass(frozen=True, slots=True)
class AnswerRoutes:
    """Where answers go: this machine's state directory, each host's config, and each
    host's open link (None: answer by a one-shot ssh)."""

    state_dir: Path
    host_config: Callable[[str], HostConfig | None]
    environ: Mapping[str, str] | None = None
    host_link: Callable[[str], LinkAnswers | None] | None = None


def deliver_answer(
    session: Session | None, target: AnswerTarget, answer: str, where: AnswerRoutes, *, stale: bool
) -> Outcome:
    """Ask the session's launcher to answer ``target`` with ``answer``.

    ``session`` is the worker's own latest view of it (None: it is gone); ``stale``
    says its host cannot be reached. Blocks until the launcher replies: at most its
    reply timeout, or ssh's for another host's session.
    """
    session_id = target.session_id
    if session is None:
        return Outcome(False, refusal_line(session_id, "the session is gone"))
    name = session_label(session)
    if not session.running:
        return Outcome(False, refusal_line(name, ENDED))
    parts = split_remote_id(session_id)
    if parts is not None:
        return _remote(parts, name, target, answer, where, stale=stale)
    if not valid_session_id(session_id):
        return Outcome(False, refusal_line(name, "not a session id"))
    path = socket_path(where.state_dir, session_id)
    ok, reason = send_answer(path, answer, target.record_id, target.since)
    return Outcome(True) if ok else Outcome(False, refusal_line(name, reason))


def _remote(
    remote_id: tuple[str, str],
    name: str,
    target: AnswerTarget,
    answer: str,
    where: AnswerRoutes,
    *,
    stale: bool,
) -> Outcome:
    """``remote_id``: the host's name and the session's id there."""
    host_name, remote_session = remote_id
    host = where.host_config(host_name)
    if host is None:
        return Outcome(False, refusal_line(name, f"no [[hosts]] entry named {host_name}"))
    if stale:
        return Outcome(False, refusal_line(name, f"{host_name} is unreachable"))
    link = where.host_link(host_name) if where.host_link is not None else None
    if link is not None:
        # The open link first: no ssh handshake, no remote login shell.
        sent = link.answer(remote_session, answer, target.record_id, target.since)
        if sent is not None:
            ok, reason = sent
            return Outcome(True) if ok else Outcome(False, refusal_line(name, reason))
    ok, line = answer_remote(
        host, target.session_id, answer, target.record_id, target.since, environ=where.environ
    )
    if ok:
        return Outcome(True)
    # The remote `tray answer` words its refusal the same way; ssh's trouble is worded here.
    if line.endswith(f"; {NOT_ANSWERED}"):
        return Outcome(False, cut(clean_text(line), _NAME_CELLS + _REASON_CELLS))
    return Outcome(False, refusal_line(name, line))


class _Shows(Protocol):
    def send(  # noqa: PLR0917 - as Notifier.send
        self,
        title: str,
        body: str,
        urgency: str,
        key: str,
        snooze: Sequence[str] = (),
        answer: AnswerTarget | None = None,
        *,
        icon: IconState = "calm",
    ) -> None: ...

    def withdraw(self, target: AnswerTarget) -> None: ...


class _Told(Protocol):
    def answered(self, session_id: str, record_id: str, since: float) -> None: ...


class AnswerDispatcher:
    """Both sides of an :class:`~tray.app.messages.Answer`: :meth:`deliver` carries it
    out (any thread; it waits), then :meth:`settle`, on the worker, withdraws the
    prompt's notification and stops its reminders, or says why not in one short
    notification (nothing was typed)."""

    def __init__(
        self, where: AnswerRoutes, notifier: _Shows, policy: _Told, log: logging.Logger
    ) -> None:
        self._where = where
        self._notifier = notifier
        self._policy = policy
        self._log = log

    def deliver(self, message: Answer, session: Session | None, *, stale: bool) -> Outcome:
        """Ask the launcher; touches neither the policy nor the notifier."""
        target = AnswerTarget(message.session_id, message.record_id, message.since)
        return deliver_answer(session, target, message.answer, self._where, stale=stale)

    def settle(self, message: Answer, outcome: Outcome) -> None:
        """Apply what :meth:`deliver` found; the worker's only."""
        target = AnswerTarget(message.session_id, message.record_id, message.since)
        if outcome.ok:
            self._log.info("%s: %s typed", cut(clean_text(target.session_id), 60), message.answer)
            self._policy.answered(target.session_id, target.record_id, target.since)
            self._notifier.withdraw(target)
        else:
            self._log.info("%s", outcome.line)
            # Clicking it focuses the session, where the prompt can be answered by hand:
            # amber, as the prompt's own notification, since it is the user's again.
            self._notifier.send(outcome.line, "", "normal", target.session_id, icon=State.BLOCKED)


__all__ = [
    "NOT_ANSWERED",
    "AnswerDispatcher",
    "AnswerRoutes",
    "LinkAnswers",
    "Outcome",
    "deliver_answer",
    "refusal_line",
]
