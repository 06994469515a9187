"""The user's terminal input: the person's keys, pastes and mouse versus the terminal's replies."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tray.protocol.terminal_input import (
    MAX_CURSOR_QUERIES,
    MAX_INTERMEDIATES,
    MAX_PARAMS,
    NOTHING,
    PASTE_END,
    PASTE_START,
    TYPING,
    InputEvents,
    InputScanner,
)

if TYPE_CHECKING:
    from tray.protocol.terminal_input import Focus

SETTINGS = settings(max_examples=300, deadline=None)


@dataclass(frozen=True)
class Outcome:
    typing: bool
    focus: tuple[Focus, ...]
    cursor_queries: int
    pending: bool  # before the final flush


def run(
    chunks: list[bytes], focus_reporting: bool = False, queries: int = 0, flush: bool = True
) -> Outcome:
    scanner = InputScanner(focus_reporting=focus_reporting)
    for _ in range(queries):
        scanner.cursor_queried()
    typing = False
    focus: list[Focus] = []
    for chunk in chunks:
        result = scanner.feed(chunk)
        typing |= result.typing
        focus += result.focus
    pending = scanner.pending
    if flush:
        result = scanner.flush()
        assert not result.focus
        typing |= result.typing
        assert not scanner.pending
    return Outcome(typing, tuple(focus), scanner.cursor_queries, pending)


def check(data: bytes, focus_reporting: bool = False, queries: int = 0) -> Outcome:
    """The outcome of ``data`` fed whole, after checking every way of splitting it agrees."""
    whole = run([data], focus_reporting, queries)
    for cut in range(len(data) + 1):
        assert run([data[:cut], data[cut:]], focus_reporting, queries) == whole, cut
    for first, second in itertools.combinations(range(1, len(data)), 2):
        chunks = [data[:first], data[first:second], data[second:]]
        assert run(chunks, focus_reporting, queries) == whole, (first, second)
    assert run([data[i : i + 1] for i in range(len(data))], focus_reporting, queries) == whole
    return whole


# --- replies to the program's queries: never typing -------------------------------------------

REPLIES = {
    "DA1": b"\x1b[?62;22c",
    "DA1 xterm": b"\x1b[?64;1;2;6;9;15;16;17;18;21;22;28c",
    "DA1 short": b"\x1b[?1;2c",
    "DA2": b"\x1b[>1;4000;15c",
    "DA2 xterm": b"\x1b[>41;388;0c",
    "DSR ok": b"\x1b[0n",
    "DSR other": b"\x1b[3n",
    "DSR printer": b"\x1b[?13n",
    "DECXCPR": b"\x1b[?12;40;1R",
    "DECXCPR short": b"\x1b[?12;40R",
    "DECRPM private": b"\x1b[?2004;1$y",
    "DECRPM ansi": b"\x1b[4;2$y",
    "DECRPM unknown": b"\x1b[?9999;0$y",
    "OSC 11 BEL": b"\x1b]11;rgb:0000/0000/0000\x07",
    "OSC 11 ST": b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\",
    "OSC 10": b"\x1b]10;rgb:d0d0/d0d0/d0d0\x1b\\",
    "OSC 12": b"\x1b]12;rgb:ffff/0000/0000\x07",
    "OSC 4": b"\x1b]4;1;rgb:cdcd/0000/0000\x1b\\",
    "OSC 7501 answer": b"\x1b]7501;?\x07",
    "OSC 52": b"\x1b]52;c;aGVsbG8=\x1b\\",
    "OSC 99 click": b"\x1b]99;i=1;\x1b\\",
    "OSC with UTF-8": b"\x1b]99;i=1;caf\xc3\xa9\x1b\\",
    "XTVERSION xterm": b"\x1bP>|XTerm(388)\x1b\\",
    "XTVERSION kitty": b"\x1bP>|kitty(0.35.2)\x1b\\",
    "XTVERSION BEL inside": b"\x1bP>|a;b c\x1b\\",
    "XTGETTCAP found": b"\x1bP1+r544e=787465726d2d6b69747479\x1b\\",
    "XTGETTCAP missing": b"\x1bP0+r\x1b\\",
    "DECRQSS": b"\x1bP1$r0;1m\x1b\\",
    "DA3": b"\x1bP!|00000000\x1b\\",
    "kitty flags": b"\x1b[?0u",
    "kitty flags set": b"\x1b[?15u",
    "theme dark": b"\x1b[?997;1n",
    "theme light": b"\x1b[?997;2n",
    "in-band resize": b"\x1b[48;24;80;480;800t",
    "text area size": b"\x1b[8;24;80t",
    "XTSMGRAPHICS": b"\x1b[?1;0;256S",
    "XTMODKEYS": b"\x1b[>4;2m",
    "kitty graphics": b"\x1b_Gi=31;OK\x1b\\",
}


@pytest.mark.parametrize("name", REPLIES)
def test_a_reply_is_not_typing(name: str) -> None:
    assert check(REPLIES[name]) == Outcome(False, (), 0, False)
    assert check(REPLIES[name], focus_reporting=True) == Outcome(False, (), 0, False)


def test_a_cursor_position_report_is_a_reply_while_one_is_owed() -> None:
    assert check(b"\x1b[12;40R", queries=1) == Outcome(False, (), 0, False)
    assert check(b"\x1b[1;2R", queries=1) == Outcome(False, (), 0, False)
    # Each report pays for one query; one more is a key again: Shift-F3.
    assert check(b"\x1b[1;1R\x1b[1;2R", queries=1) == Outcome(True, (), 0, False)
    assert check(b"\x1b[1;1R\x1b[1;2R", queries=2) == Outcome(False, (), 0, False)
    assert check(b"\x1b[1;1R", queries=3) == Outcome(False, (), 2, False)


@pytest.mark.parametrize("key", [b"\x1b[1;2R", b"\x1b[1;5R", b"\x1b[12;40R"])
def test_a_cursor_report_shape_with_no_query_owed_is_modified_f3(key: bytes) -> None:
    assert check(key) == Outcome(True, (), 0, False)


@pytest.mark.parametrize("key", [b"\x1b[R", b"\x1b[1R", b"\x1b[;2R", b"\x1b[1;2;3R", b"\x1b[1 R"])
def test_other_r_sequences_are_keys_and_owe_nothing(key: bytes) -> None:
    assert check(key, queries=1) == Outcome(True, (), 1, False)


def test_decxcpr_does_not_pay_for_a_plain_cursor_query() -> None:
    assert check(b"\x1b[?12;40;1R", queries=1) == Outcome(False, (), 1, False)


def test_cursor_queries_are_bounded_and_can_be_forgotten() -> None:
    scanner = InputScanner()
    for _ in range(MAX_CURSOR_QUERIES * 3):
        scanner.cursor_queried()
    assert scanner.cursor_queries == MAX_CURSOR_QUERIES
    for _ in range(MAX_CURSOR_QUERIES):
        assert scanner.feed(b"\x1b[5;5R") == NOTHING
    assert scanner.feed(b"\x1b[5;5R") == TYPING
    scanner.cursor_queried()
    scanner.reset_cursor_queries()
    assert scanner.cursor_queries == 0
    assert scanner.feed(b"\x1b[5;5R") == TYPING


# --- focus --------------------------------------------------------------------------------


def test_focus_events_while_focus_reporting_is_on() -> None:
    assert check(b"\x1b[I", focus_reporting=True) == Outcome(False, ("in",), 0, False)
    assert check(b"\x1b[O", focus_reporting=True) == Outcome(False, ("out",), 0, False)
    stream = b"\x1b[O\x1b[Ihi\x1b[O\x1b[I"
    assert check(stream, focus_reporting=True) == Outcome(
        True, ("out", "in", "out", "in"), 0, False
    )


@pytest.mark.parametrize("data", [b"\x1b[I", b"\x1b[O", b"\x1b[O\x1b[I"])
def test_without_focus_reporting_esc_bracket_i_is_alt_bracket_then_a_letter(data: bytes) -> None:
    assert check(data) == Outcome(True, (), 0, False)


@pytest.mark.parametrize("data", [b"\x1b[1I", b"\x1b[?I", b"\x1b[ I", b"\x1b[2O"])
def test_focus_events_have_no_parameters(data: bytes) -> None:
    outcome = check(data, focus_reporting=True)
    assert outcome.focus == ()


def test_focus_reporting_is_read_when_the_sequence_ends() -> None:
    scanner = InputScanner()
    assert scanner.feed(b"\x1b[") == NOTHING
    scanner.focus_reporting = True
    assert scanner.feed(b"I") == InputEvents(False, ("in",))
    scanner.focus_reporting = False
    assert scanner.feed(b"\x1b[O") == TYPING


# --- the person's keys, mouse and pastes: typing ------------------------------------------

KEYS = {
    "letter": b"a",
    "words": b"hello world\r",
    "ctrl-c": b"\x03",
    "backspace": b"\x7f",
    "utf-8": "caf\u00e9 \u5b89".encode(),
    "up": b"\x1b[A",
    "up ss3": b"\x1bOA",
    "f1": b"\x1bOP",
    "f5": b"\x1b[15~",
    "delete": b"\x1b[3~",
    "shift-tab": b"\x1b[Z",
    "ctrl-right": b"\x1b[1;5C",
    "home": b"\x1b[H",
    "rxvt shift-right": b"\x1b[c",
    "rxvt ctrl-up": b"\x1bOa",
    "bare n": b"\x1b[n",
    "bare t": b"\x1b[t",
    "kitty key": b"\x1b[97;5u",
    "kitty escape": b"\x1b[27u",
    "modifyOtherKeys": b"\x1b[27;5;13~",
    "alt-x": b"\x1bx",
    "alt-backslash": b"\x1b\\",
    "alt-ctrl-x": b"\x1b\x18",
    "alt-utf-8": "\x1b\u00e9".encode(),
    "alt-escape then up": b"\x1b\x1b[A",
    "x10 mouse": b"\x1b[M !!",
    "x10 mouse high": b"\x1b[M\xe0\xff\xfe",
    "sgr press": b"\x1b[<0;10;5M",
    "sgr release": b"\x1b[<0;10;5m",
    "sgr scroll": b"\x1b[<64;10;5M",
    "urxvt mouse": b"\x1b[32;10;5M",
    "paste": PASTE_START + b"hello" + PASTE_END,
    "empty paste": PASTE_START + PASTE_END,
    "paste of sequences": PASTE_START
    + b"\x1b[I\x1b]11;rgb:0000/0000/0000\x07\x1b[?62c\x1bP>|x\x1b\\\x1b[200~"
    + PASTE_END,
    "paste of near markers": PASTE_START + b"\x1b[201\x1b[20~\x1b\x1b[2011~\x1b[" + PASTE_END,
    "stray paste end": PASTE_END,
    "alt-] and keys": b"\x1b]abc\r",
    "alt-] and a semicolon": b"\x1b];",
    "alt-p and a letter": b"\x1bPh",
    "alt-p and enter": b"\x1bP\r",
    "alt-_ and a key": b"\x1b_x",
    "alt-[ and enter": b"\x1b[\r",
    "alt-[ and a utf-8 letter": "\x1b[\u00e9".encode(),
    "parameter after intermediate": b"\x1b[1 1A",
}


@pytest.mark.parametrize("name", KEYS)
def test_the_persons_input_is_typing(name: str) -> None:
    assert check(KEYS[name]) == Outcome(True, (), 0, False)


@pytest.mark.parametrize(
    "key", [b"\x1b", b"\x1b[", b"\x1b]", b"\x1bP", b"\x1bO", b"\x1b_", b"\x1b[1;5", b"\x1b]11"]
)
def test_a_key_that_may_start_a_sequence_is_typing_once_input_pauses(key: bytes) -> None:
    assert check(key) == Outcome(True, (), 0, True)
    assert run([key], flush=False) == Outcome(False, (), 0, True)


def test_flush_settles_only_what_is_unsettled() -> None:
    scanner = InputScanner()
    assert scanner.flush() == NOTHING
    assert scanner.feed(b"\x1b") == NOTHING
    assert scanner.pending
    assert scanner.flush() == TYPING
    assert not scanner.pending
    assert scanner.flush() == NOTHING
    # After the pause, what follows is read from scratch: "[?62c" is plain text.
    assert scanner.feed(b"[?62c") == TYPING
    # Strings and pastes are not waiting for a pause.
    assert scanner.feed(b"\x1b]11;rgb:") == NOTHING
    assert not scanner.pending
    assert scanner.flush() == NOTHING
    assert scanner.feed(b"0/0/0\x07") == NOTHING
    assert scanner.feed(PASTE_START + b"abc") == TYPING
    assert scanner.flush() == NOTHING
    assert scanner.in_paste
    assert scanner.feed(b"[I") == TYPING
    assert scanner.feed(PASTE_END + b"\x1b[?1;2c") == TYPING
    assert not scanner.in_paste


def test_a_cut_short_x10_mouse_report_ends_at_a_pause_or_an_esc() -> None:
    assert check(b"\x1b[M !") == Outcome(True, (), 0, False)
    assert check(b"\x1b[M !\x1b[I", focus_reporting=True) == Outcome(True, ("in",), 0, False)
    scanner = InputScanner()
    assert scanner.feed(b"\x1b[M ") == TYPING
    assert scanner.flush() == NOTHING
    assert scanner.feed(b"\x1b[?62c") == NOTHING


@pytest.mark.parametrize(
    ("data", "typing"),
    [
        # Controls end a string: no answer holds one, and the person's key counts.
        (b"\x1b]11;rgb:00\x03", True),
        (b"\x1b]11;rgb:00\r", True),
        (b"\x1b]11;rgb:00\x18", True),  # CAN cancels
        (b"\x1b]11;rgb:00\x1a", True),  # SUB cancels
        (b"\x1bP>|xterm\x07", True),  # BEL ends only an OSC
        # An ESC that does not make ST ends the string; what follows is read afresh.
        (b"\x1b]11;rgb:00\x1b[?62c", False),
        (b"\x1b]11;rgb:00\x1b[A", True),
        (b"\x1bP1+r\x1b[I", True),
        (b"\x1b]11;rgb:00\x1bx", True),
    ],
)
def test_strings_that_end_early(data: bytes, typing: bool) -> None:
    assert check(data) == Outcome(typing, (), 0, False)


def test_alt_escape_before_a_reply_is_only_the_escape() -> None:
    assert check(b"\x1b\x1b[?62c") == Outcome(True, (), 0, False)
    assert check(b"\x1b\x1b[I", focus_reporting=True) == Outcome(True, ("in",), 0, False)


def test_a_paste_in_focus_mode_is_never_read_as_focus() -> None:
    data = PASTE_START + b"\x1b[I\x1b[O" + PASTE_END + b"\x1b[O"
    assert check(data, focus_reporting=True) == Outcome(True, ("out",), 0, False)


def test_a_paste_never_pays_a_cursor_query() -> None:
    data = PASTE_START + b"\x1b[1;2R" + PASTE_END
    assert check(data, queries=1) == Outcome(True, (), 1, False)


# --- bounds and the fast path ---------------------------------------------------------------


def test_plain_text_takes_the_fast_path() -> None:
    scanner = InputScanner()
    assert scanner.feed(b"x") is TYPING
    assert scanner.feed(b"") is NOTHING
    assert scanner.feed(b"\x1b[?62c") is NOTHING


def test_parameters_are_bounded() -> None:
    scanner = InputScanner()
    assert scanner.feed(b"\x1b[?" + b"1;" * 100_000) == NOTHING
    assert len(scanner._params) == MAX_PARAMS
    assert scanner.feed(b"c") == NOTHING  # an overlong reply is still a reply
    assert scanner.feed(b"\x1b[" + b" " * 1000 + b"A") == TYPING
    assert len(scanner._intermediates) == MAX_INTERMEDIATES
    # An overlong cursor report is no cursor report.
    scanner.cursor_queried()
    assert scanner.feed(b"\x1b[" + b"1" * MAX_PARAMS + b";1R") == TYPING
    assert scanner.cursor_queries == 1
    assert scanner.feed(b"\x1b[" + b"1" * MAX_PARAMS + b"n") == NOTHING


@pytest.mark.parametrize(
    ("opening", "filler", "unsettled"),
    [
        (b"\x1b]11;", b"rgb:0000/", False),
        (b"\x1bP>|", b"xterm ", False),
        (b"\x1b_G", b"i=1;", False),
        # Still in the head: a pause or any ESC shows they were keys.
        (b"\x1b]", b"7501", True),
        (b"\x1bP", b"1+", True),
    ],
)
def test_an_endless_reply_keeps_nothing(opening: bytes, filler: bytes, unsettled: bool) -> None:
    scanner = InputScanner()
    assert scanner.feed(opening) == NOTHING
    for _ in range(1000):
        assert scanner.feed(filler * 100) == NOTHING
    assert not scanner._params
    assert scanner.pending is unsettled
    assert scanner.feed(b"\x1b\\") == (TYPING if unsettled else NOTHING)
    assert scanner.feed(b"\x1b[?62c") == NOTHING


def test_an_endless_paste_keeps_counting_as_typing() -> None:
    scanner = InputScanner()
    assert scanner.feed(PASTE_START) == TYPING
    for _ in range(1000):
        assert scanner.feed(b"\x1b[I\x1b[20" * 100) == TYPING
    assert scanner.in_paste
    assert scanner._paste_matched <= len(PASTE_END)


# --- properties ------------------------------------------------------------------------------

# Keys that are settled by their own bytes: none ends with a prefix that a following
# sequence could complete.
settled_keys = st.sampled_from(list(KEYS.values()))
plain = st.binary(min_size=1, max_size=12).filter(lambda b: b"\x1b" not in b)
pastes = (
    st.binary(max_size=40)
    .map(lambda b: PASTE_START + b + PASTE_END)
    .filter(lambda b: PASTE_END not in b[len(PASTE_START) : -len(PASTE_END)])
)
replies = st.sampled_from(list(REPLIES.values()))
focus_events: dict[bytes, Focus] = {b"\x1b[I": "in", b"\x1b[O": "out"}


@st.composite
def mixed_streams(draw: st.DrawFn) -> tuple[list[bytes], bool, int, tuple[Focus, ...], bool]:
    """Tokens, whether focus reporting is on, cursor queries owed, expected focus, typing."""
    focus_reporting = draw(st.booleans())
    cpr_owed = draw(st.integers(0, MAX_CURSOR_QUERIES))
    tokens: list[bytes] = []
    focus: list[Focus] = []
    typing = False
    cpr_sent = 0
    for kind in draw(st.lists(st.sampled_from("kpfrcx"), max_size=12)):
        if kind == "k":
            tokens.append(draw(st.one_of(settled_keys, plain, pastes)))
            typing = True
        elif kind == "f":
            token = draw(st.sampled_from(list(focus_events)))
            tokens.append(token)
            if focus_reporting:
                focus.append(focus_events[token])
            else:
                typing = True
        elif kind == "c":
            # A cursor report shape: a reply while one is owed, else a key.
            row, col = draw(st.integers(1, 999)), draw(st.integers(1, 999))
            tokens.append(b"\x1b[%d;%dR" % (row, col))
            if cpr_sent < cpr_owed:
                cpr_sent += 1
            else:
                typing = True
        else:
            tokens.append(draw(replies))
    return tokens, focus_reporting, cpr_owed, tuple(focus), typing


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = [0, *sorted(cut % (len(data) + 1) for cut in cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


@SETTINGS
@given(mixed_streams(), st.lists(st.integers(0, 10_000), max_size=8))
def test_mixed_streams_classify_the_same_however_split(
    stream: tuple[list[bytes], bool, int, tuple[Focus, ...], bool], cuts: list[int]
) -> None:
    tokens, focus_reporting, owed, focus, typing = stream
    data = b"".join(tokens)
    whole = run([data], focus_reporting, owed)
    assert (whole.typing, whole.focus) == (typing, focus)
    assert not whole.pending
    assert run(split(data, cuts), focus_reporting, owed) == whole
    assert run([data[i : i + 1] for i in range(len(data))], focus_reporting, owed) == whole


@SETTINGS
@given(st.lists(replies, max_size=10), st.lists(st.integers(0, 10_000), max_size=8))
def test_a_stream_of_only_replies_is_never_typing(tokens: list[bytes], cuts: list[int]) -> None:
    data = b"".join(tokens)
    for focus_reporting in (False, True):
        outcome = run(split(data, cuts), focus_reporting)
        assert outcome == Outcome(False, (), 0, False)


@SETTINGS
@given(st.binary(max_size=200).filter(lambda b: b"\x1b" not in b))
def test_plain_bytes_are_always_typing(data: bytes) -> None:
    scanner = InputScanner(focus_reporting=True)
    assert scanner.feed(data) == (TYPING if data else NOTHING)
    # After a finished reply, plain bytes read the same.
    assert scanner.feed(b"\x1b[?62c" + data) == (TYPING if data else NOTHING)


@SETTINGS
@given(st.binary(max_size=200), st.lists(st.integers(0, 10_000), max_size=8))
def test_any_paste_is_typing_and_leaves_nothing_behind(content: bytes, cuts: list[int]) -> None:
    content = content.replace(PASTE_END, b"")
    data = PASTE_START + content + PASTE_END + b"\x1b[I\x1b[?62c"
    if PASTE_END in data[len(PASTE_START) : -len(PASTE_END) - 9]:
        return  # removing one marker made another
    assert run(split(data, cuts), focus_reporting=True) == Outcome(True, ("in",), 0, False)


noisy = st.lists(
    st.one_of(
        st.sampled_from(
            [
                *(bytes([byte]) for byte in b"\x1b[]PO_G?><$ ;1206MIRcnt~yu\x07\\\x18\r\xe9"),
                PASTE_START,
                PASTE_END,
            ]
        ),
        st.binary(max_size=3),
    ),
    max_size=60,
).map(b"".join)


@SETTINGS
@given(
    noisy,
    st.lists(st.integers(0, 10_000), max_size=8),
    st.booleans(),
    st.integers(0, MAX_CURSOR_QUERIES + 2),
)
def test_any_bytes_classify_the_same_however_split(
    data: bytes, cuts: list[int], focus_reporting: bool, queries: int
) -> None:
    whole = run([data], focus_reporting, queries)
    assert run(split(data, cuts), focus_reporting, queries) == whole
    assert run([data[i : i + 1] for i in range(len(data))], focus_reporting, queries) == whole
    if b"\x1b" not in data:
        assert whole.typing == bool(data)
    if not focus_reporting:
        assert whole.focus == ()


@SETTINGS
@given(noisy)
def test_state_stays_bounded(data: bytes) -> None:
    scanner = InputScanner()
    for _ in range(3):
        scanner.feed(data)
        assert len(scanner._params) <= MAX_PARAMS
        assert len(scanner._intermediates) <= MAX_INTERMEDIATES
        assert 0 <= scanner._paste_matched < len(PASTE_END)
        assert 0 <= scanner.cursor_queries <= MAX_CURSOR_QUERIES
