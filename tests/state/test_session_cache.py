"""SessionCache on real files and real processes: what it reads again, and what it keeps."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.liveness import process_start_token
from tray.state.session_cache import SessionCache
from tray.state.store import Problem, StateStore

NOW = 1_764_470_000.0


def working(session_id: str, msg: str, started: float = NOW, **changes: Any) -> Session:
    """A working session whose launcher is this test process, so it stays alive."""
    session = Session(
        id=session_id,
        name=session_id,
        command=("agent",),
        cwd="/",
        pid=os.getpid(),
        child_pid=None,
        started_at=started,
        updated_at=started,
        source="program",
        records=(Record("", State.WORKING, None, None, "agent", None, msg, started),),
        pid_start=process_start_token(os.getpid()),
    )
    return replace(session, **changes)


def messages(cache: SessionCache) -> dict[str, str | None]:
    sessions, _ = cache.sessions()
    return {s.id: s.records[0].msg if s.records else None for s in sessions}


def rewrite_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Change the file's bytes but not its identity: same inode, size and mtime."""
    assert len(old) == len(new)
    before = os.stat(path)
    data = path.read_bytes()
    assert old in data
    with open(path, "r+b") as handle:
        handle.write(data.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def test_a_rescan_gives_what_read_all_gives(store: StateStore) -> None:
    store.write(working("b", "two", started=NOW + 1))
    store.write(working("a", "one", started=NOW + 1))
    store.write(working("c", "three"))
    (store.directory / "broken.json").write_text("{")
    (store.directory / ".c.1.2.tmp").write_text("{")
    (store.directory / "app.state").write_text("{}")
    cache = SessionCache(store)
    cache.rescan()
    assert cache.sessions() == store.read_all(NOW)
    assert [s.id for s in cache.sessions()[0]] == ["c", "a", "b"]  # oldest first, then id


def test_a_rescan_reads_only_files_whose_identity_changed(store: StateStore) -> None:
    store.write(working("s1", "step aaa"))
    cache = SessionCache(store)
    cache.rescan()
    path = store.path_for("s1")
    rewrite_in_place(path, b"step aaa", b"step bbb")
    cache.rescan()
    assert messages(cache) == {"s1": "step aaa"}  # same identity: the kept copy
    store.write(working("s1", "step ccc"))  # a new file: a new inode
    cache.rescan()
    assert messages(cache) == {"s1": "step ccc"}


def test_reload_reads_the_named_files_even_when_they_look_the_same(store: StateStore) -> None:
    store.write(working("s1", "step aaa"))
    store.write(working("s2", "other"))
    cache = SessionCache(store)
    cache.rescan()
    rewrite_in_place(store.path_for("s1"), b"step aaa", b"step bbb")
    rewrite_in_place(store.path_for("s2"), b"other", b"OTHER")
    # The watcher named s1 only: the event is the proof it changed.
    cache.reload({"s1.json"})
    assert messages(cache) == {"s1": "step bbb", "s2": "other"}


def test_reload_adds_new_files_and_ignores_names_that_are_not_sessions(
    store: StateStore,
) -> None:
    cache = SessionCache(store)
    cache.rescan()
    store.write(working("new", "hello"))
    (store.directory / ".x.1.1.tmp").write_text("{")
    cache.reload({"new.json", ".x.1.1.tmp", "app.state", ".hidden.json", "missing.json"})
    assert messages(cache) == {"new": "hello"}
    assert cache.sessions()[1] == []


def test_a_removed_file_drops_its_session(store: StateStore) -> None:
    store.write(working("s1", "one"))
    store.write(working("s2", "two"))
    cache = SessionCache(store)
    cache.rescan()
    store.remove("s1")
    cache.reload({"s1.json"})
    assert messages(cache) == {"s2": "two"}
    store.remove("s2")  # the watcher missed it: the rescan finds it gone
    cache.rescan()
    assert messages(cache) == {}


def test_an_unchanged_file_whose_launcher_was_killed_ends_at_the_next_rescan(
    store: StateStore,
) -> None:
    launcher = subprocess.Popen(["sleep", "60"])
    try:
        token = process_start_token(launcher.pid)
        store.write(working("doomed", "busy", pid=launcher.pid, pid_start=token))
        cache = SessionCache(store)
        cache.rescan()
        [session] = cache.sessions()[0]
        assert session.alive
        identity = os.stat(store.path_for("doomed"))
        launcher.kill()  # SIGKILL: the file is never written again
        launcher.wait()
        cache.reload(set())  # nothing changed on disk
        assert cache.sessions()[0][0].alive
        cache.rescan()
        [session] = cache.sessions()[0]
        assert not session.alive
        assert session.state == "error"
        assert os.stat(store.path_for("doomed")).st_mtime_ns == identity.st_mtime_ns
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_a_broken_file_stays_a_problem_until_it_changes(store: StateStore) -> None:
    broken = store.directory / "broken.json"
    broken.write_bytes(b'{"version": 1')
    cache = SessionCache(store)
    cache.rescan()
    [problem] = cache.sessions()[1]
    assert problem.path == broken
    assert "delimiter" in problem.reason
    rewrite_in_place(broken, b'{"version": 1', b'{"version" 1}')
    cache.rescan()
    assert cache.sessions() == ([], [problem])  # unchanged identity: not read again
    cache.reload({"broken.json"})
    [other] = cache.sessions()[1]
    assert other.reason != problem.reason
    store.write(working("broken", "fixed"))
    cache.rescan()
    assert messages(cache) == {"broken": "fixed"}
    assert cache.sessions()[1] == []


def test_an_unusable_directory_is_one_problem_and_recovers(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    directory.write_text("not a directory")
    store = StateStore(directory)
    cache = SessionCache(store)
    cache.rescan()
    assert cache.sessions() == ([], [Problem(directory, "Not a directory")])
    directory.unlink()
    store.ensure()
    store.write(working("s1", "back"))
    cache.rescan()
    assert messages(cache) == {"s1": "back"}
    assert cache.sessions()[1] == []


def test_a_reloaded_file_is_taken_as_written_and_the_rescan_still_ends_a_killed_launcher(
    store: StateStore,
) -> None:
    launcher = subprocess.Popen(["sleep", "60"])
    try:
        token = process_start_token(launcher.pid)
        store.write(working("doomed", "step 1", pid=launcher.pid, pid_start=token))
        cache = SessionCache(store)
        cache.rescan()
        # Its last write, and then SIGKILL before the watcher's event is read.
        store.write(working("doomed", "step 2", pid=launcher.pid, pid_start=token))
        launcher.kill()
        launcher.wait()
        # A changed file: only a live launcher writes one, so /proc is not asked.
        cache.reload({"doomed.json"})
        [session] = cache.sessions()[0]
        assert (session.alive, session.records[0].msg) == (True, "step 2")
        # The rescan asks again, as for a launcher killed between writes.
        cache.rescan()
        [session] = cache.sessions()[0]
        assert not session.alive
        assert session.state == "error"
        # Written again by someone else, still claiming that launcher: it stays dead.
        store.write(
            working("doomed", "step 3", pid=launcher.pid, pid_start=token, updated_at=NOW + 5)
        )
        cache.reload({"doomed.json"})
        [session] = cache.sessions()[0]
        assert (session.alive, session.state, session.updated_at) == (False, "error", NOW + 5)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()


def test_a_reloaded_file_of_a_live_launcher_is_alive(store: StateStore) -> None:
    store.write(working("s1", "one"))
    cache = SessionCache(store)
    cache.reload({"s1.json"})  # never rescanned: a launcher's first write
    [session] = cache.sessions()[0]
    assert session.alive
    assert cache.sessions() == store.read_all(NOW)
