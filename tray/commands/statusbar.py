"""``tray status --format waybar|tmux [--watch]``: the tray's summary as one status-bar line.

The line comes from the same :func:`~tray.app.overview.build_overview` as the tray icon,
with the tray's own "seen" marks, so the bar and the icon always agree.

The symbols form a small fixed set, one per icon state; ``calm`` shows nothing, so a bar
hides the module when nothing needs you:

====================  =======  ====  ===========
state                 waybar   tmux  tmux colour
====================  =======  ====  ===========
blocked (needs you)   ⚠ N      ! N   yellow
error (unseen)        ✗ N      x N   red
working               ● N      * N   cyan
done (unseen)         ✓ N      + N   green
====================  =======  ====  ===========
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Final, TextIO

from tray.app.memory import FILE_NAME, load_memory
from tray.app.overview import FINISHED, IconState, Overview, StateSince, build_overview
from tray.app.watcher import DirectoryWatcher
from tray.config import load_config
from tray.environment import Environment
from tray.session import Session, status_document
from tray.store import Problem, StateStore, expired
from tray.text import clean_text, cut, escape_markup

# A SIGKILLed launcher writes nothing, so only a re-read finds it dead; the tray app
# re-reads as often.
LIVENESS_PERIOD: Final = 2.0

BAR_STYLES: Final = ("waybar", "tmux")
WATCH_STYLES: Final = ("json", "waybar", "tmux")

SYMBOLS: Final[dict[IconState, str]] = {
    "blocked": "\u26a0",  # ⚠
    "error": "\u2717",  # ✗
    "working": "\u25cf",  # ●
    "done": "\u2713",  # ✓
}
# tmux measures ambiguous-width symbols differently from many terminals, so plain ASCII.
ASCII_SYMBOLS: Final[dict[IconState, str]] = {
    "blocked": "!",
    "error": "x",
    "working": "*",
    "done": "+",
}
TMUX_COLOURS: Final[dict[IconState, str]] = {
    "blocked": "yellow",
    "error": "red",
    "working": "cyan",
    "done": "green",
}

TOOLTIP_ROWS: Final = 10
TOOLTIP_WIDTH: Final = 100


# Pure rendering.


def state_count(overview: Overview) -> int:
    """How many sessions are in the icon's state, counted as the icon counts them."""
    state = overview.icon_state
    if state == "calm":
        return 0
    return sum(
        1 for row in overview.rows if row.state == state and (row.unseen or state not in FINISHED)
    )


def short_text(overview: Overview, symbols: dict[IconState, str]) -> str:
    """ "⚠ 2": the most urgent state's symbol and how many sessions are in it; calm is ""."""
    state = overview.icon_state
    if state == "calm":
        return ""
    return f"{symbols[state]} {state_count(overview)}"


def tooltip_text(overview: Overview) -> str:
    """The tray's tooltip, then a line per session, as Pango markup (waybar reads markup)."""
    lines = [overview.tooltip]
    shown = [row for row in overview.rows if row.state is not None]
    for row in shown[:TOOLTIP_ROWS]:
        state = f"{row.state} ({row.kind})" if row.kind else str(row.state)
        line = f"{row.label}: {state}"
        if row.msg:
            line += f" \u2014 {row.msg}"
        lines.append(cut(clean_text(line), TOOLTIP_WIDTH))
    if len(shown) > TOOLTIP_ROWS:
        lines.append(f"\u2026 and {len(shown) - TOOLTIP_ROWS} more")
    return "\n".join(escape_markup(line) for line in lines)


def waybar_line(overview: Overview) -> str:
    """One JSON object for a waybar custom module with ``"return-type": "json"``."""
    state = overview.icon_state
    return json.dumps(
        {
            "text": short_text(overview, SYMBOLS),
            "tooltip": tooltip_text(overview),
            "class": state,
            "alt": state,
        }
    )


def tmux_line(overview: Overview) -> str:
    """A tmux status-line string.

    tmux expands ``#[...]`` and ``#(...)`` in a job's output, so no text from a session
    is ever included: only a fixed symbol, a count and a fixed colour.
    """
    state = overview.icon_state
    if state == "calm":
        return ""
    return f"#[fg={TMUX_COLOURS[state]}]{short_text(overview, ASCII_SYMBOLS)}#[default]"


def render(style: str, overview: Overview, sessions: Sequence[Session]) -> str:
    if style == "waybar":
        return waybar_line(overview)
    if style == "tmux":
        return tmux_line(overview)
    if style == "json":
        return json.dumps(status_document(sessions))
    raise ValueError(f"unknown status bar style {style!r}")


# Reading the state directory as the tray does.


