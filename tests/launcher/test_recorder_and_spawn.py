"""The launcher's recorder, spawner and proxy on their own, below `tray run`: the recorder
with an injected clock and a real store, spawn() and the proxy on a real pty."""

from __future__ import annotations

import os
import signal
import termios
import time
from pathlib import Path

import pytest
from helpers.sessions import make_session

from tray.core.session.model import Session
from tray.launcher.proxy import PtyProxy
from tray.launcher.recorder import REPORTS_KEPT, WRITE_INTERVAL, SessionRecorder
from tray.launcher.spawn import CannotStartError, child_dispositions, exit_code, spawn
from tray.launcher.terminal import SignalPipe, UserTerminal
from tray.launcher.terminal_signals import TerminalSignals
from tray.protocol.output_events import Event, RawReport
from tray.protocol.report import Report, encode_sequence
from tray.protocol.scanner import Scanner
from tray.protocol.state import State
from tray.state.logs import LauncherLog
from tray.state.store import StateStore


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _recorder(tmp_path: Path, clock: Clock) -> tuple[SessionRecorder, StateStore, list[Session]]:
    store = StateStore(tmp_path / "state")
    store.ensure()
    written: list[Session] = []
    recorder = SessionRecorder(
        make_session("s1", clock.now),
        clock,
        LauncherLog(None, "s1", clock),
        TerminalSignals("host", 30.0),
        store=store,
        on_write=lambda session, _at: written.append(session),
    )
    return recorder, store, written


def _events(*reports: Report) -> tuple[Event, ...]:
    scanner = Scanner()
    result = scanner.feed(b"".join(encode_sequence(report) for report in reports))
    return tuple(result.events)


def test_a_report_is_recorded_with_its_since_and_written_once_its_interval_is_up(
    tmp_path: Path,
) -> None:
    clock = Clock(1000.0)
    recorder, store, written = _recorder(tmp_path, clock)
    recorder.started(4242)
    assert [s.child_pid for s in written] == [4242]
    clock.now = 1001.0
    recorder.apply(_events(Report(State.BLOCKED, kind="permission", app="claude-code", msg="go?")))
    [record] = recorder.records()
    assert (record.state, record.kind, record.app, record.msg, record.since) == (
        "blocked",
        "permission",
        "claude-code",
        "go?",
        1001.0,
    )
    due = recorder.next_write()
    assert due is not None
    recorder.maybe_persist(due - WRITE_INTERVAL / 2)
    assert len(written) == 1  # not yet: the interval paces writes
    recorder.maybe_persist(due)
    assert len(written) == 2
    [session], problems = store.read_all(clock.now)
    assert not problems
    assert session.state == "blocked"
    assert session.source == "program"


