"""The incremental scanner against the wire rules of protocol.md and a reference scanner.

The reference below reads a whole stream at once, byte by byte, straight from the rules.
The real scanner must agree with it however the stream is cut into reads.
"""

from __future__ import annotations

import copy
import itertools
import random
import tracemalloc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tray.protocol.scanner import (
    MAX_SEQUENCE,
    Event,
    FullReset,
    PromptStart,
    Query,
    RawReport,
    Scanner,
)

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


def reference_scan(data: bytes) -> Reference:
    out = bytearray()
    events: list[Event] = []
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(data):
        if data[i : i + 2] == b"\x1bc":
            events.append(FullReset())
            out += data[i : i + 2]
            i += 2
            continue
        if data[i : i + 2] != b"\x1b]":
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
        body = data[i + 2 : j]
        terminator = data[j:end]
        if end - i <= MAX_SEQUENCE:
            if body.startswith(b"7501;") and body[5:].strip(b" \t") == b"?":
                events.append(Query(b"\x1b]7501;?" + terminator))
                spans.append((i, end))
                i = end
                continue
            if body.startswith(b"7501;"):
                events.append(RawReport(body[5:]))
            elif body in (b"133;A", b"633;A") or body.startswith((b"133;A;", b"633;A;")):
                events.append(PromptStart())
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
        FullReset(),
        Query(QUERY_ST),
    ]
    assert [stream[s:e] for s, e in ref.query_spans] == [QUERY_BEL, b"\x1b]7501; ? \x1b\\"]


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
    out += scanner.flush_held()
    return bytes(out), events


def split_at(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    points = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(points)]


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
    assert assert_same_however_split(stream) == (stream, [])
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
    assert assert_same_however_split(stream) == (stream, [])


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
    assert assert_same_however_split(stream) == (stream, [PromptStart()])


@pytest.mark.parametrize(
    "body", [b"133;B", b"133;AB", b"133;a", b"633;D;0", b"133", b"1330;A", b"133;A\x18"]
)
def test_other_shell_integration_marks_give_nothing(body: bytes) -> None:
    stream = b"\x1b]" + body + BEL
    assert assert_same_however_split(stream) == (stream, [])


def test_full_reset() -> None:
    stream = b"a\x1bcb\x1b\x1bc"
    assert assert_same_however_split(stream) == (stream, [FullReset(), FullReset()])


@pytest.mark.parametrize(
    "sequence", [b"\x1b[!p", b"\x1b[?1049h", b"\x1b[?1049l", b"\x1b[c", b"\x1b(c", b"\x1b c"]
)
def test_soft_reset_screen_switch_and_lookalikes_give_nothing(sequence: bytes) -> None:
    stream = b"x" + sequence + b"y"
    assert assert_same_however_split(stream) == (stream, [])


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
    assert scan([fits]) == (fits, [PromptStart()])
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


@pytest.mark.parametrize("terminator", [BEL, ST])
def test_flush_releases_held_bytes_and_a_late_query_is_still_answered(terminator: bytes) -> None:
    scanner = Scanner()
    assert scanner.feed(b"abc\x1b]7501;").output == b"abc"
    assert scanner.flush_held() == b"\x1b]7501;"
    assert scanner.held == 0
    assert scanner.flush_held() == b""
    result = scanner.feed(b"?" + terminator + b"def")
    # The terminal already saw the start, so the end goes too: it must not stay inside an OSC.
    assert result.output == b"?" + terminator + b"def"
    assert result.events == (Query(b"\x1b]7501;?" + terminator),)
    # The next query is withheld again as usual.
    result = scanner.feed(b"\x1b]7501;?" + terminator)
    assert (result.output, result.events) == (b"", (Query(b"\x1b]7501;?" + terminator),))


