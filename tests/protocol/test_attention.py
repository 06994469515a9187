"""Payloads of the attention signals besides OSC 7501: OSC 9, 777, 99, 7, 133 and 633."""

from __future__ import annotations

import base64
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tray.protocol.attention import (
    KITTY_MAX_BYTES,
    KITTY_MAX_PAYLOAD,
    KITTY_MAX_PENDING,
    MAX_BODY,
    MAX_PATH,
    MAX_TITLE,
    KittyAssembler,
    Notification,
    Progress,
    parse_osc7,
    parse_osc9,
    parse_osc777,
)
from tray.protocol.prompt_marks import (
    MAX_CMDLINE,
    CommandTracker,
    FinishedCommand,
    PromptMark,
    parse_osc133,
    parse_osc633,
)

SETTINGS = settings(max_examples=200, deadline=None)


# --- OSC 9 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "body"),
    [
        (b"Hello world", "Hello world"),
        (
            b"\n\nClaude needs your permission to use Bash",
            "Claude needs your permission to use Bash",
        ),
        (b"\r\n  padded  \n", "padded"),
        (b"1", "1"),  # ConEmu's commands need their ";"
        (b"1a", "1a"),
        (b"2", "2"),
        (b"3", "3"),
        (b"4", "4"),
        (b"100 tests passed", "100 tests passed"),
        (b"11", "11"),
        (b"6", "6"),
        (b"9", "9"),
        (b"0;x", "0;x"),
        (b"Done: 4;5", "Done: 4;5"),
        ("caf\u00e9 \u5b89\u5168".encode(), "caf\u00e9 \u5b89\u5168"),
        (b"bad \xff byte", "bad \ufffd byte"),
        (b"\n\n5 files", "5 files"),  # the check is on the payload as sent
        (b"<b>not markup</b> &amp;", "<b>not markup</b> &amp;"),
    ],
)
def test_osc9_text_is_a_notification(payload: bytes, body: str) -> None:
    assert parse_osc9(payload) == Notification("", body, source=9)


@pytest.mark.parametrize(
    "payload",
    [
        b"1;",
        b"1;420",
        b"10",
        b"10;0",
        b"11;comment",
        b"12",
        b"12 o'clock",  # Ghostty reads every "12..." as a prompt mark
        b"2;",
        b"2;message box",
        b"3;",
        b"3;tab title",
        b"5",
        b"5 files",
        b"6;macro",
        b"7;run",
        b"8;VAR",
        b"9;C:\\Users",
        b"4;",
        b"4;5",
        b"4;x;1",
        b"4;10",
        b"",
        b"\n\n",
        b"   ",
    ],
)
def test_osc9_commands_and_empty_text_are_not_notifications(payload: bytes) -> None:
    assert parse_osc9(payload) is None


@pytest.mark.parametrize(
    ("payload", "progress"),
    [
        (b"4;0", Progress("remove")),
        (b"4;0;50", Progress("remove")),
        (b"4;1;0", Progress("set", 0)),
        (b"4;1;50", Progress("set", 50)),
        (b"4;1;100", Progress("set", 100)),
        (b"4;1;007", Progress("set", 7)),
        (b"4;1;150", Progress("set", 100)),
        (b"4;1;" + b"9" * 5000, Progress("set", 100)),
        (b"4;1;" + b"0" * 5000 + b"42", Progress("set", 42)),
        (b"4;1", Progress("set")),
        (b"4;1;", Progress("set")),
        (b"4;1;-5", Progress("set")),
        (b"4;1;4_2", Progress("set")),
        (b"4;1;50;junk", Progress("set")),
        (b"4;2", Progress("error")),
        (b"4;2;30", Progress("error", 30)),
        (b"4;3", Progress("indeterminate")),
        (b"4;3;30", Progress("indeterminate")),
        (b"4;4", Progress("paused")),
        (b"4;4;80", Progress("paused", 80)),
    ],
)
def test_osc9_progress(payload: bytes, progress: Progress) -> None:
    assert parse_osc9(payload) == progress


