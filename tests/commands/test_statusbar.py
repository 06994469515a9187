"""``tray status --format waybar|tmux|json [--watch]`` as real subprocesses on real state files."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.sessions import make_record, make_session
from helpers.tray_home import TIMEOUT, Tray
from helpers.waiting import wait_for
from hypothesis import given
from hypothesis import strategies as st
from watchdog.events import (
    EVENT_TYPE_CLOSED_NO_WRITE,
    EVENT_TYPE_MOVED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from tray.commands.statusbar import (
    ASCII_SYMBOLS,
    SYMBOLS,
    TMUX_COLOURS,
    TOOLTIP_ROWS,
    state_count,
    tmux_line,
    tooltip_text,
    waybar_line,
)
from tray.core.session.model import Session
from tray.core.view.overview import Overview, build_overview
from tray.core.worker.marks import AppMemory
from tray.protocol.records import Record
from tray.state.liveness import process_start_token
from tray.state.marks_file import FILE_NAME, save_marks
from tray.state.session_feed import LIVENESS_PERIOD, ChangeSignal, emit_on_change

MakeSession = Callable[..., Session]
MakeRecord = Callable[..., Record]

# Waybar's text and class for each state, and tmux's line.
EXPECTED = {
    "blocked": ("\u26a0 1", "#[fg=yellow]! 1#[default]"),
    "error": ("\u2717 1", "#[fg=red]x 1#[default]"),
    "working": ("\u25cf 1", "#[fg=cyan]* 1#[default]"),
    "done": ("\u2713 1", "#[fg=green]+ 1#[default]"),
    "calm": ("", ""),
}


def session_in(state: str, now: float) -> Session:
    """One real session file's worth, in ``state`` as the tray counts it."""
    if state == "blocked":
        return make_session(
            "s-blocked",
            now - 30,
            source="program",
            records=(
                make_record("", "blocked", now - 5, kind="permission", app="claude", msg="approve"),
            ),
        )
    if state == "error":
        return make_session("s-error", now - 30, alive=False, exit_code=2, updated_at=now - 1)
    if state == "working":
        return make_session("s-working", now - 30)  # a running launcher, no reports yet
    if state == "done":
        return make_session("s-done", now - 30, alive=False, exit_code=0, updated_at=now - 1)
    # Idle is nothing the tray shows.
    return make_session(
        "s-idle", now - 30, source="program", records=(make_record("", "idle", now - 5),)
    )


def waybar(tray_home: Tray, *extra: str) -> dict[str, Any]:
    result = tray_home.run("status", "--format", "waybar", *extra)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def tmux(tray_home: Tray) -> str:
    result = tray_home.run("status", "--format", "tmux")
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1
    return result.stdout[:-1]


@pytest.mark.parametrize("state", list(EXPECTED))
def test_one_session_per_state(tray_home: Tray, state: str) -> None:
    tray_home.write_session(session_in(state, time.time()))
    text, tmux_text = EXPECTED[state]
    document = waybar(tray_home)
    assert list(document) == ["text", "tooltip", "class", "alt"]
    assert (document["text"], document["class"], document["alt"]) == (text, state, state)
    assert tmux(tray_home) == tmux_text


def test_no_state_dir_is_calm(tray_home: Tray) -> None:
    assert waybar(tray_home) == {
        "text": "",
        "tooltip": "Nothing needs you",
        "class": "calm",
        "alt": "calm",
    }
    assert tmux(tray_home) == ""
    assert not tray_home.state_dir.exists()


def test_most_urgent_wins_and_the_tooltip_lists_sessions(tray_home: Tray) -> None:
    now = time.time()
    for state in ("working", "done", "blocked", "idle"):
        tray_home.write_session(session_in(state, now))
    second = dataclasses.replace(
        session_in("blocked", now), id="s-blocked-2", name="other", name_given=True
    )
    tray_home.write_session(second)
    document = waybar(tray_home)
    assert (document["text"], document["class"]) == ("\u26a0 2", "blocked")
    assert document["tooltip"].split("\n") == [
        "2 need you \u00b7 1 working \u00b7 1 finished",
        "claude: blocked (permission) \u2014 approve",
        "other: blocked (permission) \u2014 approve",
        "s-working: working",
        "s-done: done",
        "s-idle: idle",
    ]
    assert tmux(tray_home) == "#[fg=yellow]! 2#[default]"


