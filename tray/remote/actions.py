"""One-shot ssh commands to a host: `tray doctor`'s check, `tray status --host`, and the
menu's actions (dismiss, focus, answer). Each is one ssh with a timeout; the long-lived stream
is :mod:`tray.remote.link`'s.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from tray.base.check import Check
from tray.base.safe_text import clean_text, cut
from tray.core.hosts.remote_sessions import (
    RemoteDocumentError,
    RemoteState,
    parse_document,
    split_remote_id,
)
from tray.core.hosts.ssh_commands import (
    HostConfig,
    answer_argv,
    dismiss_argv,
    focus_argv,
    stream_argv,
    version_argv,
)
from tray.core.hosts.ssh_failures import NOT_FOUND, SSH_ERROR, Failure, classify, short_line
from tray.remote.frames import STATE, FrameError
from tray.remote.ssh import FrameReader, prompt_fix, run_once, start_ssh
from tray.state.answer_channel import REPLY_TIMEOUT

CHECK_TIMEOUT: Final = 15.0
ACTION_TIMEOUT: Final = 15.0
# A click that selects a tmux pane there should land at once, or be given up on.
FOCUS_TIMEOUT: Final = 5.0
# The remote `tray answer` waits up to its launcher's reply time; then ssh's own start.
ANSWER_TIMEOUT: Final = REPLY_TIMEOUT + 6.0
_ANSWER_PREFIX: Final = "tray answer: "
_VERSION_LINE: Final = re.compile(r"tray (\S{1,40})")


def diagnose_host(
    host: HostConfig,
    timeout: float = CHECK_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
) -> Check:
    """One ``REMOTE_COMMAND --version`` over ssh, with ``timeout``, for `tray doctor`: ok
    with the version found ("tray 0.1.0 on me@devbox"), else warn with what went wrong."""
    name = f"host {host.name}"
    result = run_once(host, version_argv(host, ssh), timeout, environ)
    if isinstance(result, Failure):
        if result.kind == "timeout":
            return Check(
                "warn",
                name,
                f"no answer from {host.destination} within {timeout:g} s",
                prompt_fix(host.destination),
            )
        return Check("warn", name, result.reason, result.fix)
    code, out, err = result
    if code == 0:
        for line in reversed(out.splitlines()):
            match = _VERSION_LINE.fullmatch(line.strip())
            if match is not None:
                version = clean_text(match.group(1))
                return Check("ok", name, f"tray {version} on {host.destination}")
        command = cut(clean_text(host.remote_command), 60)
        return Check(
            "warn",
            name,
            f"'{command} --version' on {host.name} did not print a tray version",
            "point remote_command at the tray program there",
        )
    failure = classify(host, err, code)
    return Check("warn", name, failure.reason, failure.fix)


def _run_words(
    host: HostConfig,
    build: Callable[[], list[str]],
    timeout: float,
    environ: Mapping[str, str] | None,
) -> tuple[int | None, str] | str:
    """Run the argv that ``build`` makes over ssh: its exit code and stderr, or the line
    saying why it did not run (``build`` raises ValueError for a word it refuses, before
    anything runs)."""
    try:
        argv = build()
    except ValueError as error:
        return short_line(str(error), 120)
    result = run_once(host, argv, timeout, environ)
    if isinstance(result, Failure):
        return result.line()
    code, _, err = result
    return code, err


def _stderr_lines(err: str) -> list[str]:
    """A remote command's own complaints, each cut to one safe line."""
    return [short_line(line) for line in err.splitlines() if clean_text(line)]


def dismiss_remote(
    host: HostConfig,
    session_ids: Sequence[str],
    timeout: float = ACTION_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
) -> tuple[bool, str]:
    """``tray dismiss ID...`` on ``host`` for its sessions, ids as the app has them
    (``host:devbox/<id>``) or as the remote does; every id is checked before use."""
    remote_ids: list[str] = []
    for session_id in session_ids:
        parts = split_remote_id(session_id)
        if parts is not None:
            if parts[0] != host.name:
                return False, f"{short_line(session_id, 80)} is not a session of {host.name}"
            remote_ids.append(parts[1])
        else:
            remote_ids.append(session_id)
    outcome = _run_words(host, lambda: dismiss_argv(host, remote_ids, ssh), timeout, environ)
    if isinstance(outcome, str):
        return False, outcome
    code, err = outcome
    if code == 0:
        return True, f"dismissed on {host.name}"
    if code == 1:
        # tray dismiss's own answer: "still running", "no session ...".
        lines = _stderr_lines(err)
        return False, lines[-1] if lines else f"dismiss failed on {host.name}"
    return False, classify(host, err, code).line()


