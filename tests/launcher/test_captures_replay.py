"""The real Claude Code and Codex byte streams, replayed through `tray run` on a pty.

A small program plays the agent: it writes the capture as the agent did, waits for the
answer to the support query the way Claude Code does (the query, then DA1; whichever
answer comes first decides), and holds at each state until the test has seen it in the
state file. The user's terminal must get every byte but the query, and the session file
must move through the states the capture reports.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.launcher_terminal import Job, Terminal, launcher_argv, only_session

from tray.core.session.model import Session

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
QUERY = b"\x1b]7501;?\x07"

# argv: capture, a directory for the agent's notes. It writes the capture one OSC 7501
# sequence at a time; after each report it waits for a line on stdin, so the test can
# look at the state file first. After the query it reads its input until it has the
# 7501 answer or a DA1 answer, and writes down which came first.
AGENT = r"""
import os, re, sys, termios, tty
capture, notes = open(sys.argv[1], "rb").read(), sys.argv[2]
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)
try:
    pieces = re.split(rb"(\x1b\]7501;[^\x07\x1b]*(?:\x07|\x1b\\))", capture)
    for piece in pieces:
        os.write(1, piece)
        if piece == b"\x1b]7501;?\x07":
            got = b""
            while not (b"\x1b]7501;?" in got or re.search(rb"\x1b\[\?[0-9;]*c", got)):
                got += os.read(fd, 1024)
            first = "7501" if got.find(b"\x1b]7501;?") >= 0 else "da1"
            open(os.path.join(notes, "answered"), "w").write(first)
        elif piece.startswith(b"\x1b]7501;state="):
            while not os.read(fd, 1).endswith(b"\r"):
                pass
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
"""

_REPORT = re.compile(rb"\x1b\]7501;(state=[^\x07\x1b]*)(?:\x07|\x1b\\)")


def _capture(name: str) -> bytes:
    return (CAPTURES / name).read_bytes()


def _session(state_dir: Path, check: Callable[[Session], bool]) -> Callable[[], Session | None]:
    def found() -> Session | None:
        session = only_session(state_dir)
        return session if session is not None and check(session) else None

    return found


@pytest.mark.parametrize(
    ("name", "states"),
    [
        (
            "claude-code-2.1.328.bin",
            [
                ("working", None, None),
                ("blocked", "permission", "approve Bash: touch approved-file"),
                ("working", None, None),
                ("done", None, None),
                (None, None, None),  # state=clear
                (None, None, None),  # state=clear again, on exit
            ],
        ),
        (
            "codex-0.169.0.bin",
            [
                ("working", None, None),
                ("blocked", "permission", None),
                ("working", None, None),
                ("done", None, None),
            ],
        ),
    ],
)
def test_a_real_agent_stream_through_the_launcher(
    name: str,
    states: list[tuple[str | None, str | None, str | None]],
    *,
    job_runner: Callable[..., Job],
    terminal: Terminal,
    state_dir: Path,
    tmp_path: Path,
) -> None:
    capture = _capture(name)
    assert len(_REPORT.findall(capture)) == len(states)
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    notes = tmp_path / "notes"
    notes.mkdir()
    job = job_runner(launcher_argv([sys.executable, str(agent), str(CAPTURES / name), str(notes)]))

    for state, kind, msg in states:
        # Each report, once written, shows in the state file before the agent goes on.
        def shows(
            session: Session,
            state: str | None = state,
            kind: str | None = kind,
            msg: str | None = msg,
        ) -> bool:
            leader = [r for r in session.records if r.id == ""]
            if state is None:
                return session.source == "program" and not session.records
            return bool(leader) and (leader[0].state, leader[0].kind, leader[0].msg) == (
                state,
                kind,
                msg,
            )

        job.wait(_session(state_dir, shows), f"{state} {kind} {msg} in the state file")
        terminal.type(b"\r")

    assert job.exit_code() == 0
    expected = capture.replace(QUERY, b"", 1) if QUERY in capture else capture
    job.wait(lambda: terminal.output.endswith(expected[-64:]), "the last bytes")
    assert bytes(terminal.output) == expected
    if QUERY in capture:
        assert (notes / "answered").read_text() == "7501"
    final = only_session(state_dir)
    assert final is not None
    assert (final.alive, final.exit_code, final.state) == (False, 0, "done")
