"""A support query split across writes, however far apart: never shown, answered once.

A terminal that knows OSC 7501 would answer any query that reached it, and that second
answer would land in the program's input as typed text. So not one byte of a query may
reach the user's terminal, whatever the pause between its pieces; and whatever is held
back while it may still become one is released as soon as it cannot, or at exit.

Every split runs on its own terminal, all of a delay's splits at once, so that the long
pauses cost their length once rather than once per split.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.launcher_terminal import Job, Terminal, launcher_argv
from helpers.waiting import wait_for

# Writes "<" and the first piece, waits (so that the launcher reads the two pieces apart:
# only time splits a program's writes), writes the second piece, ">" and a DA1 query,
# then reports in hex everything its input held up to the terminal's DA1 answer and a
# little after: a second answer to the query would show there.
SPLIT_CHILD = r"""
import os, select, sys, time, tty
tty.setraw(0)
first, second, delay = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2]), float(sys.argv[3])
os.write(1, b"<" + first)
time.sleep(delay)
os.write(1, second + b">\x1b[c")
got = b""
while not (b"\x1b[?" in got and got.endswith(b"c")):
    got += os.read(0, 1024)
while select.select([0], [], [], 0.2)[0]:
    got += os.read(0, 1024)
os.write(1, b"\r\nGOT " + got.hex().encode() + b"\r\n")
"""

# Writes its argument's pieces (hex) with the given pause before each, then exits: the
# pauses are the program's pace, which the tests vary.
PIECES_CHILD = r"""
import os, sys, time, tty
tty.setraw(0)
for piece in sys.argv[1:]:
    pause, data = piece.split(":")
    time.sleep(float(pause))
    os.write(1, bytes.fromhex(data))
"""

QUERIES = {"BEL": b"\x1b]7501;?\x07", "ST": b"\x1b]7501;?\x1b\\"}
DA1_QUERY = b"\x1b[c"
DA1_REPLY = b"\x1b[?62;22c"
END = b"\r\n"


@dataclass
class Case:
    cut: int
    terminal: Terminal
    job: Job
    answered_da1: bool = False

    def done(self) -> bool:
        output = self.terminal.output
        return b"GOT " in output and output.endswith(END)

    def got(self) -> bytes:
        line = bytes(self.terminal.output).split(b"GOT ", 1)[1].split(END, 1)[0]
        return bytes.fromhex(line.decode())


@contextlib.contextmanager
def terminals(env: dict[str, str], tmp_path: Path, count: int) -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    try:
        for index in range(count):
            cwd = tmp_path / f"t{index}"
            cwd.mkdir()
            opened.append(Terminal(env, cwd))
        yield opened
    finally:
        for term in opened:
            with contextlib.suppress(OSError, AssertionError):
                term.close()


def start(term: Terminal, argv: list[str], stderr_path: Path) -> Job:
    term.run(argv, None, stderr_path)
    job = Job(term, stderr_path)
    job.started()
    return job


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2, 1.0])
@pytest.mark.parametrize("terminator", ["BEL", "ST"])
def test_query_split_at_every_offset_is_answered_once_and_never_shown(
    tray_env: dict[str, str], tmp_path: Path, delay: float, terminator: str
) -> None:
    query = QUERIES[terminator]
    cuts = range(1, len(query))
    with terminals(tray_env, tmp_path, len(cuts)) as terms:
        cases: list[Case] = []
        try:
            for cut, term in zip(cuts, terms, strict=True):
                first, second = query[:cut].hex(), query[cut:].hex()
                argv = launcher_argv([sys.executable, "-c", SPLIT_CHILD, first, second, str(delay)])
                job = start(term, argv, tmp_path / f"t{cut - 1}" / "stderr")
                cases.append(Case(cut, term, job))

            def all_done() -> bool:
                for case in cases:
                    case.job.pump()
                    if not case.answered_da1 and DA1_QUERY in case.terminal.output:
                        case.terminal.type(DA1_REPLY)  # as the user's terminal does
                        case.answered_da1 = True
                return all(case.done() for case in cases)

            wait_for(all_done, what="every split's report")
            for case in cases:
                assert case.job.exit_code() == 0, case.cut
        finally:
            for case in cases:
                if case.job.pid and case.terminal.shell.isalive():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(case.job.pid, signal.SIGKILL)
    for case in cases:
        shown = bytes(case.terminal.output).split(b"\r\nGOT ", 1)[0]
        # Not one byte of the query reached the terminal, before or after its end.
        assert shown == b"<>" + DA1_QUERY, (case.cut, shown)
        # The answer, with the query's terminator, once; then the terminal's DA1 answer.
        assert case.got() == query + DA1_REPLY, case.cut


def test_held_bytes_are_released_once_they_cannot_be_a_query(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    pieces = [(0.0, b"<\x1b]7501; "), (0.6, b"x\x07"), (0.0, b">")]
    argv = [f"{pause}:{data.hex()}" for pause, data in pieces]
    with terminals(tray_env, tmp_path, 1) as (term,):
        job = start(
            term, launcher_argv([sys.executable, "-c", PIECES_CHILD, *argv]), tmp_path / "e"
        )
        job.expect(b"<")
        # Well into the pause, the start of the sequence is still held back.
        until = time.monotonic() + 0.3
        while time.monotonic() < until:
            job.pump()
        assert bytes(term.output) == b"<"
        assert job.exit_code() == 0
        term.read()
        assert bytes(term.output) == b"<\x1b]7501; x\x07>"


def test_a_query_that_never_ends_is_released_at_exit(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    pieces = [(0.0, b"<"), (0.1, b"\x1b]7501;?")]
    argv = [f"{pause}:{data.hex()}" for pause, data in pieces]
    with terminals(tray_env, tmp_path, 1) as (term,):
        job = start(
            term, launcher_argv([sys.executable, "-c", PIECES_CHILD, *argv]), tmp_path / "e"
        )
        assert job.exit_code() == 0
        term.read()
        assert bytes(term.output) == b"<\x1b]7501;?"