def focus_remote(
    host: HostConfig,
    pane: str,
    socket: str,
    timeout: float = FOCUS_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
) -> tuple[bool, str]:
    """Select a remote session's tmux window and pane on ``host``; whether it worked,
    and one line saying so. ``pane`` and ``socket`` are checked before use."""
    outcome = _run_words(host, lambda: focus_argv(host, pane, socket, ssh), timeout, environ)
    if isinstance(outcome, str):
        return False, outcome
    code, err = outcome
    if code == 0:
        return True, f"selected tmux pane {pane} on {host.name}"
    if code == SSH_ERROR:
        return False, classify(host, err, code).line()
    # tmux's own complaint: "can't find pane: %9", "no server running on ...".
    lines = _stderr_lines(err)
    if code == NOT_FOUND and not lines:
        return False, f"tmux is not installed on {host.name}"
    return False, lines[0] if lines else f"tmux failed on {host.name} with status {code}"


def answer_remote(  # noqa: PLR0917 - the command's own words, in their order
    host: HostConfig,
    session_id: str,
    answer: str,
    record: str | None,
    since: float | None,
    timeout: float = ANSWER_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
) -> tuple[bool, str]:
    """``tray answer`` on ``host`` for one of its sessions (its id as the app has it,
    ``host:devbox/<id>``, or as the remote does). True when the keys reached the program;
    else False and one line: the remote's own reason ("api: the prompt has changed; not
    answered"), or why ssh failed. Every word is checked before ssh runs."""
    parts = split_remote_id(session_id)
    if parts is not None:
        if parts[0] != host.name:
            return False, f"{short_line(session_id, 80)} is not a session of {host.name}"
        session_id = parts[1]
    outcome = _run_words(
        host, lambda: answer_argv(host, session_id, answer, record, since, ssh), timeout, environ
    )
    if isinstance(outcome, str):
        return False, outcome
    code, err = outcome
    if code == 0:
        return True, f"answered on {host.name}"
    if code == 1:
        # tray answer's own refusal, one line: "tray answer: api: the prompt ...".
        lines = _stderr_lines(err)
        if not lines:
            return False, f"not answered on {host.name}"
        return False, lines[-1].removeprefix(_ANSWER_PREFIX)
    return False, classify(host, err, code).line()


class RemoteError(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.line())
        self.failure = failure


def fetch_state(
    host: HostConfig,
    timeout: float = CHECK_TIMEOUT,
    *,
    environ: Mapping[str, str] | None = None,
    ssh: str = "ssh",
    clock: Callable[[], float] = time.time,
) -> RemoteState:
    """The host's sessions once, for `tray status --host`: the stream's first document.

    Raises :class:`RemoteError` with the reason and the fix when there is none in time.
    """
    started = start_ssh(stream_argv(host, ssh), environ)
    if isinstance(started, Failure):
        raise RemoteError(started)
    deadline = time.monotonic() + timeout
    reader = FrameReader(host)
    failure: Failure | None = None
    state: RemoteState | None = None
    try:
        while state is None and failure is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                failure = Failure(
                    "timeout",
                    f"no sessions from {host.name} within {timeout:g} s",
                    prompt_fix(host.destination),
                )
                break
            data = started.read(remaining)
            if data is None:
                break
            for frame in reader.feed(data):
                if frame.kind != STATE:
                    continue
                try:
                    state = parse_document(host.name, frame.json(), clock())
                except (FrameError, RemoteDocumentError) as error:
                    failure = Failure("other", f"{host.name} sent a bad status document: {error}")
                break
            failure = failure or reader.failure
    finally:
        if state is not None or failure is not None:
            started.terminate()
        # After the end of its output, ssh is left to exit by itself: its status and
        # last words are what explain the failure.
        code, stderr = started.finish(1.0)
    if state is not None:
        return state
    raise RemoteError(failure or classify(host, stderr, code))


__all__ = [
    "RemoteError",
    "answer_remote",
    "diagnose_host",
    "dismiss_remote",
    "fetch_state",
    "focus_remote",
]
