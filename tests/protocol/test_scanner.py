"""The incremental scanner against the wire rules of protocol.md and a reference scanner.

The reference below reads a whole stream at once, byte by byte, straight from the rules.
The real scanner must agree with it however the stream is cut into reads.
"""

from __future__ import annotations

import copy
import random
import re
import tracemalloc
from collections.abc import Iterable
from dataclasses import dataclass

import pytest
from helpers.data import split_at
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tray.protocol.output_events import (
    Bell,
    CursorQuery,
    Event,
    FocusReporting,
    FullReset,
    Osc,
    PromptStart,
    Query,
    RawReport,
    Title,
)
from tray.protocol.scanner import MAX_CSI, MAX_SEQUENCE, Scanner

ESC = b"\x1b"
BEL = b"\x07"
ST = b"\x1b\\"
CAN = b"\x18"
SUB = b"\x1a"
QUERY_BEL = b"\x1b]7501;?\x07"
QUERY_ST = b"\x1b]7501;?\x1b\\"

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- the reference: whole input, one byte at a time, nothing incremental -------------------


@dataclass
class Reference:
    output: bytes
    events: list[Event]
    query_spans: list[tuple[int, int]]  # [start, end) of each answered query in the input


def reference_kitty_query(body: bytes) -> bytes | None:
    """The id to answer an OSC 99 with when it is a support query: ``p=?``, at most one
    ``i=`` of kitty's id characters (``0`` without one), no other pair and no payload."""
    if not body.startswith(b"99;"):
        return None
    metadata, separator, payload = body[3:].partition(b";")
    pairs = [pair.partition(b"=") for pair in metadata.split(b":")]
    keys = sorted(key for key, _, _ in pairs)
    values = {key: value for key, equals, value in pairs if equals}
    if not separator or payload or keys not in ([b"p"], [b"i", b"p"]) or len(values) != len(keys):
        return None
    identifier = values.get(b"i", b"0")
    if values[b"p"] != b"?" or not re.fullmatch(rb"[A-Za-z0-9_+.-]{1,64}", identifier):
        return None
    return identifier


def reference_osc(body: bytes, terminator: bytes, events: list[Event]) -> bool:
    """The events of a complete OSC within the limit; True for a query."""
    if body.startswith(b"7501;") and body[5:].strip(b" \t") == b"?":
        events.append(Query(b"\x1b]7501;?" + terminator))
        return True
    identifier = reference_kitty_query(body)
    if identifier is not None:
        capabilities = b"p=title,body:o=always,unfocused,invisible"
        answer = b"\x1b]99;i=" + identifier + b":p=?;" + capabilities + terminator
        events.append(Query(answer, 99))
        return True
    if body.startswith(b"7501;"):
        events.append(RawReport(body[5:]))
        return False
    if body in (b"133;A", b"633;A") or body.startswith((b"133;A;", b"633;A;")):
        events.append(PromptStart())
    number, separator, payload = body.partition(b";")
    if separator and number in (b"7", b"9", b"99", b"133", b"633", b"777"):
        events.append(Osc(int(number), payload))
    return False


def reference_csi(parameters: bytes, final: int, events: list[Event]) -> None:
    if final in b"hl" and parameters[:1] == b"?" and b"?" not in parameters[1:]:
        if 1004 in [int(p) for p in parameters[1:].split(b";") if p]:
            events.append(FocusReporting(final == ord("h")))
    elif final == ord("n") and parameters in (b"6", b"?6"):
        events.append(CursorQuery())


def reference_scan(data: bytes) -> Reference:
    out = bytearray()
    events: list[Event] = []
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(data):
        if data[i] == 0x07:
            events.append(Bell())
            out.append(data[i])
            i += 1
            continue
        if data[i] != 0x1B or i + 1 == len(data):
            out.append(data[i])
            i += 1
            continue
        kind = data[i + 1]
        if kind == ord("c"):
            events.append(FullReset())
            out += data[i : i + 2]
            i += 2
            continue
        if kind == ord("["):
            # Only parameter bytes can make an event; whatever follows them is scanned
            # as usual (a BEL in a CSI still rings).
            j = i + 2
            while j < len(data) and data[j] in b"0123456789;?":
                j += 1
            if j < len(data) and j + 1 - i <= MAX_CSI:
                reference_csi(data[i + 2 : j], data[j], events)
            out += data[i : i + 2]
            i += 2
            continue
        if kind in b"PX^_":
            # A string: skipped to ST, with BEL as payload; CAN, SUB or any other ESC ends it.
            j = i + 2
            while j < len(data) and data[j] not in b"\x18\x1a\x1b":
                j += 1
            if j == len(data):
                out += data[i:]
                break
            if data[j] != 0x1B:
                out += data[i : j + 1]
                i = j + 1
            elif data[j : j + 2] == ST:
                out += data[i : j + 2]
                i = j + 2
            else:
                out += data[i:j]
                i = j
            continue
        if kind != ord("]"):
            out.append(data[i])
            i += 1
            continue
        # An OSC body runs up to the first BEL, CAN, SUB or ESC.
        j = i + 2
        while j < len(data) and data[j] not in b"\x07\x18\x1a\x1b":
            j += 1
        if j == len(data):  # never terminated: plain output
            out += data[i:]
            break
        if data[j] == 0x07:
            end = j + 1
        elif data[j : j + 2] == ST:
            end = j + 2
        elif data[j] == 0x1B:  # ESC without "\": unapplied, and the ESC starts anew
            out += data[i:j]
            i = j
            continue
        else:  # CAN or SUB: cancelled, and the byte itself is output
            out += data[i : j + 1]
            i = j + 1
            continue
        if end - i <= MAX_SEQUENCE and reference_osc(data[i + 2 : j], data[j:end], events):
            spans.append((i, end))
        else:
            out += data[i:end]
        i = end
    return Reference(bytes(out), events, spans)


