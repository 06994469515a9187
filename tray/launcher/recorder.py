"""What the command reported, kept as the session's state file, written sparingly.

A command may send thousands of reports a second and the user types all the time;
the state file is rewritten at most every WRITE_INTERVAL for reports, focus changes and
requests for attention, and only every INPUT_WRITE_INTERVAL when nothing but the time of
the last keystroke changed. Reports that change nothing a reader can see cause no write.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tray.base.memo import Memo
from tray.core.session.model import Answered, Session
from tray.launcher.terminal_signals import TerminalSignals
from tray.protocol.output_events import (
    Bell,
    CursorQuery,
    Event,
    FocusReporting,
    FullReset,
    Osc,
    PromptStart,
    Query,
    RawReport,
    Title,
)
from tray.protocol.records import Record, RecordTable
from tray.protocol.report import Report, from_hook, parse_body
from tray.protocol.state import State
from tray.state.logs import LauncherLog
from tray.state.store import StateStore

if TYPE_CHECKING:
    from tray.core.agents.tracker import AgentTracker

WRITE_INTERVAL = 0.1
INPUT_WRITE_INTERVAL = 2.0
# Input that ended inside what may be a terminal's reply is settled after this pause:
# a lone ESC is then the Escape key.
INPUT_PAUSE = 0.05
# Reports parsed, remembered by their bytes: a program that reports progress sends the
# same few reports again and again (thousands a second), and parsing each anew was most
# of what they cost the launcher.
REPORTS_KEPT = 256
# The events TerminalSignals reads, and the recorder only hands on: titles, notifications,
# bells, focus reporting, cursor queries. Looked for right after reports, as they are most
# of the other events a program writes (an agent's title, at every change of its spinner
# or its state).
SIGNALS = (Title, Osc, Bell, FocusReporting, CursorQuery)


def _visible(session: Session) -> dict[str, Any]:
    view = session.to_public()
    del view["updated_at"]
    return view


class SessionRecorder:
    """The session's records and the pacing of its state file writes.

    Deadlines are on the monotonic clock; the times recorded in the session are on the
    environment's (wall) clock. ``on_write`` sees every session written, with the
    monotonic time of that write.
    """

    def __init__(
        self,
        session: Session,
        clock: Callable[[], float],
        log: LauncherLog,
        watch: TerminalSignals,
        *,
        store: StateStore | None = None,
        on_write: Callable[[Session, float], None] | None = None,
    ) -> None:
        """``store`` None: nothing is written (the state directory could not be made)."""
        self.session = session
        self._watch = watch
        self._store = store
        self._log = log
        self._clock = clock
        self._on_write = on_write
        self._table = RecordTable()
        self._source = "launcher"
        self._changed_at = session.updated_at
        self._state: State | None = State.WORKING
        self._state_since = session.started_at
        self._input_pause_due: float | None = None
        self._view_dirty = False
        self._input_dirty = False
        self._last_write = -math.inf
        self._written_view: dict[str, Any] | None = None
        self._write_failed = False
        self._program_reports = False
        self._parse = Memo(parse_body, REPORTS_KEPT)

    def apply(self, events: Iterable[Event]) -> bytes:
        """Record a chunk's events; return the answers owed to the command's queries."""
        now = self._clock()
        answers = b""
        recorded = False
        others: list[Event] = []
        for event in events:
            if isinstance(event, RawReport):
                self._source = "program"
                report = self._parse[event.body]
                if self._watch.agent is not None and not self._report_counts(event.body, report):
                    continue  # a hook's, after the program has reported for itself
                if report is not None:
                    self._table.apply(report, now)
            elif isinstance(event, SIGNALS):
                # A chunk with only these schedules a write only when a reader would see a
                # change.
                others.append(event)
                continue
            elif isinstance(event, Query):
                answers += event.answer
                if event.number == 7501:  # OSC 99's query says nothing of OSC 7501
                    self._source = "program"
            elif isinstance(event, PromptStart):
                self._table.end_of_run()
            elif isinstance(event, FullReset):
                self._table.reset()
                self._watch.output((event,), now)
            recorded = True
        if others:
            watch = self._watch
            watch.output(others, now)
            if watch.changed:  # set too when the agent's rules made reports of them
                watch.changed = False
                inferred = watch.inferred
                for report in inferred:
                    self._table.apply(report, now)
                inferred.clear()
                recorded = True
        if recorded:
            self._changed_at = now
            self._view_dirty = True
            self._note_state(now)
        return answers

    def _report_counts(self, body: bytes, report: Report | None) -> bool:
        """Whether a report counts for an agent read through its rules: the agent's own
        reports outrank its hooks (``tray emit --hook`` marks theirs ``via=hook``), and
        both outrank everything else the rules read, unless its rules say its hooks do
        not. False: the report is not applied as it came."""
        agent = self._watch.agent
        assert agent is not None
        hook = from_hook(body)
        if not hook:
            self._program_reports = True
        elif self._program_reports:
            return False
        elif not agent.rules.hooks_outrank_rules:
            # Its hooks tell only some moments: a signal the tracker ranks with the rest.
            if report is not None:
                self._agent_report(agent.hooked(report))
            return False
        agent.reported(report, hook=hook)
        return True

    def watch_agent(self, agent: AgentTracker | None) -> None:
        """Read the signals of the agent the command is, through its rules."""
        self._watch.agent = agent

    def title_meanings(self) -> Mapping[bytes, object] | None:
        """What the agent's rules make of each title, for the scanner, which then reports
        a title only when its meaning changes; None when the rules read no titles."""
        return self._watch.title_meanings()

    @property
    def watches_screen(self) -> bool:
        """Whether the agent's rules read what it draws: then the proxy hands its output
        to :meth:`screen` too. False for every other command, which costs nothing."""
        agent = self._watch.agent
        return agent is not None and agent.watches_screen

    def screen(self, data: bytes) -> None:
        agent = self._watch.agent
        if agent is not None:
            self._agent_report(agent.screen(data))

    def _agent_report(self, report: Report | None) -> None:
        if report is None:
            return
        now = self._clock()
        self._table.apply(report, now)
        self._changed_at = now
        self._view_dirty = True
        self._note_state(now)

    def _note_state(self, now: float) -> None:
        """Since when the session has been in its state: the policy's settle counts from it."""
        state = self._table.state()
        if state is None and self._source == "launcher":
            state = State.WORKING
        if state != self._state:
            self._state = state
            self._state_since = now

    def input(self, data: bytes) -> None:
        """Bytes from the user's terminal: typing is worth recording, but not in a hurry;
        focus moving is worth recording soon."""
        now = self._clock()
        typed = self._watch.input(data, now)
        self._note_input(typed, now)
        if typed and self._watch.agent is not None:
            self._agent_report(self._watch.agent.answered())
        self._input_pause_due = (
            time.monotonic() + INPUT_PAUSE if self._watch.input_pending else None
        )

    @property
    def last_input_at(self) -> float | None:
        """The time of the user's own last key, paste or mouse input (never a terminal's
        reply), on the records' clock."""
        return self._watch.last_input_at

    @property
    def input_pending(self) -> bool:
        """The user's input ended inside what may be an escape sequence of theirs."""
        return self._watch.input_pending

    def records(self) -> tuple[Record, ...]:
        """The records as they stand now."""
        return tuple(self._table.records())

    def answered(self, answered: Answered) -> None:
        """The launcher typed an answer: written at once, so that the app reads the state
        that follows as the answer's, not as news."""
        self.session = replace(self.session, answered=answered)
        if self._watch.agent is not None:
            self._agent_report(self._watch.agent.answered(answered.answer))
        self._changed_at = answered.at
        self.write(self.snapshot())

    def _note_input(self, typed: bool, now: float) -> None:
        if typed:
            self._input_dirty = True
        if self._watch.changed:
            self._watch.changed = False
            self._changed_at = now
            self._view_dirty = True

    def started(self, child_pid: int) -> None:
        self.session = replace(self.session, child_pid=child_pid)
        self.write(self.snapshot())

    def finish(self, code: int | None) -> None:
        now = self._clock()
        self._table.end_of_run()
        self._watch.program_ended(now)
        session = self.snapshot().ended(code, now)
        # The launcher's own done or error is news as much as a record's would be.
        if session.state != self._state:
            session = replace(session, state_since=now)
        self.write(session)

    def snapshot(self) -> Session:
        watch = self._watch
        return replace(
            self.session,
            updated_at=self._changed_at,
            source=self._source,
            records=tuple(self._table.records()),
            last_input_at=watch.last_input_at,
            cwd=watch.cwd or self.session.cwd,
            cwd_reported=watch.cwd is not None,
            focus=watch.focus,
            focus_since=watch.focus_since,
            state_since=self._state_since,
            attention=watch.attention,
            terminal_progress=watch.terminal_progress,
        )

    def next_write(self) -> float | None:
        """When the next write (or input settling) is due (monotonic), or None."""
        due = self._input_pause_due
        if self._view_dirty:
            write = self._last_write + WRITE_INTERVAL
        elif self._input_dirty:
            write = self._last_write + INPUT_WRITE_INTERVAL
        else:
            return due
        return write if due is None else min(due, write)

    def maybe_persist(self, now: float) -> None:
        if self._input_pause_due is not None and now >= self._input_pause_due:
            self._input_pause_due = None
            wall = self._clock()
            self._note_input(self._watch.input_paused(wall), wall)
        due = self.next_write()
        if due is None or now < due:
            return
        session = self.snapshot()
        input_due = self._input_dirty and now >= self._last_write + INPUT_WRITE_INTERVAL
        if self._view_dirty and not input_due and _visible(session) == self._written_view:
            self._view_dirty = False  # reports that changed nothing anyone can see
            return
        self.write(session)

    def write(self, session: Session) -> None:
        self._view_dirty = self._input_dirty = False
        self._last_write = time.monotonic()
        self._written_view = _visible(session)
        if self._store is not None:
            try:
                self._store.write(session)
            except OSError as error:
                if not self._write_failed:
                    self._log(f"cannot write the state file: {error}")
                self._write_failed = True
        if self._on_write is not None:
            self._on_write(session, self._last_write)
