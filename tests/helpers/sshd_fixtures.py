"""A real sshd on loopback per test, a "remote" tray behind it, and a callback recorder."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers.sshd import SSHD, Remote, Sshd, host_config, run_tmux
from helpers.waiting import wait_for
from tray.core.hosts.remote_sessions import HostStatus, RemoteState
from tray.core.hosts.ssh_commands import HostConfig

TIMEOUT = 20.0


class Recorder:
    """What a link reported, in order, with the time each came."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.states: list[tuple[str, RemoteState, float]] = []
        self.statuses: list[tuple[str, HostStatus]] = []
        self.arrived = threading.Condition(self._lock)

    def on_state(self, host: str, state: RemoteState) -> None:
        with self._lock:
            self.states.append((host, state, time.monotonic()))
            self.arrived.notify_all()

    def on_status(self, host: str, status: HostStatus) -> None:
        with self._lock:
            self.statuses.append((host, status))
            self.arrived.notify_all()

    def status_names(self) -> list[str]:
        with self._lock:
            return [status.state for _, status in self.statuses]

    def latest(self) -> RemoteState | None:
        with self._lock:
            return self.states[-1][1] if self.states else None

    def state_count(self) -> int:
        with self._lock:
            return len(self.states)

    def wait_state(
        self, predicate: Callable[[RemoteState], bool], timeout: float = TIMEOUT
    ) -> RemoteState:
        def found() -> RemoteState | None:
            with self._lock:
                return next((s for _, s, _ in reversed(self.states) if predicate(s)), None)

        state = wait_for(found, timeout, what="a matching state")
        assert state is not None
        return state


def blocked_ids(state: RemoteState) -> set[str]:
    return {s.id for s in state.sessions if s.state == "blocked"}


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    if shutil.which(SSHD) is None or shutil.which("ssh") is None:
        pytest.fail("needs openssh-server and openssh-client (make test installs them)")
    server = Sshd(tmp_path / "sshd")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path / "remote")


@pytest.fixture
def host(sshd: Sshd, remote: Remote) -> HostConfig:
    return host_config(sshd, remote)


@pytest.fixture
def tmux_socket(tmp_path: Path) -> Iterator[Path]:
    """A tmux server of the test's own, with one session ("work"), as the host's user runs it."""
    if shutil.which("tmux") is None:
        pytest.fail("needs tmux (make test installs it)")
    socket = tmp_path / "tmux.sock"
    run_tmux(socket, "new-session", "-d", "-s", "work", "-x", "100", "-y", "30")
    try:
        yield socket
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], timeout=10, check=False)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