class _OnceFilter(logging.Filter):
    """A watch re-reads every few seconds; an unreadable file is worth one warning."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self._seen:
            return False
        self._seen.add(message)
        return True


def _stderr_log(stream: TextIO) -> logging.Logger:
    log = logging.getLogger("tray.commands.statusbar")
    log.propagate = False
    log.handlers.clear()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("tray status: %(message)s"))
    handler.addFilter(_OnceFilter())
    log.addHandler(handler)
    return log


@dataclass
class BarSource:
    """Sessions and the tray's memory, read the way the tray app reads them."""

    store: StateStore
    memory_path: Path
    keep_ended: float
    log: logging.Logger
    since: StateSince = field(default_factory=StateSince)

    def read(self, now: float) -> tuple[list[Session], Overview, list[Problem]]:
        sessions, problems = self.store.read_all(now)
        sessions = [s for s in sessions if not expired(s, now, self.keep_ended)]
        memory = load_memory(self.memory_path, self.log)
        shown = [s for s in sessions if s.id not in memory.dismissed]
        since = self.since.update(shown, now)
        return sessions, build_overview(shown, memory, since, now), problems

    def report(self, problems: Sequence[Problem]) -> bool:
        """Warn about unreadable files; True when the directory itself is unreadable."""
        broken = False
        for problem in problems:
            path = clean_text(str(problem.path))
            reason = clean_text(problem.reason)
            if problem.path == self.store.directory:
                self.log.warning("cannot read %s: %s", path, reason)
                broken = True
            else:
                self.log.warning("skipping %s: %s", path, reason)
        return broken


# Watching.


class _Stopped(Exception):  # noqa: N818 - a request to stop, not an error
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop_on_signal(signum: int, frame: FrameType | None) -> None:
    # A second signal during the clean-up must not interrupt it.
    for other in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(other, signal.SIG_IGN)
    raise _Stopped(signum)


@contextmanager
def _stop_signals() -> Iterator[None]:
    """SIGTERM, SIGHUP and Ctrl-C end a watch as a normal stop, without a traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {signum: signal.signal(signum, _stop_on_signal) for signum in stops}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def reader_gone(fd: int) -> bool:
    """Whether the far end of ``fd`` (a pipe to waybar, say) has been closed.

    Checked on the liveness timer, so a watch whose reader went away ends within a
    period even when nothing changes and nothing is written.
    """
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    try:
        events = poller.poll(0)
    except OSError:
        return False
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in events)


def watch(
    line: Callable[[], str],
    directory: Path,
    emit: Callable[[str], None],
    *,
    period: float,
    log: logging.Logger,
    stopping: Callable[[], bool],
) -> None:
    """Emit ``line()`` now and again whenever it changes, until ``stopping()`` says so.

    It wakes on file events in ``directory`` and every ``period`` seconds, and never
    emits the same line twice in a row. A directory that does not exist yet is watched
    from the moment it appears.
    """
    changed = threading.Event()
    watcher = DirectoryWatcher(directory, changed, log)
    last: str | None = None
    tried_watching = False
    try:
        while not stopping():
            if not tried_watching and directory.is_dir():
                tried_watching = True
                watcher.start()
            # Cleared before reading: a change during the read wakes the next round.
            changed.clear()
            current = line()
            if current != last:
                emit(current)
                last = current
            changed.wait(period)
    finally:
        watcher.stop()


# The command.


def show(style: str, watching: bool, env: Environment) -> int:
    """Print the status line once, or keep printing it as it changes."""
    log = _stderr_log(env.stderr)
    state_dir = env.state_dir()
    source = BarSource(
        store=StateStore(state_dir),
        memory_path=state_dir / FILE_NAME,
        keep_ended=load_config(env).sessions.keep_ended,
        log=log,
    )

    def current_line() -> str:
        sessions, overview, problems = source.read(env.clock())
        source.report(problems)
        return render(style, overview, sessions)

    if not watching:
        sessions, overview, problems = source.read(env.clock())
        broken = source.report(problems)
        env.stdout.write(render(style, overview, sessions) + "\n")
        return 1 if broken else 0

    def emit(text: str) -> None:
        env.stdout.write(text + "\n")
        env.stdout.flush()

    try:
        with _stop_signals():
            watch(
                current_line,
                state_dir,
                emit,
                period=LIVENESS_PERIOD,
                log=log,
                stopping=lambda: reader_gone(env.stdout_fd),
            )
    except _Stopped as stop:
        return 130 if stop.signum == signal.SIGINT else 0
    except BrokenPipeError:
        pass
    # Here the reader went away, which ends a watch as a normal stop.
    _discard_output(env)
    return 0


def _discard_output(env: Environment) -> None:
    # Whatever is still buffered can go nowhere; pointing the descriptor at /dev/null
    # lets the flushes at exit succeed instead of failing again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, env.stdout_fd)
    finally:
        os.close(devnull)
    with suppress(OSError, ValueError):
        env.stdout.flush()
