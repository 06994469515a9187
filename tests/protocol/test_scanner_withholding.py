"""The scanner of a launcher nested in another: OSC 7501 reports are not forwarded."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.protocol.output_events import (
    Bell,
    CursorQuery,
    FocusReporting,
    FullReset,
    Osc,
    PromptStart,
    Query,
    RawReport,
)
from tray.protocol.scanner import MAX_SEQUENCE, Scanner, ScanResult

REPORT = b"\x1b]7501;state=blocked:kind=permission\x07"
REPORT_ST = b"\x1b]7501;state=done\x1b\\"
QUERY = b"\x1b]7501;?\x07"
OTHER_OSC = b"\x1b]1;icon name\x07"  # an OSC that gives no event
PROMPT = b"\x1b]133;A\x07"


def feed_all(scanner: Scanner, chunks: list[bytes]) -> tuple[bytes, list[object]]:
    output = b""
    events: list[object] = []
    for chunk in chunks:
        result: ScanResult = scanner.feed(chunk)
        output += result.output
        events += result.events
    return output, events


def test_reports_are_recorded_but_not_forwarded() -> None:
    stream = b"a" + REPORT + b"b" + REPORT_ST + b"c" + QUERY + b"d" + OTHER_OSC + PROMPT + b"\x1bc"
    output, events = feed_all(Scanner(withhold_reports=True), [stream])
    assert output == b"abcd" + OTHER_OSC + PROMPT + b"\x1bc"
    assert events == [
        RawReport(b"state=blocked:kind=permission"),
        RawReport(b"state=done"),
        Query(QUERY),
        PromptStart(),
        Osc(133, b"A"),
        FullReset(),
    ]


def test_the_default_scanner_still_forwards_reports() -> None:
    output, _ = feed_all(Scanner(), [b"a" + REPORT + b"b"])
    assert output == b"a" + REPORT + b"b"


def test_split_at_every_offset_gives_the_same_as_whole() -> None:
    stream = b"x" + REPORT + b"y" + REPORT_ST + QUERY + b"z" + OTHER_OSC
    whole = feed_all(Scanner(withhold_reports=True), [stream])
    for cut in range(len(stream) + 1):
        assert feed_all(Scanner(withhold_reports=True), [stream[:cut], stream[cut:]]) == whole


def test_an_overlong_sequence_is_forwarded_not_held() -> None:
    scanner = Scanner(withhold_reports=True)
    body = b"state=working:msg=" + b"A" * MAX_SEQUENCE
    output, events = feed_all(scanner, [b"\x1b]7501;" + body[:100], body[100:], b"\x07"])
    assert output == b"\x1b]7501;" + body + b"\x07"
    assert events == []
    assert scanner.held == 0


def test_a_stalled_report_is_withheld_until_it_ends_or_the_output_does() -> None:
    scanner = Scanner(withhold_reports=True)
    result = scanner.feed(b"x\x1b]7501;state=wor")
    assert result.output == b"x"
    assert scanner.held == len(b"\x1b]7501;state=wor")
    # However long nothing comes, nothing of it is let go.
    assert scanner.feed(b"") == (b"", ())
    rest = scanner.feed(b"king\x07y")
    assert rest.output == b"y"
    assert rest.events == (RawReport(b"state=working"),)
    assert scanner.feed(b"\x1b]7501;state=do").output == b""
    assert scanner.finish() == b"\x1b]7501;state=do"
    assert scanner.held == 0


def test_attention_signals_pass_through() -> None:
    stream = b"\x07\x1b[?1004h\x1b[6n\x1b]9;hi\x07\x1b]133;D;0\x1b\\"
    output, events = feed_all(Scanner(withhold_reports=True), [stream])
    assert output == stream
    assert events == [Bell(), FocusReporting(True), CursorQuery(), Osc(9, b"hi"), Osc(133, b"D;0")]


@given(
    st.lists(st.sampled_from([REPORT, REPORT_ST, QUERY, OTHER_OSC, PROMPT, b"text", b"\x1b"])),
    st.integers(min_value=1, max_value=50),
)
def test_output_is_the_input_without_its_7501_sequences(pieces: list[bytes], size: int) -> None:
    stream = b"".join(pieces)
    chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
    output, _ = feed_all(Scanner(withhold_reports=True), chunks)
    # A lone ESC at the very end waits for its next byte; every 7501 sequence is gone.
    kept = pieces[:-1] if pieces and pieces[-1] == b"\x1b" else pieces
    assert output == b"".join(p for p in kept if p not in (REPORT, REPORT_ST, QUERY))


@pytest.mark.parametrize("terminator", [b"\x07", b"\x1b\\"])
def test_the_held_bytes_never_pass_the_sequence_limit(terminator: bytes) -> None:
    scanner = Scanner(withhold_reports=True)
    scanner.feed(b"\x1b]7501;" + b"m" * (MAX_SEQUENCE * 2))
    assert scanner.held == 0
    assert scanner.feed(terminator).events == ()
