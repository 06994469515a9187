"""``tray answer SESSION approve|deny``: answer a permission prompt without its terminal.

The answer goes to the session's own launcher, over its answer socket in the state
directory, and the launcher decides: it types the app's keys only while the same prompt
stands and the user has not typed since (see :mod:`tray.core.answers.gate`). This side only
names the prompt. With ``--host`` the same command runs on that host over its ssh
(:func:`tray.remote.actions.answer_remote`, which the app uses too), every word checked
first.

Exit 0: the keys reached the program. 1: refused, with the reason on one line. 2: usage.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tray.base.exit_codes import FAILURE, SUCCESS, UsageError
from tray.base.safe_text import clean_text, cut
from tray.core.answers.gate import ENDED
from tray.protocol.state import ANSWER_NAMED
from tray.state.answer_channel import (
    ANSWERED,
    HAS_ENDED,
    NO_SESSION,
    NOT_AN_ID,
    UNREADABLE,
    answer_stored_session,
)
from tray.state.environment import Environment

if TYPE_CHECKING:
    import argparse

# tray.core.hosts.remote_sessions.PREFIX, written out so that a local answer does not import it.
_REMOTE_PREFIX = "host:"


class RefusedError(Exception):
    """One line for stderr, exit 1."""


def run(args: argparse.Namespace, env: Environment) -> int:
    answer, session_id = args.answer, args.session
    if answer not in ANSWER_NAMED:
        raise UsageError(
            f"tray answer: the answer is approve or deny, not {cut(clean_text(answer), 20)!r}"
        )
    since = _since(args.since)
    try:
        if args.host is not None or session_id.startswith(_REMOTE_PREFIX):
            _remote(args.host, session_id, answer, args.record, since, env)
        else:
            _local(session_id, answer, args.record, since, env)
    except RefusedError as refused:
        env.stderr.write(f"tray answer: {refused}\n")
        return FAILURE
    return SUCCESS


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        since = float(text)
    except ValueError:
        raise UsageError(
            f"tray answer: --since is a time as status gives it, not {cut(clean_text(text), 30)!r}"
        ) from None
    if not math.isfinite(since):
        raise UsageError("tray answer: --since must be a finite number")
    return since


def _local(
    session_id: str, answer: str, record: str | None, since: float | None, env: Environment
) -> None:
    outcome, reason, session = answer_stored_session(
        env.state_dir(), session_id, answer, record, since
    )
    shown = clean_text(session_id)
    if outcome == NOT_AN_ID:
        raise UsageError(f"tray answer: {cut(shown, 40)!r} is not a session id")
    if outcome == NO_SESSION:
        raise RefusedError(f"no session {shown}")
    if outcome == UNREADABLE:
        raise RefusedError(f"{shown}: cannot read its state: {cut(clean_text(reason), 80)}")
    name = (cut(clean_text(session.name), 40) if session is not None else "") or shown
    if outcome == HAS_ENDED:
        raise RefusedError(f"{name}: {ENDED}; not answered")
    if outcome != ANSWERED:
        raise RefusedError(f"{name}: {reason}; not answered")


def _remote(  # noqa: PLR0917 - the command's own words, in their order
    host_name: str | None,
    session_id: str,
    answer: str,
    record: str | None,
    since: float | None,
    env: Environment,
) -> None:
    # Only for another host's session: the local path needs none of these.
    from tray.core.hosts.remote_sessions import split_remote_id  # noqa: PLC0415
    from tray.state.config_file import load_config  # noqa: PLC0415

    if session_id.startswith(_REMOTE_PREFIX):
        parts = split_remote_id(session_id)
        if parts is None or (host_name is not None and host_name != parts[0]):
            raise UsageError(
                f"tray answer: {cut(clean_text(session_id), 60)!r} is not a session of that host"
            )
        host_name, session_id = parts
    assert host_name is not None
    hosts = {host.name: host for host in load_config(env, agent_keys={}).hosts}
    host = hosts.get(host_name)
    if host is None:
        raise UsageError(
            f"tray answer: no [[hosts]] entry named {cut(clean_text(host_name), 40)!r}"
        )
    from tray.core.hosts.ssh_commands import answer_words  # noqa: PLC0415
    from tray.remote.actions import answer_remote  # noqa: PLC0415

    try:
        answer_words(session_id, answer, record, since)  # a bad word is the caller's
    except ValueError as error:
        raise UsageError(f"tray answer: {error}") from None
    ok, line = answer_remote(host, session_id, answer, record, since, environ=env.environ)
    if not ok:
        raise RefusedError(f"{host.name}: {line}")
