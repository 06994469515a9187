"""Pure: what a launcher learns from the bytes besides OSC 7501.

From the program's output: whether it has focus reporting on, its cursor position
queries, its bells and notifications (OSC 9, 777, 99), its progress (OSC 9;4), its working
directory (OSC 7) and its shell's commands (OSC 133, 633). From the user's terminal:
focus in and out, and which input is the user's own typing rather than a terminal's reply.

No I/O and no clock of its own: every call is given the time.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from tray.base.memo import Memo
from tray.core.session.model import ATTENTION_KEPT, Attention
from tray.protocol.output_events import (
    Bell,
    CursorQuery,
    Event,
    FocusReporting,
    FullReset,
    Osc,
    Title,
)

if TYPE_CHECKING:
    from tray.core.agents.tracker import AgentTracker
    from tray.protocol.attention import KittyAssembler, Notification, Progress
    from tray.protocol.prompt_marks import CommandTracker, PromptMark
    from tray.protocol.report import Report
    from tray.protocol.terminal_input import InputEvents, InputScanner

# A program that rings without pause is one request for attention, not thousands.
BELL_QUIET = 1.0
# The titles whose cleaned text is remembered (see AgentTracker's own memory of them).
TITLES_KEPT = 256
_SOURCES = {9: "osc9", 777: "osc777", 99: "osc99"}


class TerminalSignals:
    """Focus, typing and attention for one session; ``changed`` says a write is due."""

    def __init__(self, hostname: str, done_after: float) -> None:
        self._hostname = hostname
        # A shell command that ran at least this long is news (OSC 133); set from config.
        self.done_after = done_after
        # Made when first needed, and their modules loaded then: a command that never
        # reads a key or writes an OSC costs no start-up for them (see input and _osc).
        self._input_scanner: InputScanner | None = None
        self._kitty: KittyAssembler | None = None
        self._commands: CommandTracker | None = None
        self._attention: deque[Attention] = deque(maxlen=ATTENTION_KEPT)
        self._seq = 0
        self._last_bell = -float("inf")
        self.focus = "unknown"
        self.focus_since: float | None = None
        self.last_input_at: float | None = None
        self.cwd: str | None = None
        self.terminal_progress: int | None = None
        # The agent's rules, when the command is an agent tray knows that speaks no OSC
        # 7501: its titles, notifications and bells become reports, left in ``inferred``
        # for the recorder to apply.
        self.agent: AgentTracker | None = None
        self.inferred: list[Report] = []
        self._title_text = Memo(_clean_title, TITLES_KEPT)
        # Set by anything a reader of the state file should see soon; typing alone is not.
        self.changed = False

    def title_meanings(self) -> Mapping[bytes, object] | None:
        """What the agent's rules make of each title, by the bytes the scanner finds; None
        when they read no titles. The scanner then reports a title only when its meaning
        changes: the frames of a spinner no rule reads are not each an event."""
        agent = self.agent
        if agent is None or not agent.rules.titles:
            return None
        title_text = self._title_text
        return Memo(lambda payload: agent.title_meaning(title_text[payload]), TITLES_KEPT)

    @property
    def attention(self) -> tuple[Attention, ...]:
        return tuple(self._attention)

    @property
    def input_pending(self) -> bool:
        """Input ended inside a possible sequence: :meth:`input_paused` settles it."""
        return self._input_scanner is not None and self._input_scanner.pending

    @property
    def _input(self) -> InputScanner:
        scanner = self._input_scanner
        if scanner is None:
            from tray.protocol.terminal_input import InputScanner  # noqa: PLC0415 - see __init__

            scanner = self._input_scanner = InputScanner()
        return scanner

    # -- the user's side ----------------------------------------------------------------

    def input(self, data: bytes, now: float) -> bool:
        """Bytes from the user's terminal; True when they held the user's own typing."""
        return self._note_input(self._input.feed(data), now)

    def input_paused(self, now: float) -> bool:
        """No more input came for a while: a lone ESC was a key after all."""
        return self._note_input(self._input.flush(), now)

    def _note_input(self, events: InputEvents, now: float) -> bool:
        for direction in events.focus:
            self._set_focus("focused" if direction == "in" else "unfocused", now)
        if events.typing:
            self.last_input_at = now
        return events.typing

    def _set_focus(self, focus: str, now: float) -> None:
        if focus != self.focus:
            self.focus = focus
            self.focus_since = now
            self.changed = True

    # -- the program's side -------------------------------------------------------------

    def output(self, events: Iterable[Event], now: float) -> None:
        for event in events:
            if isinstance(event, Title):
                # The scanner reports a title only when it changes, and only for an agent
                # whose rules read titles.
                agent = self.agent
                if agent is not None:
                    self._infer(agent.title(self._title_text[event.text]))
            elif isinstance(event, Osc):
                self._osc(event, now)
            elif isinstance(event, Bell):
                agent = self.agent
                if agent is not None and agent.rules.bell is not None and not agent.outranked:
                    self._infer(agent.bell())  # the bell means what the rules say
                elif now >= self._last_bell + BELL_QUIET:
                    self._add(Attention(self._seq + 1, now, "bell"))
                self._last_bell = now
            elif isinstance(event, FocusReporting):
                self._input.focus_reporting = event.on
                if not event.on:
                    self._set_focus("unknown", now)
            elif isinstance(event, CursorQuery):
                self._input.cursor_queried()
            elif isinstance(event, FullReset):
                self._input.reset_cursor_queries()

    def program_ended(self, now: float) -> None:
        """Its modes die with it: nothing tells us about focus any more."""
        if self._input_scanner is not None:
            self._input_scanner.focus_reporting = False
            self._input_scanner.reset_cursor_queries()
        self._set_focus("unknown", now)

    def _osc(self, event: Osc, now: float) -> None:
        number, payload = event.number, event.payload
        from tray.protocol import attention  # noqa: PLC0415 - see __init__

        if number == 9:
            parsed = attention.parse_osc9(payload)
            if isinstance(parsed, attention.Progress):
                self._progress(parsed)
            elif parsed is not None:
                self._notify(parsed, now)
        elif number == 777:
            note = attention.parse_osc777(payload)
            if note is not None:
                self._notify(note, now)
        elif number == 99:
            if self._kitty is None:
                self._kitty = attention.KittyAssembler()
            note = self._kitty.feed(payload)
            if note is not None:
                self._notify(note, now)
        elif number == 7:
            path = attention.parse_osc7(payload, self._hostname)
            if path is not None and path != self.cwd:
                self.cwd = path
                self.changed = True
        elif number in (133, 633):
            from tray.protocol import prompt_marks  # noqa: PLC0415 - see __init__

            mark = (
                prompt_marks.parse_osc133(payload)
                if number == 133
                else prompt_marks.parse_osc633(payload)
            )
            if mark is not None:
                self._mark(mark, now)

    def _progress(self, progress: Progress) -> None:
        if progress.state in ("remove", "indeterminate"):
            value = None
        else:
            # Error and paused keep the bar where it was: neither is the session failing.
            value = progress.value if progress.value is not None else self.terminal_progress
        if value != self.terminal_progress:
            self.terminal_progress = value
            self.changed = True

    def _infer(self, report: Report | None) -> None:
        if report is not None:
            self.inferred.append(report)
            self.changed = True

    def _notify(self, note: Notification, now: float) -> None:
        agent = self.agent
        if agent is not None and agent.matches_notification(note.title, note.body):
            # The agent's rules make it the session's state, which pings as a prompt
            # does: it is not a request for attention as well.
            self._infer(agent.notification(note.title, note.body))
            return
        self._add(
            Attention(
                self._seq + 1,
                now,
                _SOURCES[note.source],
                title=note.title or None,
                body=note.body or None,
                condition=note.condition,
            )
        )

    def _mark(self, mark: PromptMark, now: float) -> None:
        if self._commands is None:
            from tray.protocol.prompt_marks import CommandTracker  # noqa: PLC0415 - see __init__

            self._commands = CommandTracker()
        finished = self._commands.feed(mark, now)
        if finished is None or finished.duration < self.done_after:
            return  # short commands leave no trace
        self._add(
            Attention(
                self._seq + 1,
                now,
                "command",
                title=finished.cmdline,
                exit_code=finished.exit_status,
                duration=finished.duration,
            )
        )

    def _add(self, attention: Attention) -> None:
        self._seq = attention.seq
        self._attention.append(attention)
        self.changed = True


def _clean_title(payload: bytes) -> str:
    """A title as the rules read it (remembered by TerminalSignals, as titles come back
    again and again)."""
    from tray.base.safe_text import clean_text  # noqa: PLC0415 - see TerminalSignals
    from tray.protocol.attention import MAX_TITLE, clip_text  # noqa: PLC0415

    return clean_text(clip_text(payload, MAX_TITLE))
