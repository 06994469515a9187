"""The remote end, on real pipes and a real state directory, without ssh in between."""

from __future__ import annotations

import dataclasses
import io
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from helpers.host_sessions import make_session
from helpers.sshd_fixtures import TIMEOUT

from tray.remote.frames import BEAT, STATE, Frame, LineSplitter, parse_frame
from tray.remote.stream import run_stream
from tray.state.environment import Environment
from tray.state.store import StateStore


@dataclass
class Stream:
    thread: threading.Thread
    to_stdin: int  # write end of the stream's stdin
    from_stdout: int  # read end of its stdout
    result: list[int]
    splitter: LineSplitter
    open_fds: set[int]

    def close(self, fd: int) -> None:
        # Each once: a number closed twice may by then belong to another thread's file.
        if fd in self.open_fds:
            self.open_fds.discard(fd)
            os.close(fd)

    def frames(self, timeout: float = TIMEOUT) -> Iterator[Frame]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.from_stdout], [], [], 0.1)
            if not ready:
                continue
            data = os.read(self.from_stdout, 1 << 16)
            if not data:
                return
            for line in self.splitter.feed(data):
                frame = parse_frame(line)
                assert frame is not None, line
                yield frame
        raise AssertionError("no frame in time")

    def next_frame(self, timeout: float = TIMEOUT) -> Frame:
        return next(self.frames(timeout))


@contextmanager
def streaming(state_dir: Path, **timing: float) -> Iterator[Stream]:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    env = Environment(
        environ={"TRAY_STATE_DIR": str(state_dir), "XDG_CONFIG_HOME": str(state_dir.parent)},
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    result: list[int] = []
    stdin = os.fdopen(stdin_r, "rb", buffering=0)
    stdout = os.fdopen(stdout_w, "wb")

    def run() -> None:
        result.append(run_stream(env, stdin, stdout, **timing))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    stream = Stream(thread, stdin_w, stdout_r, result, LineSplitter(), {stdin_w, stdout_r})
    try:
        yield stream
    finally:
        stream.close(stdin_w)
        stream.close(stdout_r)
        thread.join(TIMEOUT)
        stdin.close()
        with suppress(OSError):
            stdout.close()


def test_the_whole_state_first_then_every_change(state_dir: Path) -> None:
    store = StateStore(state_dir)
    store.write(make_session("1-a", "working"))
    with streaming(state_dir) as stream:
        first = stream.next_frame()
        assert (first.version, first.kind) == (1, STATE)
        document = first.json()
        assert document["version"] == 1
        assert [(s["id"], s["state"]) for s in document["sessions"]] == [("1-a", "working")]
        assert document["sessions"][0]["name_given"] is True
        store.write(make_session("1-a", "blocked"))
        frame = stream.next_frame()
        assert frame.kind == STATE
        assert frame.json()["sessions"][0]["state"] == "blocked"
        store.remove("1-a")
        assert stream.next_frame().json()["sessions"] == []


def test_a_directory_that_appears_later_is_watched(tmp_path: Path) -> None:
    state_dir = tmp_path / "later"
    with streaming(state_dir) as stream:
        assert stream.next_frame().json()["sessions"] == []
        state_dir.mkdir(mode=0o700)
        StateStore(state_dir).write(make_session("1-a"))
        assert stream.next_frame().json()["sessions"][0]["id"] == "1-a"


def test_heartbeats_come_when_nothing_changes(state_dir: Path) -> None:
    with streaming(state_dir, heartbeat=0.3) as stream:
        assert stream.next_frame().kind == STATE
        started = time.monotonic()
        beat = stream.next_frame()
        assert beat.kind == BEAT
        assert time.monotonic() - started >= 0.2
        assert isinstance(beat.json()["at"], float)
        assert stream.next_frame().kind == BEAT


def test_many_changes_are_coalesced(state_dir: Path) -> None:
    store = StateStore(state_dir)
    with streaming(state_dir, min_interval=0.2) as stream:
        stream.next_frame()
        started = time.monotonic()
        for index in range(40):
            store.write(dataclasses.replace(make_session("1-a"), updated_at=1000.0 + index))
            time.sleep(0.01)  # the writers' pace: changes spread over 0.4 s, not a wait
        states = []
        for frame in stream.frames(timeout=3):
            states.append(frame.json()["sessions"][0]["updated_at"])
            if states[-1] == 1039.0:
                break
        elapsed = time.monotonic() - started
        assert states[-1] == 1039.0
        assert len(states) <= elapsed / 0.2 + 2


def test_it_ends_when_stdin_closes(state_dir: Path) -> None:
    with streaming(state_dir) as stream:
        stream.next_frame()
        stream.close(stream.to_stdin)
        stream.thread.join(5)
        assert not stream.thread.is_alive()
        assert stream.result == [0]


def test_it_ends_when_its_reader_goes_away(state_dir: Path) -> None:
    store = StateStore(state_dir)
    with streaming(state_dir) as stream:
        stream.next_frame()
        stream.close(stream.from_stdout)
        store.write(make_session("1-a"))
        stream.thread.join(5)
        assert not stream.thread.is_alive()
        assert stream.result == [0]


def test_sessions_are_read_with_liveness_and_expiry(state_dir: Path, tmp_path: Path) -> None:
    store = StateStore(state_dir)
    dead = make_session("1-dead")
    store.write(dataclasses.replace(dead, pid=2**22 + 9, pid_start=None))  # its launcher is gone
    ended = make_session("2-old", alive=False)
    store.write(dataclasses.replace(ended, updated_at=time.time() - 7 * 86400))
    with streaming(state_dir) as stream:
        sessions = stream.next_frame().json()["sessions"]
    assert [(s["id"], s["alive"]) for s in sessions] == [("1-dead", False)]
    assert sessions[0]["state"] != "blocked"


def test_the_module_entry_point_runs_the_stream(state_dir: Path) -> None:
    StateStore(state_dir).write(make_session("1-a"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tray.remote.stream", "status", "--watch", "--format", "jsonl"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TRAY_STATE_DIR": str(state_dir)},
    )
    assert proc.stdout is not None and proc.stdin is not None
    frame = parse_frame(proc.stdout.readline().rstrip(b"\n"))
    assert frame is not None
    assert frame.json()["sessions"][0]["id"] == "1-a"
    proc.stdin.close()
    assert proc.wait(10) == 0
    assert proc.stderr is not None
    assert proc.stderr.read() == b""


def test_the_entry_point_refuses_other_words() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tray.remote.stream", "--bogus"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert b"usage" in result.stderr


def test_a_broken_remote_config_is_one_line_on_stderr(state_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "config" / "tray"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("[sessions]\nkeep_ended = 'forever'\n")
    result = subprocess.run(
        [sys.executable, "-m", "tray.remote.stream"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env={
            **os.environ,
            "TRAY_STATE_DIR": str(state_dir),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
        },
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("tray status: ")
    assert "keep_ended" in lines[0]


def test_with_stdin_at_its_end_from_the_start_it_prints_the_state_once(state_dir: Path) -> None:
    StateStore(state_dir).write(make_session("1-a"))
    result = subprocess.run(
        [sys.executable, "-m", "tray.remote.stream"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "TRAY_STATE_DIR": str(state_dir)},
        timeout=30,
        check=False,
    )
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    frame = parse_frame(lines[0])
    assert frame is not None
    assert frame.json()["sessions"][0]["id"] == "1-a"
