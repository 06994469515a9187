"""The launcher's log file: lines appended, kept to about a megabyte, never an error."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tray.state.logs import LAUNCHER_LOG_NAME as LOG_NAME
from tray.state.logs import LOG_LIMIT, LauncherLog

AT = 1_764_470_012.25


def clock() -> float:
    return AT


@pytest.mark.parametrize("given_as", [str, Path], ids=["str", "Path"])
def test_lines_are_appended_to_a_private_file(
    tmp_path: Path, given_as: type[str] | type[Path]
) -> None:
    path = tmp_path / LOG_NAME
    log = LauncherLog(given_as(path), "4242-abc", clock)
    log("started   pid=1\nsecond line")
    log("ended status=0")
    log.close()
    lines = path.read_text().splitlines()
    assert [line.split(" ", 2)[1:] for line in lines] == [
        ["4242-abc", "started pid=1 second line"],
        ["4242-abc", "ended status=0"],
    ]
    assert lines[0].split(" ")[0].endswith(".250")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_full_log_is_moved_aside_once_at_open(tmp_path: Path) -> None:
    path = tmp_path / LOG_NAME
    path.write_bytes(b"x" * (LOG_LIMIT + 1))
    log = LauncherLog(str(path), "s1", clock)
    log("fresh")
    log.close()
    assert (tmp_path / f"{LOG_NAME}.1").stat().st_size == LOG_LIMIT + 1
    assert path.read_text().endswith(" s1 fresh\n")


def test_a_log_within_its_limit_is_kept(tmp_path: Path) -> None:
    path = tmp_path / LOG_NAME
    path.write_text("old\n")
    log = LauncherLog(str(path), "s1", clock)
    log("new")
    log.close()
    assert path.read_text().startswith("old\n")
    assert not (tmp_path / f"{LOG_NAME}.1").exists()


def test_no_path_and_an_unwritable_path_log_nothing(tmp_path: Path) -> None:
    LauncherLog(None, "s1", clock)("nothing")
    log = LauncherLog(str(tmp_path / "missing" / LOG_NAME), "s1", clock)
    log("given up")
    log("and quietly")
    log.close()
    assert os.listdir(tmp_path) == []