def test_osc9_text_is_cut() -> None:
    result = parse_osc9(b"x" * (MAX_BODY + 100))
    assert result == Notification("", "x" * MAX_BODY, source=9)


# --- OSC 777 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b"notify;Title;Body", Notification("Title", "Body", source=777)),
        (
            b"notify;Title;Body; with; semicolons",
            Notification("Title", "Body; with; semicolons", 777),
        ),
        (b"notify;;Only a body", Notification("", "Only a body", source=777)),
        (b"notify;Only a title", Notification("Only a title", "", source=777)),
        (b"notify;Only a title;", Notification("Only a title", "", source=777)),
        (b"notify;  T  ;\n B \n", Notification("T", "B", source=777)),
        (b"notify;\xff;\xfe", Notification("\ufffd", "\ufffd", source=777)),
    ],
)
def test_osc777_notify(payload: bytes, expected: Notification) -> None:
    assert parse_osc777(payload) == expected


@pytest.mark.parametrize(
    "payload",
    [
        b"notify",
        b"notify;",
        b"notify;;",
        b"Notify;T;B",
        b"preexec",
        b"precmd;x",
        b"",
        b"x;notify;T",
    ],
)
def test_osc777_other_subcommands_and_empty_ones(payload: bytes) -> None:
    assert parse_osc777(payload) is None


def test_osc777_lengths_are_cut() -> None:
    result = parse_osc777(b"notify;" + b"t" * 500 + b";" + b"b" * 5000)
    assert result == Notification("t" * MAX_TITLE, "b" * MAX_BODY, source=777)


# --- OSC 99 -------------------------------------------------------------------------------


def feed_all(assembler: KittyAssembler, payloads: list[bytes]) -> list[Notification]:
    out = []
    for payload in payloads:
        result = assembler.feed(payload)
        if result is not None:
            out.append(result)
    return out


def test_kitty_single_line() -> None:
    assert KittyAssembler().feed(b";Hello world") == Notification("Hello world", "", 99)


def test_kitty_title_and_body() -> None:
    assembler = KittyAssembler()
    assert assembler.feed(b"i=1:d=0;Hello world") is None
    assert assembler.pending == 1
    assert assembler.feed(b"i=1:p=body;This is cool") == Notification(
        "Hello world", "This is cool", 99
    )
    assert assembler.pending == 0


def test_kitty_as_claude_code_sends_it() -> None:
    # Title with d=0, the body, then d=1:a=focus: one notification.
    payloads = [
        b"i=42:d=0:p=title;Claude Code",
        b"i=42:p=body;Claude needs your permission",
        b"i=42:d=1:a=focus;",
    ]
    assert feed_all(KittyAssembler(), payloads) == [
        Notification("Claude Code", "Claude needs your permission", 99)
    ]
    payloads[1] = b"i=42:d=0:p=body;Claude needs your permission"
    assert feed_all(KittyAssembler(), payloads) == [
        Notification("Claude Code", "Claude needs your permission", 99)
    ]


def test_kitty_chunks_concatenate_and_ids_stay_apart() -> None:
    payloads = [
        b"i=a:d=0;Tit",
        b"i=b:d=0;Other",
        b"i=a:d=0;le",
        b"i=a:d=0:p=body;Bo",
        b"i=b:p=body;second",
        b"i=a:d=1:p=body;dy",
    ]
    assert feed_all(KittyAssembler(), payloads) == [
        Notification("Other", "second", 99),
        Notification("Title", "Body", 99),
    ]


def test_kitty_base64() -> None:
    encoded = base64.b64encode("Caf\u00e9 ; : done".encode())
    assert KittyAssembler().feed(b"e=1;" + encoded) == Notification("Caf\u00e9 ; : done", "", 99)
    assert KittyAssembler().feed(b"e=1;" + encoded.rstrip(b"=")) is not None


