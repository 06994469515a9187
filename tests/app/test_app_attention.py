"""Pinging at the right moment, end to end: real `tray run` launchers on ptys whose outer
terminal is this test (it answers queries and reports focus as a terminal would), a real
`tray app`, and dunst on a private bus.

The agents here are driven through a FIFO, not through their terminal, so that nothing
the test makes them do counts as the user typing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.desktop_apps import REPO, TIMEOUT, RunningApp, StartApp, start_app_process
from helpers.desktop_screen import TRAYER, colour_count, grab, icon_box, main_colour
from helpers.desktop_services import BusMonitor, Dunst, start_menu_dunst, stop_process
from helpers.waiting import barrier, wait_for, wait_past
from ptyprocess import PtyProcess

from tray.core.policy.schedule import COALESCE
from tray.core.session.model import Session
from tray.core.view.overview import IconState
from tray.protocol.state import State
from tray.state.store import StateStore

CAPTURE = REPO / "tests" / "data" / "captures" / "claude-code-2.1.328.bin"
SETTLE = 1.0
DA1_QUERY = b"\x1b[c"
DA1_ANSWER = b"\x1b[?62;22c"
OSC11_QUERY = b"\x1b]11;?\x1b\\"
OSC11_ANSWER = b"\x1b]11;rgb:1e1e/1e1e/1e1e\x1b\\"

# Writes whatever the test sends down the FIFO, hex encoded, one write a line.
AGENT = r"""
import os, sys, tty
tty.setraw(0)
with open(sys.argv[1], "rb", buffering=0) as control:
    for line in control:
        os.write(1, bytes.fromhex(line.decode().strip()))
