"""Report bodies: every parse rule of protocol.md one by one, and encode/parse round trips."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest
from helpers.data import b64
from hypothesis import given, settings
from hypothesis import strategies as st

from tray.protocol.output_events import RawReport
from tray.protocol.report import (
    CLEAR,
    KINDS,
    MAX_APP,
    MAX_ID,
    MAX_ID_SEGMENT,
    MAX_ID_SEGMENTS,
    MAX_MSG_DECODED,
    MAX_MSG_ENCODED,
    MAX_TITLE_DECODED,
    MAX_TITLE_ENCODED,
    STATES,
    Clear,
    Report,
    ReportError,
    encode_body,
    encode_sequence,
    parse_body,
    validate,
)
from tray.protocol.scanner import MAX_SEQUENCE, Scanner
from tray.protocol.state import State

SETTINGS = settings(max_examples=200, deadline=None)


def with_field(report: Report, field: str, value: object) -> Report:
    changes: dict[str, Any] = {field: value}
    return dataclasses.replace(report, **changes)


def parse(body: str) -> Report | None:
    return parse_body(body.encode())


# --- pairs, trimming, repeats -------------------------------------------------------------


def test_minimal_report_is_the_root() -> None:
    assert parse("state=idle") == Report(State.IDLE)
    assert parse("state=clear") == Report("clear")


@pytest.mark.parametrize("state", STATES)
def test_every_state(state: State) -> None:
    assert parse(f"state={state}") == Report(state)


@pytest.mark.parametrize(
    "body",
    [
        "",
        "app=cargo",
        "state=IDLE",
        "state=Working",
        "state=busy",
        "state=",
        "state=clear2",
        "id=a",
        "state",
        ":",
    ],
)
def test_missing_or_unknown_state_discards(body: str) -> None:
    assert parse(body) is None


@pytest.mark.parametrize(
    "body",
    [
        " state = working ",
        "\tstate\t=\tworking\t",
        " \t state \t= \t working \t ",
        "state=working:",
        ":state=working",
        "::state=working::",
    ],
)
def test_space_and_tab_around_key_and_value_are_trimmed(body: str) -> None:
    assert parse(body) == Report(State.WORKING)


@pytest.mark.parametrize(
    "body",
    [
        "\nstate=working",
        "state=working\r",
        "state=\x0bworking",
        "\x0cstate=working",
        "sta te=working",
        "state=work ing",
        "\xa0state=working",
    ],
)
def test_other_whitespace_is_not_trimmed_and_makes_the_pair_malformed(body: str) -> None:
    assert parse_body(body.encode("latin-1")) is None


@pytest.mark.parametrize(
    "malformed",
    [
        "garbage",  # no "="
        "=x",  # empty key
        " =x",
        "Bad=1",  # key outside [a-z]
        "k1=1",
        "my_key=1",
        "k-y=1",
        "app=b@d",  # value byte outside the set
        "app=a b",
        "app=a!",
        "app=a;b",
        "app=caf\xe9",
        "msg=\x80",
        "app=a\x00",
        "app=\x1b",
    ],
)
def test_malformed_pair_is_skipped_and_the_rest_applies(malformed: str) -> None:
    body = f"state=working:{malformed}:app=ok".encode("latin-1")
    assert parse_body(body) == Report(State.WORKING, app="ok")
    # A malformed pair never replaces an earlier well-formed one.
    body = f"state=done:app=first:{malformed}".encode("latin-1")
    assert parse_body(body) == Report(State.DONE, app="first")


def test_pair_splits_at_its_first_equals_sign() -> None:
    # "a=b" is a well-formed value (the set holds "="), but not a valid app: absent.
    assert parse("state=done:app=a=b") == Report(State.DONE)
    assert parse("state=done:msg=QQ==") == Report(State.DONE, msg="A")


def test_every_value_byte_in_the_set_is_accepted_by_an_unknown_key() -> None:
    value = "ABCXYZabcxyz0189_.,+/=-"
    assert parse(f"future={value}:state=done") == Report(State.DONE)


@pytest.mark.parametrize("key", ["future", "x", "z" * 16, "states", "ids", "apps"])
def test_unknown_keys_are_ignored(key: str) -> None:
    assert parse(f"{key}=yes:state=working:{key}=no") == Report(State.WORKING)


def test_last_well_formed_pair_wins() -> None:
    assert parse("state=idle:app=a:state=done:app=b") == Report(State.DONE, app="b")
    assert parse("state=working:state=b@d") == Report(State.WORKING)
    assert parse("state=working:id=a:id=b") == Report(State.WORKING, id="b")
    assert parse("state=done:msg=" + b64("one") + ":msg=" + b64("two")) == Report(
        State.DONE, msg="two"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("state=working:progress=50:progress=1_0", Report(State.WORKING)),
        ("state=working:app=good:app=a/b", Report(State.WORKING)),
        ("state=working:app=good:app=a,b", Report(State.WORKING)),
        ("state=blocked:kind=auth:kind=dance", Report(State.BLOCKED)),
        ("state=working:state=IDLE", None),
        ("state=working:id=a:id=a//b", None),
        ("state=working:id=a//b:id=a", Report(State.WORKING, id="a")),
        ("state=done:msg=" + b64("ok") + ":msg=QQ=", None),
        ("state=done:msg=QQ=:msg=" + b64("ok"), Report(State.DONE, msg="ok")),
        ("state=done:msg=" + b64("ok") + ":msg=", Report(State.DONE)),
        ("state=done:title=" + b64("ok") + ":title=", Report(State.DONE)),
    ],
)
def test_invalid_for_field_value_still_replaces_an_earlier_valid_one(
    body: str, expected: Report | None
) -> None:
    assert parse(body) == expected


# --- size limits ------------------------------------------------------------------------


def test_key_of_16_bytes_is_fine_and_17_discards_the_whole_report() -> None:
    assert parse("state=done:" + "k" * 16 + "=1") == Report(State.DONE)
    assert parse("state=done: " + "k" * 16 + "\t=1") == Report(State.DONE)
    assert parse("state=done:" + "k" * 17 + "=1") is None
    assert parse("k" * 17 + "=1:state=done") is None
    # The limit holds for any key, even in a pair that is otherwise malformed.
    assert parse("state=done:" + "k" * 17 + "=b@d") is None
    assert parse("state=done:" + "K" * 17 + "=1") is None
    # Without "=" there is no key at all, only a malformed pair.
    assert parse("state=done:" + "k" * 40) == Report(State.DONE)


def test_title_encoded_and_decoded_limits() -> None:
    exact = "t" * MAX_TITLE_DECODED
    encoded = b64(exact)
    assert len(encoded) == MAX_TITLE_ENCODED
    assert parse("state=done:title=" + encoded) == Report(State.DONE, title=exact)
    over = b64("t" * (MAX_TITLE_DECODED + 1), pad=False)
    assert len(over) == MAX_TITLE_ENCODED + 2
    assert parse("state=done:title=" + over) is None
    # Multi-byte text counts in UTF-8 bytes: 64 three-byte characters is 192 bytes.
    assert parse("state=done:title=" + b64("\u2603" * 64)) == Report(
        State.DONE, title="\u2603" * 64
    )
    assert parse("state=done:title=" + b64("\u2603" * 64 + "x")) is None


def test_msg_encoded_and_decoded_limits() -> None:
    exact = "m" * MAX_MSG_DECODED
    padded, unpadded = b64(exact), b64(exact, pad=False)
    assert (len(padded), len(unpadded)) == (MAX_MSG_ENCODED, MAX_MSG_ENCODED - 1)
    assert parse("state=done:msg=" + padded) == Report(State.DONE, msg=exact)
    assert parse("state=done:msg=" + unpadded) == Report(State.DONE, msg=exact)
    # 2049 bytes encode to exactly 2732 characters: within the encoded limit, over the
    # decoded one.
    over = b64("m" * (MAX_MSG_DECODED + 1))
    assert len(over) == MAX_MSG_ENCODED
    assert parse("state=done:msg=" + over) is None
    too_long = b64("m" * (MAX_MSG_DECODED + 2), pad=False)
    assert len(too_long) == MAX_MSG_ENCODED + 2
    assert parse("state=done:msg=" + too_long) is None


@pytest.mark.parametrize(
    ("field", "fits", "too_long"),
    [
        ("title", "A" * MAX_TITLE_ENCODED, "A" * (MAX_TITLE_ENCODED + 1)),
        ("title", "A" * MAX_TITLE_ENCODED, "A" * (MAX_TITLE_ENCODED - 4) + "=" * 5),
        ("msg", "A" * (MAX_MSG_ENCODED - 1) + "=", "A" * (MAX_MSG_ENCODED + 1)),
        ("msg", "A" * (MAX_MSG_ENCODED - 1) + "=", "A" * (MAX_MSG_ENCODED - 4) + "=" * 5),
    ],
)
def test_encoded_limit_on_its_own(field: str, fits: str, too_long: str) -> None:
    # Every valid encoding past the encoded limit also breaks the decoded one, so the
    # encoded limit shows on its own only in an occurrence that loses to a later one, or
    # in a run of "=" that adds length but no decoded bytes.
    later = f"{field}={b64('ok')}"
    assert parse(f"state=done:{field}={fits}:{later}") is not None
    assert parse(f"state=done:{field}={too_long}:{later}") is None


def test_encoded_limit_counts_after_trimming() -> None:
    exact = b64("t" * MAX_TITLE_DECODED)
    assert parse("state=done:title=  " + exact + "\t") == Report(
        State.DONE, title="t" * MAX_TITLE_DECODED
    )


@pytest.mark.parametrize(
    "oversized",
    [
        "title=" + b64("t" * (MAX_TITLE_DECODED + 3)),
        "msg=" + b64("m" * (MAX_MSG_DECODED + 3)),
        "msg=" + b64("m" * (MAX_MSG_DECODED + 1)),
        "id=" + "/".join(["a" * 31] * 4) + "/abcd",
        "k" * 17 + "=1",
    ],
)
def test_size_limit_broken_by_a_losing_occurrence_discards(oversized: str) -> None:
    key = oversized.split("=", 1)[0]
    winner = {"title": "title=" + b64("ok"), "msg": "msg=" + b64("ok"), "id": "id=a"}.get(
        key, "app=x"
    )
    assert parse(f"state=done:{winner}") is not None
    assert parse(f"state=done:{oversized}:{winner}") is None
    assert parse(f"state=done:{winner}:{oversized}") is None


@pytest.mark.parametrize(
    "oversized",
    [
        "app=" + "a" * (MAX_APP + 1),
        "app=" + "a/" * 17,  # bad characters too: the size is what counts
        "app=" + "@" * (MAX_APP + 1),  # a malformed pair is still an occurrence of the key
        "app=" + "\xe9" * (MAX_APP // 2 + 1),  # bytes, not characters
        "id=" + "x" * (MAX_ID_SEGMENT + 1),
        "id=a/" + "x" * (MAX_ID_SEGMENT + 1),
        "id=" + "/".join("abcdefghi"),  # 9 segments
        "id=" + "/" * MAX_ID_SEGMENTS,  # 9 empty segments
        "id=" + "/".join(["y" * MAX_ID_SEGMENT] * 4) + "/z",
        "id=" + "@" * (MAX_ID_SEGMENT + 1),
        "title=" + "A" * (MAX_TITLE_ENCODED + 1),
        "title=" + "@" * (MAX_TITLE_ENCODED + 1),
        "msg=" + "A" * (MAX_MSG_ENCODED + 1),
        "msg=" + "," * MAX_MSG_ENCODED,  # would decode to 2049 bytes
    ],
)
def test_every_field_size_limit_discards_wherever_it_is_broken(oversized: str) -> None:
    key = oversized.split("=", 1)[0]
    winner = {"app": "app=ok", "id": "id=a", "title": "title=" + b64("ok")}.get(
        key, "msg=" + b64("ok")
    )
    body = oversized.encode()
    for template in (
        b"state=done:%s",
        b"state=done:%s:" + winner.encode(),
        winner.encode() + b":%s:state=done",
        b"state=done: %s\t",
    ):
        assert parse_body(template % body) is None, template


@pytest.mark.parametrize(
    ("pair", "field"),
    [
        ("app=" + "a" * MAX_APP, "app"),
        ("app=" + "a/" * (MAX_APP // 2), "app"),
        ("app=a/b", "app"),
        ("app=a,b", "app"),
        ("app=" + "a=" * (MAX_APP // 2), "app"),
        ("kind=maybe", "kind"),
        ("progress=1_0", "progress"),
        ("progress=" + "9" * 200, "progress"),
        ("kind=" + "k" * 200, "kind"),
    ],
)
def test_bad_characters_within_the_size_only_make_the_field_absent(pair: str, field: str) -> None:
    report = parse(f"state=blocked:{pair}")
    assert report is not None
    expected = "a" * MAX_APP if pair == "app=" + "a" * MAX_APP else None
    assert getattr(report, field) == expected
    # And a later good value still wins over it.
    later = {"app": "app=ok", "kind": "kind=auth", "progress": "progress=5"}[field]
    assert parse(f"state=blocked:{pair}:{later}") is not None


def test_id_segment_limits_on_a_losing_occurrence() -> None:
    # Malformed ids that are within every size only lose to the later pair.
    assert parse("state=working:id=a//b:id=a") == Report(State.WORKING, id="a")
    assert parse("state=working:id=" + "/".join("abcdefgh") + ":id=a") == Report(
        State.WORKING, id="a"
    )
    assert parse("state=working:id=" + "x" * MAX_ID_SEGMENT + ":id=a") == Report(
        State.WORKING, id="a"
    )
    assert parse("state=working:id=" + "/" * (MAX_ID_SEGMENTS - 1) + ":id=a") == Report(
        State.WORKING, id="a"
    )


def _agree(report: Report, body: str) -> None:
    """validate() refuses exactly what a reader would discard: nothing is lost silently."""
    parsed = parse(body)
    try:
        validate(report)
    except ReportError:
        assert parsed is None, body
    else:
        assert parsed == report, body


@pytest.mark.parametrize("size", range(MAX_APP - 2, MAX_APP + 3))
def test_encode_and_parse_agree_on_the_app_limit(size: int) -> None:
    _agree(Report(State.DONE, app="a" * size), "state=done:app=" + "a" * size)


@pytest.mark.parametrize("size", range(MAX_ID_SEGMENT - 1, MAX_ID_SEGMENT + 2))
@pytest.mark.parametrize("count", range(MAX_ID_SEGMENTS - 1, MAX_ID_SEGMENTS + 2))
def test_encode_and_parse_agree_on_the_id_limits(size: int, count: int) -> None:
    record_id = "/".join([f"{n}" * size for n in range(count)])
    _agree(Report(State.DONE, id=record_id), "state=done:id=" + record_id)


@pytest.mark.parametrize("size", range(MAX_ID - 2, MAX_ID + 3))
def test_encode_and_parse_agree_on_the_id_length(size: int) -> None:
    head = "/".join(["y" * MAX_ID_SEGMENT] * 3) + "/"
    record_id = head + "z" * (size - len(head))
    assert len(record_id) == size
    _agree(Report(State.DONE, id=record_id), "state=done:id=" + record_id)


@pytest.mark.parametrize(
    ("field", "limit"), [("title", MAX_TITLE_DECODED), ("msg", MAX_MSG_DECODED)]
)
@pytest.mark.parametrize("delta", [-1, 0, 1, 2, 3])
def test_encode_and_parse_agree_on_the_text_limits(field: str, limit: int, delta: int) -> None:
    text = "t" * (limit + delta)
    _agree(with_field(Report(State.DONE), field, text), f"state=done:{field}={b64(text)}")
    _agree(
        with_field(Report(State.DONE), field, text), f"state=done:{field}={b64(text, pad=False)}"
    )


# --- protocol.md's examples at the parser (14 to 20 run end to end in test_captures.py) ---


def example(text: str) -> bytes:
    """The body of a protocol.md example: between ``E]7501;`` and the terminator."""
    assert text.startswith("E]7501;")
    text = text.removeprefix("E]7501;").removesuffix("ST").removesuffix("BEL")
    return text.replace("\\t", "\t").encode()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "E]7501;state=blocked:kind=permission:app=terraform:"
            "msg=QXBwbHkgMyB0byBhZGQsIDEgdG8gY2hhbmdlLCAwIHRvIGRlc3Ryb3k/ST",
            Report(
                State.BLOCKED,
                kind="permission",
                app="terraform",
                msg="Apply 3 to add, 1 to change, 0 to destroy?",
            ),
        ),
        ("E]7501;state=done:msg=UGxhbgBEL", Report(State.DONE, msg="Plan")),
        ("E]7501; state = working :\\tapp=cargo\\tST", Report(State.WORKING, app="cargo")),
        ("E]7501;state=idle:app=a:state=done:app=bST", Report(State.DONE, app="b")),
        (
            "E]7501;garbage:=x:Bad=1:app=b@d:future=yes:state=working:app=ok:::ST",
            Report(State.WORKING, app="ok"),
        ),
        ("E]7501;state=working:kind=auth:progress=10ST", Report(State.WORKING, progress=10)),
        ("E]7501;state=done:kind=auth:progress=10ST", Report(State.DONE)),
        ("E]7501;state=blocked:kind=dance:progress=007ST", Report(State.BLOCKED, progress=7)),
        ("E]7501;state=done:msg=YQpiST", None),
        ("E]7501;state=done:msg=QQ=ST", None),
        ("E]7501;state=IDLEST", None),
        ("E]7501;app=cargoST", None),
        ("E]7501;state=working:id=a//bST", None),
        ("E]7501;state=clear:id=a/b/c/d/e/f/g/h/iST", None),
        ("E]7501;state=done:msg=5a6J5YWoST", Report(State.DONE, msg="\u5b89\u5168")),
    ],
)
def test_protocol_examples_1_to_13(line: str, expected: Report | None) -> None:
    assert parse_body(example(line)) == expected


def test_example_3_trims_real_tabs() -> None:
    assert example("E]7501; state = working :\\tapp=cargo\\tST") == (
        b" state = working :\tapp=cargo\t"
    )


# --- id -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record_id",
    [
        "a",
        "build",
        "build/test",
        "A-Z_a.z+0-9",
        ".",
        "..",
        "a/b/c/d/e/f/g/h",
        "x" * 32,
        "/".join(["y" * 32] * 3) + "/" + "z" * 29,  # exactly 128 bytes
    ],
)
def test_valid_ids(record_id: str) -> None:
    assert parse(f"state=working:id={record_id}") == Report(State.WORKING, id=record_id)


@pytest.mark.parametrize(
    "record_id",
    [
        "",  # empty: never falls back to the root
        "a//b",
        "/a",
        "a/",
        "/",
        "a/b/c/d/e/f/g/h/i",  # 9 segments
        "x" * 33,
        "/".join(["y" * 32] * 3) + "/" + "z" * 30,  # 129 bytes
        "a,b",
        "a=b",
    ],
)
def test_invalid_id_discards_the_whole_report(record_id: str) -> None:
    assert parse(f"state=working:id={record_id}") is None
    assert parse(f"state=clear:id={record_id}") is None


def test_id_with_disallowed_byte_is_a_malformed_pair_and_skipped() -> None:
    assert parse("state=working:id=a@b") == Report(State.WORKING)
    assert parse("state=working:id=ok:id=a b") == Report(State.WORKING, id="ok")


# --- kind, progress, app ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_kind_only_with_blocked(kind: str) -> None:
    assert parse(f"state=blocked:kind={kind}") == Report(State.BLOCKED, kind=kind)
    others: tuple[State | Clear, ...] = (State.IDLE, State.WORKING, State.DONE, State.ERROR, CLEAR)
    for state in others:
        assert parse(f"state={state}:kind={kind}") == Report(state)


@pytest.mark.parametrize("kind", ["dance", "Permission", "", "permission2", "auth,question"])
def test_unknown_kind_leaves_a_blocked_report_without_kind(kind: str) -> None:
    assert parse(f"state=blocked:kind={kind}") == Report(State.BLOCKED)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0),
        ("100", 100),
        ("007", 7),
        ("50", 50),
        ("0000000000000000100", 100),
        ("101", None),
        ("-1", None),
        ("+1", None),
        ("4.5", None),
        ("1_0", None),
        ("", None),
        ("1e2", None),
        ("0x10", None),
        ("99999999999999999999999", None),
    ],
)
def test_progress(value: str, expected: int | None) -> None:
    assert parse(f"state=working:progress={value}") == Report(State.WORKING, progress=expected)
    assert parse(f"state=blocked:progress={value}") == Report(State.BLOCKED, progress=expected)
    others: tuple[State | Clear, ...] = (State.IDLE, State.DONE, State.ERROR, CLEAR)
    for state in others:
        assert parse(f"state={state}:progress={value}") == Report(state)


def test_unicode_digits_are_not_a_progress() -> None:
    # "\u0661" (ARABIC-INDIC DIGIT ONE) is not in the value set at all.
    assert parse_body("state=working:progress=\u0661".encode()) == Report(State.WORKING)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("cargo", "cargo"),
        ("claude-code", "claude-code"),
        ("A.b_c+d-9", "A.b_c+d-9"),
        ("a" * 32, "a" * 32),
        ("", None),
        ("a/b", None),
        ("a,b", None),
        ("a=b", None),
    ],
)
def test_app(value: str, expected: str | None) -> None:
    assert parse(f"state=working:app={value}") == Report(State.WORKING, app=expected)


# --- base64 text ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("UGxhbg", "Plan"),
        ("UGxhbg==", "Plan"),
        ("QQ==", "A"),
        ("QQ", "A"),
        ("QUI=", "AB"),
        ("QUI", "AB"),
        ("QUJD", "ABC"),
        ("5a6J5YWo", "\u5b89\u5168"),
        ("Pz8/", "???"),
        ("Pj4+", ">>>"),
    ],
)
@pytest.mark.parametrize("field", ["title", "msg"])
def test_base64_accepted(field: str, value: str, text: str) -> None:
    assert parse(f"state=done:{field}={value}") == with_field(Report(State.DONE), field, text)


@pytest.mark.parametrize(
    "value",
    [
        "QQ=",  # padding present but wrong
        "QQ===",
        "UGxhbg=",
        "QUI==",
        "QUJD=",
        "QUJD====",
        "=",
        "==",
        "====",
        "Q",  # a length that no encoding has
        "QUJDR",
        "QQ==QQ==",  # padding in the middle
        "Q=Q=",
        "QR==",  # unused trailing bits set
        "QR",
        "QUJ=",
        "QUJ",
        "-_8",  # url-safe alphabet: in the value set, not in base64
        "a,bc",
        "ab.c",
    ],
)
@pytest.mark.parametrize("field", ["title", "msg"])
def test_undecodable_base64_discards(field: str, value: str) -> None:
    assert parse(f"state=done:{field}={value}") is None


@pytest.mark.parametrize(
    "raw",
    [
        b"\xff",
        b"abc\x80",
        b"\xc0\xaf",  # overlong "/"
        b"\xed\xa0\x80",  # a UTF-16 surrogate
        b"\xe2\x82",  # truncated
        b"\xf4\x90\x80\x80",  # beyond U+10FFFF
    ],
)
@pytest.mark.parametrize("field", ["title", "msg"])
def test_text_that_is_not_utf8_discards(field: str, raw: bytes) -> None:
    assert parse(f"state=done:{field}={b64(raw)}") is None


@pytest.mark.parametrize(
    "char",
    [
        "\x00",
        "\x07",
        "\t",
        "\n",
        "\r",
        "\x1b",
        "\x1f",  # C0
        "\x7f",  # DEL
        "\x80",
        "\x85",
        "\x9b",
        "\x9f",  # C1
    ],
)
@pytest.mark.parametrize("field", ["title", "msg"])
def test_control_characters_discard(field: str, char: str) -> None:
    assert parse(f"state=done:{field}={b64('a' + char + 'b')}") is None
    with pytest.raises(ReportError):
        encode_body(with_field(Report(State.DONE), field, "a" + char + "b"))


@pytest.mark.parametrize("char", [" ", "~", "\xa0", "\xad", "\u2028", "\u202e", "\U0001f600"])
@pytest.mark.parametrize("field", ["title", "msg"])
def test_neighbours_of_control_characters_are_text(field: str, char: str) -> None:
    text = "a" + char + "b"
    assert parse(f"state=done:{field}={b64(text)}") == with_field(Report(State.DONE), field, text)


@pytest.mark.parametrize("field", ["title", "msg"])
def test_empty_text_means_absent(field: str) -> None:
    assert parse(f"state=done:{field}=") == Report(State.DONE)
    assert parse(f"state=done:{field}= \t") == Report(State.DONE)


# --- encode and validate ----------------------------------------------------------------------


def test_encode_body_and_sequence() -> None:
    report = Report(State.BLOCKED, "a/b", "permission", 7, "terraform", "T", "Apply?")
    body = encode_body(report)
    assert body == (
        b"state=blocked:id=a/b:kind=permission:progress=7:app=terraform"
        b":title=" + b64("T").encode() + b":msg=" + b64("Apply?").encode()
    )
    assert encode_sequence(report) == b"\x1b]7501;" + body + b"\x07"
    assert encode_body(Report("clear")) == b"state=clear"


def test_the_largest_report_fits_in_one_sequence() -> None:
    report = Report(
        State.BLOCKED,
        "/".join(["i" * 32] * 3) + "/" + "z" * 29,
        "permission",
        100,
        "a" * 32,
        "\u2603" * 64,
        "m" * MAX_MSG_DECODED,
    )
    sequence = encode_sequence(report)
    assert len(sequence) <= MAX_SEQUENCE
    result = Scanner().feed(sequence)
    assert result.output == sequence
    assert len(result.events) == 1
    event = result.events[0]
    assert isinstance(event, RawReport)
    assert parse_body(event.body) == report


INVALID_FIELDS: list[tuple[str, object]] = [
    ("state", "IDLE"),
    ("state", ""),
    ("state", "busy"),
    ("id", "a//b"),
    ("id", "/a"),
    ("id", "a/"),
    ("id", "a/b/c/d/e/f/g/h/i"),
    ("id", "x" * 33),
    ("id", "/".join(["y" * 32] * 3) + "/" + "z" * 30),
    ("id", "a b"),
    ("id", "a\n"),
    ("kind", "dance"),
    ("kind", ""),
    ("progress", 101),
    ("progress", -1),
    ("progress", True),
    ("progress", 4.5),
    ("app", ""),
    ("app", "a/b"),
    ("app", "a" * 33),
    ("app", "caf\xe9"),
    ("title", ""),
    ("title", "a\nb"),
    ("title", "t" * (MAX_TITLE_DECODED + 1)),
    ("title", "\udcff"),
    ("msg", ""),
    ("msg", "a\x1bb"),
    ("msg", "a\x9bb"),
    ("msg", "m" * (MAX_MSG_DECODED + 1)),
    ("msg", "bad \udcff bytes"),
    ("state", None),
    ("state", b"done"),
    ("id", None),
    ("id", 5),
    ("kind", ["permission"]),
    ("app", ["--"]),
    ("title", b"t"),
    ("msg", ["x"]),
]


@pytest.mark.parametrize(("field", "value"), INVALID_FIELDS)
def test_validate_rejects_each_invalid_field(field: str, value: object) -> None:
    report = with_field(Report(State.BLOCKED), field, value)
    with pytest.raises(ReportError):
        validate(report)
    with pytest.raises(ReportError):
        encode_body(report)


@pytest.mark.parametrize("state", [State.IDLE, State.DONE, State.ERROR, CLEAR, State.WORKING])
def test_kind_with_a_state_other_than_blocked_is_rejected(state: State | Clear) -> None:
    with pytest.raises(ReportError, match="kind"):
        validate(Report(state, kind="permission"))


@pytest.mark.parametrize("state", [State.IDLE, State.DONE, State.ERROR, CLEAR])
def test_progress_with_a_state_other_than_working_or_blocked_is_rejected(
    state: State | Clear,
) -> None:
    with pytest.raises(ReportError, match="progress"):
        validate(Report(state, progress=5))


def test_report_error_messages_are_one_line() -> None:
    for field, value in INVALID_FIELDS:
        report = with_field(Report(State.BLOCKED), field, value)
        with pytest.raises(ReportError) as error:
            validate(report)
        assert "\n" not in str(error.value)
        assert str(error.value)


# --- properties -------------------------------------------------------------------------------

ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-"
segments = st.text(alphabet=ALNUM, min_size=1, max_size=32)
ids = st.one_of(
    st.just(""),
    st.lists(segments, min_size=1, max_size=8).map("/".join).filter(lambda i: len(i) <= 128),
)
# Any character except the controls: surrogates cannot be encoded at all.
text_chars = st.characters(exclude_categories=("Cs", "Cc"))


def texts(limit: int) -> st.SearchStrategy[str | None]:
    return st.one_of(
        st.none(),
        st.text(text_chars, min_size=1, max_size=limit).filter(lambda t: len(t.encode()) <= limit),
    )


@st.composite
def valid_reports(draw: st.DrawFn) -> Report:
    choices: tuple[State | Clear, ...] = (*STATES, CLEAR)
    state = draw(st.sampled_from(choices))
    return Report(
        state=state,
        id=draw(ids),
        kind=draw(st.sampled_from((None, *KINDS))) if state == "blocked" else None,
        progress=(
            draw(st.one_of(st.none(), st.integers(0, 100)))
            if state in ("working", "blocked")
            else None
        ),
        app=draw(st.one_of(st.none(), segments)),
        title=draw(texts(MAX_TITLE_DECODED)),
        msg=draw(texts(MAX_MSG_DECODED)),
    )


@SETTINGS
@given(valid_reports())
def test_encode_then_parse_is_the_identity(report: Report) -> None:
    validate(report)
    body = encode_body(report)
    assert parse_body(body) == report
    sequence = encode_sequence(report)
    assert len(sequence) <= MAX_SEQUENCE
    assert Scanner().feed(sequence).events == (RawReport(body),)


@SETTINGS
@given(st.binary(max_size=400))
def test_parse_never_raises_on_arbitrary_bytes(body: bytes) -> None:
    result = parse_body(body)
    if result is not None:
        validate(result)


pair_parts = st.sampled_from(
    [
        "state",
        "id",
        "kind",
        "progress",
        "app",
        "title",
        "msg",
        "working",
        "blocked",
        "clear",
        "permission",
        "QQ==",
        "5a6J5YWo",
        "=",
        ":",
        " ",
        "\t",
        "/",
        "007",
        "\x80",
        "\x1b",
        "a",
    ]
)


@SETTINGS
@given(st.lists(st.one_of(pair_parts, st.text(max_size=4)), max_size=30).map("".join))
def test_parse_never_raises_on_report_like_bodies(body: str) -> None:
    result = parse_body(body.encode("utf-8", "surrogatepass"))
    # Whatever the parser accepts is itself a valid report, so it encodes to the same thing.
    if result is not None:
        assert parse_body(encode_body(result)) == result


@st.composite
def invalid_reports(draw: st.DrawFn) -> Report:
    report = draw(valid_reports())
    field, value = draw(st.sampled_from(INVALID_FIELDS))
    if field == "state":
        # A state from outside, unchecked, as `tray emit` takes it: validate must refuse it.
        unchecked = cast(State, str(value))
        return dataclasses.replace(report, state=unchecked, kind=None, progress=None)
    return with_field(report, field, value)


@SETTINGS
@given(invalid_reports())
def test_validate_rejects_any_report_with_an_invalid_field(report: Report) -> None:
    with pytest.raises(ReportError):
        validate(report)
