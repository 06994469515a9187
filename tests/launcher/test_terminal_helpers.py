"""tray.launcher.terminal on a pty of the test's own: sizes, and signals as an fd."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Iterator

import pytest

from tray.launcher.terminal import (
    SignalPipe,
    WindowSize,
    get_size,
    set_size,
    size_from_environ,
)


@pytest.fixture
def pty_pair() -> Iterator[tuple[int, int]]:
    # A bare pair, both ends in the test: ptyprocess makes a pty only with a process on it.
    master, slave = os.openpty()
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


def test_sizes(pty_pair: tuple[int, int]) -> None:
    master, slave = pty_pair
    set_size(master, WindowSize(50, 132, 1320, 1000))
    assert get_size(slave) == WindowSize(50, 132, 1320, 1000)
    set_size(master, WindowSize(0, 0))
    assert get_size(slave) is None
    read_end, write_end = os.pipe()
    try:
        assert get_size(read_end) is None
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, (24, 80)),
        ({"LINES": "40", "COLUMNS": "100"}, (40, 100)),
        ({"LINES": "0", "COLUMNS": "x"}, (24, 80)),
        ({"LINES": "70000", "COLUMNS": "-5"}, (24, 80)),
        ({"COLUMNS": "132"}, (24, 132)),
    ],
)
def test_size_from_environ(environ: dict[str, str], expected: tuple[int, int]) -> None:
    size = size_from_environ(environ)
    assert (size.rows, size.columns) == expected


def test_signals_arrive_as_bytes_and_handlers_come_back() -> None:
    previous = signal.getsignal(signal.SIGUSR1)
    with SignalPipe([signal.SIGUSR1, signal.SIGUSR2]) as signals:
        os.kill(os.getpid(), signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGUSR2)
        ready, _, _ = select.select([signals.fileno()], [], [], 5)
        assert ready
        assert signals.read() == [signal.SIGUSR1, signal.SIGUSR2]
        assert signals.read() == []
    assert signal.getsignal(signal.SIGUSR1) == previous
