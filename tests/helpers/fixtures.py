"""The plain fixtures every folder shares, each defined here once: the state directory,
the launcher's terminal and job shell, the forwards' loopback receiver, and `python -m
tray` in a temporary home."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from helpers.launcher_terminal import PROJECT_ROOT, Job, Terminal, sessions
from helpers.processes import dead_process, parent_of, runs_session
from helpers.receiver import Receiver, running_receiver
from helpers.sessions import make_record, make_session
from helpers.tray_home import Tray
from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.state.store import StateStore


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A loopback HTTP server that writes down every request: where forwards go."""
    with running_receiver() as started:
        yield started


@pytest.fixture
def state_dir() -> Iterator[Path]:
    """A state directory, made as tray makes one (0700).

    Short, outside the test's tmp_path: a Unix socket's path (a session's answer socket
    lives in it) has room for about 100 bytes.
    """
    directory = Path(tempfile.mkdtemp(prefix="ts-"))
    StateStore(directory).ensure()
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def store(state_dir: Path) -> StateStore:
    """The store of ``state_dir``."""
    return StateStore(state_dir)


@pytest.fixture
def tray_env(state_dir: Path) -> dict[str, str]:
    """The environment a launcher runs in: this test's state directory, a known TERM."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if key not in ("LINES", "COLUMNS", "TRAY_STATE_DIR", "TMUX", "TMUX_PANE")
    }
    environ["TRAY_STATE_DIR"] = str(state_dir)
    environ["PYTHONPATH"] = str(PROJECT_ROOT)
    environ["TERM"] = "xterm-256color"
    return environ


@pytest.fixture
def terminal(tray_env: dict[str, str], tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tray_env, tmp_path)
    try:
        yield term
    finally:
        term.close()


@pytest.fixture
def job_runner(terminal: Terminal, tmp_path: Path, state_dir: Path) -> Iterator[Callable[..., Job]]:
    """Start the launcher as the foreground job on ``terminal``; clean up whatever is left."""
    jobs: list[Job] = []

    def start(argv: Sequence[str], stdout_path: Path | None = None) -> Job:
        assert not jobs, "one job per terminal"
        stderr_path = tmp_path / "stderr"
        terminal.run(argv, stdout_path, stderr_path)
        job = Job(terminal, stderr_path)
        jobs.append(job)
        job.started()
        return job

    yield start
    for job in jobs:
        # Only while the job shell has not reaped it: after that, the pid may be another
        # worker's process.
        if job.pid and terminal.shell.isalive() and parent_of(job.pid) == terminal.shell.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(job.pid, signal.SIGKILL)
            terminal.wait_for_shell()
    # Commands whose launcher did not see them end (a test failed, or killed it).
    for session in sessions(state_dir) if state_dir.exists() else []:
        if session.child_pid and runs_session(session.child_pid, session.id):
            with contextlib.suppress(ProcessLookupError):
                os.kill(session.child_pid, signal.SIGKILL)


@pytest.fixture
def tray_home(tmp_path: Path) -> Tray:
    """`python -m tray` confined to a temporary home, config and state."""
    home = tmp_path / "home"
    home.mkdir()
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(PROJECT_ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "TRAY_STATE_DIR": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    return Tray(home, tmp_path / "state", tmp_path / "config", environ)


@pytest.fixture
def dead_launcher() -> tuple[int, str]:
    """The pid and start token of a process that has exited and been reaped."""
    return dead_process()


@pytest.fixture
def record() -> Callable[..., Record]:
    return make_record


@pytest.fixture
def session() -> Callable[..., Session]:
    return make_session