"""


def report(body: str) -> bytes:
    return b"\x1b]7501;" + body.encode() + b"\x07"


BLOCK = report("state=blocked:kind=permission:app=claude-code:msg=YXBwcm92ZSBCYXNoOiBscw")
WORKING = report("state=working:app=claude-code")
FOCUS_ON = b"\x1b[?1004h"
LAUNCHER = (sys.executable, "-m", "tray", "run")


class Terminal:
    """The user's terminal around one `tray run`: it answers DA1 and OSC 11 queries as a
    real one does, and sends focus reports and keys when the test says so."""

    def __init__(self, app: RunningApp, directory: Path, name: str) -> None:
        self.name = name
        self.state_dir = app.state_dir
        fifo = directory / f"{name}.fifo"
        os.mkfifo(fifo)
        self.proc = PtyProcess.spawn(
            [*LAUNCHER, "--name", name, "--", sys.executable, "-c", AGENT, str(fifo)],
            env={**app.env, "TERM": "xterm-256color"},
            dimensions=(30, 100),
        )
        self.output = bytearray()
        # How many of each query were answered so far.
        self.answered = {DA1_QUERY: 0, OSC11_QUERY: 0}
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.control = open(fifo, "wb", buffering=0)  # noqa: SIM115 - closed in close()

    def _read(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(ValueError, OSError):
                if not select.select([self.proc.fd], [], [], 0.05)[0]:
                    continue
            try:
                chunk = os.read(self.proc.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk
            for query, answer in ((DA1_QUERY, DA1_ANSWER), (OSC11_QUERY, OSC11_ANSWER)):
                asked = self.output.count(query)
                if asked > self.answered[query]:
                    self.answered[query] = asked
                    self.proc.write(answer)

    def emit(self, data: bytes) -> None:
        """Make the agent write ``data`` to its terminal."""
        self.control.write(data.hex().encode() + b"\n")

    def type(self, data: bytes) -> None:
        self.proc.write(data)

    def session(self) -> Session | None:
        sessions, _ = StateStore(self.state_dir).read_all(time.time())
        return next((s for s in sessions if s.name == self.name), None)

    def wait_session(self, test: Callable[[Session], bool], what: str) -> Session:
        def probe() -> Session | None:
            session = self.session()
            return session if session is not None and test(session) else None

        found = wait_for(probe, TIMEOUT, what=what)
        assert found is not None
        return found

    def focus_out(self) -> None:
        self.type(b"\x1b[O")
        self.wait_session(lambda s: s.focus == "unfocused", "the session to be unfocused")

    def focus_in(self) -> None:
        self.type(b"\x1b[I")
        self.wait_session(lambda s: s.focus == "focused", "the session to be focused")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.control.close()
        with contextlib.suppress(Exception):
            wait_for(lambda: not self.proc.isalive(), TIMEOUT, what="tray run to end")
        self._stop.set()
        self.proc.close(force=True)


@pytest.fixture
def terminals(tmp_path: Path) -> Iterator[Callable[[RunningApp, str], Terminal]]:
    opened: list[Terminal] = []

    def open_terminal(app: RunningApp, name: str) -> Terminal:
        terminal = Terminal(app, tmp_path, name)
        opened.append(terminal)
        return terminal

    yield open_terminal
    for terminal in opened:
        terminal.close()


OpenTerminal = Callable[[RunningApp, str], Terminal]


def focus_reporting(terminal: Terminal) -> None:
    """The program turns focus reporting on; the launcher has seen it once it works."""
    terminal.emit(FOCUS_ON + WORKING)
    terminal.wait_session(lambda s: s.state == "working" and s.source == "program", "1004 on")


CONFIG = f"[notify]\nsettle = {SETTLE}\n"


def test_the_claude_capture_pings_once_for_its_permission_prompt(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal
) -> None:
    capture = CAPTURE.read_bytes()
    # Typing would hold the ping for an hour: it comes within TIMEOUT only if not held.
    app = start_app(f"{CONFIG}typing_grace = 3600\n")
    terminal = terminals(app, "claude")
    blocked_at = capture.index(b"\x1b]7501;state=blocked")
    start = capture[:blocked_at]
    query_end = capture.index(DA1_QUERY) + len(DA1_QUERY)
    # At start Claude asks for 7501 support and DA1, and the terminal answers.
    terminal.emit(start[:query_end])
    wait_for(lambda: DA1_QUERY in terminal.output, TIMEOUT, what="the DA1 query")
    terminal.emit(start[query_end:])
    terminal.wait_session(lambda s: s.state == "working", "Claude to be working")
    # The capture's own pace, not a wait for anything: Claude shows the prompt about a
    # second after the terminal's answer, and the answer must not count as typing then.
    time.sleep(1.0)
    block_end = capture.index(b"\x07", blocked_at) + 1
    terminal.emit(capture[blocked_at:block_end])
    calls = bus_monitor.wait_for_notify(1, TIMEOUT)
    # Not held back as if the DA1 answer had been typing.
    assert (calls[0].summary, calls[0].body) == (
        "claude needs approval",
        "approve Bash: touch approved-file",
    )
    terminal.emit(capture[block_end:])
    # The capture ends with Claude's `state=clear`s: done, then nothing to show.
    terminal.wait_session(lambda s: s.source == "program" and not s.records, "Claude's end")
    summaries = barrier(app.state_dir, bus_monitor, 2, SETTLE)
    assert summaries == ["claude needs approval", "marker needs approval"]


def test_focus_out_then_block_pings_at_once_even_right_after_typing(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal
) -> None:
    # Typing would hold the ping for an hour: it comes within TIMEOUT only if not held.
    app = start_app(f"{CONFIG}typing_grace = 3600\n")
    terminal = terminals(app, "away")
    focus_reporting(terminal)
    terminal.type(b"go\r")  # typing would hold a ping back for 5 s...
    terminal.focus_out()  # ...but the user has gone
    terminal.emit(BLOCK)
    (call,) = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert call.summary == "away needs approval"


def test_focus_in_then_block_gives_no_popup_but_the_amber_icon(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal, xvfb_display: str
) -> None:
    app = start_app(CONFIG)
    terminal = terminals(app, "here")
    focus_reporting(terminal)
    terminal.focus_in()
    terminal.emit(BLOCK)
    terminal.wait_session(lambda s: s.state == "blocked", "the block")
    blocked_by = time.time()  # the launcher's since of the block is no later than this
    amber: IconState = State.BLOCKED
    wait_for(
        lambda: (
            colour_count(grab(xvfb_display, icon_box(xvfb_display, TRAYER)), main_colour(amber))
            >= 20
        ),
        TIMEOUT,
        what="the amber icon",
    )
    # Its ping, had focus let it through, would fall due one settle after the block.
    summaries = barrier(app.state_dir, bus_monitor, 1, SETTLE, after=blocked_by + SETTLE)
    assert summaries == ["marker needs approval"]


def test_a_block_right_after_terminal_replies_pings(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal
) -> None:
    # Typing would hold the ping for an hour: it comes within TIMEOUT only if not held.
    app = start_app(f"{CONFIG}typing_grace = 3600\n")
    terminal = terminals(app, "codex")
    # Codex asks DA1 and the background colour at start; the answers are no typing.
    terminal.emit(DA1_QUERY + OSC11_QUERY + WORKING)
    wait_for(lambda: terminal.answered[OSC11_QUERY], TIMEOUT, what="the answers")
    terminal.emit(BLOCK)
    (call,) = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert call.summary == "codex needs approval"
    session = terminal.session()
    assert session is not None and session.last_input_at is None


def test_osc9_and_osc777_ping_with_their_text_and_progress_does_not(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal
) -> None:
    app = start_app(CONFIG)
    terminal = terminals(app, "build")
    terminal.emit(b"\x1b]9;4;1;40\x07")
    terminal.wait_session(lambda s: s.terminal_progress == 40, "the progress")
    first_sent = time.time()
    terminal.emit(b"\x1b]9;\n\nTests passed: 412\x07")
    first = bus_monitor.wait_for_notify(1, TIMEOUT)[0]
    assert "Tests passed: 412" in first.body
    assert "build" in first.summary
    # Requests less than COALESCE apart are one event (OSC 9 and a bell, say), by the
    # launcher's times: only time can make this one a second event.
    wait_past(first_sent + COALESCE + 0.5)
    terminal.emit(b"\x1b]777;notify;Deploy;staging is <ready>\x1b\\")
    calls = bus_monitor.wait_for_notify(2, TIMEOUT)
    assert "Deploy" in calls[1].summary and "build" in calls[1].summary
    assert calls[1].body == "staging is &lt;ready&gt;"
    terminal.emit(b"\x1b]9;4;2;50\x07")  # the bar's error state: no failure, no ping
    terminal.wait_session(lambda s: s.terminal_progress == 50, "more progress")
    summaries = barrier(app.state_dir, bus_monitor, 3, SETTLE)
    assert summaries[:2] == [first.summary, calls[1].summary]


def test_a_bell_pings_while_unfocused(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal
) -> None:
    app = start_app(CONFIG)
    terminal = terminals(app, "shell")
    focus_reporting(terminal)
    terminal.focus_out()
    terminal.emit(b"\x07")
    (call,) = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert call.summary == "shell rang the bell"


def test_a_block_with_an_osc777_beside_it_pings_once(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal
) -> None:
    app = start_app(CONFIG)
    terminal = terminals(app, "jazz")
    terminal.emit(BLOCK + b"\x1b]777;notify;Jazz;approve deploy\x1b\\")
    calls = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert calls[0].summary == "jazz needs approval"
    summaries = barrier(app.state_dir, bus_monitor, 2, SETTLE)
    assert summaries == ["jazz needs approval", "marker needs approval"]


def test_a_prompt_nobody_answers_is_reminded(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal
) -> None:
    app = start_app(f"{CONFIG}remind = 3\n")
    terminal = terminals(app, "slow")
    terminal.emit(BLOCK)
    first = bus_monitor.wait_for_notify(1, TIMEOUT)[0]
    assert first.summary == "slow needs approval"
    reminder = bus_monitor.wait_for_notify(2, TIMEOUT)[1]
    assert reminder.summary == "slow needs approval"
    assert re.search(r"still waiting, \d+", reminder.body), reminder.body


def test_snooze_from_the_notification_mutes_the_session(
    desktop_env: dict[str, str],
    tmp_path: Path,
    trayer: object,
    terminals: OpenTerminal,
    xvfb_display: str,
) -> None:
    menu_dunst = start_menu_dunst(xvfb_display, tmp_path / "menu-dunst", "Snooze 1 h")
    app = None
    try:
        env = {**desktop_env, **menu_dunst.bus_env}
        monitor = BusMonitor(env, tmp_path / "monitor.log")
        app = start_app_process(env, tmp_path, f"{CONFIG}remind = 2\n")
        terminal = terminals(app, "noisy")
        terminal.emit(BLOCK)
        monitor.wait_for_notify(1, TIMEOUT)
        dunst: Dunst = menu_dunst.dunst
        wait_for(lambda: dunst.count() == 1, TIMEOUT, what="dunst to show it")
        dunst.ctl("context")  # the stub dmenu picks "Snooze 1 h"
        wait_for(lambda: "Snooze 1 h" in menu_dunst.offered_text(), TIMEOUT, what="the menu")
        session = terminal.session()
        assert session is not None
        memory = app.state_dir / "app.state"
        wait_for(
            lambda: memory.exists() and session.id in json.loads(memory.read_text())["snoozed"],
            TIMEOUT,
            what="the snooze to be remembered",
        )
        # Neither its reminder nor a new prompt pings; another session still does.
        terminal.emit(WORKING)
        terminal.emit(report("state=blocked:kind=question:app=claude-code"))
        terminal.wait_session(lambda s: s.records[0].kind == "question", "a new prompt")
        # Past the new prompt's settle and its first reminder (remind = 2), due by then.
        asked_by = time.time()
        summaries = barrier(app.state_dir, monitor, 2, SETTLE, after=asked_by + 2)
        assert summaries == ["noisy needs approval", "marker needs approval"]
        monitor.stop()
    finally:
        if app is not None:
            stop_process(app.proc)
        menu_dunst.stop()


@pytest.mark.parametrize("hertz", [10, 20, 50])
def test_a_prompt_flapping_through_a_real_launcher_never_pings(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal, hertz: int
) -> None:
    app = start_app(CONFIG)
    terminal = terminals(app, "flappy")
    period = 1.0 / hertz
    started = time.monotonic()
    flips = 0
    while time.monotonic() - started < 2.0:
        terminal.emit(BLOCK if flips % 2 == 0 else WORKING)
        flips += 1
        time.sleep(period)  # the program's own pace, not a wait for a condition
    terminal.emit(WORKING)
    terminal.wait_session(lambda s: s.state == "working", "the last flip")
    # A flip that sampling let through would fall due one settle after it, at the latest:
    # the barrier's own default.
    summaries = barrier(app.state_dir, bus_monitor, 1, SETTLE)
    assert summaries == ["marker needs approval"]


def test_a_steady_prompt_sent_again_and_again_pings_once_after_the_settle(
    start_app: StartApp, bus_monitor: BusMonitor, terminals: OpenTerminal
) -> None:
    app = start_app(CONFIG)
    terminal = terminals(app, "steady")
    first = time.monotonic()
    while time.monotonic() - first < 3.0:
        terminal.emit(BLOCK)
        if time.monotonic() - first < SETTLE * 0.8:
            assert bus_monitor.notify_calls() == []  # not before the settle
        time.sleep(0.1)  # the program's own pace: re-sent every 100 ms, as some do
    calls = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert calls[0].summary == "steady needs approval"
    summaries = barrier(app.state_dir, bus_monitor, 2, SETTLE)
    assert summaries == ["steady needs approval", "marker needs approval"]