@pytest.mark.parametrize("bad", [b"@@@@", b"Q", b"QQ=Q", b"Zm9v\n", b"Zm9v===", b"Zm 9v"])
def test_kitty_invalid_base64_drops_the_chunk(bad: bytes) -> None:
    assembler = KittyAssembler()
    assert assembler.feed(b"i=1:d=0;Title") is None
    # Dropped whole, d=1 included: the notification still waits for its end.
    assert assembler.feed(b"i=1:e=1:p=body;" + bad) is None
    assert assembler.pending == 1
    assert assembler.feed(b"i=1:p=body;ok") == Notification("Title", "ok", 99)


def test_kitty_payload_limit_is_before_encoding() -> None:
    fits = b"x" * KITTY_MAX_PAYLOAD
    assert KittyAssembler().feed(b"p=body;" + fits) == Notification("", "x" * MAX_BODY, 99)
    assert KittyAssembler().feed(b"p=body:e=1;" + base64.b64encode(fits)) is not None
    assert KittyAssembler().feed(b"p=body;" + fits + b"x") is None
    assert KittyAssembler().feed(b"p=body:e=1;" + base64.b64encode(fits + b"x")) is None


@pytest.mark.parametrize("kind", [b"close", b"?", b"alive"])
def test_kitty_commands_are_ignored_and_leave_pending_alone(kind: bytes) -> None:
    assembler = KittyAssembler()
    assert assembler.feed(b"i=1:d=0;Title") is None
    assert assembler.feed(b"i=1:p=" + kind + b";") is None
    assert assembler.pending == 1
    assert assembler.feed(b"i=1;") == Notification("Title", "", 99)


@pytest.mark.parametrize("kind", [b"icon", b"buttons", b"future"])
def test_kitty_other_payload_types_carry_no_text_but_can_complete(kind: bytes) -> None:
    assert KittyAssembler().feed(b"p=" + kind + b";Zm9v") is None
    assembler = KittyAssembler()
    assert assembler.feed(b"i=1:d=0;Title") is None
    assert assembler.feed(b"i=1:d=0:p=" + kind + b";not text") is None
    assert assembler.feed(b"i=1:p=" + kind + b";") == Notification("Title", "", 99)


def test_kitty_condition_and_urgency() -> None:
    assembler = KittyAssembler()
    assert assembler.feed(b"o=unfocused:u=2;T") == Notification("T", "", 99, "unfocused", 2)
    assert assembler.feed(b"o=invisible:u=0;T") == Notification("T", "", 99, "invisible", 0)
    assert assembler.feed(b"o=always:u=1;T") == Notification("T", "", 99, "always", 1)
    assert assembler.feed(b"o=sometimes:u=9;T") == Notification("T", "", 99)
    # Any chunk may set them; the last one given counts.
    assert feed_all(assembler, [b"i=x:d=0:o=unfocused:u=2;T", b"i=x:u=0:o=bogus;"]) == [
        Notification("T", "", 99, "unfocused", 0)
    ]


@pytest.mark.parametrize(
    "payload",
    [
        b"no semicolon",
        b"",
        b";",
        b";   ",
        b"e=2;Zm9v",
        b"i=bad id;T",
        b"i=" + b"x" * 65 + b";T",
        b"i=;T",
        b"d=1:p=body;",
    ],
)
def test_kitty_nothing_to_show(payload: bytes) -> None:
    assert KittyAssembler().feed(payload) is None


def test_kitty_metadata_parsing() -> None:
    # Unknown and malformed keys are ignored; the last of a repeated key wins.
    assembler = KittyAssembler()
    assert assembler.feed(b"x=1:garbage:ab=c:=d:p=body:p=title;T") == Notification("T", "", 99)
    assert assembler.feed(b"d=0:d=1;T") == Notification("T", "", 99)
    assert assembler.feed(b"d=1:d=0;T") is None
    assert assembler.pending == 1
    assembler.clear()
    assert assembler.pending == 0


