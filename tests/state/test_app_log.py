"""The app's log, in a child process each (the logger is the process's own)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOG_ONE_LINE = """
import sys
from pathlib import Path
from tray.state.logs import open_app_log
open_app_log(Path(sys.argv[1])).info("the icon is shown")
"""


def log_one_line(state_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LOG_ONE_LINE, str(state_dir)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )


def test_the_log_goes_to_app_log_alone_when_stderr_is_no_terminal(tmp_path: Path) -> None:
    done = log_one_line(tmp_path)
    assert done.stderr == ""
    (line,) = (tmp_path / "app.log").read_text().splitlines()
    assert line.endswith(" INFO the icon is shown")
    assert (tmp_path / "app.log").stat().st_mode & 0o777 == 0o600


def test_an_app_log_that_cannot_be_written_is_said_and_the_log_goes_to_stderr(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.log").mkdir()  # a directory where the file should be
    done = log_one_line(tmp_path)
    said, logged = done.stderr.splitlines()
    assert (
        said == f"tray app: cannot write {tmp_path / 'app.log'}: Is a directory; logging to stderr"
    )
    assert logged.endswith(" INFO the icon is shown")
