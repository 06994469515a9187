"""Whether a launcher still runs, on real processes: its pid and that pid's start time."""

from __future__ import annotations

import os

from helpers.processes import dead_process
from helpers.sessions import make_session

from tray.state.liveness import launcher_alive, process_start_token, with_liveness


def test_a_running_launcher_is_alive() -> None:
    assert launcher_alive(os.getpid(), process_start_token(os.getpid()))


def test_pid_reuse_is_detected() -> None:
    token = process_start_token(os.getpid())
    assert token is not None
    assert not launcher_alive(os.getpid(), token + "0")


def test_dead_and_impossible_pids_are_dead() -> None:
    pid, token = dead_process()
    assert not launcher_alive(pid, token)
    assert not launcher_alive(pid, None)
    assert not launcher_alive(0, None)
    assert not launcher_alive(-1, None)


def test_a_session_whose_launcher_is_gone_is_ended_at_its_last_write() -> None:
    pid, token = dead_process()
    gone = make_session("gone", 100.0, pid=pid, pid_start=token, updated_at=150.0)
    ended = with_liveness(gone)
    assert not ended.alive
    assert ended.updated_at == 150.0  # so a dead session still ages out
    running = make_session("running", 100.0)
    assert with_liveness(running) is running
