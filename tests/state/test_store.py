"""The state directory on real files and real processes: modes, atomicity, liveness, pruning."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.files import umask
from helpers.sessions import make_record, make_session

import tray
from tray.core.session.model import Session, expired
from tray.protocol.records import Record
from tray.state.environment import Environment
from tray.state.store import (
    MAX_FILE_BYTES,
    STALE_TEMP_AGE,
    Dismissal,
    Problem,
    StateStore,
    StoreError,
)

PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent
NOW = 1_764_470_000.0


def record(record_id: str, state: str, at: float = NOW, **fields: object) -> Record:
    return make_record(record_id, state, at, **fields)


def live_session(session_id: str, **changes: Any) -> Session:
    """A session whose launcher is this very test process, so liveness keeps it alive."""
    return replace(make_session(session_id, NOW), **changes)


# The directory and its files.


def test_ensure_creates_a_private_directory(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "b" / "tray"
    StateStore(directory).ensure()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_ensure_tightens_an_existing_directory(tmp_path: Path) -> None:
    directory = tmp_path / "tray"
    directory.mkdir(mode=0o755)
    os.chmod(directory, 0o755)  # noqa: S103 - a loose directory is what is tested
    StateStore(directory).ensure()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_ensure_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "tray").write_text("not a directory")
    with pytest.raises((StoreError, OSError)):
        StateStore(tmp_path / "tray").ensure()


@pytest.fixture
def loose_umask() -> Iterator[None]:
    with umask(0):
        yield


@pytest.mark.usefixtures("loose_umask")
def test_files_are_private_whatever_the_umask(store: StateStore) -> None:
    store.write(live_session("s1"))
    assert stat.S_IMODE(store.path_for("s1").stat().st_mode) == 0o600


def test_write_then_read_round_trips(store: StateStore) -> None:
    session = live_session(
        "s1",
        source="program",
        records=(record("", "working", msg="Creating a marker file", app="claude-code"),),
        terminal={"tmux_pane": "%3"},
    )
    store.write(session)
    assert store.read(store.path_for("s1")) == session
    document = json.loads(store.path_for("s1").read_text())
    assert document["version"] == 1


def test_writes_leave_no_temp_files(store: StateStore) -> None:
    for step in range(5):
        store.write(live_session("s1", updated_at=NOW + step))
    assert sorted(p.name for p in store.directory.iterdir()) == ["s1.json"]
    assert store.read(store.path_for("s1")).updated_at == NOW + 4


def test_path_for_refuses_ids_that_leave_the_directory(store: StateStore) -> None:
    for bad in ("", "../x", "a/b", ".hidden", "..", "x\0y"):
        with pytest.raises(ValueError, match="invalid session id"):
            store.path_for(bad)


# Reading what is there.


def test_read_all_lists_oldest_first_and_sorts_records(store: StateStore) -> None:
    store.write(live_session("b-young", started_at=NOW + 10))
    store.write(live_session("a-old", started_at=NOW + 5))
    store.write(live_session("c-oldest", started_at=NOW))
    document = live_session("d", started_at=NOW + 20).to_file()
    document["records"] = [
        {"id": i, "state": "done", "kind": None, "progress": None, "app": None,
         "title": None, "msg": None, "updated_at": NOW}
        for i in ("z", "", "a/b", "a")
    ]  # fmt: skip
    store.path_for("d").write_text(json.dumps(document))
    sessions, problems = store.read_all(NOW)
    assert problems == []
    assert [s.id for s in sessions] == ["c-oldest", "a-old", "b-young", "d"]
    assert [r.id for r in sessions[-1].records] == ["", "a", "a/b", "z"]


def test_read_all_ignores_files_that_are_not_sessions(store: StateStore) -> None:
    store.write(live_session("s1"))
    (store.directory / "app.state").write_text("{}")
    (store.directory / "app.lock").write_text("")
    (store.directory / ".s2.123.0.tmp").write_text("{half")
    (store.directory / ".hidden.json").write_text("{}")
    sessions, problems = store.read_all(NOW)
    assert [s.id for s in sessions] == ["s1"]
    assert problems == []


def test_missing_directory_holds_no_sessions(tmp_path: Path) -> None:
    assert StateStore(tmp_path / "nowhere").read_all(NOW) == ([], [])


def test_unreadable_directory_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    store = StateStore(tmp_path / "file")
    assert store.read_all(NOW) == ([], [Problem(tmp_path / "file", "Not a directory")])
    assert store.prune(NOW, 0) == 0


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty"),
        (b'{"version": 1, "id": "bad", "na', "Unterminated|Expecting"),
        (b"[1, 2]", "session has the wrong type"),
        (b"\xff\xfe garbage", "utf-8|Expecting|JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested|recursion|JSON"),
        (b'{"version": 2}', "unsupported version"),
        (b'{"version": 1}', "malformed"),
    ],
)
def test_corrupt_files_are_problems_not_exceptions(
    store: StateStore, content: bytes, reason: str
) -> None:
    store.write(live_session("good"))
    (store.directory / "bad.json").write_bytes(content)
    sessions, problems = store.read_all(NOW)
    assert [s.id for s in sessions] == ["good"]
    assert [p.path.name for p in problems] == ["bad.json"]
    assert problems[0].reason
    assert re.search(reason, problems[0].reason, re.IGNORECASE), problems[0].reason


def test_a_file_must_hold_the_session_its_name_says(store: StateStore) -> None:
    store.write(live_session("s1"))
    os.replace(store.path_for("s1"), store.directory / "other.json")
    sessions, problems = store.read_all(NOW)
    assert sessions == []
    assert "holds session 's1'" in problems[0].reason


def test_symlinks_fifos_and_huge_files_are_problems(store: StateStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(live_session("link").to_file()))
    (store.directory / "link.json").symlink_to(outside)
    os.mkfifo(store.directory / "fifo.json")
    with open(store.directory / "huge.json", "wb") as huge:
        huge.truncate(MAX_FILE_BYTES + 1)
    sessions, problems = store.read_all(NOW)
    assert sessions == []
    reasons = {p.path.name: p.reason for p in problems}
    assert reasons == {
        "fifo.json": "not a regular file",
        "huge.json": f"larger than {MAX_FILE_BYTES} bytes",
        "link.json": "is a symbolic link",
    }


# Liveness.


def test_dead_launcher_session_is_ended_and_never_working_or_blocked(
    store: StateStore, dead_launcher: tuple[int, str]
) -> None:
    pid, token = dead_launcher
    records = (
        record("", "blocked", kind="permission"),
        record("a", "working"),
        record("b", "done", at=NOW + 1),
        record("c", "idle"),
    )
    store.write(live_session("s1", pid=pid, pid_start=token, source="program", records=records))
    store.write(live_session("s2", pid=pid, pid_start=token))
    (dead, launcher_only), _ = store.read_all(NOW + 100)
    assert not dead.alive
    assert [r.id for r in dead.records] == ["b"]
    assert dead.state == "done"
    assert dead.updated_at == NOW  # its last write, so it still ages out
    assert not launcher_only.alive
    assert launcher_only.state == "error"


def test_live_launcher_with_reused_pid_is_dead(store: StateStore) -> None:
    store.write(live_session("s1", pid_start="1", records=(record("", "working"),)))
    (session,), _ = store.read_all(NOW)
    assert not session.alive
    assert session.state == "error"


def test_alive_session_stays_alive(store: StateStore) -> None:
    store.write(live_session("s1", source="program", records=(record("", "blocked"),)))
    (session,), _ = store.read_all(NOW)
    assert session.alive
    assert session.state == "blocked"


# Pruning and dismissing.


def test_prune_removes_only_ended_sessions_past_their_keep_time(
    store: StateStore, dead_launcher: tuple[int, str]
) -> None:
    pid, token = dead_launcher
    keep = 3600.0
    store.write(live_session("old-ended", alive=False, exit_code=0, updated_at=NOW - 2 * keep))
    store.write(live_session("new-ended", alive=False, exit_code=1, updated_at=NOW - keep / 2))
    store.write(live_session("old-dead", pid=pid, pid_start=token, updated_at=NOW - 2 * keep))
    store.write(live_session("new-dead", pid=pid, pid_start=token, updated_at=NOW - 10))
    store.write(live_session("old-running", updated_at=NOW - 100 * keep))
    (store.directory / "corrupt.json").write_text("{")
    assert store.prune(NOW, keep) == 2
    remaining = sorted(p.name for p in store.directory.iterdir())
    assert remaining == ["corrupt.json", "new-dead.json", "new-ended.json", "old-running.json"]
    assert store.prune(NOW, keep) == 0


def test_expired_is_strictly_past_the_keep_time() -> None:
    ended = live_session("s", alive=False, exit_code=0, updated_at=NOW)
    assert not expired(ended, NOW + 60, 60)
    assert expired(ended, NOW + 60.5, 60)
    assert not expired(replace(ended, alive=True), NOW + 10**6, 60)


def test_prune_clears_temp_files_of_dead_writers_only(
    store: StateStore, dead_launcher: tuple[int, str]
) -> None:
    dead_pid, _ = dead_launcher
    old = time.time() - 2 * STALE_TEMP_AGE
    names = {
        "dead-old": f".s1.{dead_pid}.0.tmp",
        "dead-new": f".s1.{dead_pid}.1.tmp",
        "live-old": f".a.b.{os.getpid()}.0.tmp",
    }
    for key, name in names.items():
        path = store.directory / name
        path.write_text("{")
        if key.endswith("old"):
            os.utime(path, (old, old))
    store.prune(time.time(), 3600)
    assert sorted(p.name for p in store.directory.iterdir()) == sorted(
        [names["dead-new"], names["live-old"]]
    )


def test_dismiss_outcomes(store: StateStore, tmp_path: Path) -> None:
    store.write(live_session("ended", alive=False, exit_code=0))
    store.write(live_session("running"))
    (store.directory / "corrupt.json").write_text("{")
    victim = tmp_path / "victim.json"
    victim.write_text("{}")
    assert store.dismiss("ended") is Dismissal.REMOVED
    assert store.dismiss("ended") is Dismissal.NOT_FOUND
    assert store.dismiss("running") is Dismissal.RUNNING
    assert store.dismiss("corrupt") is Dismissal.REMOVED
    assert store.dismiss("../victim") is Dismissal.NOT_FOUND
    assert store.dismiss("") is Dismissal.NOT_FOUND
    assert victim.exists()
    assert sorted(p.name for p in store.directory.iterdir()) == ["running.json"]


def test_dismiss_ended_keeps_running_sessions(
    store: StateStore, dead_launcher: tuple[int, str]
) -> None:
    pid, token = dead_launcher
    store.write(live_session("ended", alive=False, exit_code=0))
    store.write(live_session("dead", pid=pid, pid_start=token))
    store.write(live_session("running"))
    assert sorted(store.dismiss_ended()) == ["dead", "ended"]
    assert sorted(p.name for p in store.directory.iterdir()) == ["running.json"]


def test_a_file_rewritten_after_reading_is_not_removed(store: StateStore) -> None:
    store.write(live_session("s1", alive=False, exit_code=0))
    loaded = store._load_live(store.path_for("s1"))
    store.write(live_session("s1", updated_at=NOW + 1))
    assert not store._remove_if_unchanged(store.path_for("s1"), loaded)
    assert store.path_for("s1").exists()


# Concurrency, with real processes.

WRITER = """
import os, sys, time
from dataclasses import replace
from tray.state.environment import Environment
from tray.protocol.records import Record
from tray.core.session.model import Session
from tray.state.liveness import process_start_token
from tray.state.store import StateStore

