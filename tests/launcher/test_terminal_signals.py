"""The launcher's watch over focus, typing and attention, fed real byte streams."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st

from tray.core.session.model import ATTENTION_KEPT
from tray.launcher.terminal_signals import BELL_QUIET, TerminalSignals
from tray.protocol.scanner import Scanner

FOCUS_ON = b"\x1b[?1004h"
FOCUS_OFF = b"\x1b[?1004l"
DA1_REPLY = b"\x1b[?62;22c"
OSC11_REPLY = b"\x1b]11;rgb:0000/0000/0000\x1b\\"


def watch_of(output: bytes = b"", now: float = 0.0, done_after: float = 30.0) -> TerminalSignals:
    watch = TerminalSignals("thishost", done_after)
    feed(watch, output, now)
    return watch


def feed(watch: TerminalSignals, output: bytes, now: float) -> None:
    watch.output(Scanner().feed(output).events, now)


def test_focus_is_read_only_while_the_program_asked_for_it() -> None:
    watch = watch_of()
    assert watch.input(b"\x1b[O", 1.0)  # Alt-[ then O: a key
    assert (watch.focus, watch.last_input_at) == ("unknown", 1.0)
    feed(watch, FOCUS_ON, 2.0)
    assert not watch.input(b"\x1b[O", 3.0)
    assert (watch.focus, watch.focus_since, watch.last_input_at) == ("unfocused", 3.0, 1.0)
    assert watch.changed
    assert not watch.input(b"\x1b[I", 4.0)
    assert (watch.focus, watch.focus_since) == ("focused", 4.0)
    feed(watch, FOCUS_OFF, 5.0)
    assert (watch.focus, watch.focus_since) == ("unknown", 5.0)


def test_the_program_ending_forgets_focus() -> None:
    watch = watch_of(FOCUS_ON)
    watch.input(b"\x1b[I", 1.0)
    watch.program_ended(2.0)
    assert watch.focus == "unknown"
    assert watch.input(b"\x1b[I", 3.0)  # no longer focus: a key


def test_terminal_replies_are_not_typing() -> None:
    watch = watch_of(b"\x1b]7501;?\x07\x1b[c\x1b]11;?\x1b\\")
    for reply in (DA1_REPLY, OSC11_REPLY, b"\x1b[>1;10;0c", b"\x1b[0n"):
        assert not watch.input(reply, 1.0)
    assert watch.last_input_at is None
    assert watch.input(b"y", 2.0)
    assert watch.last_input_at == 2.0


def test_a_cursor_report_is_a_reply_only_when_asked_for() -> None:
    watch = watch_of()
    assert watch.input(b"\x1b[1;2R", 1.0)  # shift-F3
    feed(watch, b"\x1b[6n", 2.0)
    assert not watch.input(b"\x1b[12;40R", 3.0)
    assert watch.last_input_at == 1.0


def test_a_lone_escape_is_typing_once_input_pauses() -> None:
    watch = watch_of()
    assert not watch.input(b"\x1b", 1.0)
    assert watch.input_pending
    assert watch.input_paused(1.05)
    assert watch.last_input_at == 1.05


def test_bells_close_together_are_one_request() -> None:
    watch = watch_of(b"a\x07b\x07", 10.0)
    feed(watch, b"\x07", 10.0 + BELL_QUIET / 2)
    assert [(a.seq, a.source, a.at) for a in watch.attention] == [(1, "bell", 10.0)]
    feed(watch, b"\x07", 12.0 + BELL_QUIET)
    assert [a.seq for a in watch.attention] == [1, 2]
    # A BEL that ends an OSC is no bell.
    feed(watch, b"\x1b]0;title\x07", 20.0)
    assert len(watch.attention) == 2


def test_terminal_notifications_become_attention() -> None:
    body = base64.b64encode(b"Tests passed").decode()
    watch = watch_of(
        b"\x1b]9;\n\nClaude needs your permission\x07"
        b"\x1b]777;notify;Jazz;approve deploy\x1b\\"
        b"\x1b]99;i=1:d=0;Build\x1b\\"
        b"\x1b]99;i=1:p=body:e=1:o=unfocused;" + body.encode() + b"\x1b\\",
        5.0,
    )
    assert [(a.seq, a.source, a.title, a.body, a.condition) for a in watch.attention] == [
        (1, "osc9", None, "Claude needs your permission", "always"),
        (2, "osc777", "Jazz", "approve deploy", "always"),
        (3, "osc99", "Build", "Tests passed", "unfocused"),
    ]


def test_osc9_progress_is_never_a_notification() -> None:
    watch = watch_of(b"\x1b]9;4;1;40\x07")
    assert (watch.terminal_progress, watch.attention) == (40, ())
    feed(watch, b"\x1b]9;4;2;50\x07", 1.0)  # the bar's error state: still no failure
    assert (watch.terminal_progress, watch.attention) == (50, ())
    feed(watch, b"\x1b]9;4;0;0\x07", 2.0)
    assert watch.terminal_progress is None


def test_osc7_moves_the_directory_only_for_this_machine() -> None:
    watch = watch_of(b"\x1b]7;file://thishost/home/me/my%20project\x07")
    assert watch.cwd == "/home/me/my project"
    feed(watch, b"\x1b]7;file://elsewhere/tmp\x07", 1.0)
    feed(watch, b"\x1b]7;kitty-shell-cwd://localhost/srv/a b\x07", 2.0)
    assert watch.cwd == "/srv/a b"


def test_long_shell_commands_finish_as_attention_and_short_ones_leave_nothing() -> None:
    watch = watch_of(done_after=30.0)
    feed(watch, b"\x1b]133;C;cmdline_url=make%20test\x07", 0.0)
    feed(watch, b"\x1b]133;D;2\x07", 10.0)
    assert watch.attention == ()
    feed(watch, b"\x1b]133;A\x07\x1b]133;C;cmdline_url=make%20all\x07", 20.0)
    feed(watch, b"\x1b]133;D;0\x07", 61.0)
    assert len(watch.attention) == 1
    finished = watch.attention[0]
    assert (finished.source, finished.title, finished.exit_code, finished.duration) == (
        "command",
        "make all",
        0,
        41.0,
    )


def test_attention_is_bounded() -> None:
    watch = watch_of()
    for step in range(3 * ATTENTION_KEPT):
        feed(watch, b"\x1b]9;note %d\x07" % step, float(step))
    assert len(watch.attention) == ATTENTION_KEPT
    assert watch.attention[-1].seq == 3 * ATTENTION_KEPT


REPLIES = [DA1_REPLY, OSC11_REPLY, b"\x1b[?1;2$y", b"\x1b[?7u", b"\x1bP>|xterm\x1b\\"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(REPLIES),
        max_size=8,
    ),
    st.integers(0, 200),
)
def test_replies_never_count_as_typing_however_split(replies: list[bytes], cut: int) -> None:
    stream = b"".join(replies)
    watch = watch_of()
    cut = min(cut, len(stream))
    watch.input(stream[:cut], 1.0)
    watch.input(stream[cut:], 2.0)
    assert watch.last_input_at is None