def test_reference_reads_the_rules_as_intended() -> None:
    # The reference is itself checked on a hand-worked stream, so the properties below
    # compare against something known.
    stream = (
        b"a\x1b]7501;?\x07b\x1b]7501;state=done\x1b\\c\x1b]133;A\x07\x1bc"
        b"\x1b]7501;x\x18d\x1b]7501;y\x1b]7501; ? \x1b\\e\x1b]7501;"
    )
    ref = reference_scan(stream)
    assert ref.output == (
        b"ab\x1b]7501;state=done\x1b\\c\x1b]133;A\x07\x1bc\x1b]7501;x\x18d\x1b]7501;ye\x1b]7501;"
    )
    assert ref.events == [
        Query(QUERY_BEL),
        RawReport(b"state=done"),
        PromptStart(),
        Osc(133, b"A"),
        FullReset(),
        Query(QUERY_ST),
    ]
    assert [stream[s:e] for s, e in ref.query_spans] == [QUERY_BEL, b"\x1b]7501; ? \x1b\\"]
    signals = (
        b"\x07\x1b[?1004h\x1bP1$r\x07\x1b\\\x1b[6n\x1b]9;hi\x1b\\\x1b_G\x07\x18\x07"
        b"\x1b[?25;1004l\x1b[?6n\x1bX\x07\x1b]0;t\x07\x1b[5n\x1b^\x07"
    )
    ref = reference_scan(signals)
    assert ref.output == signals
    assert ref.events == [
        Bell(),
        FocusReporting(True),
        CursorQuery(),
        Osc(9, b"hi"),
        Bell(),
        FocusReporting(False),
        CursorQuery(),
    ]


# --- helpers ---------------------------------------------------------------------------


def scan(chunks: Iterable[bytes]) -> tuple[bytes, list[Event]]:
    """Output and events of a whole stream; whatever is still withheld at the end is let go."""
    scanner = Scanner()
    out = bytearray()
    events: list[Event] = []
    for chunk in chunks:
        result = scanner.feed(chunk)
        out += result.output
        events += result.events
        assert scanner.held <= MAX_SEQUENCE
    out += scanner.finish()
    return bytes(out), events


def every_split(data: bytes) -> Iterable[list[bytes]]:
    for cut in range(len(data) + 1):
        yield [data[:cut], data[cut:]]
    rng = random.Random(len(data))
    for _ in range(40):
        a, b = sorted(rng.randrange(len(data) + 1) for _ in range(2))
        yield split_at(data, [a, b])
    yield [data[i : i + 1] for i in range(len(data))]


def assert_same_however_split(data: bytes) -> tuple[bytes, list[Event]]:
    whole = scan([data])
    for chunks in every_split(data):
        assert scan(chunks) == whole, chunks
    return whole


# --- passthrough and queries -----------------------------------------------------------


def test_plain_output_passes_through_untouched_and_uncopied() -> None:
    data = b"hello \xe2\x94\x80 world\r\n\x1b[31mred\x1b[0m"
    result = Scanner().feed(data)
    # The hot path hands the very same object back: no per-byte work, no copy.
    assert result.output is data
    assert result.events == ()


@pytest.mark.parametrize("terminator", [BEL, ST])
def test_query_answered_with_its_own_terminator_and_removed(terminator: bytes) -> None:
    query = b"\x1b]7501;?" + terminator
    output, events = assert_same_however_split(b"before" + query + b"\x1b[c" + b"after")
    assert output == b"before\x1b[cafter"
    assert events == [Query(query)]


@pytest.mark.parametrize("body", [b"?", b" ?", b"? ", b"\t?\t", b" \t ? \t ", b"  ?", b"?\t\t"])
@pytest.mark.parametrize("terminator", [BEL, ST])
def test_query_body_trimmed_of_space_and_tab(body: bytes, terminator: bytes) -> None:
    output, events = assert_same_however_split(b"x\x1b]7501;" + body + terminator + b"y")
    assert output == b"xy"
    assert events == [Query(b"\x1b]7501;?" + terminator)]


@pytest.mark.parametrize(
    "body", [b"??", b"?x", b"x?", b"", b" ", b"\n?", b"?\r", b"? ?", b"\x00?", b"?\x9c"]
)
@pytest.mark.parametrize("terminator", [BEL, ST])
def test_not_quite_a_query_is_not_answered_and_passes_through(
    body: bytes, terminator: bytes
) -> None:
    sequence = b"\x1b]7501;" + body + terminator
    output, events = assert_same_however_split(sequence)
    assert output == sequence
    assert not any(isinstance(event, Query) for event in events)
    # It is an (invalid) report, and the parser is the one to discard it.
    assert events == [RawReport(body)]


@pytest.mark.parametrize(
    "sequence",
    [
        b"\x1b]75;state=working\x07",
        b"\x1b]750;state=working\x07",
        b"\x1b]75010;state=working\x07",
        b"\x1b]7501\x07",
        b"\x1b]7501\x1b\\",
        b"\x1b]7501?\x07",
        b"\x1b]75010;?\x07",
        b"\x1b] 7501;?\x07",
        b"\x1b]07501;?\x07",
        b"\x1b]7501 ;?\x07",
    ],
)
def test_other_numbers_are_neither_reports_nor_queries(sequence: bytes) -> None:
    output, events = assert_same_however_split(b"<" + sequence + b">")
    assert output == b"<" + sequence + b">"
    assert events == []


def test_eight_bit_c1_controls_are_never_parsed() -> None:
    stream = b"\x9d7501;?\x07\x9d7501;state=working\x9c\x9d133;A\x9c"
    # The BEL is in no 7-bit sequence: a bell.
    assert assert_same_however_split(stream) == (stream, [Bell()])
    # 0x9c inside a 7-bit OSC does not end it: the body runs on to the BEL.
    inside = b"\x1b]7501;state=working\x9c:app=x\x07"
    assert assert_same_however_split(inside) == (inside, [RawReport(b"state=working\x9c:app=x")])
    # UTF-8 text whose continuation bytes are 0x9c and 0x9d goes through whole.
    text = "\u251c\u251d\u2580 \u271c".encode()
    assert b"\x9c" in text
    assert b"\x9d" in text
    assert scan([text]) == (text, [])


