"""Frames, the bounded line splitter, backoff and coalescing: pure, and exhaustive."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.remote.frames import (
    BEAT,
    MARK,
    STATE,
    Backoff,
    Coalescer,
    Frame,
    FrameError,
    LineSplitter,
    encode_frame,
    parse_frame,
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
payloads = st.dictionaries(st.text(), json_values, max_size=6)


@given(payloads, st.sampled_from([STATE, BEAT, "other"]))
def test_a_frame_round_trips_and_is_one_line(payload: dict[str, object], kind: str) -> None:
    data = encode_frame(kind, payload)
    assert data.endswith(b"\n")
    assert data.count(b"\n") == 1
    assert data.count(MARK) == 1  # the payload cannot hold the mark: JSON escapes it
    frame = parse_frame(data[:-1])
    assert frame is not None
    assert (frame.version, frame.kind) == (1, kind)
    assert frame.json() == json.loads(json.dumps(payload))


@given(st.binary(max_size=200).filter(lambda b: MARK not in b), payloads)
def test_text_before_a_frame_on_its_line_is_ignored(
    noise: bytes, payload: dict[str, object]
) -> None:
    # A profile's printf without a newline glues its text to the first frame.
    frame = parse_frame(noise.replace(b"\n", b"") + encode_frame(STATE, payload)[:-1])
    assert frame is not None
    assert frame.json() == json.loads(json.dumps(payload))


@given(st.binary(max_size=300).filter(lambda b: MARK not in b))
def test_lines_without_the_mark_are_not_frames(line: bytes) -> None:
    assert parse_frame(line) is None


@pytest.mark.parametrize(
    "line",
    [
        b"\x1eTRAY",
        b"\x1eTRAY1",
        b"\x1eTRAY1 ",
        b"\x1eTRAY1 state",
        b"\x1eTRAYx state {}",
        b"\x1eTRAY1 STATE {}",
        b"\x1eTRAY12345 state {}",
        b"\x1eTRAY1  state {}",
        b"TRAY1 state {}",
        b"\x1etray1 state {}",
    ],
)
def test_malformed_headers_are_not_frames(line: bytes) -> None:
    assert parse_frame(line) is None


def test_a_frame_of_another_version_is_recognised_as_such() -> None:
    frame = parse_frame(b"\x1eTRAY2 state {}")
    assert frame == Frame(2, "state", b"{}")


def test_a_carriage_return_before_the_newline_is_dropped() -> None:
    frame = parse_frame(b'\x1eTRAY1 beat {"at":1}\r')
    assert frame is not None
    assert frame.json() == {"at": 1}


@pytest.mark.parametrize("payload", [b"", b"{", b"[]", b"1", b'"x"', b"null", b"[" * 100000])
def test_a_payload_that_is_not_an_object_is_an_error(payload: bytes) -> None:
    with pytest.raises(FrameError):
        Frame(1, STATE, payload).json()


@pytest.mark.parametrize("kind", ["", "State", "a b", "x" * 17, "st\nate"])
def test_bad_kinds_are_refused_when_encoding(kind: str) -> None:
    with pytest.raises(ValueError, match="kind"):
        encode_frame(kind, {})


def test_non_finite_numbers_are_refused_when_encoding() -> None:
    with pytest.raises(ValueError):
        encode_frame(STATE, {"at": float("nan")})


# The line splitter.


def split_reference(data: bytes, limit: int) -> list[bytes]:
    """What the splitter must give: every complete line no longer than the limit."""
    lines = data.split(b"\n")[:-1]
    return [line for line in lines if len(line) <= limit]


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    st.integers(min_value=0, max_value=30),
    st.data(),
)
def test_lines_come_out_whole_however_the_bytes_are_cut(
    lines: list[bytes], limit: int, data: st.DataObject
) -> None:
    stream = b"".join(line + b"\n" for line in lines) + data.draw(st.binary(max_size=10))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    splitter = LineSplitter(limit)
    got: list[bytes] = []
    start = 0
    for cut in [*cuts, len(stream)]:
        got += splitter.feed(stream[start:cut])
        start = cut
        assert splitter.buffered <= limit
    assert got == split_reference(stream, limit)
    *complete, partial = stream.split(b"\n")
    too_long = sum(1 for line in complete if len(line) > limit)
    assert splitter.dropped == too_long + (1 if len(partial) > limit else 0)


def test_a_line_exactly_at_the_limit_is_kept_and_one_more_byte_is_not() -> None:
    splitter = LineSplitter(4)
    assert splitter.feed(b"abcd\nabcde\nxy\n") == [b"abcd", b"xy"]


def test_an_endless_line_never_grows_the_buffer() -> None:
    splitter = LineSplitter(1000)
    for _ in range(1000):
        assert splitter.feed(b"z" * 4096) == []
        assert splitter.buffered <= 1000
    assert splitter.feed(b"tail\nnext\n") == [b"next"]
    assert splitter.dropped == 1


# Backoff and coalescing.


def test_backoff_doubles_from_one_second_to_a_minute_and_resets() -> None:
    backoff = Backoff()
    assert [backoff.next() for _ in range(9)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    backoff.reset()
    assert backoff.next() == 1


@given(
    st.floats(min_value=0.01, max_value=100),
    st.floats(min_value=0.01, max_value=1000),
    st.integers(1, 60),
)
def test_backoff_never_exceeds_its_limit_and_never_shrinks(
    first: float, limit: float, steps: int
) -> None:
    if first > limit:
        with pytest.raises(ValueError):
            Backoff(first, limit)
        return
    backoff = Backoff(first, limit)
    delays = [backoff.next() for _ in range(steps)]
    assert delays[0] == first
    assert all(first <= d <= limit for d in delays)
    assert delays == sorted(delays)


def test_backoff_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        Backoff(0, 1)


def test_the_first_item_goes_at_once_and_later_ones_wait_their_turn() -> None:
    coalescer: Coalescer[str] = Coalescer(0.1)
    assert coalescer.take(5.0) is None
    coalescer.offer("a")
    assert coalescer.take(5.0) == "a"
    coalescer.offer("b")
    coalescer.offer("c")
    assert coalescer.due_at() == pytest.approx(5.1)
    assert coalescer.take(5.05) is None
    assert coalescer.take(5.1) == "c"
    assert not coalescer.pending
    coalescer.offer("d")
    assert coalescer.take(9.0) == "d"


@given(st.lists(st.tuples(st.floats(0, 0.5), st.booleans()), max_size=200))
def test_coalescing_bounds_the_rate_and_always_ends_with_the_newest(
    steps: list[tuple[float, bool]],
) -> None:
    interval = 0.1
    coalescer: Coalescer[int] = Coalescer(interval)
    now = 0.0
    sent: list[tuple[float, int]] = []
    newest: int | None = None
    for index, (gap, offer) in enumerate(steps):
        now += gap
        if offer:
            coalescer.offer(index)
            newest = index
        item = coalescer.take(now)
        if item is not None:
            sent.append((now, item))
    final = coalescer.due_at()
    if final is not None:
        item = coalescer.take(final)
        assert item is not None
        sent.append((final, item))
    times = [moment for moment, _ in sent]
    assert all(b - a >= interval - 1e-9 for a, b in itertools.pairwise(times))
    items = [item for _, item in sent]
    assert items == sorted(items)
    if newest is not None:
        assert items[-1] == newest