def test_flush_between_esc_and_backslash_of_a_query() -> None:
    scanner = Scanner()
    assert scanner.feed(b"\x1b]7501;?\x1b").output == b""
    assert scanner.flush_held() == b"\x1b]7501;?\x1b"
    result = scanner.feed(b"\\z")
    assert (result.output, result.events) == (b"\\z", (Query(QUERY_ST),))


def test_flush_of_a_lone_esc_then_osc_or_reset() -> None:
    scanner = Scanner()
    assert scanner.feed(b"a\x1b").output == b"a"
    assert scanner.flush_held() == ESC
    result = scanner.feed(b"c")
    assert (result.output, result.events) == (b"c", (FullReset(),))
    assert scanner.feed(b"\x1b").output == b""
    assert scanner.flush_held() == ESC
    result = scanner.feed(b"]7501;state=done\x07")
    assert (result.output, result.events) == (b"]7501;state=done\x07", (RawReport(b"state=done"),))


def test_flush_then_esc_that_aborts_and_starts_a_query() -> None:
    scanner = Scanner()
    assert scanner.feed(b"\x1b]0;t\x1b").output == b"\x1b]0;t"
    assert scanner.flush_held() == ESC
    # The aborting ESC is already out; the OSC it starts is forwarded, and still answered.
    result = scanner.feed(b"]7501;?\x07x")
    assert result.output == b"]7501;?\x07x"
    assert result.events == (Query(QUERY_BEL),)


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
            assert len(scanner._body) <= MAX_SEQUENCE
            assert len(scanner._held) <= MAX_SEQUENCE
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


# --- properties ---------------------------------------------------------------------------

TOKENS = [
    ESC,
    b"]",
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
]

token = st.one_of(
    st.sampled_from(TOKENS),
    st.sampled_from(TOKENS),
    st.sampled_from([QUERY_BEL, QUERY_ST, b"\x1b]7501;", b"\x1b]7501;?", b"\x1b", b"\\"]),
    st.binary(max_size=6),
)
# Padding that brings a sequence near the 4096-byte limit, from either side.
long_token = st.integers(4070, 4100).flatmap(
    lambda n: st.sampled_from([b" " * n, b"x" * n, b"\x1b]7501;" + b" " * n])
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
            i + d for i, b in enumerate(data) if b == 0x1B for d in (0, 1, 2) if i + d <= len(data)
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
        assert bytes(out) + probe.flush_held() == prefix.output
        assert events == prefix.events
    out += scanner.flush_held()
    assert (bytes(out), events) == (ref.output, ref.events)


@FAST
@given(streams)
def test_output_is_input_minus_answered_queries(data: bytes) -> None:
    ref = reference_scan(data)
    expected = bytearray()
    position = 0
    for start, end in ref.query_spans:
        expected += data[position:start]
        position = end
    expected += data[position:]
    assert scan([data])[0] == bytes(expected)
    assert sum(isinstance(e, Query) for e in ref.events) == len(ref.query_spans)


@FAST
@given(chunked_streams(), st.data())
def test_flush_at_any_time_loses_nothing(
    case: tuple[bytes, list[int]], draw: st.DataObject
) -> None:
    data, cuts = case
    flushes = set(draw.draw(st.lists(st.sampled_from(cuts), max_size=5))) if cuts else set()
    scanner = Scanner()
    out = bytearray()
    events: list[Event] = []
    fed = 0
    for chunk in split_at(data, cuts):
        result = scanner.feed(chunk)
        fed += len(chunk)
        out += result.output
        events += result.events
        if fed in flushes:
            out += scanner.flush_held()
            assert scanner.held == 0
    out += scanner.flush_held()
    ref = reference_scan(data)
    # Every query is still answered exactly once. One that was partly released by a flush
    # goes out whole (its start was already out); any other one is removed whole.
    assert events == ref.events
    expected = bytearray()
    position = 0
    for start, end in ref.query_spans:
        if any(start < point < end for point in flushes):
            continue
        expected += data[position:start]
        position = end
    expected += data[position:]
    assert bytes(out) == bytes(expected)
