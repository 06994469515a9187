"""kitty's notification support query, OSC 99 ``p=?``: answered like the OSC 7501 one.

opencode asks ``ESC ] 99 ; i=opentui-notifications : p=? ; ST`` at start and sends its
notifications only when the terminal answers. The scanner answers exactly that query
(with an optional id of kitty's characters), with the terminator the query used, and never
forwards it: a kitty beneath would answer as well, and the program would read the second
answer as typed keys. Everything else in OSC 99 passes through as an ``Osc`` event.
"""

from __future__ import annotations

import random

import pytest
from helpers.data import split_at
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.test_scanner import assert_same_however_split, reference_scan, scan
from tray.protocol.output_events import Event, Osc, Query, RawReport
from tray.protocol.scanner import MAX_SEQUENCE, Scanner
from tray.protocol.support_queries import KITTY_CAPABILITIES, could_be_query

BEL = b"\x07"
ST = b"\x1b\\"
OPENCODE_QUERY = b"\x1b]99;i=opentui-notifications:p=?;\x1b\\"

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def answer(identifier: bytes, terminator: bytes) -> Query:
    return Query(b"\x1b]99;i=" + identifier + b":p=?;" + KITTY_CAPABILITIES + terminator, 99)


def test_the_capabilities_are_what_tray_handles() -> None:
    # Read from kitty's "Querying for support": p lists payload types and must hold
    # title; o lists occasions; a, c, s, u and w are left out when not implemented.
    assert KITTY_CAPABILITIES == b"p=title,body:o=always,unfocused,invisible"


def test_opencodes_query_is_answered_and_not_shown() -> None:
    output, events = assert_same_however_split(b"\x1b[?u" + OPENCODE_QUERY + b"\x1b[c")
    assert output == b"\x1b[?u\x1b[c"
    assert events == [answer(b"opentui-notifications", ST)]
    # What OpenTUI looks for in an answer: its id, then p=?, then the payload types.
    reply = events[0].answer if isinstance(events[0], Query) else b""
    assert reply.startswith(b"\x1b]99;i=opentui-notifications:p=?;p=title,body")
    assert reply.endswith(ST)


@pytest.mark.parametrize("terminator", [BEL, ST])
@pytest.mark.parametrize(
    ("metadata", "identifier"),
    [
        (b"i=1:p=?", b"1"),
        (b"p=?:i=abc", b"abc"),
        (b"p=?", b"0"),  # no id: kitty answers i=0
        (b"i=A-z_0+9.x:p=?", b"A-z_0+9.x"),
        (b"i=" + b"x" * 64 + b":p=?", b"x" * 64),
    ],
)
def test_queries_are_answered_with_their_id_and_terminator(
    metadata: bytes, identifier: bytes, terminator: bytes
) -> None:
    query = b"\x1b]99;" + metadata + b";" + terminator
    output, events = assert_same_however_split(b"a" + query + b"b")
    assert output == b"ab"
    assert events == [answer(identifier, terminator)]


@pytest.mark.parametrize("terminator", [BEL, ST])
@pytest.mark.parametrize(
    "payload",
    [
        b"i=1:p=?;text",  # a payload
        b"i=1:p=?;;",
        b"p=?",  # no second ";"
        b"p=?:d=0;",  # any other key
        b"p=?:o=always;",
        b"i=:p=?;",  # an empty id
        b"i=a b:p=?;",  # ids outside kitty's characters are never echoed
        b"i=a\x9c:p=?;",
        b"i=\xc3\xa9:p=?;",
        b"i=" + b"x" * 65 + b":p=?;",
        b"i=1:i=2:p=?;",  # repeated keys
        b"p=?:p=?;",
        b"i:p=?;",
        b"p;",
        b"p=??;",
        b"p= ?;",
        b"P=?;",
        b" p=?;",
        b":p=?;",
        b"p=?:;",
        b"i=1::p=?;",
        b";p=?;",
        b"p=close;",
        b"i=1:p=title;Hello",
    ],
)
def test_anything_else_passes_through_unanswered(payload: bytes, terminator: bytes) -> None:
    sequence = b"\x1b]99;" + payload + terminator
    output, events = assert_same_however_split(b"a" + sequence + b"b")
    assert output == b"a" + sequence + b"b"
    assert events == [Osc(99, payload)]


@pytest.mark.parametrize("number", [b"9", b"999", b"099", b"99 ", b"7501"])
def test_only_osc_99_asks_it(number: bytes) -> None:
    sequence = b"\x1b]" + number + b";p=?;\x07"
    output, events = assert_same_however_split(sequence)
    assert output == sequence
    assert not any(isinstance(event, Query) for event in events)


def test_a_notification_that_starts_like_a_query_is_released_once_it_cannot_be_one() -> None:
    scanner = Scanner()
    assert scanner.feed(b"x\x1b]99;i=1:p") == (b"x", ())
    assert scanner.held == len(b"\x1b]99;i=1:p")
    # However long nothing comes, nothing of it is let go.
    assert scanner.feed(b"") == (b"", ())
    assert scanner.feed(b"=t").output == b"\x1b]99;i=1:p=t"
    assert scanner.held == 0
    result = scanner.feed(b"itle;Build done\x07")
    assert result == (b"itle;Build done\x07", (Osc(99, b"i=1:p=title;Build done"),))