def test_with_nothing_new_no_write_is_due(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    recorder, _, written = _recorder(tmp_path, clock)
    recorder.started(1)
    assert recorder.next_write() is None
    recorder.apply(_events(Report(State.WORKING, progress=10)))
    due = recorder.next_write()
    assert due is not None
    recorder.maybe_persist(due)
    assert recorder.next_write() is None
    assert [s.records[0].progress for s in written[1:]] == [10]


def test_reports_remembered_by_their_bytes_apply_as_if_parsed_anew(tmp_path: Path) -> None:
    # A program sends the same few reports again and again: their parse is remembered,
    # up to REPORTS_KEPT bodies, and what they do is the same each time.
    clock = Clock(1000.0)
    recorder, _, _ = _recorder(tmp_path, clock)
    count = REPORTS_KEPT + 9  # more bodies than are remembered: each (id, progress) once
    bodies = [b"state=working:id=r%d:progress=%d" % (n % 8, n % 101) for n in range(count)]
    last = {f"r{n % 8}": n % 101 for n in range(count)}
    for round_ in range(2):
        for body in (*bodies, b"state=working:id=bad id", b"state=blocked:kind=permission"):
            clock.now += 1
            recorder.apply((RawReport(body),))
        records = {record.id: record for record in recorder.records()}
        # The bad id was discarded both times; the root is blocked.
        assert {key: record.progress for key, record in records.items() if key} == last, round_
        assert (records[""].state, records[""].kind) == ("blocked", "permission")
        recorder.apply((RawReport(b"state=clear"),))
        assert recorder.records() == ()


def test_finish_drops_what_cannot_outlive_the_program_and_records_the_exit(
    tmp_path: Path,
) -> None:
    clock = Clock(1000.0)
    recorder, store, _ = _recorder(tmp_path, clock)
    recorder.started(1)
    recorder.apply(_events(Report(State.BLOCKED, kind="permission")))
    clock.now = 1005.0
    recorder.finish(3)
    [session], _ = store.read_all(clock.now)
    assert (session.exit_code, session.state, session.records) == (3, "error", ())
    assert session.state_since == 1005.0


def test_a_query_is_answered_and_makes_the_source_the_program(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    recorder, _, _ = _recorder(tmp_path, clock)
    events = Scanner().feed(b"\x1b]7501;?\x07").events
    assert recorder.apply(events) != b""
    assert recorder.snapshot().source == "program"


def test_spawn_starts_the_command_on_a_pty_behind_a_keeper_and_reports_its_status() -> None:
    spawned = spawn(
        ["sh", "-c", "printf ready; exit 7"],
        dict(os.environ),
        lambda fd: None,
        child_dispositions(),
    )
    try:
        assert spawned.keeper != spawned.child
        output = b""
        while True:
            try:
                chunk = os.read(spawned.master, 1024)
            except OSError:  # EIO: the pty closed
                break
            if not chunk:
                break
            output += chunk
        _, status = os.waitpid(spawned.keeper, 0)
        assert b"ready" in output
        assert exit_code(status) == 7
    finally:
        os.close(spawned.master)


def test_spawn_says_why_a_command_cannot_start() -> None:
    with pytest.raises(CannotStartError, match="no-such-command-here: command not found"):
        spawn(["no-such-command-here"], dict(os.environ), lambda fd: None, child_dispositions())


def test_exit_code_is_the_status_or_128_plus_the_signal() -> None:
    assert exit_code(3 << 8) == 3
    assert exit_code(signal.SIGTERM) == 128 + signal.SIGTERM


def test_the_proxy_passes_bytes_both_ways_answers_the_query_and_returns_the_status(
    tmp_path: Path,
) -> None:
    clock = Clock(time.time())
    recorder, _, _ = _recorder(tmp_path, clock)
    report = encode_sequence(Report(State.BLOCKED, kind="permission", msg="go?"))
    # The program asks for support, reads the answer and a line of the user's, and says
    # what it got, after a report the proxy must pass on unchanged.
    program = (
        "import os, sys\n"
        "os.write(1, b'\\x1b]7501;?\\x07')\n"
        f"os.write(1, {report!r})\n"
        "line = sys.stdin.readline()\n"
        "os.write(1, b'got:' + line.encode())\n"
        "sys.exit(5)\n"
    )
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    os.write(stdin_write, b"hello\n")
    os.close(stdin_write)
    with SignalPipe([signal.SIGCHLD, signal.SIGWINCH, signal.SIGCONT, signal.SIGALRM]) as pipe:
        spawned = spawn(
            ["python3", "-c", program], dict(os.environ), _pipe_mode, child_dispositions()
        )
        recorder.started(spawned.child)
        proxy = PtyProxy(
            UserTerminal(stdin_read, stdout_write, None, None, tstp_ignored=True),
            spawned,
            signals=pipe,
            recorder=recorder,
            log=LauncherLog(None, "s1", clock),
            scanner=Scanner(),
        )
        try:
            status = proxy.run()
        finally:
            proxy.close_master()
    os.close(stdout_write)
    output = b""
    while chunk := os.read(stdout_read, 65536):
        output += chunk
    os.close(stdin_read)
    os.close(stdout_read)
    assert status == 5
    assert b"\x1b]7501;?" not in output  # answered by tray, never shown
    assert report in output
    assert output.endswith(b"got:hello\n")
    [record] = recorder.records()
    assert (record.state, record.msg) == ("blocked", "go?")
    assert recorder.snapshot().source == "program"


def _pipe_mode(fd: int) -> None:
    """What `tray run` does to the pty when its own input is a pipe: no echo, no newline
    translation, so the bytes come through as they were sent."""
    attributes = termios.tcgetattr(fd)
    attributes[3] &= ~(termios.ECHO | termios.ISIG | termios.IEXTEN)
    attributes[1] &= ~termios.OPOST
    termios.tcsetattr(fd, termios.TCSANOW, attributes)
