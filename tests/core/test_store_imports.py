"""What the state files' modules cost `tray run`: none of json, re, enum, pathlib and the
like, which take milliseconds of every start, unless a file is really read.

Each probe runs in a fresh interpreter without ``site`` (``-S``) and with an environment
of its own: a venv's start-up (an editable install's finder) may import pathlib and re
itself, which would hide them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tray
from tray.state.store import StateStore

PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent
# Each costs milliseconds at import; ``collections`` and ``functools`` come with
# contextlib and typing, ``fnmatch`` and ``urllib`` with pathlib.
SLOW = ("json", "re", "enum", "pathlib", "contextlib", "collections", "functools", "typing")


def imported_by(code: str, directory: Path | None = None, **environ: str) -> set[str]:
    """The slow modules in the interpreter after ``code`` ran, in a fresh one."""
    probe = (
        f"import sys\nsys.path.insert(0, {str(PROJECT_ROOT)!r})\n{code}\n"
        f"print(' '.join(sorted(set(sys.modules) & {set(SLOW)!r})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        env={"PROBE_DIRECTORY": str(directory), **environ},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(result.stdout.split())


def test_the_probe_sees_a_slow_module() -> None:
    assert imported_by("import json") >= {"json", "re", "enum"}


@pytest.mark.parametrize(
    "module",
    [
        "tray.base.json_text",
        "tray.core.session",
        "tray.state.store",
        "tray.state.logs",
        "tray.launcher.answer_socket",
        "tray.launcher.recorder",
    ],
)
def test_importing_brings_none_of_the_slow_modules(module: str) -> None:
    assert imported_by(f"import {module}") == set()


LAUNCHER = """
import os, time
from tray.launcher.answer_socket import AnswerSocket, socket_path
from tray.state.logs import LauncherLog
from tray.core.session import Session
from tray.state.store import StateStore, process_start_token

directory = os.path.join(os.environ["PROBE_DIRECTORY"], "state")
store = StateStore(directory)
store.ensure()
session = Session(id=f"{os.getpid()}-abc", name="true", command=("true",), cwd="/",
                  pid=os.getpid(), child_pid=None, started_at=time.time(),
                  updated_at=time.time(), pid_start=process_start_token(os.getpid()))
store.write(session)
log = LauncherLog(os.path.join(directory, "launcher.log"), session.id, time.time)
log("started")
assert store.prune(time.time(), 3600) == 0
answers = AnswerSocket(socket_path(directory, session.id), None, None)
store.write(session.replace(child_pid=1))
answers.close()
store.write(session.ended(0, time.time()))
log.close()
assert store.remove(session.id)
"""


def test_the_launchers_calls_on_an_empty_directory_bring_none(tmp_path: Path) -> None:
    # What a `tray run` does with its state directory: its own file is never read back.
    assert imported_by(LAUNCHER, tmp_path) == set()


def test_a_prune_that_reads_another_sessions_file_brings_json(tmp_path: Path) -> None:
    # The test above means something: a file this process did not write is read, with json.
    other = (
        "store.write(session.replace(id='1-other'))\n"
        "assert StateStore(directory).prune(time.time(), 3600) == 0\n"
    )
    assert "json" in imported_by(LAUNCHER + other, tmp_path)


RECORDS = """
import os, time
from tray.protocol.records import Record
from tray.core.session import Session
from tray.state.store import StateStore

records = tuple(
    Record(f"r{i:02}", "done", None, None, "agent", "t\\u00e9", "m\\U0001f600\\n", 1.5 + i)
    for i in range(int(os.environ["PROBE_RECORDS"]))
)
session = Session(id="1-abc", name="n\\udcff", command=("x",), cwd="/", pid=1, child_pid=None,
                  started_at=1.0, updated_at=2.0, records=records)
StateStore(os.environ["PROBE_DIRECTORY"]).write(session)
"""


@pytest.mark.parametrize(("records", "json_imported"), [(3, False), (17, True)])
def test_a_file_is_written_as_json_writes_it_with_json_or_without(
    tmp_path: Path, records: int, json_imported: bool
) -> None:
    # Up to PURE_WRITER_RECORDS the pure writer, past it json's own: the same text.
    imported = imported_by(RECORDS, tmp_path, PROBE_RECORDS=str(records))
    assert ("json" in imported) is json_imported
    written = (tmp_path / "1-abc.json").read_text()
    session = StateStore(tmp_path).read(tmp_path / "1-abc.json")
    assert len(session.records) == records
    assert written == json.dumps(session.to_file(), separators=(",", ":"))