@pytest.mark.parametrize("cancel", [CAN, SUB])
@pytest.mark.parametrize(
    "start",
    [
        b"\x1b]7501;state=clear",
        b"\x1b]7501;",
        b"\x1b]7501;?",
        b"\x1b]7501",
        b"\x1b]",
        b"\x1b]133;A",
    ],
)
def test_can_and_sub_cancel_and_what_follows_is_output(start: bytes, cancel: bytes) -> None:
    stream = start + cancel + b":app=x\x07rest"
    # The BEL that would have ended the sequence is a bell now.
    assert assert_same_however_split(stream) == (stream, [Bell()])


def test_esc_that_is_not_st_ends_the_osc_unapplied() -> None:
    stream = b"\x1b]7501;state=working\x1b[31mred"
    assert assert_same_however_split(stream) == (stream, [])
    stream = b"\x1b]7501;state=working\x1b"
    assert assert_same_however_split(stream) == (stream, [])


@pytest.mark.parametrize("terminator", [BEL, ST])
@pytest.mark.parametrize(
    "aborted",
    [b"\x1b]7501;state=working", b"\x1b]7501;", b"\x1b]7501; ?", b"\x1b]0;title", b"\x1b]"],
)
def test_aborted_osc_followed_by_query_still_answers_it(aborted: bytes, terminator: bytes) -> None:
    query = b"\x1b]7501;?" + terminator
    output, events = assert_same_however_split(b"a" + aborted + query + b"b")
    assert output == b"a" + aborted + b"b"
    assert events == [Query(query)]


def test_aborted_osc_followed_by_report_and_reset() -> None:
    stream = b"\x1b]7501;state=idle\x1b]7501;state=done\x07\x1b]7501;state=idle\x1bc"
    output, events = assert_same_however_split(stream)
    assert output == stream
    assert events == [RawReport(b"state=done"), FullReset()]


@pytest.mark.parametrize("number", [b"133", b"633"])
@pytest.mark.parametrize("params", [b"", b";aid=42", b";cl=m;k=i", b";"])
@pytest.mark.parametrize("terminator", [BEL, ST])
def test_prompt_marks(number: bytes, params: bytes, terminator: bytes) -> None:
    stream = b"$ \x1b]" + number + b";A" + params + terminator + b"ls"
    # The mark is an Osc as well, after the PromptStart.
    expected = [PromptStart(), Osc(int(number), b"A" + params)]
    assert assert_same_however_split(stream) == (stream, expected)


@pytest.mark.parametrize(
    ("body", "events"),
    [
        (b"133;B", [Osc(133, b"B")]),
        (b"133;AB", [Osc(133, b"AB")]),
        (b"133;a", [Osc(133, b"a")]),
        (b"633;D;0", [Osc(633, b"D;0")]),
        (b"133;C;cmdline_url=ls%20-l", [Osc(133, b"C;cmdline_url=ls%20-l")]),
        (b"133;D", [Osc(133, b"D")]),
        (b"133;", [Osc(133, b"")]),
        (b"133", []),
        (b"1330;A", []),
        (b"0133;A", []),
    ],
)
def test_other_shell_integration_marks_are_no_prompt_start(
    body: bytes, events: list[Event]
) -> None:
    stream = b"\x1b]" + body + BEL
    assert assert_same_however_split(stream) == (stream, events)


def test_cancelled_prompt_mark_gives_nothing_and_its_bel_rings() -> None:
    stream = b"\x1b]133;A\x18\x07"
    assert assert_same_however_split(stream) == (stream, [Bell()])


def test_full_reset() -> None:
    stream = b"a\x1bcb\x1b\x1bc"
    assert assert_same_however_split(stream) == (stream, [FullReset(), FullReset()])


@pytest.mark.parametrize(
    "sequence", [b"\x1b[!p", b"\x1b[?1049h", b"\x1b[?1049l", b"\x1b[c", b"\x1b(c", b"\x1b c"]
)
def test_soft_reset_screen_switch_and_lookalikes_give_nothing(sequence: bytes) -> None:
    stream = b"x" + sequence + b"y"
    assert assert_same_however_split(stream) == (stream, [])


# --- attention signals -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "events"),
    [
        (b"\x07", [Bell()]),
        (b"a\x07\x07b", [Bell(), Bell()]),
        # After an ESC that starts nothing, and inside a CSI, a BEL still rings.
        (b"\x1b\x07", [Bell()]),
        (b"\x1b[3\x0731m", [Bell()]),
        # It ends an OSC, and is payload in DCS, SOS, PM and APC strings.
        (b"\x1b]0;title\x07", []),
        (b"\x1b]9;hi\x07\x07", [Osc(9, b"hi"), Bell()]),
        (b"\x1bP1$r\x07q\x1b\\", []),
        (b"\x1bX\x07\x1b\\", []),
        (b"\x1b^\x07\x1b\\", []),
        (b"\x1b_G\x07\x1b\\", []),
        (b"\x1bP\x07\x1b\\\x07", [Bell()]),
        # CAN and SUB cancel a string; an ESC that is not ST ends it and starts anew.
        (b"\x1bP\x07\x18\x07", [Bell()]),
        (b"\x1b_\x07\x1a\x07", [Bell()]),
        (b"\x1bP\x07\x1b[?1004h\x07", [FocusReporting(True), Bell()]),
        (b"\x1bP\x1b]7501;state=done\x07", [RawReport(b"state=done")]),
        (b"\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\", [Osc(9, b"hi")]),
        (b"\x1bP\x1bc", [FullReset()]),
        # An unterminated string swallows the bell.
        (b"\x1bPq\x07", []),
        # 8-bit C1 introducers are never parsed.
        (b"\x90\x07\x9c", [Bell()]),
    ],
)
def test_bells(stream: bytes, events: list[Event]) -> None:
    assert assert_same_however_split(stream) == (stream, events)
    assert reference_scan(stream).events == events


