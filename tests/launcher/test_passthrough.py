"""Bytes through the launcher: exact, complete, and the support query answered in time."""

from __future__ import annotations

import os
import random
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from helpers.launcher_terminal import (
    Job,
    Terminal,
    launcher_argv,
    only_session,
    pid_gone,
    started_session,
)
from helpers.waiting import wait_for

BLOB_SIZE = 300_000
BLOB_SEED = 7501

# Sets its own pty raw (no "\n" -> "\r\n") and writes every byte value plus noise.
BLOB_CHILD = f"""
import os, random, tty
tty.setraw(1)
data = bytes(range(256)) + random.Random({BLOB_SEED}).randbytes({BLOB_SIZE})
view = memoryview(data)
while view:
    view = view[os.write(1, view):]
"""

# Probes like Claude Code (the query, then DA1 at once), optionally split in two writes,
# then reports in hex everything its input held up to the terminal's DA1 answer.
PROBE_CHILD = r"""
import os, sys, time, tty
tty.setraw(0)
parts = [part.encode() for part in sys.argv[1:]]
for part in parts:
    os.write(1, part.replace(b"ESC", b"\x1b").replace(b"BEL", b"\x07"))
    time.sleep(0.01)
got = b""
while not (b"\x1b[?" in got and got.endswith(b"c")):
    got += os.read(0, 1024)
os.write(1, b"\r\nGOT " + got.hex().encode() + b"\r\n")
"""

ANSWER = b"\x1b]7501;?\x07"
DA1_QUERY = b"\x1b[c"
DA1_REPLY = b"\x1b[?62;22c"


def expected_blob() -> bytes:
    return bytes(range(256)) + random.Random(BLOB_SEED).randbytes(BLOB_SIZE)


def test_output_arrives_byte_for_byte(job_runner: Callable[..., Job]) -> None:
    job = job_runner(launcher_argv([sys.executable, "-c", BLOB_CHILD]))
    assert job.exit_code() == 0
    job.terminal.read()
    assert bytes(job.terminal.output) == expected_blob()


def test_last_output_is_drained_while_a_grandchild_holds_the_pty(
    job_runner: Callable[..., Job], tmp_path: Path
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    # The grandchild ignores the hangup and keeps the pty open for a minute; the
    # command itself prints 200 KB and exits at once.
    script = (
        f"trap '' HUP; sleep 60 & echo $! > {pidfile}; "
        f"exec {sys.executable} -c 'import sys; sys.stdout.write(\"x\" * 200000)'"
    )
    job = job_runner(launcher_argv(["sh", "-c", script]))
    try:
        assert job.exit_code() == 0
        job.terminal.read()
        assert bytes(job.terminal.output) == b"x" * 200000
    finally:
        grandchild = int(wait_for(pidfile.read_text, what="the grandchild's pid"))
        os.kill(grandchild, signal.SIGKILL)
        wait_for(lambda: pid_gone(grandchild), what="the grandchild to go")


# When told to (a file appears), writes as much as the pty takes without anybody
# reading, notes how much that was, and exits at once.
LAST_WORDS = """
import os, sys, time
while not os.path.exists(sys.argv[1]):
    time.sleep(0.005)
os.set_blocking(1, False)
sent = 0
try:
    while sent < 1 << 20:
        sent += os.write(1, b"z" * 4096)
except BlockingIOError:
    pass
with open(sys.argv[2], "w") as note:
    note.write(str(sent))
"""


def test_output_still_in_the_pty_when_the_command_exits_is_not_lost(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path
) -> None:
    go, note = tmp_path / "go", tmp_path / "sent"
    job = job_runner(launcher_argv([sys.executable, "-c", LAST_WORDS, str(go), str(note)]))
    session = job.wait(lambda: started_session(state_dir), "the session")
    # With the launcher stopped, the command's last output can only wait in the pty.
    os.kill(job.pid, signal.SIGSTOP)
    job.wait(lambda: any(os.WIFSTOPPED(s) for s in job.statuses), "the launcher to stop")
    go.touch()
    sent = int(wait_for(lambda: note.read_text() if note.exists() else "", what="the note"))
    wait_for(lambda: pid_gone(session.child_pid or 0), what="the command to exit")
    assert sent > 4096  # more than one read of the pty takes
    os.kill(job.pid, signal.SIGCONT)  # it learns of the exit and of the output together
    assert job.exit_code() == 0
    job.terminal.read()
    assert bytes(job.terminal.output) == b"z" * sent


def _probe(job: Job) -> bytes:
    job.expect(DA1_QUERY)
    job.terminal.type(DA1_REPLY)  # as the user's terminal does
    job.wait(
        lambda: b"GOT " in job.terminal.output and job.terminal.output.endswith(b"\r\n"),
        "the report",
    )
    line = bytes(job.terminal.output).split(b"GOT ", 1)[1].split(b"\r\n", 1)[0]
    return bytes.fromhex(line.decode())


def test_query_is_answered_into_the_input_before_the_terminal_answers_da1(
    job_runner: Callable[..., Job], state_dir: Path
) -> None:
    job = job_runner(launcher_argv([sys.executable, "-c", PROBE_CHILD, "ESC]7501;?BELESC[c"]))
    got = _probe(job)
    assert job.exit_code() == 0
    assert got == ANSWER + DA1_REPLY
    before_report = bytes(job.terminal.output).split(b"\r\nGOT ", 1)[0]
    assert before_report == DA1_QUERY  # the query itself never reaches the terminal
    session = only_session(state_dir)
    assert session is not None
    assert session.source == "program"  # a query alone makes it the program's session
    assert session.records == ()


def test_query_with_st_is_answered_with_st(job_runner: Callable[..., Job]) -> None:
    job = job_runner(launcher_argv([sys.executable, "-c", PROBE_CHILD, "ESC]7501;?ESC\\ESC[c"]))
    got = _probe(job)
    assert job.exit_code() == 0
    assert got == b"\x1b]7501;?\x1b\\" + DA1_REPLY


def test_split_query_is_answered_once(job_runner: Callable[..., Job]) -> None:
    job = job_runner(
        launcher_argv([sys.executable, "-c", PROBE_CHILD, "ESC]750", "1;?BEL", "ESC[c"])
    )
    got = _probe(job)
    assert job.exit_code() == 0
    assert got == ANSWER + DA1_REPLY


def test_a_query_inside_other_output_is_cut_out_exactly(job_runner: Callable[..., Job]) -> None:
    job = job_runner(
        launcher_argv([sys.executable, "-c", PROBE_CHILD, "before ESC]7501;?BEL afterESC[c"])
    )
    got = _probe(job)
    assert job.exit_code() == 0
    assert got == ANSWER + DA1_REPLY
    assert bytes(job.terminal.output).startswith(b"before  after" + DA1_QUERY)


def test_terminal_is_not_touched_by_the_launcher_itself(
    job_runner: Callable[..., Job], terminal: Terminal
) -> None:
    job = job_runner(launcher_argv(["sh", "-c", "printf 'only this'"]))
    assert job.exit_code() == 0
    terminal.read()
    assert bytes(terminal.output) == b"only this"
    assert job.stderr() == ""