def test_seen_and_dismissed_marks_of_the_tray_apply(tray_home: Tray) -> None:
    now = time.time()
    tray_home.write_session(session_in("done", now))
    tray_home.write_session(session_in("error", now))
    assert waybar(tray_home)["class"] == "error"
    memory_path = tray_home.state_dir / FILE_NAME
    # What the app writes when the user opens the menu: both seen up to now.
    save_marks(memory_path, AppMemory(seen={"s-done": now, "s-error": now}))
    assert waybar(tray_home)["class"] == "calm"
    save_marks(memory_path, AppMemory(seen={"s-error": now}))
    assert (waybar(tray_home)["class"], tmux(tray_home)) == ("done", "#[fg=green]+ 1#[default]")
    save_marks(memory_path, AppMemory(dismissed=frozenset({"s-done", "s-error"})))
    assert waybar(tray_home)["class"] == "calm"


def test_program_text_cannot_inject_markup_or_tmux_formats(tray_home: Tray) -> None:
    now = time.time()
    hostile = "#[fg=red]#(touch pwned) <b>bold</b> & \x1b[31m"
    tray_home.write_session(
        make_session(
            "s1",
            now - 10,
            name=hostile,
            name_given=True,
            source="program",
            records=(make_record("", "blocked", now, app=hostile, msg=hostile),),
        )
    )
    line = tmux(tray_home)
    assert line == "#[fg=yellow]! 1#[default]"
    tooltip = waybar(tray_home)["tooltip"]
    assert "<b>" not in tooltip and "\x1b" not in tooltip
    assert "&lt;b&gt;bold&lt;/b&gt; &amp;" in tooltip
    assert not (tray_home.home / "pwned").exists()


