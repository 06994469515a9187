"""tray.terminal.raw_mode on a pty of the test's own: raw mode always comes back."""

from __future__ import annotations

import os
import termios
from collections.abc import Iterator

import pytest

from tray.terminal.raw_mode import CC, IFLAG, LFLAG, OFLAG, RawMode, make_raw


@pytest.fixture
def terminal() -> Iterator[int]:
    """The terminal end of a bare pty; its other end is held open so it stays a terminal."""
    master, slave = os.openpty()
    try:
        yield slave
    finally:
        os.close(master)
        os.close(slave)


def test_raw_mode_is_restored_even_after_an_exception(terminal: int) -> None:
    before = termios.tcgetattr(terminal)
    with pytest.raises(RuntimeError), RawMode(terminal):
        assert termios.tcgetattr(terminal) == make_raw(before)
        raise RuntimeError("boom")
    assert termios.tcgetattr(terminal) == before


def test_raw_mode_can_be_left_and_entered_again(terminal: int) -> None:
    before = termios.tcgetattr(terminal)
    with RawMode(terminal) as raw:
        raw.restore()
        assert not raw.active
        assert termios.tcgetattr(terminal) == before
        # The shell changed something while we were stopped; that change is kept.
        changed = termios.tcgetattr(terminal)
        changed[CC][termios.VERASE] = b"\x08"
        termios.tcsetattr(terminal, termios.TCSANOW, changed)
        raw.enter()
        raw.enter()  # twice (SIGCONT after our own resume) is harmless
        assert termios.tcgetattr(terminal) == make_raw(changed)
    assert termios.tcgetattr(terminal) == changed


def test_make_raw_turns_off_what_a_terminal_would_interpret(terminal: int) -> None:
    before = termios.tcgetattr(terminal)
    raw = make_raw(before)
    assert not raw[LFLAG] & (termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
    assert not raw[IFLAG] & (termios.ICRNL | termios.IXON)
    assert not raw[OFLAG] & termios.OPOST
    assert raw[CC][termios.VMIN] == 1
    assert termios.tcgetattr(terminal) == before  # the argument is left untouched
