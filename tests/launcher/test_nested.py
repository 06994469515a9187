"""`tray run` inside `tray run`: the inner session records the program's reports, and
the outer one does not record them a second time."""

from __future__ import annotations

import sys
from pathlib import Path

from helpers.launcher_terminal import launcher_argv, run_piped, sessions

REPORTER = (
    "import os; os.write(1, b'hello\\n\\x1b]7501;state=blocked:kind=question\\x07"
    "\\x1b]7501;state=done:app=demo\\x1b\\\\bye\\n')"
)


def test_the_inner_session_records_and_the_outer_does_not(
    tray_env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    inner = launcher_argv([sys.executable, "-c", REPORTER])
    result = run_piped(inner, tray_env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert b"hello" in result.stdout
    assert b"bye" in result.stdout
    assert b"7501" not in result.stdout

    found = {len(session.command): session for session in sessions(state_dir)}
    assert len(found) == 2
    outer, nested = found[max(found)], found[min(found)]
    assert outer.command[:4] == (sys.executable, "-m", "tray", "run")
    assert (outer.source, outer.records, outer.state) == ("launcher", (), "done")
    assert nested.source == "program"
    assert [(r.state, r.app) for r in nested.records] == [("done", "demo")]


def test_a_single_launcher_still_forwards_reports(tray_env: dict[str, str], tmp_path: Path) -> None:
    result = run_piped([sys.executable, "-c", REPORTER], tray_env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert b"\x1b]7501;state=done:app=demo\x1b\\" in result.stdout
