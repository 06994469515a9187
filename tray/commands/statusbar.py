"""``tray status --format waybar|tmux [--watch]``: the tray's summary as one status-bar line.

The line comes from the same :func:`~tray.core.view.overview.build_overview` as the tray icon,
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
import select
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Final

from tray.base.exit_codes import INTERRUPTED
from tray.base.safe_text import clean_text, cut, escape_markup
from tray.core.answers.gate import DEFAULT_SETTINGS, AnswerSettings
from tray.core.session.model import Session, status_document
from tray.core.view.overview import IconState, Overview, StateSince, build_overview
from tray.protocol.state import FINISHED, State
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.logs import discard_output, stderr_log
from tray.state.marks_file import FILE_NAME, load_marks
from tray.state.session_feed import LIVENESS_PERIOD, ChangeSignal, SessionFeed, emit_on_change
from tray.state.store import Problem, StateStore

SYMBOLS: Final[dict[IconState, str]] = {
    State.BLOCKED: "\u26a0",  # ⚠
    State.ERROR: "\u2717",  # ✗
    State.WORKING: "\u25cf",  # ●
    State.DONE: "\u2713",  # ✓
}
# tmux measures ambiguous-width symbols differently from many terminals, so plain ASCII.
ASCII_SYMBOLS: Final[dict[IconState, str]] = {
    State.BLOCKED: "!",
    State.ERROR: "x",
    State.WORKING: "*",
    State.DONE: "+",
}
TMUX_COLOURS: Final[dict[IconState, str]] = {
    State.BLOCKED: "yellow",
    State.ERROR: "red",
    State.WORKING: "cyan",
    State.DONE: "green",
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


def render(
    style: str,
    overview: Overview,
    sessions: Sequence[Session],
    answering: AnswerSettings = DEFAULT_SETTINGS,
) -> str:
    if style == "waybar":
        return waybar_line(overview)
    if style == "tmux":
        return tmux_line(overview)
    if style == "json":
        return json.dumps(status_document(sessions, answering))
    raise ValueError(f"unknown status bar style {style!r}")


# Reading the state directory as the tray does.


@dataclass
class BarSource:
    """Sessions and the tray's memory, read the way the tray app reads them."""

    sessions: SessionFeed
    memory_path: Path
    log: logging.Logger
    since: StateSince = field(default_factory=StateSince)

    def read(self, now: float) -> tuple[list[Session], Overview, list[Problem]]:
        sessions, problems = self.sessions.read(now)
        memory, mutes = load_marks(self.memory_path, self.log)
        shown = [s for s in sessions if s.id not in memory.dismissed]
        since = self.since.update(shown, now)
        return sessions, build_overview(shown, memory, since, now, mutes=mutes), problems

    def report(self, problems: Sequence[Problem]) -> bool:
        """Warn about unreadable files; True when the directory itself is unreadable."""
        return self.sessions.report(problems)


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


# The command.


def show(style: str, watching: bool, env: Environment) -> int:
    """Print the status line once, or keep printing it as it changes."""
    log = stderr_log("tray.commands.statusbar", env.stderr, "tray status")
    state_dir = env.state_dir()
    config = load_config(env)
    source = BarSource(
        sessions=SessionFeed(StateStore(state_dir), config.sessions.keep_ended, log),
        memory_path=state_dir / FILE_NAME,
        log=log,
    )

    def current_line() -> str:
        sessions, overview, problems = source.read(env.clock())
        source.report(problems)
        return render(style, overview, sessions, config.answer)

    if not watching:
        sessions, overview, problems = source.read(env.clock())
        broken = source.report(problems)
        env.stdout.write(render(style, overview, sessions, config.answer) + "\n")
        return 1 if broken else 0

    def emit(text: str) -> None:
        env.stdout.write(text + "\n")
        env.stdout.flush()

    try:
        with _stop_signals():
            emit_on_change(
                current_line,
                emit,
                ChangeSignal(state_dir, log),
                period=LIVENESS_PERIOD,
                stopping=lambda: reader_gone(env.stdout_fd),
            )
    except _Stopped as stop:
        return INTERRUPTED if stop.signum == signal.SIGINT else 0
    except BrokenPipeError:
        pass
    # Here the reader went away, which ends a watch as a normal stop.
    discard_output(env.stdout_fd)
    with suppress(OSError, ValueError):
        env.stdout.flush()
    return 0
