"""Reading and writing the state directory never brings the tray app's libraries in:
every command and each ``tray run`` does it, and none of them is the app."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.app_imports import app_libraries_imported


@pytest.mark.parametrize("library", ["asyncio", "watchdog", "tray.outlets"])
def test_the_probe_sees_an_app_library(library: str) -> None:
    assert library in app_libraries_imported(f"import {library}")


def test_the_probe_sees_a_submodule_as_its_library() -> None:
    assert "watchdog" in app_libraries_imported("import watchdog.events")


@pytest.mark.parametrize(
    "module",
    [
        "tray.state.environment",
        "tray.state.store",
        "tray.state.liveness",
        "tray.state.answer_channel",
        "tray.state.session_cache",
        "tray.state.logs",
        "tray.state.marks_file",
        "tray.state.app_lock",
        "tray.state.config_file",
        "tray.launcher.answer_socket",
        "tray.launcher.recorder",
    ],
)
def test_importing_brings_none_of_the_app_libraries(module: str) -> None:
    assert app_libraries_imported(f"import {module}") == set()


LAUNCHER = """
import os, time
from dataclasses import replace
from tray.launcher.answer_socket import AnswerSocket
from tray.state.answer_channel import socket_path
from tray.state.logs import LauncherLog
from tray.core.session.model import Session
from tray.state.liveness import process_start_token
from tray.state.store import StateStore

directory = os.path.join(os.environ["PROBE_DIRECTORY"], "state")
store = StateStore(directory)
store.ensure()
session = Session(id=f"{os.getpid()}-abc", name="true", command=("true",), cwd="/",
                  pid=os.getpid(), child_pid=None, started_at=time.time(),
                  updated_at=time.time(), pid_start=process_start_token(os.getpid()))
store.write(session)
log = LauncherLog(os.path.join(directory, "launcher.log"), session.id, time.time)
log("started")
store.write(replace(session, id="1-other"))
assert StateStore(directory).prune(time.time(), 3600) == 0
answers = AnswerSocket(socket_path(directory, session.id), None, None)
store.write(replace(session, child_pid=1))
answers.close()
store.write(session.ended(0, time.time()))
log.close()
assert store.remove(session.id)
"""


def test_a_launchers_calls_on_its_state_directory_bring_none(tmp_path: Path) -> None:
    # What a `tray run` does with its state directory, with another session's file read.
    assert app_libraries_imported(LAUNCHER, PROBE_DIRECTORY=str(tmp_path)) == set()


READER = """
import logging, os, time
from pathlib import Path
from tray.core.session.model import Session
from tray.core.view.overview import Mutes
from tray.core.worker.marks import AppMemory
from tray.state.app_lock import app_lock_held
from tray.state.marks_file import load_marks, save_marks
from tray.state.session_cache import SessionCache
from tray.state.store import StateStore

directory = Path(os.environ["PROBE_DIRECTORY"])
store = StateStore(directory)
store.ensure()
for session_id in ("1-ended", "2-running"):
    store.write(Session(id=session_id, name="n", command=("x",), cwd="/", pid=os.getpid(),
                        child_pid=None, started_at=1.0, updated_at=2.0))
store.write(store.read(store.path_for("1-ended")).ended(0, 3.0))
(directory / "bad.json").write_text("{")
sessions, problems = store.read_all(time.time())
assert len(sessions) == 2 and len(problems) == 1, (sessions, problems)
cache = SessionCache(store)
cache.rescan()
cache.reload(["2-running.json"])
assert len(cache.sessions()[0]) == 2
assert store.dismiss("2-running").value == "running"
assert store.dismiss_ended() == ["1-ended"]
save_marks(directory / "app.state", AppMemory(), Mutes(paused_until=5.0))
assert load_marks(directory / "app.state", logging.getLogger("probe")).mutes.paused_until == 5.0
assert not app_lock_held(directory)
"""


def test_reading_and_dismissing_sessions_bring_none(tmp_path: Path) -> None:
    # What `tray status`, `tray dismiss` and `tray answer` do with the state directory.
    assert app_libraries_imported(READER, PROBE_DIRECTORY=str(tmp_path)) == set()
