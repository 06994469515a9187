"""The state directory's watcher on real files: which changes it names, and which not."""

from __future__ import annotations

import logging
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.directory_watcher import (
    IN_CLOSE_WRITE,
    IN_IGNORED,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    LOST,
    MAX_PENDING_NAMES,
    DirectoryWatcher,
    parse_events,
)
from tray.state.liveness import process_start_token
from tray.state.store import StateStore

TIMEOUT = 10.0
# Both ways the app watches: inotify (Linux, where the suite runs: `make test` sets up a
# Debian machine) and watchdog (elsewhere). No skip: off Linux the inotify cases fail.
BACKENDS = [
    pytest.param(True, id="inotify"),
    pytest.param(False, id="watchdog"),
]


def event(mask: int, name: bytes = b"", padded: int = 0) -> bytes:
    raw = name + b"\0" * padded
    return struct.pack("iIII", 1, mask, 0, len(raw)) + raw


def test_parse_events_names_session_files_and_gathers_masks() -> None:
    data = (
        event(IN_CLOSE_WRITE, b".s1.10.0.tmp", 4)
        + event(IN_MOVED_TO, b"s1.json", 9)
        + event(IN_MOVED_TO, "caf\u00e9.json".encode(), 2)
        + event(IN_Q_OVERFLOW)
    )
    names, masks = parse_events(data)
    assert names == {"s1.json", "caf\u00e9.json"}
    assert masks & LOST
    assert not parse_events(event(IN_MOVED_TO, b"s1.json"))[1] & LOST
    assert parse_events(event(IN_IGNORED))[1] & LOST
    assert parse_events(b"") == (set(), 0)
    assert parse_events(event(IN_MOVED_TO, b"s1.json")[:10]) == (set(), 0)  # a torn header


def session(session_id: str) -> Session:
    now = time.time()
    return Session(
        id=session_id,
        name=session_id,
        command=("agent",),
        cwd="/",
        pid=os.getpid(),
        child_pid=None,
        started_at=now,
        updated_at=now,
        records=(Record("", State.WORKING, None, None, None, None, None, now),),
        pid_start=process_start_token(os.getpid()),
    )


class Watching:
    def __init__(self, directory: Path, use_inotify: bool) -> None:
        self.changed = threading.Event()
        self.watcher = DirectoryWatcher(
            directory, self.changed, logging.getLogger("test"), use_inotify=use_inotify
        )
        self.watcher.start()
        assert self.watcher.active

    def collect(self, expected: set[str]) -> set[str]:
        """Names reported until ``expected`` are all among them (or the time is up)."""
        seen: set[str] = set()
        deadline = time.monotonic() + TIMEOUT
        while not expected <= seen and time.monotonic() < deadline:
            if self.changed.wait(max(0.0, deadline - time.monotonic())):
                self.changed.clear()
                names = self.watcher.take_changes()
                assert names is not None
                seen |= names
        return seen


@pytest.fixture(params=BACKENDS)
def watching(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Watching]:
    directory = tmp_path / "state"
    StateStore(directory).ensure()
    result = Watching(directory, request.param)
    yield result
    result.watcher.stop()


def test_atomic_writes_in_place_writes_and_removals_are_named(
    watching: Watching, tmp_path: Path
) -> None:
    store = StateStore(tmp_path / "state")
    store.write(session("s1"))
    assert watching.collect({"s1.json"}) == {"s1.json"}  # never its temporary file
    (store.directory / "direct.json").write_text("{}")
    store.remove("s1")
    assert watching.collect({"direct.json", "s1.json"}) == {"direct.json", "s1.json"}


def test_reading_the_files_is_not_a_change(watching: Watching, tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state")
    store.write(session("s1"))
    watching.collect({"s1.json"})
    store.read_all(time.time())
    (store.directory / "s1.json").read_bytes()
    store.write(session("marker"))
    # Once the marker is seen, a reaction to the reads would have been seen before it.
    assert watching.collect({"marker.json"}) == {"marker.json"}


def test_too_many_names_to_list_means_anything_may_have_changed(tmp_path: Path) -> None:
    changed = threading.Event()
    watcher = DirectoryWatcher(tmp_path, changed, logging.getLogger("test"))
    watcher.note({f"s{index}.json" for index in range(MAX_PENDING_NAMES)}, lost=False)
    assert changed.is_set()
    assert watcher.take_changes() == frozenset(
        f"s{index}.json" for index in range(MAX_PENDING_NAMES)
    )
    watcher.note({f"s{index}.json" for index in range(MAX_PENDING_NAMES + 1)}, lost=False)
    watcher.note({"later.json"}, lost=False)
    assert watcher.take_changes() is None
    assert watcher.take_changes() == frozenset()  # and then it lists again
    watcher.note({"s1.json"}, lost=True)  # the kernel dropped events
    assert watcher.take_changes() is None


def test_a_directory_that_goes_stops_the_watch_and_says_so(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    StateStore(directory).ensure()
    watching = Watching(directory, use_inotify=True)
    try:
        directory.rmdir()
        assert watching.changed.wait(TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while watching.watcher.active and time.monotonic() < deadline:
            watching.changed.wait(0.05)
        assert not watching.watcher.active
        assert watching.watcher.take_changes() is None
    finally:
        watching.watcher.stop()


def test_a_directory_that_cannot_be_watched_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    changed = threading.Event()
    watcher = DirectoryWatcher(tmp_path / "missing", changed, logging.getLogger("test"))
    with caplog.at_level(logging.WARNING):
        watcher.start()
    assert not watcher.active
    assert "checking for changes every few seconds" in caplog.text
    watcher.stop()


WITHOUT_WATCHDOG = """
import logging, os, sys, threading
from pathlib import Path
sys.modules["watchdog"] = None  # every import of it fails, as where it is not installed
from tray.state.directory_watcher import DirectoryWatcher
directory = Path(sys.argv[1])
changed = threading.Event()
watcher = DirectoryWatcher(directory, changed, logging.getLogger("probe"))
watcher.start()
assert watcher.active
(directory / "s1.json").write_text("{}")
assert changed.wait(10)
assert watcher.take_changes() == frozenset({"s1.json"})
watcher.stop()
print("watched")
"""


def test_on_linux_the_watcher_needs_no_watchdog(tmp_path: Path) -> None:
    # pyproject.toml requires watchdog only off Linux: there, the default watcher (inotify)
    # must neither import it nor miss it.
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_WATCHDOG, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "watched\n", "")
