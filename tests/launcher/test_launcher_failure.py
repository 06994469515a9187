"""A launcher that fails inside its loop still ends cleanly: the user's terminal back as
it was, the command hung up, the session written as ended, and its answer socket gone."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from helpers.launcher_terminal import Job, Terminal, only_session, pid_gone, started_session
from helpers.waiting import wait_for

from tray.state.answer_channel import socket_path

# The launcher as `tray run` runs it, but for its ``on_write`` hook: that raises at the
# first write with a record in it, inside the proxy's loop, as a bug of the launcher's
# would. The end it writes after that goes through.
FAILING_DRIVER = (
    "import sys\n"
    "from tray.state.environment import Environment\n"
    "from tray.launcher.run import Launcher\n"
    "failed = []\n"
    "def on_write(session, at):\n"
    "    if session.records and not failed:\n"
    "        failed.append(True)\n"
    "        raise RuntimeError('a bug in the loop')\n"
    "sys.exit(Launcher(sys.argv[1:], None, Environment(), on_write=on_write).run())\n"
)
# Reports once the test has seen it start, then waits for a hangup.
REPORTS_ON_ENTER = [
    "sh",
    "-c",
    r"echo ready; read line; printf '\033]7501;state=working\007'; exec sleep 60",
]


def test_a_failing_loop_restores_the_terminal_and_ends_the_session(
    job_runner: Callable[..., Job], terminal: Terminal, state_dir: Path
) -> None:
    before = terminal.attributes()
    job = job_runner([sys.executable, "-c", FAILING_DRIVER, *REPORTS_ON_ENTER])
    job.expect(b"ready")
    job.wait(terminal.is_raw, "raw mode")
    session = job.wait(lambda: started_session(state_dir), "the session")
    answers = Path(socket_path(state_dir, session.id))
    assert answers.is_socket()

    terminal.type(b"\r")
    assert job.exit_code() == 1  # the interpreter's, for the exception let through
    assert "RuntimeError: a bug in the loop" in job.stderr()
    assert terminal.attributes() == before
    ended = only_session(state_dir)
    assert ended is not None
    # Not left working: the launcher's end, with no status to give.
    assert (ended.alive, ended.exit_code, ended.state) == (False, None, "error")
    # Written so by the launcher, not only found dead by the reader.
    written = json.loads((state_dir / f"{session.id}.json").read_text())
    assert (written["alive"], written["exit_code"], written["state"]) == (False, None, "error")
    assert not answers.exists()
    wait_for(lambda: pid_gone(session.child_pid or 0), what="the command to be hung up")
    log = (state_dir / "launcher.log").read_text()
    assert "launcher failed" in log
    assert "ended status=None" in log