store = StateStore(__import__("pathlib").Path(sys.argv[1]))
session_id, rounds = sys.argv[2], int(sys.argv[3])
base = Session(id=session_id, name="n0", command=("x",), cwd="/", pid=os.getpid(),
               child_pid=None, started_at=0.0, updated_at=0.0,
               pid_start=process_start_token(os.getpid()))
for step in range(1, rounds + 1):
    count = (step * 7) % 60
    # done records, which outlive the writer: liveness keeps them after it exits.
    records = tuple(Record(f"r{i:03}", "done", None, None, "app", None, "m" * (i * 13),
                           float(step)) for i in range(count))
    store.write(replace(base, name=f"n{count}", updated_at=float(step), records=records))
"""


def test_concurrent_writers_never_give_torn_reads_or_lost_files(store: StateStore) -> None:
    ids = [f"w{n}" for n in range(5)]
    rounds = 200
    for session_id in ids:
        store.write(live_session(session_id, name="n0", updated_at=0.0))
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store.directory), session_id, str(rounds)],
            env=env,
        )
        for session_id in ids
    ]
    reads = 0
    last_seen = dict.fromkeys(ids, 0.0)
    deadline = time.monotonic() + 60
    try:
        while any(w.poll() is None for w in writers):
            assert time.monotonic() < deadline, "writers did not finish"
            sessions, problems = store.read_all(time.time())
            assert problems == []
            assert sorted(s.id for s in sessions) == ids
            for session in sessions:
                # The name says how many records that write held: a mix of writes would differ.
                assert session.name == f"n{len(session.records)}"
                assert session.updated_at >= last_seen[session.id]
                last_seen[session.id] = session.updated_at
            reads += 1
    finally:
        for writer in writers:
            writer.wait(timeout=60)
    assert [w.returncode for w in writers] == [0] * len(ids)
    assert reads > 10
    final, problems = store.read_all(time.time())
    assert problems == []
    assert [s.updated_at for s in final] == [float(rounds)] * len(ids)
    assert sorted(p.name for p in store.directory.iterdir()) == [f"{i}.json" for i in ids]


RECORDS = """
import os, sys
from tray.protocol.records import Record
from tray.core.session.model import Session
from tray.state.store import StateStore

