"""tray.base.json_text writes what json.dumps writes with compact separators, to the character."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tray.base.json_text import dumps

# Every code point, lone surrogates included: programs send whatever they like.
texts = st.text(st.characters(codec=None, categories=None), max_size=40)
keys = st.one_of(
    texts,
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=6),
        st.lists(children, max_size=6).map(tuple),
        st.dictionaries(keys, children, max_size=6),
    ),
    max_leaves=40,
)


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


@settings(max_examples=1500, deadline=None)
@given(values)
def test_dumps_writes_what_json_writes(value: object) -> None:
    assert dumps(value) == compact(value)


@given(texts)
def test_strings_read_back_as_they_were(text: str) -> None:
    assert json.loads(dumps(text)) == text


@pytest.mark.parametrize(
    "value",
    [
        "",
        "plain ascii ~",
        'quote " and backslash \\',
        "\x00\x01\x1f\x7f\b\f\n\r\t",
        "é ü 中 \u2028\u2029 \ufeff",
        "\U0001f600 \U00010000 \U0010ffff",
        "\ud800 \udfff \udbff\udc00 lone and paired surrogates",
        math.nan,
        math.inf,
        -math.inf,
        -0.0,
        1e-310,
        1.7976931348623157e308,
        0.1,
        10**100,
        -(10**100),
        True,
        False,
        None,
        [],
        {},
        (),
        [[[]], {}, ()],
        {"a": {"b": [1, 2.5, None]}},
        {7: "int key", 2.5: "float key", True: "bool key", False: "no", None: "null key"},
        {math.nan: 1, math.inf: 2, -math.inf: 3},
    ],
    ids=repr,
)
def test_edge_cases(value: object) -> None:
    assert dumps(value) == compact(value)


class Text(str):
    pass


class Number(int):
    def __repr__(self) -> str:
        return "not used"


class Real(float):
    def __repr__(self) -> str:
        return "not used"


def test_subclasses_are_written_as_their_base_type() -> None:
    value = {Text("k"): [Text("v"), Number(7), Real(0.5)], Number(3): Real(1.5)}
    assert dumps(value) == compact(value)


def test_a_session_file_is_written_as_json_writes_it() -> None:
    from tray.core.session.model import Attention, Session  # noqa: PLC0415 - beside the point above

    session = Session(
        id="4242-abc",
        name="naïve \U0001f600",
        command=("sh", "-c", 'echo "hi"\n'),
        cwd="/tmp/\udcff",
        pid=4242,
        child_pid=None,
        started_at=1764470012.5,
        updated_at=1764470013.25,
        terminal={"tty": "/dev/pts/3", "TERM": "xterm-256color"},
        attention=(Attention(1, 1764470013.0, "bell", title="\x07"),),
    )
    assert dumps(session.to_file()) == compact(session.to_file())


@pytest.mark.parametrize(
    "value", [object(), {1, 2}, b"bytes", {(1, 2): "tuple key"}, {"k": b"nested"}], ids=repr
)
def test_what_json_refuses_is_a_type_error(value: object) -> None:
    with pytest.raises(TypeError):
        compact(value)
    with pytest.raises(TypeError):
        dumps(value)