def test_format_json_is_the_same_as_json(tray_home: Tray) -> None:
    now = time.time()
    tray_home.write_session(session_in("blocked", now))
    tray_home.write_session(session_in("done", now))
    by_format = tray_home.run("status", "--format", "json")
    by_flag = tray_home.run("status", "--json")
    assert by_format.returncode == by_flag.returncode == 0
    assert by_format.stdout == by_flag.stdout
    assert [s["id"] for s in json.loads(by_format.stdout)["sessions"]] == ["s-blocked", "s-done"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--json", "--format", "tmux"), "tray status: --json and --format tmux disagree"),
        (("--watch",), "tray status: --watch needs --format json, waybar, tmux or jsonl"),
        (("--format", "table", "--watch"), "tray status: --watch needs"),
        (("--format", "i3bar"), "tray status: argument --format: invalid choice: 'i3bar'"),
    ],
)
def test_bad_combinations_are_one_line_errors(
    tray_home: Tray, args: tuple[str, ...], message: str
) -> None:
    result = tray_home.run("status", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1


# --watch


class Watch:
    """A running ``tray status --watch``; lines are read with a deadline, never a sleep."""

    def __init__(self, tray_home: Tray, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tray", "status", "--watch", *args],
            env=tray_home.environ,
            cwd=tray_home.home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        self._fd = self.process.stdout.fileno()
        self._buffer = b""

    def next_line(self, timeout: float = TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no new line within {timeout} s"
            ready, _, _ = select.select([self._fd], [], [], remaining)
            if ready:
                chunk = os.read(self._fd, 65536)
                assert chunk, f"the watch ended: {self.finish(signal.SIGKILL)}"
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8")

    def finish(self, signum: int) -> tuple[int, str, str]:
        """Stop it with ``signum``: its status, the output not yet read, and stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            stdout, stderr = self.process.communicate(timeout=TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        unread = (self._buffer + stdout).decode("utf-8", "replace")
        return self.process.returncode, unread, stderr.decode("utf-8", "replace")


@pytest.fixture
def watches() -> Iterator[list[Watch]]:
    started: list[Watch] = []
    yield started
    for running in started:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait()
        for stream in (running.process.stdout, running.process.stderr):
            if stream is not None:
                stream.close()


class Reads(FileSystemEventHandler):
    """Records who touched the state directory, to know when the watch has read a file."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def on_any_event(self, event: FileSystemEvent) -> None:
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            path = raw.decode() if isinstance(raw, bytes) else raw
            with self.lock:
                self.events.append((event.event_type, Path(path).name))

    def read_after_replace(self, since: int, name: str) -> bool:
        """A read of ``name`` completed after ``name`` was replaced, both after ``since``."""
        with self.lock:
            recent = self.events[since:]
        replaced = next(
            (
                i
                for i, (kind, file) in enumerate(recent)
                if kind == EVENT_TYPE_MOVED and file == name
            ),
            None,
        )
        return replaced is not None and any(
            kind == EVENT_TYPE_CLOSED_NO_WRITE and file == name
            for kind, file in recent[replaced + 1 :]
        )


def test_watch_prints_changes_once_and_stops_cleanly(tray_home: Tray, watches: list[Watch]) -> None:
    now = time.time()
    working = make_session(
        "s1",
        now - 10,
        source="program",
        records=(make_record("", "working", now - 10, app="cargo", msg="building"),),
    )
    path = tray_home.write_session(working)
    watch = Watch(tray_home, "--format", "waybar")
    watches.append(watch)
    first = json.loads(watch.next_line())
    assert (first["text"], first["class"]) == ("\u25cf 1", "working")

    blocked = dataclasses.replace(
        working,
        updated_at=now,
        records=(make_record("", "blocked", now, kind="question", app="cargo", msg="which?"),),
    )
    tray_home.write_session(blocked)
    second = json.loads(watch.next_line())
    assert (second["text"], second["class"]) == ("\u26a0 1", "blocked")

    # A rewrite that changes nothing the bar shows; the watch reads it and stays quiet.
    reads = Reads()
    observer = Observer()
    observer.schedule(reads, str(tray_home.state_dir), recursive=False)
    observer.start()
    try:
        with reads.lock:
            mark = len(reads.events)
        tray_home.write_session(
            dataclasses.replace(blocked, updated_at=now + 1, last_input_at=now + 1)
        )
        wait_for(lambda: reads.read_after_replace(mark, path.name))
    finally:
        observer.stop()
        observer.join(timeout=5)

    done = dataclasses.replace(
        blocked,
        updated_at=now + 2,
        records=(make_record("", "done", now + 2, app="cargo", msg="built"),),
    )
    tray_home.write_session(done)
    third = json.loads(watch.next_line())  # not a repeat of the second line
    assert (third["text"], third["class"]) == ("\u2713 1", "done")
    assert third["tooltip"] == "1 finished\ncargo: done \u2014 built"

    # Nothing more was printed, and SIGTERM is a clean stop.
    assert watch.finish(signal.SIGTERM) == (0, "", "")


def test_watch_notices_a_killed_launcher_within_the_liveness_period(
    tray_home: Tray, watches: list[Watch]
) -> None:
    launcher = subprocess.Popen(["sleep", "120"])
    try:
        now = time.time()
        tray_home.write_session(
            make_session(
                "s1", now - 5, pid=launcher.pid, pid_start=process_start_token(launcher.pid)
            )
        )
        watch = Watch(tray_home, "--format", "tmux")
        watches.append(watch)
        assert watch.next_line() == "#[fg=cyan]* 1#[default]"
    finally:
        launcher.kill()
        launcher.wait()  # reaped, so its pid is really gone
    # No file changes: only the liveness timer can find it dead.
    assert watch.next_line(timeout=LIVENESS_PERIOD + 10) == "#[fg=red]x 1#[default]"
    assert watch.finish(signal.SIGINT) == (130, "", "")


def test_watch_json_prints_one_document_per_line(tray_home: Tray, watches: list[Watch]) -> None:
    watch = Watch(tray_home, "--format", "json")
    watches.append(watch)
    assert json.loads(watch.next_line()) == {"version": 1, "sessions": []}
    # The directory appears after the watch started; it is watched from then on.
    tray_home.write_session(session_in("blocked", time.time()))
    document = json.loads(watch.next_line())
    assert [(s["id"], s["state"]) for s in document["sessions"]] == [("s-blocked", "blocked")]
    assert watch.finish(signal.SIGHUP) == (0, "", "")


def test_watch_ends_quietly_when_its_reader_goes_away(
    tray_home: Tray, watches: list[Watch]
) -> None:
    tray_home.write_session(session_in("working", time.time()))
    watch = Watch(tray_home, "--format", "waybar")
    watches.append(watch)
    assert json.loads(watch.next_line())["class"] == "working"
    assert watch.process.stdout is not None
    watch.process.stdout.close()  # as waybar does when it reloads
    # Nothing changes, so nothing is written: the watch must notice on its own.
    returncode = watch.process.wait(timeout=LIVENESS_PERIOD + TIMEOUT)
    assert watch.process.stderr is not None
    stderr = watch.process.stderr.read().decode("utf-8", "replace")
    assert (returncode, stderr) == (0, "")


# The pure parts, without a subprocess.


def overview_of(rows: list[tuple[str | None, bool]], now: float = 1000.0) -> Overview:
    """An overview built the tray's way from sessions whose rows have these states."""
    sessions = []
    seen: dict[str, float] = {}
    for index, (state, unseen) in enumerate(rows):
        session_id = f"s{index:02}"
        if state in ("done", "error"):
            session = make_session(
                session_id, now - 50, alive=False, exit_code=0 if state == "done" else 1
            )
            if not unseen:
                seen[session_id] = now
        else:
            records = () if state is None else (make_record("", state, now - 5, msg="m #[x]"),)
            session = make_session(session_id, now - 50, source="program", records=records)
        sessions.append(session)
    return build_overview(sessions, AppMemory(seen=seen), {}, now)


STATES = st.sampled_from([None, "idle", "working", "blocked", "done", "error"])


@given(st.lists(st.tuples(STATES, st.booleans()), max_size=14))
def test_bar_text_agrees_with_the_tray_icon(rows: list[tuple[str | None, bool]]) -> None:
    overview = overview_of(rows)
    state = overview.icon_state
    line = json.loads(waybar_line(overview))
    assert line["class"] == line["alt"] == state
    count = state_count(overview)
    if state == "calm":
        assert (line["text"], tmux_line(overview), count) == ("", "", 0)
        return
    # The tray's tooltip says the same number for the same state.
    phrase = {"blocked": "need", "error": "failed", "working": "working", "done": "finished"}
    assert f"{count} {phrase[state]}" in overview.tooltip
    assert line["text"] == f"{SYMBOLS[state]} {count}"
    assert (
        tmux_line(overview)
        == f"#[fg={TMUX_COLOURS[state]}]{ASCII_SYMBOLS[state]} {count}#[default]"
    )
    assert line["tooltip"].split("\n")[0] == overview.tooltip


def test_tooltip_is_bounded() -> None:
    overview = overview_of([("working", False)] * 13)
    lines = tooltip_text(overview).split("\n")
    assert lines[0] == "13 working"
    assert len(lines) == 1 + TOOLTIP_ROWS + 1
    assert lines[-1] == "\u2026 and 3 more"


def test_watch_emits_only_changes_until_told_to_stop(tmp_path: Path) -> None:
    answers = iter(["a", "a", "b", "b", "b", "a"])
    emitted: list[str] = []
    calls = 0

    def line() -> str:
        nonlocal calls
        calls += 1
        return next(answers)

    emit_on_change(
        line,
        emitted.append,
        ChangeSignal(tmp_path / "missing", logging.getLogger("test")),
        period=0.001,
        stopping=lambda: calls == 6,
    )
    assert (emitted, calls) == (["a", "b", "a"], 6)