@pytest.mark.parametrize("query", [OPENCODE_QUERY, b"\x1b]99;p=?;\x07"])
def test_split_query_is_withheld_at_every_cut_and_answered_once(query: bytes) -> None:
    before, after = b"abc\x1b[1m", b"\x1b[cdef"
    stream = before + query + after
    start, end = len(before), len(before) + len(query)
    terminator = query[-2:] if query.endswith(ST) else BEL
    identifier = b"opentui-notifications" if b"i=" in query else b"0"
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
                    assert bytes(output) == before
                    assert scanner.held == fed - start
            assert bytes(output) == before + after
            assert events == [answer(identifier, terminator)]
            assert scanner.held == 0


def test_finish_releases_a_query_that_never_ended() -> None:
    scanner = Scanner()
    assert scanner.feed(b"<\x1b]99;i=x:p=?;").output == b"<"
    assert scanner.finish() == b"\x1b]99;i=x:p=?;"
    assert scanner.held == 0


def test_a_nested_launcher_answers_it_too_and_forwards_notifications() -> None:
    scanner = Scanner(withhold_reports=True)
    notification = b"\x1b]99;i=1:p=body;done\x1b\\"
    stream = b"a" + OPENCODE_QUERY + b"b" + notification + b"\x1b]7501;state=done\x07c"
    for cut in range(len(stream) + 1):
        scanner = Scanner(withhold_reports=True)
        first, second = scanner.feed(stream[:cut]), scanner.feed(stream[cut:])
        assert first.output + second.output == b"ab" + notification + b"c"
        assert [*first.events, *second.events] == [
            answer(b"opentui-notifications", ST),
            Osc(99, b"i=1:p=body;done"),
            RawReport(b"state=done"),
        ]


def test_held_bytes_stay_bounded_however_the_candidate_grows() -> None:
    scanner = Scanner()
    scanner.feed(b"\x1b]99;i=")
    released = 0
    for _ in range(MAX_SEQUENCE):
        released += len(scanner.feed(b"x").output)
        # An id past 64 characters can no longer be answered: released at once.
        assert scanner.held <= len(b"\x1b]99;i=") + 64
    assert released + scanner.held == len(b"\x1b]99;i=") + MAX_SEQUENCE


# --- properties ---------------------------------------------------------------------------

PIECES = [
    b"99;",
    b"9",
    b"i",
    b"p",
    b"=",
    b"?",
    b":",
    b";",
    b"i=opentui-notifications",
    b"p=?",
    b"i=1",
    b"d=0",
    b"x",
    b" ",
    b"\xc3\xa9",
    BEL,
    ST,
    b"\x1b",
    b"\x1b]",
    b"\x1b]99;",
    OPENCODE_QUERY,
    b"\x1b]99;p=?;\x07",
    b"\x1b]7501;?\x07",
    b"\x1b]99;i=1:p=body;hi\x07",
]


@st.composite
def chunked(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    data = b"".join(draw(st.lists(st.sampled_from(PIECES), max_size=25)))
    return data, sorted(draw(st.lists(st.integers(0, len(data)), max_size=8)))


@FAST
@given(chunked())
def test_any_chunking_matches_the_reference(case: tuple[bytes, list[int]]) -> None:
    data, cuts = case
    ref = reference_scan(data)
    assert scan(split_at(data, cuts)) == (ref.output, ref.events)


@FAST
@given(
    st.lists(st.sampled_from([b"i", b"p", b"=", b"?", b":", b"1", b"x"]), max_size=12),
    st.sampled_from([BEL, ST]),
)
def test_every_prefix_of_an_answered_query_is_withheld(pieces: list[bytes], end: bytes) -> None:
    body = b"99;" + b"".join(pieces) + b";"
    events = scan([b"\x1b]" + body + end])[1]
    if any(isinstance(event, Query) for event in events):
        assert all(could_be_query(body[:size]) for size in range(len(body) + 1))
    else:
        # Not a query: nothing in it is withheld for good, and it comes out whole.
        assert events == [Osc(99, body[3:])]


KITTY_ID_CHARACTERS = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+."
)
# Bytes that end or cancel the OSC itself: left out, so that the id is all that varies.
ENDING = frozenset(b"\x07\x18\x1a\x1b")


@FAST
@given(
    st.binary(min_size=1, max_size=80).filter(lambda raw: not ENDING.intersection(raw)),
    st.sampled_from([BEL, ST]),
)
def test_an_id_is_echoed_only_when_made_of_kittys_characters(raw: bytes, end: bytes) -> None:
    query = b"\x1b]99;i=" + raw + b":p=?;" + end
    output, events = scan([query])
    if len(raw) <= 64 and KITTY_ID_CHARACTERS.issuperset(raw):
        assert (output, events) == (b"", [answer(raw, end)])
    else:
        assert (output, events) == (query, [Osc(99, query[5 : -len(end)])])


def test_random_streams_of_queries_and_notifications() -> None:
    rng = random.Random(99)
    notification = b"\x1b]99;i=7:d=0;Title\x1b\\"
    stream = b"x" + OPENCODE_QUERY + notification + b"\x1b]99;p=?;\x07y"
    expected_output = b"x" + notification + b"y"
    for _ in range(200):
        cuts = sorted(rng.randrange(len(stream) + 1) for _ in range(rng.randrange(1, 6)))
        output, events = scan(split_at(stream, cuts))
        assert output == expected_output
        assert events == [
            answer(b"opentui-notifications", ST),
            Osc(99, b"i=7:d=0;Title"),
            answer(b"0", BEL),
        ]