@pytest.mark.parametrize(
    ("sequence", "events"),
    [
        (b"\x1b[?1004h", [FocusReporting(True)]),
        (b"\x1b[?1004l", [FocusReporting(False)]),
        (b"\x1b[?1004;2004h", [FocusReporting(True)]),
        (b"\x1b[?2004;1004l", [FocusReporting(False)]),
        (b"\x1b[?1;1004;25h", [FocusReporting(True)]),
        (b"\x1b[?01004h", [FocusReporting(True)]),
        (b"\x1b[?;1004;h", [FocusReporting(True)]),
        (b"\x1b[?1004;1004h", [FocusReporting(True)]),
        (b"\x1b[?10040h", []),
        (b"\x1b[?11004h", []),
        (b"\x1b[?1005h", []),
        (b"\x1b[1004h", []),
        (b"\x1b[>1004h", []),
        (b"\x1b[??1004h", []),
        (b"\x1b[?1004?h", []),
        (b"\x1b[?1004$p", []),
        (b"\x1b[?1004 h", []),
        (b"\x1b[?1004:2h", []),
        (b"\x1b[?1004\x18h", []),
        (b"\x1b[?1004\x1b[?1004l", [FocusReporting(False)]),
        (b"\x1b[?1049h\x1b[?25l", []),
        (b"\x1b[6n", [CursorQuery()]),
        (b"\x1b[?6n", [CursorQuery()]),
        (b"\x1b[5n", []),
        (b"\x1b[66n", []),
        (b"\x1b[6;1n", []),
        (b"\x1b[>6n", []),
        (b"\x1b[6N", []),
        (b"\x1b[6;1H", []),
        (b"\x1b[1;6R", []),
        (b"\x1b[6 n", []),
        (b"\x1b\x1b[6n", [CursorQuery()]),
        (b"\x1b[\x1b[6n", [CursorQuery()]),
        (b"\x1b(6n", []),
    ],
)
def test_focus_reporting_and_cursor_queries(sequence: bytes, events: list[Event]) -> None:
    stream = b"\x1b[31mx" + sequence + b"y\x1b[0m"
    assert assert_same_however_split(stream) == (stream, events)
    assert reference_scan(stream).events == events


