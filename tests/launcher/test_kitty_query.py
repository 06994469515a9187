"""kitty's notification query under `tray run`, on real ptys: answered, never shown.

opencode asks ``OSC 99 ; i=opentui-notifications : p=? ;`` at start, then DA1, and sends
its OSC 99 notifications only when the first answer is the OSC 99 one. The launcher
answers it straight into the program's input, before the DA1 the terminal answers, and
the query never reaches the user's terminal: a kitty there would answer it a second time.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.launcher_terminal import Job, launcher_argv, only_session

# Writes "<", each piece (hex) with a short pause before it, ">" and a DA1 query; then
# reports in hex everything its input held up to the terminal's DA1 answer and a little
# after (a second answer would show there), and writes a notification of kitty's.
CHILD = r"""
import os, select, sys, time, tty
tty.setraw(0)
os.write(1, b"<")
for piece in sys.argv[1:]:
    time.sleep(0.02)
    os.write(1, bytes.fromhex(piece))
os.write(1, b">\x1b[c")
got = b""
while not (b"\x1b[?" in got and got.endswith(b"c")):
    got += os.read(0, 1024)
while select.select([0], [], [], 0.2)[0]:
    got += os.read(0, 1024)
os.write(1, b"\x1b]99;i=n:p=body;Permission needs input\x1b\\")
os.write(1, b"\r\nGOT " + got.hex().encode() + b"\r\n")
"""

DA1_QUERY = b"\x1b[c"
DA1_REPLY = b"\x1b[?62;22c"
NOTIFICATION = b"\x1b]99;i=n:p=body;Permission needs input\x1b\\"
CAPABILITIES = b"p=title,body:o=always,unfocused,invisible"
OPENCODE_QUERY = b"\x1b]99;i=opentui-notifications:p=?;\x1b\\"


def run_child(job_runner: Callable[..., Job], pieces: list[bytes]) -> tuple[bytes, bytes]:
    """What reached the user's terminal before the report, and what the child read."""
    job = job_runner(launcher_argv([sys.executable, "-c", CHILD, *(p.hex() for p in pieces)]))
    job.expect(DA1_QUERY)
    job.terminal.type(DA1_REPLY)  # as the user's terminal does
    job.wait(
        lambda: b"GOT " in job.terminal.output and job.terminal.output.endswith(b"\r\n"),
        "the child's report",
    )
    assert job.exit_code() == 0
    shown, report = bytes(job.terminal.output).split(b"\r\nGOT ", 1)
    return shown, bytes.fromhex(report.split(b"\r\n", 1)[0].decode())


def test_opencodes_query_is_answered_before_da1_and_never_shown(
    job_runner: Callable[..., Job], state_dir: Path
) -> None:
    shown, got = run_child(
        job_runner, [b"\x1b[?u", OPENCODE_QUERY, b"\x1b]1337;Capabilities\x1b\\"]
    )
    answer = b"\x1b]99;i=opentui-notifications:p=?;" + CAPABILITIES + b"\x1b\\"
    # Answered once, first, with the query's id and terminator; then the terminal's DA1.
    assert got == answer + DA1_REPLY
    # Not one byte of the query reached the terminal; the notification after it did.
    assert shown == b"<\x1b[?u\x1b]1337;Capabilities\x1b\\>" + DA1_QUERY + NOTIFICATION
    session = only_session(state_dir)
    assert session is not None
    # Only OSC 7501 makes the session the program's: this one still speaks through tray.
    assert session.source == "launcher"


def test_a_query_without_id_in_pieces_is_answered_with_bel(
    job_runner: Callable[..., Job],
) -> None:
    query = b"\x1b]99;p=?;\x07"
    shown, got = run_child(job_runner, [query[:1], query[1:4], query[4:8], query[8:]])
    assert got == b"\x1b]99;i=0:p=?;" + CAPABILITIES + b"\x07" + DA1_REPLY
    assert shown == b"<>" + DA1_QUERY + NOTIFICATION


@pytest.mark.parametrize(
    "query",
    [
        b"\x1b]99;i=a b:p=?;\x1b\\",  # an id tray would not echo into the input
        b"\x1b]99;i=x:p=?:d=0;\x1b\\",  # more than a query
        b"\x1b]99;i=x:p=?;text\x07",
    ],
)
def test_anything_else_is_passed_on_and_not_answered(
    job_runner: Callable[..., Job], query: bytes
) -> None:
    shown, got = run_child(job_runner, [query])
    assert got == DA1_REPLY
    assert shown == b"<" + query + b">" + DA1_QUERY + NOTIFICATION
