"""The remote end: ``tray status --watch --format jsonl``, the sessions as framed lines.

It prints the whole ``tray status --json`` document at once and again on every change,
woken by the same directory watcher as ``tray status --watch``, and a heartbeat when
nothing changed for a while, so the reader can tell a quiet host from a dead link.

It lives exactly as long as the ssh session that started it: it stops when its stdin
reaches end of file (the link closed it, or sshd went away) or when a write fails.

Its stdin carries one kind of request, an answer to a permission prompt
(:class:`~tray.remote.frames.AnswerRequest`), and nothing else is read there: a line
that is not a valid request is skipped without a reply. A request only names the prompt;
it goes to the session's own launcher, over the answer socket whose path comes from this
host's state directory and the checked session id, exactly as ``tray answer`` does it
here, and the launcher decides whether to type. One request is carried out at a time,
on a thread of its own, so the launcher's wait never holds up the heartbeat.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, Final

from tray.base.exit_codes import FAILURE, INTERRUPTED, SUCCESS, USAGE_ERROR
from tray.core.answers.gate import DEFAULT_SETTINGS, ENDED, AnswerSettings
from tray.core.session.model import Session, status_document
from tray.remote.frames import (
    ANSWERS_VERSION,
    BEAT,
    MAX_REQUEST,
    STATE,
    TAKES_ANSWERS,
    AnswerRequest,
    LineSplitter,
    encode_answer_reply,
    encode_frame,
    parse_answer_request,
)
from tray.state import answer_channel
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.logs import discard_output, stderr_log
from tray.state.session_feed import LIVENESS_PERIOD, ChangeSignal, SessionFeed, emit_on_change
from tray.state.store import StateStore

HEARTBEAT: Final = 15.0
# A launcher rewrites its file up to ten times a second; many sessions together would
# otherwise send a frame per write. The first change after a quiet spell goes at once.
MIN_INTERVAL: Final = 0.1


def stream_document(
    sessions: list[Session], answering: AnswerSettings = DEFAULT_SETTINGS
) -> dict[str, Any]:
    """``tray status --json``'s document, plus the fields per session the tray uses:
    whether the name was given (for labels), the last keystroke (for typing grace), and
    the tmux pane and socket the session runs in, when it does (for Focus over ssh).
    ``answering`` is this host's ``[answer]``: its launchers are the ones that type.
    It also says which answer requests this stream takes on its stdin."""
    document = status_document(sessions, answering)
    document[TAKES_ANSWERS] = ANSWERS_VERSION
    for entry, session in zip(document["sessions"], sessions, strict=True):
        entry["name_given"] = session.name_given
        entry["last_input_at"] = session.last_input_at
        tmux = tmux_facts(session.terminal)
        if tmux is not None:
            entry["tmux"] = tmux
    return document


def tmux_facts(terminal: Mapping[str, str]) -> dict[str, str] | None:
    """``{"pane": TMUX_PANE, "socket": <TMUX's socket path>}``, or None outside tmux.

    Sent as recorded: the reader decides what it trusts.
    """
    pane = terminal.get("TMUX_PANE")
    tmux = terminal.get("TMUX")
    if not pane or not tmux:
        return None
    # TMUX is "socket,pid,session"; the socket path itself may hold commas.
    socket = tmux.rsplit(",", 2)[0]
    return {"pane": pane, "socket": socket} if socket else None


# Requests waiting behind the one being carried out; more are refused at once.
MAX_WAITING: Final = 4
BUSY: Final = "another answer is under way"
GONE: Final = "the session is gone"


def answer_here(directory: Path, request: AnswerRequest) -> tuple[bool, str]:
    """Hand one checked request to its session's launcher, as ``tray answer`` would;
    True when the keys went in, else False and the reason. Blocks for as long as the
    launcher holds the answer (its reply timeout at most)."""
    outcome, reason, _ = answer_channel.answer_stored_session(
        directory, request.session, request.answer, request.record, request.since
    )
    if outcome == answer_channel.ANSWERED:
        return True, ""
    # Short words, for the other end's line: the read error stays on this host.
    return False, _WORDS.get(outcome, reason)


_WORDS: Final = {
    answer_channel.NOT_AN_ID: GONE,
    answer_channel.NO_SESSION: GONE,
    answer_channel.UNREADABLE: "cannot read its state",
    answer_channel.HAS_ENDED: ENDED,
}


class Answerer:
    """Carries out answer requests one at a time on its own thread, and writes each
    outcome as an ``answered`` frame through ``send``."""

    def __init__(
        self,
        send: Callable[[bytes], None],
        answer: Callable[[AnswerRequest], tuple[bool, str]],
    ) -> None:
        self._send = send
        self._answer = answer
        self._waiting: queue.Queue[AnswerRequest | None] = queue.Queue(MAX_WAITING)
        self._thread = threading.Thread(target=self._run, name="tray-answer", daemon=True)
        self._thread.start()

    def offer(self, request: AnswerRequest) -> None:
        try:
            self._waiting.put_nowait(request)
        except queue.Full:
            self._send(encode_answer_reply(request.id, False, BUSY))

    def close(self) -> None:
        # A request under way still finishes; the daemon thread never holds up the exit.
        with contextlib.suppress(queue.Full):
            self._waiting.put_nowait(None)

    def _run(self) -> None:
        while (request := self._waiting.get()) is not None:
            try:
                ok, reason = self._answer(request)
            except Exception as error:  # one bad request must not end the answering
                ok, reason = False, f"internal error: {type(error).__name__}"
            self._send(encode_answer_reply(request.id, ok, "" if ok else reason))


def read_requests(fd: int, on_request: Callable[[AnswerRequest], None]) -> None:
    """Read ``fd`` to its end, handing each valid request on; every other line, and any
    line longer than a request can be, is skipped."""
    splitter = LineSplitter(MAX_REQUEST)
    try:
        while data := os.read(fd, 65536):
            for line in splitter.feed(data):
                request = parse_answer_request(line)
                if request is not None:
                    on_request(request)
    except OSError:
        pass


def _watch_stdin(
    fd: int, answerer: Answerer, closed: threading.Event, wake: threading.Event
) -> None:
    # Its end is what ends the stream.
    read_requests(fd, answerer.offer)
    answerer.close()
    closed.set()
    wake.set()


def run_stream(
    env: Environment,
    stdin: IO[bytes],
    stdout: IO[bytes],
    *,
    heartbeat: float = HEARTBEAT,
    liveness: float = LIVENESS_PERIOD,
    min_interval: float = MIN_INTERVAL,
) -> int:
    """Write frames to ``stdout`` until ``stdin`` ends or ``stdout`` breaks; returns 0.

    Configuration errors (the remote's own config.toml) propagate as they do for any
    command, so the caller reports them as one line on stderr.
    """
    log = stderr_log("tray.remote.stream", env.stderr, "tray status")
    directory = env.state_dir()
    config = load_config(env)
    reader = SessionFeed(StateStore(directory), config.sessions.keep_ended, log)
    changes = ChangeSignal(directory, log)
    closed = threading.Event()
    # The answer thread writes too; a frame goes out whole or not at all.
    writing = threading.Lock()

    def send(frame: bytes) -> None:
        with writing:
            try:
                stdout.write(frame)
                stdout.flush()
            except (OSError, ValueError):
                # EPIPE and its kin: whoever read the stream is gone, which ends it.
                closed.set()

    answerer = Answerer(send, lambda request: answer_here(directory, request))
    threading.Thread(
        target=_watch_stdin,
        args=(stdin.fileno(), answerer, closed, changes.changed),
        daemon=True,
    ).start()
    latest: dict[str, Any] = {}

    def line() -> str:
        latest["document"] = stream_document(reader.current(env.clock()), config.answer)
        return json.dumps(latest["document"], sort_keys=True)

    def write(kind: str, payload: dict[str, Any]) -> None:
        send(encode_frame(kind, payload))

    # The first round runs even with stdin already at its end (`< /dev/null`): that
    # prints the state once, as `tray status --format json` would.
    emit_on_change(
        line,
        lambda _text: write(STATE, latest["document"]),
        changes,
        period=liveness,
        stopping=closed.is_set,
        beat=lambda: write(BEAT, {"at": env.clock()}),
        beat_every=heartbeat,
        min_interval=min_interval,
        pause=closed.wait,
    )
    return SUCCESS


def main(argv: list[str] | None = None) -> None:
    """``python -m tray.remote.stream``: the stream without the ``tray`` command line.

    It takes the words ``status --watch --format jsonl`` too, so a remote command line
    built for ``tray`` works with it.
    """
    words = sys.argv[1:] if argv is None else argv
    if words not in ([], ["status", "--watch", "--format", "jsonl"]):
        sys.stderr.write("usage: python -m tray.remote.stream [status --watch --format jsonl]\n")
        sys.exit(USAGE_ERROR)
    try:
        status = run_stream(Environment(), sys.stdin.buffer, sys.stdout.buffer)
    except KeyboardInterrupt:
        status = INTERRUPTED
    except Exception as error:  # a remote's failure is one line on the link's stderr
        sys.stderr.write(f"tray status: {' '.join(str(error).split())}\n")
        status = FAILURE
    # The reader may be gone; nothing left to flush must turn into an error at exit.
    discard_output(sys.stdout.fileno())
    sys.exit(status)


if __name__ == "__main__":
    main()