def test_mode_change_of_at_most_max_csi_bytes_is_recognised() -> None:
    for size in range(MAX_CSI - 4, MAX_CSI + 3):
        head = b"\x1b[?"
        padding = size - len(head) - len(b"1004h")
        sequence = head + b"0" * padding + b"1004h"
        assert len(sequence) == size
        events = [FocusReporting(True)] if size <= MAX_CSI else []
        assert assert_same_however_split(sequence) == (sequence, events), size
        padded = head + b"1;" * (padding // 2) + b";" * (padding % 2) + b"1004l"
        assert len(padded) == size
        events = [FocusReporting(False)] if size <= MAX_CSI else []
        assert assert_same_however_split(padded) == (padded, events), size


@pytest.mark.parametrize(
    ("body", "events"),
    [
        (b"9;Build finished", [Osc(9, b"Build finished")]),
        (b"9;\n\nClaude needs you", [Osc(9, b"\n\nClaude needs you")]),
        (b"9;4;1;42", [Osc(9, b"4;1;42")]),
        (b"9;", [Osc(9, b"")]),
        (
            b"777;notify;Title;Body; with; semicolons",
            [Osc(777, b"notify;Title;Body; with; semicolons")],
        ),
        (b"99;i=1:d=0;Title", [Osc(99, b"i=1:d=0;Title")]),
        (b"99;;x", [Osc(99, b";x")]),
        (b"7;file://host/home/u%20v", [Osc(7, b"file://host/home/u%20v")]),
        (b"7;kitty-shell-cwd://host/home/u v", [Osc(7, b"kitty-shell-cwd://host/home/u v")]),
        (b"133;D;0", [Osc(133, b"D;0")]),
        (b"633;E;ls", [Osc(633, b"E;ls")]),
        (b"133;A;aid=1", [PromptStart(), Osc(133, b"A;aid=1")]),
        (b"9", []),
        (b"09;x", []),
        (b"90;x", []),
        (b"8;;https://example.com", []),
        (b"0;title", []),
        (b"2;title", []),
        (b"1337;SetMark", []),
        (b"7770;notify;a;b", []),
        (b" 9;x", []),
        (b";9;x", []),
    ],
)
@pytest.mark.parametrize("terminator", [BEL, ST])
def test_osc_events(body: bytes, events: list[Event], terminator: bytes) -> None:
    stream = b"a\x1b]" + body + terminator + b"b"
    assert assert_same_however_split(stream) == (stream, events)


@pytest.mark.parametrize("cancel", [CAN, SUB, b"\x1b[", b"\x1b"])
def test_unfinished_osc_gives_no_osc_event(cancel: bytes) -> None:
    stream = b"\x1b]9;Build finished" + cancel
    output, events = assert_same_however_split(stream)
    assert output == stream
    assert events == []


@pytest.mark.parametrize("terminator", [BEL, ST])
def test_osc_event_of_4096_bytes_and_not_4097(terminator: bytes) -> None:
    head = b"\x1b]777;notify;t;"
    fits = head + b"b" * (MAX_SEQUENCE - len(head) - len(terminator)) + terminator
    too_long = head + b"b" * (MAX_SEQUENCE + 1 - len(head) - len(terminator)) + terminator
    payload = fits[len(b"\x1b]777;") : -len(terminator)]
    for data, events in ((fits, [Osc(777, payload)]), (too_long, [])):
        assert scan([data]) == (data, events)
        for cut in (*range(0, 40), *range(len(data) - 40, len(data) + 1)):
            assert scan([data[:cut], data[cut:]]) == (data, events), cut


# --- the 4096-byte limit -----------------------------------------------------------------


def report_of_size(size: int, terminator: bytes) -> bytes:
    head = b"\x1b]7501;state=working:pad="
    return head + b"x" * (size - len(head) - len(terminator)) + terminator


@pytest.mark.parametrize("terminator", [BEL, ST])
def test_report_of_4096_bytes_applies_and_4097_does_not(terminator: bytes) -> None:
    fits = report_of_size(MAX_SEQUENCE, terminator)
    assert len(fits) == MAX_SEQUENCE
    assert scan([fits]) == (fits, [RawReport(fits[len(b"\x1b]7501;") : -len(terminator)])])
    too_long = report_of_size(MAX_SEQUENCE + 1, terminator)
    assert len(too_long) == MAX_SEQUENCE + 1
    assert scan([too_long]) == (too_long, [])
    for data in (fits, too_long):
        expected = scan([data])
        for cut in range(0, len(data) + 1, 7):
            assert scan([data[:cut], data[cut:]]) == expected
        for cut in range(len(data) - 8, len(data) + 1):
            assert scan([data[:cut], data[cut:]]) == expected


@pytest.mark.parametrize("terminator", [BEL, ST])
def test_query_padded_to_the_limit(terminator: bytes) -> None:
    head = b"\x1b]7501;"
    spaces = MAX_SEQUENCE - len(head) - 1 - len(terminator)
    fits = head + b" " * spaces + b"?" + terminator
    assert len(fits) == MAX_SEQUENCE
    assert scan([fits]) == (b"", [Query(b"\x1b]7501;?" + terminator)])
    too_long = head + b" " * (spaces + 1) + b"?" + terminator
    assert scan([too_long]) == (too_long, [])
    for data in (fits, too_long):
        expected = scan([data])
        for cut in (1, 2, 7, 8, 100, 4000, 4090, *range(len(data) - 4, len(data))):
            assert scan([data[:cut], data[cut:]]) == expected


@pytest.mark.parametrize("terminator", [BEL, ST])
def test_prompt_mark_past_the_limit_is_ignored(terminator: bytes) -> None:
    head = b"\x1b]133;A;"
    fits = head + b"k" * (MAX_SEQUENCE - len(head) - len(terminator)) + terminator
    payload = fits[len(b"\x1b]133;") : -len(terminator)]
    assert scan([fits]) == (fits, [PromptStart(), Osc(133, payload)])
    too_long = head + b"k" * (MAX_SEQUENCE + 1 - len(head) - len(terminator)) + terminator
    assert scan([too_long]) == (too_long, [])


# --- withheld bytes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "terminator"), [(QUERY_BEL, BEL), (QUERY_ST, ST), (b"\x1b]7501; ?\t\x1b\\", ST)]
)
def test_split_query_withheld_until_complete_and_answered_once(
    query: bytes, terminator: bytes
) -> None:
    before, after = b"abc\x1b[1m", b"\x1b[cdef"
    stream = before + query + after
    start, end = len(before), len(before) + len(query)
    for cut_a in range(len(stream) + 1):
        for cut_b in range(cut_a, len(stream) + 1):
            scanner = Scanner()
            output = bytearray()
            events: list[Event] = []
            fed = 0
            for piece in split_at(stream, [cut_a, cut_b]):
                result = scanner.feed(piece)
                fed += len(piece)
                output += result.output
                events += result.events
                if start < fed < end:
                    # Inside the query: nothing of it has left, and everything before has.
                    assert bytes(output) == before
                    assert scanner.held == fed - start
                    assert events == []
            assert bytes(output) == before + after
            assert events == [Query(b"\x1b]7501;?" + terminator)]
            assert scanner.held == 0


def test_held_bytes_while_a_query_is_possible() -> None:
    scanner = Scanner()
    assert scanner.feed(b"text\x1b").output == b"text"
    assert scanner.held == 1
    for piece, held in ((b"]", 2), (b"75", 4), (b"01;", 7), (b" ", 8), (b"?", 9), (b"\t", 10)):
        result = scanner.feed(piece)
        assert (result.output, result.events, scanner.held) == (b"", (), held)
    result = scanner.feed(b"\x07more")
    assert (result.output, result.events, scanner.held) == (b"more", (Query(QUERY_BEL),), 0)


@pytest.mark.parametrize(
    ("prefix", "released"),
    [
        (b"\x1b]7501;s", b"\x1b]7501;s"),
        (b"\x1b]7501;??", b"\x1b]7501;??"),
        (b"\x1b]0;title", b"\x1b]0;title"),
        (b"\x1b]76", b"\x1b]76"),
        (b"\x1b[", b"\x1b["),
        (b"\x1bc", b"\x1bc"),
    ],
)
def test_no_longer_possible_query_is_released_at_once(prefix: bytes, released: bytes) -> None:
    scanner = Scanner()
    assert scanner.feed(prefix).output == released
    assert scanner.held == 0


def test_esc_of_a_possible_st_is_held_in_any_osc() -> None:
    scanner = Scanner()
    assert scanner.feed(b"\x1b]0;title\x1b").output == b"\x1b]0;title"
    assert scanner.held == 1
    assert scanner.feed(b"\\").output == ST


def split_into(data: bytes, pieces: int, rng: random.Random) -> list[bytes]:
    return split_at(data, [rng.randrange(len(data) + 1) for _ in range(pieces - 1)])


@pytest.mark.parametrize("query", [QUERY_BEL, QUERY_ST, b"\x1b]7501;\t? \x1b\\"])
def test_split_query_is_never_released_however_long_the_wait(query: bytes) -> None:
    # A read that brings nothing stands for any length of time: nothing times out.
    for cut in range(1, len(query)):
        scanner = Scanner()
        assert scanner.feed(b"a" + query[:cut]).output == b"a"
        for _ in range(3):
            assert scanner.feed(b"") == (b"", ())
            assert scanner.held == cut
        result = scanner.feed(query[cut:] + b"z")
        assert result.output == b"z"
        assert result.events == (Query(b"\x1b]7501;?" + (BEL if query.endswith(BEL) else ST)),)
        assert scanner.held == 0