records = tuple(
    Record(f"r{i:02}", "done", None, None, "agent", "t\\u00e9", "m\\U0001f600\\n", 1.5 + i)
    for i in range(int(sys.argv[2]))
)
session = Session(id="1-abc", name="n\\udcff", command=("x",), cwd="/", pid=1, child_pid=None,
                  started_at=1.0, updated_at=2.0, records=records)
StateStore(sys.argv[1]).write(session)
"""


@pytest.mark.parametrize("records", [3, 17])
def test_a_file_holds_the_text_json_writes(tmp_path: Path, records: int) -> None:
    # Written by a fresh process, with text that json escapes (accents, an emoji, a
    # newline, a lone surrogate): read back, it is json's compact text to the character.
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    subprocess.run(
        [sys.executable, "-c", RECORDS, str(tmp_path), str(records)],
        env=env,
        check=True,
        timeout=60,
    )
    written = (tmp_path / "1-abc.json").read_text()
    session = StateStore(tmp_path).read(tmp_path / "1-abc.json")
    assert len(session.records) == records
    assert written == json.dumps(session.to_file(), separators=(",", ":"))


# Where the directory is.


def test_state_dir_precedence(tmp_path: Path) -> None:
    def state_dir(**environ: str) -> Path:
        return Environment(environ=environ, cwd=lambda: str(tmp_path)).state_dir()

    assert state_dir(TRAY_STATE_DIR="/x/state", XDG_RUNTIME_DIR="/run/user/7") == Path("/x/state")
    assert state_dir(TRAY_STATE_DIR="rel/state") == tmp_path / "rel" / "state"
    assert state_dir(XDG_RUNTIME_DIR="/run/user/7") == Path("/run/user/7/tray")
    # A relative XDG path is invalid by the XDG spec, and ignored.
    assert state_dir(XDG_RUNTIME_DIR="relative").is_absolute()
