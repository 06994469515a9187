"""``tray dismiss``: ended sessions go, running ones stay with a clear refusal."""

from __future__ import annotations

import time
from collections.abc import Callable

from helpers.tray_home import Tray

from tray.core.session.model import Session

MakeSession = Callable[..., Session]


def test_dismiss_removes_ended_sessions(tray_home: Tray, session: MakeSession) -> None:
    now = time.time()
    ended = tray_home.write_session(session("ended", now, alive=False, exit_code=0))
    other = tray_home.write_session(session("other", now, alive=False, exit_code=1))
    result = tray_home.run("dismiss", "ended")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not ended.exists()
    assert other.exists()
    assert [s["id"] for s in tray_home.status_json()["sessions"]] == ["other"]


def test_dismiss_refuses_running_sessions(tray_home: Tray, session: MakeSession) -> None:
    now = time.time()
    running = tray_home.write_session(session("running", now))
    ended = tray_home.write_session(session("ended", now, alive=False, exit_code=0))
    result = tray_home.run("dismiss", "running", "ended")
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["tray dismiss: running is still running; end it first"]
    assert running.exists()
    assert not ended.exists()


def test_dismiss_takes_dead_launchers_as_ended(
    tray_home: Tray, session: MakeSession, dead_launcher: tuple[int, str]
) -> None:
    pid, token = dead_launcher
    crashed = tray_home.write_session(session("crashed", time.time(), pid=pid, pid_start=token))
    assert tray_home.run("dismiss", "crashed").returncode == 0
    assert not crashed.exists()


def test_dismiss_unknown_ids(tray_home: Tray) -> None:
    outside = tray_home.home / "precious.json"
    outside.write_text("{}")
    result = tray_home.run("dismiss", "nope", "../home/precious")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "tray dismiss: no session nope",
        "tray dismiss: no session ../home/precious",
    ]
    assert outside.exists()


def test_dismiss_ended_keeps_running(
    tray_home: Tray, session: MakeSession, dead_launcher: tuple[int, str]
) -> None:
    pid, token = dead_launcher
    now = time.time()
    tray_home.write_session(session("a", now, alive=False, exit_code=0))
    tray_home.write_session(session("b", now + 1, pid=pid, pid_start=token))
    tray_home.write_session(session("c", now + 2))
    result = tray_home.run("dismiss", "--ended")
    assert (result.returncode, result.stderr) == (0, "")
    assert [s["id"] for s in tray_home.status_json()["sessions"]] == ["c"]


def test_dismiss_usage_errors(tray_home: Tray) -> None:
    for args in ((), ("--ended", "x"), ("--bogus",)):
        result = tray_home.run("dismiss", *args)
        assert result.returncode == 2, args
        (line,) = result.stderr.splitlines()
        assert line.startswith("tray dismiss: ")


def test_dismiss_prunes_aged_out_sessions(tray_home: Tray, session: MakeSession) -> None:
    tray_home.write_config("[sessions]\nkeep_ended = 60\n")
    now = time.time()
    old = tray_home.write_session(session("old", now, alive=False, updated_at=now - 120))
    tray_home.write_session(session("new", now, alive=False, exit_code=0))
    assert tray_home.run("dismiss", "new").returncode == 0
    assert not old.exists()