@pytest.mark.parametrize("terminator", [BEL, ST])
def test_query_in_many_pieces_among_other_output(terminator: bytes) -> None:
    rng = random.Random(7501)
    query = b"\x1b]7501; ?\t" + terminator
    stream = b"\x07x\x1b[?1004h" + query + b"\x1b[c\x1b]9;done\x07" + query + b"y"
    for pieces in (2, 3, 5, 8, len(stream)):
        for _ in range(30):
            output, events = scan(split_into(stream, pieces, rng))
            assert output == b"\x07x\x1b[?1004h\x1b[c\x1b]9;done\x07y"
            answer = Query(b"\x1b]7501;?" + terminator)
            assert events == [Bell(), FocusReporting(True), answer, Osc(9, b"done"), answer]


@pytest.mark.parametrize(
    ("pending", "released"),
    [
        (b"\x1b", b"\x1b"),
        (b"\x1b]", b"\x1b]"),
        (b"\x1b]7501;", b"\x1b]7501;"),
        (b"\x1b]7501; ?", b"\x1b]7501; ?"),
        (b"\x1b]7501;?\x1b", b"\x1b]7501;?\x1b"),
        (b"\x1b]0;title\x1b", b"\x1b"),
        (b"\x1bPq#0\x1b", b"\x1b"),
        (b"\x1b]0;title", b""),
        (b"\x1b[?100", b""),
        (b"\x1bPq#0", b""),
    ],
)
def test_finish_releases_what_is_withheld_and_starts_afresh(
    pending: bytes, released: bytes
) -> None:
    scanner = Scanner()
    result = scanner.feed(b"out" + pending)
    assert result.output + scanner.finish() == b"out" + pending
    assert scanner.held == 0
    assert scanner.finish() == b""
    # Nothing of the old sequence is left over.
    assert scanner.feed(QUERY_BEL + b"4h\x07") == (b"4h\x07", (Query(QUERY_BEL), Bell()))
    assert released == (b"out" + pending)[len(result.output) :]


def test_withheld_esc_then_reset_or_report() -> None:
    scanner = Scanner()
    assert scanner.feed(b"a\x1b").output == b"a"
    assert scanner.feed(b"c") == (b"\x1bc", (FullReset(),))
    assert scanner.feed(b"\x1b").output == b""
    result = scanner.feed(b"]7501;state=done\x07")
    assert result == (b"\x1b]7501;state=done\x07", (RawReport(b"state=done"),))


def test_osc_ended_by_esc_that_starts_a_query() -> None:
    scanner = Scanner()
    assert scanner.feed(b"\x1b]0;t\x1b").output == b"\x1b]0;t"
    result = scanner.feed(b"]7501;?\x07x")
    assert result == (b"x", (Query(QUERY_BEL),))
    assert scanner.feed(b"\x1bP1$r\x1b") == (b"\x1bP1$r", ())
    assert scanner.feed(b"]7501;") == (b"", ())
    assert scanner.feed(b"?\x1b\\") == (b"", (Query(QUERY_ST),))


# --- memory ---------------------------------------------------------------------------------