def test_kitty_pending_ids_are_bounded_oldest_first() -> None:
    assembler = KittyAssembler()
    for number in range(KITTY_MAX_PENDING + 5):
        assert assembler.feed(b"i=%d:d=0;T%d" % (number, number)) is None
        assert assembler.pending <= KITTY_MAX_PENDING
    assert assembler.pending == KITTY_MAX_PENDING
    # The five oldest were dropped: their end starts afresh with no text.
    assert assembler.feed(b"i=0;") is None
    assert assembler.feed(b"i=5;") == Notification("T5", "", 99)
    # Feeding an id makes it the newest again.
    assembler = KittyAssembler(max_pending=2)
    assembler.feed(b"i=a:d=0;A")
    assembler.feed(b"i=b:d=0;B")
    assembler.feed(b"i=a:d=0;a")
    assembler.feed(b"i=c:d=0;C")
    assert assembler.feed(b"i=a;") == Notification("Aa", "", 99)
    assert assembler.feed(b"i=b;") is None


def test_kitty_text_per_id_is_bounded() -> None:
    assembler = KittyAssembler()
    chunk = b"y" * KITTY_MAX_PAYLOAD
    for _ in range(10):
        assert assembler.feed(b"i=1:d=0:p=body;" + chunk) is None
    assert assembler.feed(b"i=1:d=0;" + b"t" * 10) is None
    result = assembler.feed(b"i=1;")
    assert result == Notification("", "y" * MAX_BODY, 99)
    # Title and body share the bound.
    assembler.feed(b"i=2:d=0;" + b"t" * KITTY_MAX_PAYLOAD)
    assembler.feed(b"i=2:d=0;" + b"t" * KITTY_MAX_PAYLOAD)
    assert assembler.feed(b"i=2:p=body;body") == Notification("t" * MAX_TITLE, "", 99)
    assert KITTY_MAX_BYTES == 2 * KITTY_MAX_PAYLOAD


def chunked(text: bytes, cuts: list[int], encode: bool, identifier: bytes) -> list[bytes]:
    points = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    pieces = [text[a:b] for a, b in itertools.pairwise(points)] or [b""]
    payloads = []
    for index, piece in enumerate(pieces):
        done = b"1" if index == len(pieces) - 1 else b"0"
        data = base64.b64encode(piece) if encode else piece
        e = b"1" if encode else b"0"
        payloads.append(b"i=" + identifier + b":p=body:e=" + e + b":d=" + done + b";" + data)
    return payloads


@SETTINGS
@given(
    st.text(min_size=1, max_size=300).filter(lambda t: t.strip() != ""),
    st.lists(st.integers(0, 10_000), max_size=6),
    st.booleans(),
    st.sampled_from([b"0", b"x", b"a-b_c+d.e"]),
)
def test_kitty_any_chunking_reassembles_the_same_text(
    text: str, cuts: list[int], encode: bool, identifier: bytes
) -> None:
    raw = text.encode()
    payloads = chunked(raw, cuts, encode, identifier)
    expected = raw.decode("utf-8", "replace").strip()[:MAX_BODY].rstrip()
    # Chunks may split a UTF-8 character: it is joined before it is decoded.
    assert feed_all(KittyAssembler(), payloads) == [Notification("", expected, 99)]


@SETTINGS
@given(st.binary(max_size=KITTY_MAX_PAYLOAD))
def test_kitty_base64_round_trip(raw: bytes) -> None:
    plain = KittyAssembler().feed(b"p=title;" + raw)
    encoded = KittyAssembler().feed(b"p=title:e=1;" + base64.b64encode(raw))
    assert plain == encoded


@SETTINGS
@given(st.lists(st.binary(max_size=40), max_size=30))
def test_kitty_never_raises_and_stays_bounded(payloads: list[bytes]) -> None:
    assembler = KittyAssembler(max_pending=3)
    for payload in payloads:
        result = assembler.feed(payload)
        assert assembler.pending <= 3
        if result is not None:
            assert result.title or result.body


