"""The remote end: ``tray status --watch --format jsonl``, the sessions as framed lines.

It prints the whole ``tray status --json`` document at once and again on every change,
woken by the same directory watcher as ``tray status --watch``, and a heartbeat when
nothing changed for a while, so the reader can tell a quiet host from a dead link.

It lives exactly as long as the ssh session that started it: it stops when its stdin
reaches end of file (the link closed it, or sshd went away) or when a write fails.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from typing import IO, Any, Final

from tray.app.watcher import DirectoryWatcher
from tray.config import load_config
from tray.environment import Environment
from tray.remote.frames import BEAT, STATE, encode_frame
from tray.session import Session, status_document
from tray.store import StateStore, expired
from tray.text import clean_text

HEARTBEAT: Final = 15.0
# A SIGKILLed launcher writes nothing; only a re-read finds it dead, as `--watch` does.
LIVENESS_PERIOD: Final = 2.0
# A launcher rewrites its file up to ten times a second; many sessions together would
# otherwise send a frame per write. The first change after a quiet spell goes at once.
MIN_INTERVAL: Final = 0.1


def stream_document(sessions: list[Session]) -> dict[str, Any]:
    """``tray status --json``'s document, plus the fields per session the tray uses:
    whether the name was given (for labels), the last keystroke (for typing grace), and
    the tmux pane and socket the session runs in, when it does (for Focus over ssh)."""
    document = status_document(sessions)
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


class _Reader:
    """Reads the state directory as `tray status` does, warning once per problem."""

    def __init__(self, env: Environment, log: logging.Logger) -> None:
        self._env = env
        self._store = StateStore(env.state_dir())
        self._keep_ended = load_config(env).sessions.keep_ended
        self._log = log
        self._warned: set[str] = set()

    def document(self) -> dict[str, Any]:
        now = self._env.clock()
        sessions, problems = self._store.read_all(now)
        for problem in problems:
            message = f"skipping {problem.path.name}: {problem.reason}"
            if problem.path == self._store.directory:
                message = f"cannot read {problem.path}: {problem.reason}"
            if message not in self._warned:
                self._warned.add(message)
                self._log.warning("%s", clean_text(message))
        live = [s for s in sessions if not expired(s, now, self._keep_ended)]
        return stream_document(live)


def _watch_stdin(fd: int, closed: threading.Event, wake: threading.Event) -> None:
    # Nothing is read from stdin; it is there so that its end ends the stream.
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass
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
    log = _stderr_log(env)
    reader = _Reader(env, log)
    directory = env.state_dir()
    changed = threading.Event()
    closed = threading.Event()
    threading.Thread(
        target=_watch_stdin, args=(stdin.fileno(), closed, changed), daemon=True
    ).start()
    watcher = DirectoryWatcher(directory, changed, log)
    watching = False
    last_text: str | None = None
    last_write = -float("inf")
    monotonic = time.monotonic

    def write(kind: str, payload: dict[str, Any]) -> None:
        nonlocal last_write
        try:
            stdout.write(encode_frame(kind, payload))
            stdout.flush()
        except OSError:
            # EPIPE and its kin: whoever read the stream is gone, which ends it.
            closed.set()
        last_write = monotonic()

    try:
        # The first round runs even with stdin already at its end (`< /dev/null`): that
        # prints the state once, as `tray status --format json` would.
        while True:
            if not watching and directory.is_dir():
                # Once, even when it fails: the watcher then logs why, and the
                # liveness re-read still finds every change, only later.
                watching = True
                watcher.start()
            # Cleared before reading: a change during the read wakes the next round.
            changed.clear()
            document = reader.document()
            text = json.dumps(document, sort_keys=True)
            if text != last_text:
                write(STATE, document)
                last_text = text
            elif monotonic() - last_write >= heartbeat:
                write(BEAT, {"at": env.clock()})
            if closed.is_set():
                break
            wait = min(liveness, max(0.0, last_write + heartbeat - monotonic()))
            if changed.wait(wait) and not closed.is_set():
                _pause(closed, last_write + min_interval - monotonic())
            if closed.is_set():
                break
    finally:
        watcher.stop()
    return 0


def _pause(closed: threading.Event, seconds: float) -> None:
    if seconds > 0:
        closed.wait(seconds)


def _stderr_log(env: Environment) -> logging.Logger:
    log = logging.getLogger("tray.remote.stream")
    log.propagate = False
    log.handlers.clear()
    handler = logging.StreamHandler(env.stderr)
    handler.setFormatter(logging.Formatter("tray status: %(message)s"))
    log.addHandler(handler)
    return log


def main(argv: list[str] | None = None) -> None:
    """``python -m tray.remote.stream``: the stream without the ``tray`` command line.

    It takes the words ``status --watch --format jsonl`` too, so a remote command line
    built for ``tray`` works with it.
    """
    words = sys.argv[1:] if argv is None else argv
    if words not in ([], ["status", "--watch", "--format", "jsonl"]):
        sys.stderr.write("usage: python -m tray.remote.stream [status --watch --format jsonl]\n")
        sys.exit(2)
    try:
        status = run_stream(Environment(), sys.stdin.buffer, sys.stdout.buffer)
    except KeyboardInterrupt:
        status = 130
    except Exception as error:  # a remote's failure is one line on the link's stderr
        sys.stderr.write(f"tray status: {' '.join(str(error).split())}\n")
        status = 1
    # The reader may be gone; nothing left to flush must turn into an error at exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except OSError:
        pass
    sys.exit(status)


if __name__ == "__main__":
    main()