@pytest.mark.parametrize("opening", [b"\x1b]", b"\x1b]7501;", b"\x1b]7501;   "])
@pytest.mark.parametrize("filler", [b"x", b" "])
def test_unterminated_osc_keeps_memory_bounded(opening: bytes, filler: bytes) -> None:
    scanner = Scanner()
    chunk = filler * 4096
    total = 10 * 1024 * 1024
    out_size = len(scanner.feed(opening).output)
    tracemalloc.start()
    try:
        for _ in range(total // len(chunk)):
            out_size += len(scanner.feed(chunk).output)
            # Scanner has no public view of the OSC body it collects, hence the one read.
            assert len(scanner._body) <= MAX_SEQUENCE
            assert scanner.held <= MAX_SEQUENCE
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024
    # Nothing was lost on the way: every byte came out (what is held counts once).
    assert out_size + scanner.held == len(opening) + total
    assert scanner.feed(b"\x07").events == ()


def test_query_candidate_never_holds_more_than_the_limit() -> None:
    scanner = Scanner()
    scanner.feed(b"\x1b]7501;")
    released = 0
    for _ in range(5000):
        released += len(scanner.feed(b" ").output)
        assert scanner.held <= MAX_SEQUENCE
    assert released + scanner.held == len(b"\x1b]7501;") + 5000
    assert scanner.feed(b"?\x07").events == ()


@pytest.mark.parametrize("spaces", range(4080, 4095))
def test_query_candidate_at_the_limit_with_a_pending_esc(spaces: int) -> None:
    scanner = Scanner()
    scanner.feed(b"\x1b]7501;" + b" " * spaces)
    scanner.feed(b"?")
    scanner.feed(ESC)
    assert scanner.held <= MAX_SEQUENCE
    result = scanner.feed(b"\\")
    answered = len(b"\x1b]7501;?") + spaces + len(ST) <= MAX_SEQUENCE
    assert result.events == ((Query(QUERY_ST),) if answered else ())


@pytest.mark.parametrize(
    ("opening", "filler"),
    [
        (b"\x1b[?", b"1;"),
        (b"\x1b[?", b"1004;"),
        (b"\x1bP", b"q#0;2;0;0;0\x07"),
        (b"\x1b_", b"Gf=100;AAAA"),
        (b"\x1b^", b"\x07"),
        (b"\x1bX", b"x"),
    ],
)
def test_endless_csi_or_string_keeps_memory_bounded(opening: bytes, filler: bytes) -> None:
    scanner = Scanner()
    chunk = filler * (4096 // len(filler))
    total = 0
    out_size = len(scanner.feed(opening).output)
    tracemalloc.start()
    try:
        for _ in range(2000):
            result = scanner.feed(chunk)
            total += len(chunk)
            out_size += len(result.output)
            # Inside a string a BEL is payload; a CSI's parameters make no event.
            assert result.events == ()
            assert scanner.held == 0
            # No public view of the carried CSI start either: the one private read here.
            assert len(scanner._carry) < MAX_CSI
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024
    assert out_size == len(opening) + total
    # An over-long mode change ends unrecognised; a string ends at ST.
    end = scanner.feed(b"1004h\x1b\\\x07")
    assert end == (b"1004h\x1b\\\x07", (Bell(),))


# --- properties ---------------------------------------------------------------------------

TOKENS = [
    ESC,
    b"]",
    b"[",
    b"7501",
    b";",
    b"7501;",
    b"?",
    b"??",
    b" ",
    b"\t",
    BEL,
    ST,
    b"\\",
    CAN,
    SUB,
    b"\x1b]",
    b"\x1b]7501;",
    QUERY_BEL,
    QUERY_ST,
    b"\x1b]7501; ? \x1b\\",
    b"\x1bc",
    b"c",
    b"133;A",
    b"\x1b]133;A\x07",
    b"\x1b]633;A;x\x1b\\",
    b"\x9d",
    b"\x9c",
    b"state=working",
    b":",
    b"=",
    b"app=x",
    b"\x1b[?1049h",
    b"\x1b[!p",
    b"\x1b]0;title\x07",
    b"\x1b]7501;state=done:msg=UGxhbg\x1b\\",
    b"\x1b]7501;state=blocked:kind=permission\x07",
    "\u2500\u251c".encode(),
    # The attention signals and their lookalikes.
    b"\x1b[",
    b"\x1b[?",
    b"1004",
    b"h",
    b"l",
    b"n",
    b"6",
    b"\x1b[?1004h",
    b"\x1b[?1004;2004l",
    b"\x1b[?25l",
    b"\x1b[6n",
    b"\x1b[?6n",
    b"\x1b[31m",
    b"\x1bP",
    b"\x1bX",
    b"\x1b^",
    b"\x1b_",
    b"\x1bPtmux;\x1b\x1b]9;x\x07\x1b\\",
    b"\x1b]9;note\x07",
    b"\x1b]777;notify;a;b\x1b\\",
    b"\x1b]133;D;0\x07",
    b"\x1b]7;file:///tmp\x1b\\",
    b"\x1b]99;;x\x1b\\",
    # kitty's notification query and its lookalikes.
    b"\x1b]99;i=opentui-notifications:p=?;\x1b\\",
    b"\x1b]99;p=?;\x07",
    b"\x1b]99;",
    b"99;",
    b"i=x",
    b"p=?",
    b"p=?;",
    b"9;",
    b"777;",
    b"133;",
]

token = st.one_of(
    st.sampled_from(TOKENS),
    st.sampled_from(TOKENS),
    st.sampled_from([QUERY_BEL, QUERY_ST, b"\x1b]7501;", b"\x1b]7501;?", b"\x1b", b"\\", BEL]),
    st.binary(max_size=6),
)
# Padding that brings a sequence near the 4096-byte limit, or a mode change near MAX_CSI,
# from either side.
long_token = st.one_of(
    st.integers(4070, 4100).flatmap(
        lambda n: st.sampled_from(
            [b" " * n, b"x" * n, b"\x1b]7501;" + b" " * n, b"\x1b]9;" + b"x" * n]
        )
    ),
    st.integers(MAX_CSI - 12, MAX_CSI + 2).flatmap(
        lambda n: st.sampled_from([b"1;" * (n // 2), b"\x1b[?" + b"0" * n + b"1004h"])
    ),
)


@st.composite
def build_stream(draw: st.DrawFn) -> bytes:
    tokens = draw(st.lists(token, max_size=30))
    # Rarely, so that most examples stay short and rich in sequences.
    if draw(st.integers(0, 4)) == 0:
        tokens.insert(draw(st.integers(0, len(tokens))), draw(long_token))
    return b"".join(tokens)


streams = build_stream()


@st.composite
def chunked_streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    data = draw(streams)
    cuts = draw(st.lists(st.integers(0, len(data)), max_size=12))
    if draw(st.booleans()):
        # Around every ESC, where the interesting boundaries are.
        cuts += [
            i + d
            for i, b in enumerate(data)
            if b == 0x1B
            for d in (0, 1, 2, 3)
            if i + d <= len(data)
        ]
    return data, sorted(cuts)


@FAST
@given(data=st.binary(max_size=300), cuts=st.lists(st.integers(0, 300), max_size=10))
def test_arbitrary_bytes_never_raise(data: bytes, cuts: list[int]) -> None:
    output, _ = scan(split_at(data, [c for c in cuts if c <= len(data)]))
    assert len(output) <= len(data)


@FAST
@given(chunked_streams())
def test_any_chunking_matches_the_reference(case: tuple[bytes, list[int]]) -> None:
    data, cuts = case
    ref = reference_scan(data)
    assert scan([data]) == (ref.output, ref.events)
    scanner = Scanner()
    out = bytearray()
    events: list[Event] = []
    fed = 0
    for chunk in split_at(data, cuts):
        result = scanner.feed(chunk)
        fed += len(chunk)
        out += result.output
        events += result.events
        assert scanner.held <= MAX_SEQUENCE
        # At every cut, what came out plus what is withheld is exactly what the reference
        # makes of the input so far: nothing lost, nothing reordered, no event early or late.
        probe = copy.deepcopy(scanner)
        prefix = reference_scan(data[:fed])
        assert bytes(out) + probe.finish() == prefix.output
        assert events == prefix.events
    out += scanner.finish()
    assert (bytes(out), events) == (ref.output, ref.events)


@FAST
@given(chunked_streams())
def test_output_is_input_minus_answered_queries(case: tuple[bytes, list[int]]) -> None:
    # Output only ever grows, so a final output without a query's bytes means that no byte
    # of it was ever passed on, however the reads were cut and however long apart.
    data, cuts = case
    ref = reference_scan(data)
    expected = bytearray()
    position = 0
    for start, end in ref.query_spans:
        expected += data[position:start]
        position = end
    expected += data[position:]
    assert scan(split_at(data, cuts))[0] == bytes(expected)
    assert sum(isinstance(e, Query) for e in ref.events) == len(ref.query_spans)


@FAST
@given(chunked_streams())
def test_withheld_bytes_are_the_start_of_an_unfinished_query(case: tuple[bytes, list[int]]) -> None:
    data, cuts = case
    scanner = Scanner()
    fed = 0
    for chunk in split_at(data, cuts):
        scanner.feed(chunk)
        fed += len(chunk)
        held = copy.deepcopy(scanner).finish()
        assert data[:fed].endswith(held)
        if held:
            # An ESC (which may start one), or a prefix of a query, possibly with the ESC of
            # its ST; or an ESC after an OSC or a string, which may start one.
            candidate = held[:-1] if held.endswith(ESC) and len(held) > 1 else held
            assert (
                candidate == ESC
                or (
                    b"\x1b]7501;?".startswith(candidate[: len(b"\x1b]7501;")])
                    and candidate[len(b"\x1b]7501;") :].strip(b" \t") in (b"", b"?")
                )
                or (candidate.startswith(b"\x1b]") and completes_a_kitty_query(candidate[2:]))
            ), held


# Whatever a prefix of kitty's query lacks, one of these supplies (one for each place the
# grammar can stop: support_queries.py).
KITTY_QUERY_ENDINGS = (
    b"",
    b";",
    b"?;",
    b"=?;",
    b"p=?;",
    b":p=?;",
    b"=1:p=?;",
    b"1:p=?;",
    b"i=1;",
    b"=1;",
    b"1;",
    b";p=?;",
    b"9;p=?;",
)


def completes_a_kitty_query(body: bytes) -> bool:
    return any(reference_kitty_query(body + ending) is not None for ending in KITTY_QUERY_ENDINGS)


@pytest.mark.parametrize("terminator", [b"\x07", b"\x1b\\"])
def test_titles_are_events_only_for_a_scanner_asked_for_them(terminator: bytes) -> None:
    stream = b"a\x1b]0;one" + terminator + b"b\x1b]2;two" + terminator + b"\x1b]1;icon" + terminator
    assert Scanner().feed(stream) == (stream, ())
    titled = Scanner(titles=True)
    result = [titled.feed(stream[i : i + 1]) for i in range(len(stream))]
    assert b"".join(r.output for r in result) == stream
    assert [e for r in result for e in r.events] == [Title(b"one"), Title(b"two")]


def test_a_title_is_an_event_only_when_it_changes() -> None:
    # Agents set the same title on every frame, some with OSC 0 and 2 alike.
    frames = b"\x1b]0;work\x07\x1b]2;work\x07x\x1b]0;work\x1b\\\x1b]0;wait\x07\x1b]0;work\x07"
    scanner = Scanner(titles=True)
    split = [scanner.feed(frames[i : i + 1]) for i in range(len(frames))]
    assert b"".join(r.output for r in split) == frames  # every title is still passed on
    expected = [Title(b"work"), Title(b"wait"), Title(b"work")]
    assert [e for r in split for e in r.events] == expected
    assert Scanner(titles=True).feed(frames).events == tuple(expected)
    # Asked again (the agent's rules were read anew), the title in force is news again.
    scanner.read_titles(True)
    assert scanner.feed(b"\x1b]2;work\x07").events == (Title(b"work"),)
    # A scanner not asked for titles keeps none: asked later, the first one counts.
    late = Scanner()
    assert late.feed(b"\x1b]0;work\x07").events == ()
    late.read_titles(True)
    assert late.feed(b"\x1b]0;work\x07").events == (Title(b"work"),)


def test_with_meanings_a_title_is_an_event_only_when_its_meaning_changes() -> None:
    # A spinner's frames mean nothing to the rules: one event for the run of them.
    meanings = {b"- a": None, b"\\ a": None, b"| a": None, b"Wait": "blocked", b"Work": "working"}
    frames = b"".join(b"\x1b]0;" + title + b"\x07x" for title in meanings)
    frames += b"\x1b]2;- a\x07\x1b]0;Work\x07\x1b]0;Wait\x07"
    expected = [Title(b"- a"), Title(b"Wait"), Title(b"Work"), Title(b"- a"), Title(b"Work")]
    expected.append(Title(b"Wait"))
    for cut in range(1, len(frames) + 1):
        scanner = Scanner()
        scanner.read_titles(True, meanings)
        split = [scanner.feed(frames[i : i + cut]) for i in range(0, len(frames), cut)]
        assert b"".join(r.output for r in split) == frames  # every title is passed on
        assert [e for r in split for e in r.events] == expected
    # Asked again, the first title is news whatever it means.
    scanner.read_titles(True, meanings)
    assert scanner.feed(b"\x1b]0;Wait\x07").events == (Title(b"Wait"),)


@given(st.lists(st.sampled_from([b"a", b"b", b"c", b"d"]), max_size=30), st.data())
def test_meanings_keep_exactly_the_changes_of_meaning(
    titles: list[bytes], data: st.DataObject
) -> None:
    meaning_of = {title: data.draw(st.sampled_from(["x", "y", None])) for title in b"abcd"}
    meanings = {bytes([title]): meaning for title, meaning in meaning_of.items()}
    scanner = Scanner()
    scanner.read_titles(True, meanings)
    stream = b"".join(b"\x1b]0;" + title + b"\x07" for title in titles)
    found = [e.text for e in scanner.feed(stream).events if isinstance(e, Title)]
    expected: list[bytes] = []
    last_text: bytes | None = None
    last_meaning: object = object()
    for title in titles:
        if title != last_text and meanings[title] is not last_meaning:
            expected.append(title)
            last_meaning = meanings[title]
        last_text = title
    assert found == expected