# --- OSC 7 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        (b"file:///home/me", "/home/me"),
        (b"file://localhost/home/me", "/home/me"),
        (b"file://LocalHost/home/me", "/home/me"),
        (b"file://box/home/me", "/home/me"),
        (b"file://BOX/home/me", "/home/me"),
        (b"file:///", "/"),
        (b"file:///home/me/My%20Files", "/home/me/My Files"),
        (b"file:///tmp/caf%C3%A9", "/tmp/caf\u00e9"),
        (b"file:///tmp/%25", "/tmp/%"),
        (b"file:///tmp/%ff", "/tmp/\ufffd"),
        (b"file:///tmp/a?b#c", "/tmp/a?b#c"),
        (b"FILE:///tmp", "/tmp"),
        (b"kitty-shell-cwd://box/home/me/My Files", "/home/me/My Files"),
        (b"kitty-shell-cwd:///tmp/100%", "/tmp/100%"),
        (b"kitty-shell-cwd:///tmp/a%20b", "/tmp/a%20b"),
        ("kitty-shell-cwd://localhost/tmp/caf\u00e9".encode(), "/tmp/caf\u00e9"),
    ],
)
def test_osc7_local_paths(payload: bytes, path: str) -> None:
    assert parse_osc7(payload, "box") == path


@pytest.mark.parametrize(
    "payload",
    [
        b"file://other/home/me",  # another machine's path means nothing here
        b"file://box.example.com/home/me",
        b"kitty-shell-cwd://other/tmp",
        b"file://",
        b"file://box",
        b"file:/home/me",
        b"/home/me",
        b"",
        b"http://box/home",
        b"file:///tmp/%zz",
        b"file:///tmp/%2",
        b"file:///tmp/a%00b",
        b"kitty-shell-cwd:///tmp/a\x00b",
        b"file:///" + b"x" * MAX_PATH,
    ],
)
def test_osc7_rejects(payload: bytes) -> None:
    assert parse_osc7(payload, "box") is None


def test_osc7_with_no_hostname_accepts_only_local_forms() -> None:
    assert parse_osc7(b"file:///tmp", "") == "/tmp"
    assert parse_osc7(b"file://localhost/tmp", "") == "/tmp"
    assert parse_osc7(b"file://box/tmp", "") is None


@SETTINGS
@given(st.text(st.characters(exclude_characters="\0", exclude_categories=["Cs"]), max_size=50))
def test_osc7_percent_encoding_round_trip(name: str) -> None:
    path = "/" + name
    encoded = "".join(
        char
        if char.isascii() and (char.isalnum() or char in "/-_.~")
        else "".join(f"%{byte:02X}" for byte in char.encode())
        for char in path
    )
    assert parse_osc7(b"file://box" + encoded.encode(), "box") == path
    assert parse_osc7(b"kitty-shell-cwd://box" + path.encode(), "box") == path


@SETTINGS
@given(st.binary(max_size=80), st.text(max_size=10))
def test_osc7_never_raises(payload: bytes, hostname: str) -> None:
    result = parse_osc7(payload, hostname)
    assert result is None or result.startswith("/")


# --- OSC 133 and 633 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "mark"),
    [
        (b"A", PromptMark("A")),
        (b"A;aid=123;click_events=1", PromptMark("A")),
        (b"A;special_key=1;redraw=0", PromptMark("A")),
        (b"B", PromptMark("B")),
        (b"B;aid=1", PromptMark("B")),
        (b"C", PromptMark("C")),
        (b"C;aid=1", PromptMark("C")),
        (b"C;cmdline_url=make%20test", PromptMark("C", cmdline="make test")),
        (b"C;aid=1;cmdline_url=ls%3B%20echo%20%C3%A9", PromptMark("C", cmdline="ls; echo \u00e9")),
        (b"C;cmdline_url=a%zz", PromptMark("C")),
        (b"C;cmdline_url=", PromptMark("C")),
        (b"C;cmdline=echo hello", PromptMark("C", cmdline="echo hello")),
        (b"C;cmdline=echo\\ a\\;\\ b", PromptMark("C", cmdline="echo a; b")),
        (b"C;cmdline=echo $'a\\nb'", PromptMark("C", cmdline="echo a\nb")),
        (b"C;cmdline=$'a;b\\tc\\x41\\101\\'\\\\'", PromptMark("C", cmdline="a;b\tcAA'\\")),
        (b"C;cmdline=echo 'a b'", PromptMark("C", cmdline="echo a b")),
        (b"C;cmdline=$'\\xzz\\q'", PromptMark("C", cmdline="\\xzzq")),
        (b"C;cmdline=", PromptMark("C")),
        (b"D", PromptMark("D")),
        (b"D;0", PromptMark("D", exit_status=0)),
        (b"D;1", PromptMark("D", exit_status=1)),
        (b"D;130;aid=5", PromptMark("D", exit_status=130)),
        (b"D;-1", PromptMark("D", exit_status=-1)),
        (b"D;err=x", PromptMark("D")),
        (b"D;", PromptMark("D")),
        (b"D;99999999999", PromptMark("D")),
    ],
)
def test_osc133(payload: bytes, mark: PromptMark) -> None:
    assert parse_osc133(payload) == mark


