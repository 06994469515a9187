"""The protocol's small checks at their edges, through the functions that use them.

Names, ids, base64, exit statuses and the like are checked with regular expressions in
ASCII ranges. Each table holds the ends of each range, and what a looser check would let
in: a newline at the end (which ``$`` would pass), non-ASCII digits and letters (which
``\\d``, ``\\w``, ``str.isdigit`` or case folding would pass).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tray.protocol import terminal_input
from tray.protocol.attention import KittyAssembler, percent_decode
from tray.protocol.prompt_marks import parse_osc133, parse_osc633
from tray.protocol.report import Report, ReportError, validate
from tray.protocol.state import State
from tray.protocol.terminal_input import InputScanner

NOT_ASCII = ["\u0660", "\u00b2", "\u0130", "\u212a", "\u00e9"]


@pytest.mark.parametrize("app", ["a", "a" * 32, "A.z_0+9-"])
def test_an_app_of_1_to_32_name_characters_is_valid(app: str) -> None:
    validate(Report(State.DONE, app=app))


@pytest.mark.parametrize("app", ["", "a" * 33, "app\n", "a b", "a/b", "a@b", *NOT_ASCII])
def test_any_other_app_is_refused(app: str) -> None:
    with pytest.raises(ReportError, match=r"^app must be"):
        validate(Report(State.DONE, app=app))


@pytest.mark.parametrize("record_id", ["a", "/".join("abcdefgh"), "a" * 32 + "/b"])
def test_an_id_of_1_to_8_segments_is_valid(record_id: str) -> None:
    validate(Report(State.DONE, record_id))


@pytest.mark.parametrize(
    "record_id",
    ["/".join("abcdefghi"), "a" * 33 + "/b", "a/", "/a", "a//b", "a/b\n", "a/\u0660"],
)
def test_any_other_id_is_refused(record_id: str) -> None:
    with pytest.raises(ReportError, match=r"^id must be"):
        validate(Report(State.DONE, record_id))


@pytest.mark.parametrize("char", ["\x00", "\x1f", "\x7f", "\x80", "\x9f", "\n"])
def test_c0_del_and_c1_controls_are_refused_in_text(char: str) -> None:
    with pytest.raises(ReportError, match="control characters"):
        validate(Report(State.DONE, title=f"a{char}b"))


@pytest.mark.parametrize("char", [" ", "~", "\xa0", "\u00e9", "\U0001f600"])
def test_their_neighbours_are_text(char: str) -> None:
    validate(Report(State.DONE, title=f"a{char}b"))


def _kitty(metadata: bytes, payload: bytes = b"Hi") -> str | None:
    """The title of a one-chunk OSC 99 notification, or None when it is dropped."""
    notification = KittyAssembler().feed(metadata + b";" + payload)
    return None if notification is None else notification.title


@pytest.mark.parametrize("identifier", [b"a", b"a" * 64, b"A-z_0+9."])
def test_a_kitty_id_of_1_to_64_characters_is_taken(identifier: bytes) -> None:
    assert _kitty(b"i=" + identifier) == "Hi"


@pytest.mark.parametrize(
    "identifier", [b"", b"a" * 65, b"id\n", b"a b", b"a/b", b"\xc3\xa9", b"\xd9\xa0"]
)
def test_any_other_kitty_id_drops_the_chunk(identifier: bytes) -> None:
    assert _kitty(b"i=" + identifier) is None


@pytest.mark.parametrize(
    ("payload", "title"), [(b"QQ==", "A"), (b"QQ", "A"), (b"QUI=", "AB"), (b"", None)]
)
def test_kitty_base64_with_or_without_padding(payload: bytes, title: str | None) -> None:
    assert _kitty(b"e=1", payload) == title


@pytest.mark.parametrize("payload", [b"QQ===", b"Q=Q=", b"QQ==\n", b"Q", b"QQ-_"])
def test_other_kitty_base64_drops_the_chunk(payload: bytes) -> None:
    assert _kitty(b"e=1", payload) is None


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        (b"", b""),
        (b"plain", b"plain"),
        (b"%41", b"A"),
        (b"a%2fb%2F%00", b"a/b/\x00"),
        (b"%41\n", b"A\n"),
        (b"%2541", b"%41"),  # decoded once, never twice
    ],
)
def test_percent_escapes_are_decoded(raw: bytes, decoded: bytes) -> None:
    assert percent_decode(raw) == decoded


@pytest.mark.parametrize("raw", [b"%", b"%4", b"%%41", b"%4%41", b"%g1", b"%\xd9\xa0"])
def test_a_percent_without_two_hex_digits_is_refused(raw: bytes) -> None:
    assert percent_decode(raw) is None


@pytest.mark.parametrize(
    ("options", "status"),
    [
        (b"0", 0),
        (b"1234567890", 1234567890),
        (b"-1234567890", -1234567890),
        (b"130;aid=1", 130),
        (b"", None),
        (b"-", None),
        (b"--1", None),
        (b"12345678901", None),
        (b"-12345678901", None),
        (b"1\n", None),
        (b"+1", None),
        (b" 1", None),
        (b"1_0", None),
        ("\u0661".encode(), None),
    ],
)
def test_an_exit_status_is_up_to_ten_ascii_digits(options: bytes, status: int | None) -> None:
    for parse in (parse_osc133, parse_osc633):
        mark = parse(b"D;" + options)
        assert mark is not None
        assert mark.exit_status == status


C0 = re.compile(rb"[\x00-\x1f]")
EDGE_BYTES = bytes(range(0x30)) + b"9:;@AFGZ[`afgz{\x7f\x80\x9f\xa0\xff"


# The search for a C0 control in the terminal's replies is translate() and find(), for
# speed; it must find what the plain expression finds, across its growing windows.
@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(EDGE_BYTES) | st.integers(0, 255), max_size=400).map(bytes),
    st.integers(0, 420),
)
@example(b"a" * 300 + b"\x1b", 0)
@example(b"a" * 5000 + b"\x07", 3)
@example(b"\x1f\x20", 1)
def test_the_c0_search_finds_what_the_expression_finds(data: bytes, pos: int) -> None:
    match = C0.search(data, pos)
    assert terminal_input._find_c0(data, pos) == (-1 if match is None else match.start())


def _typed_after_string(control: bytes) -> bool:
    """Whether ``control`` inside the terminal's OSC reply counts as the person typing."""
    scanner = InputScanner()
    return scanner.feed(b"\x1b]11;rgb:" + b"a" * 300 + control + b"\x1b\\").typing


@pytest.mark.parametrize("control", [b"\x00", b"\x03", b"\x18", b"\x1f"])
def test_a_control_inside_a_reply_is_the_persons_key(control: bytes) -> None:
    assert _typed_after_string(control)


@pytest.mark.parametrize("other", [b"", b" ", b"\x7f", b"\xc3\xa9"])
def test_other_bytes_inside_a_reply_are_part_of_it(other: bytes) -> None:
    assert not _typed_after_string(other)


@pytest.mark.parametrize(
    ("params", "is_report"),
    [
        (b"1;1", True),
        (b"24;80", True),
        (b";1", False),
        (b"1;", False),
        (b"1;1;1", False),
        (b"1:1", False),
    ],
)
def test_a_cursor_report_is_two_numbers(params: bytes, is_report: bool) -> None:
    scanner = InputScanner()
    scanner.cursor_queried()
    assert scanner.feed(b"\x1b[" + params + b"R").typing is not is_report