@pytest.mark.parametrize(
    "payload", [b"", b"Aextra", b"a", b"E;ls", b"L", b"N", b"P;k=i", b"Z", b"AB", b" A"]
)
def test_osc133_others_are_none(payload: bytes) -> None:
    assert parse_osc133(payload) is None


@pytest.mark.parametrize(
    ("payload", "mark"),
    [
        (b"A", PromptMark("A")),
        (b"B", PromptMark("B")),
        (b"C", PromptMark("C")),
        (b"D", PromptMark("D")),
        (b"D;2", PromptMark("D", exit_status=2)),
        (b"E;ls -la;nonce123", PromptMark("E", cmdline="ls -la")),
        (b"E;ls -la", PromptMark("E", cmdline="ls -la")),
        (b"E;echo a\\x3bb;n", PromptMark("E", cmdline="echo a;b")),
        (b"E;echo a\\x0ab", PromptMark("E", cmdline="echo a\nb")),
        (b"E;C:\\\\dir\\\\x3b;n", PromptMark("E", cmdline="C:\\dir\\x3b")),
        (b"E;bad \\xZZ \\x4", PromptMark("E", cmdline="bad \\xZZ \\x4")),
        (b"E;caf\xc3\xa9", PromptMark("E", cmdline="caf\u00e9")),
        (b"E;", PromptMark("E")),
        (b"E", PromptMark("E")),
    ],
)
def test_osc633(payload: bytes, mark: PromptMark) -> None:
    assert parse_osc633(payload) == mark


@pytest.mark.parametrize("payload", [b"P;Cwd=/tmp", b"F", b"", b"Ex", b"Aextra"])
def test_osc633_others_are_none(payload: bytes) -> None:
    assert parse_osc633(payload) is None


def test_command_lines_are_cut() -> None:
    mark = parse_osc633(b"E;" + b"x" * 5000)
    assert mark == PromptMark("E", cmdline="x" * MAX_CMDLINE)


@SETTINGS
@given(st.text(max_size=60).filter(lambda t: t.strip() == t and t != ""))
def test_vscode_escaping_round_trip(text: str) -> None:
    escaped = "".join(
        "\\\\" if char == "\\" else f"\\x{ord(char):02x}" if char < " " or char == ";" else char
        for char in text
    )
    mark = parse_osc633(b"E;" + escaped.encode("utf-8", "surrogatepass") + b";nonce")
    assert mark == PromptMark(
        "E", cmdline=text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    )


@SETTINGS
@given(st.binary(max_size=60))
def test_prompt_parsers_never_raise(payload: bytes) -> None:
    for parse in (parse_osc133, parse_osc633):
        mark = parse(payload)
        assert mark is None or mark.kind in "ABCDE"


# --- the command tracker ------------------------------------------------------------------------


def track(marks: list[tuple[PromptMark, float]]) -> list[FinishedCommand]:
    tracker = CommandTracker()
    out = []
    for mark, now in marks:
        result = tracker.feed(mark, now)
        if result is not None:
            out.append(result)
    return out


def test_a_command_from_c_to_d() -> None:
    marks = [
        (PromptMark("A"), 0.0),
        (PromptMark("B"), 0.1),
        (PromptMark("C", cmdline="make"), 1.0),
        (PromptMark("D", exit_status=2), 31.0),
    ]
    assert track(marks) == [FinishedCommand("make", 2, 1.0, 31.0)]
    assert track(marks)[0].duration == 30.0


def test_d_without_c_was_an_empty_line() -> None:
    assert track([(PromptMark("A"), 0), (PromptMark("D", exit_status=0), 1)]) == []
    assert track([(PromptMark("D"), 1)]) == []
    # And one D ends one command only.
    marks = [(PromptMark("C"), 0.0), (PromptMark("D"), 1.0), (PromptMark("D"), 2.0)]
    assert track(marks) == [FinishedCommand(None, None, 0.0, 1.0)]


def test_a_new_prompt_without_d_forgets_the_command() -> None:
    marks = [(PromptMark("C", cmdline="x"), 0.0), (PromptMark("A"), 1.0), (PromptMark("D"), 2.0)]
    assert track(marks) == []


def test_vscode_e_names_the_next_or_the_running_command() -> None:
    before = [
        (PromptMark("A"), 0.0),
        (PromptMark("B"), 0.0),
        (PromptMark("E", cmdline="npm test"), 1.0),
        (PromptMark("C"), 1.0),
        (PromptMark("D", exit_status=0), 5.0),
    ]
    assert track(before) == [FinishedCommand("npm test", 0, 1.0, 5.0)]
    during = [
        (PromptMark("C"), 1.0),
        (PromptMark("E", cmdline="npm test"), 1.5),
        (PromptMark("D", exit_status=1), 5.0),
    ]
    assert track(during) == [FinishedCommand("npm test", 1, 1.0, 5.0)]
    # A C's own command line wins over an earlier E.
    both = [
        (PromptMark("E", cmdline="from e"), 1.0),
        (PromptMark("C", cmdline="from c"), 1.0),
        (PromptMark("D"), 2.0),
    ]
    assert track(both) == [FinishedCommand("from c", None, 1.0, 2.0)]
    # An E that belonged to an abandoned prompt does not name the next command.
    stale = [
        (PromptMark("E", cmdline="old"), 0.0),
        (PromptMark("A"), 1.0),
        (PromptMark("C"), 2.0),
        (PromptMark("D"), 3.0),
    ]
    assert track(stale) == [FinishedCommand(None, None, 2.0, 3.0)]


def test_a_second_c_restarts_the_command() -> None:
    marks = [
        (PromptMark("C", cmdline="a"), 0.0),
        (PromptMark("C", cmdline="b"), 4.0),
        (PromptMark("D", exit_status=0), 5.0),
    ]
    assert track(marks) == [FinishedCommand("b", 0, 4.0, 5.0)]


def test_running() -> None:
    tracker = CommandTracker()
    assert not tracker.running
    tracker.feed(PromptMark("C"), 0)
    assert tracker.running
    tracker.feed(PromptMark("D"), 1)
    assert not tracker.running


marks = st.builds(
    PromptMark,
    st.sampled_from(["A", "B", "C", "D", "E"]),
    st.one_of(st.none(), st.integers(0, 255)),
    st.one_of(st.none(), st.sampled_from(["ls", "make"])),
)


@SETTINGS
@given(st.lists(marks, max_size=30))
def test_every_finished_command_pairs_a_c_with_the_next_d(stream: list[PromptMark]) -> None:
    timed = [(mark, float(index)) for index, mark in enumerate(stream)]
    finished = track(timed)
    expected_ends = []
    started: float | None = None
    for mark, now in timed:
        if mark.kind == "A":
            started = None
        elif mark.kind == "C":
            started = now
        elif mark.kind == "D":
            if started is not None:
                expected_ends.append((started, now, mark.exit_status))
            started = None
    assert [(f.started_at, f.ended_at, f.exit_status) for f in finished] == expected_ends
