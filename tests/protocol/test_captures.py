"""Golden inputs end to end: protocol.md's examples and real agents' byte streams.

Each goes through the scanner, the parser and the record table, whole and split across
reads, and must give exactly the listed outcome, with everything else passed through.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.data import split_at

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
from tray.protocol.records import Record, RecordTable
from tray.protocol.report import Report, parse_body
from tray.protocol.scanner import Scanner
from tray.protocol.state import State

# Byte-identical copies of the project's golden captures, pinned by their sha256 below.
CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
CAPTURE_SHA256 = {
    "claude-code-2.1.328.bin": "ccf0c51a87d6f71ddc9d39358a13e2cdc340154c064676471e2f96ba365ad1b4",
    "codex-0.169.0.bin": "e91bff7a4bba46319a9a144be266f47cc7623e766e87298a82f91744d77470de",
}

BEL = b"\x07"
ST = b"\x1b\\"
QUERY_BEL = b"\x1b]7501;?\x07"
QUERY_ST = b"\x1b]7501;?\x1b\\"
SIGNALS = (Bell, Osc, FocusReporting, CursorQuery)


@dataclass
class Outcome:
    output: bytes = b""
    events: list[Event] = field(default_factory=list)  # those the record table acts on
    # Bell, Osc, FocusReporting and CursorQuery: attention signals, not the table's.
    signals: list[Event] = field(default_factory=list)
    titles: list[bytes] = field(default_factory=list)  # OSC 0 and 2, for agents' rules
    reports: list[Report | None] = field(default_factory=list)  # one per RawReport
    snapshots: list[list[Record]] = field(default_factory=list)  # the table after each event
    records: list[Record] = field(default_factory=list)


def run(chunks: Iterable[bytes], titles: bool = False) -> Outcome:
    """The launcher's path for one session, with event numbers standing in for the clock;
    ``titles``: as for an agent whose rules read its titles."""
    scanner = Scanner(titles=titles)
    table = RecordTable()
    outcome = Outcome()
    output = bytearray()
    for chunk in chunks:
        result = scanner.feed(chunk)
        output += result.output
        for event in result.events:
            if isinstance(event, Title):
                outcome.titles.append(event.text)
                continue
            if isinstance(event, SIGNALS):
                outcome.signals.append(event)
                continue
            now = float(len(outcome.events))
            outcome.events.append(event)
            if isinstance(event, RawReport):
                report = parse_body(event.body)
                outcome.reports.append(report)
                if report is not None:
                    table.apply(report, now)
            elif isinstance(event, PromptStart):
                table.end_of_run()
            elif isinstance(event, FullReset):
                table.reset()
            outcome.snapshots.append(table.records())
    output += scanner.finish()
    outcome.output = bytes(output)
    outcome.records = table.records()
    return outcome


def check(stream: bytes) -> Outcome:
    """The outcome of ``stream``, after making sure every way of splitting it agrees."""
    whole = run([stream])
    for cut in range(len(stream) + 1):
        assert run([stream[:cut], stream[cut:]]) == whole, cut
    rng = random.Random(len(stream))
    for _ in range(60):
        cuts = [rng.randrange(len(stream) + 1) for _ in range(2)]
        assert run(split_at(stream, cuts)) == whole, cuts
    assert run([stream[i : i + 1] for i in range(len(stream))]) == whole
    return whole


def titles_in(data: bytes) -> list[bytes]:
    """Every OSC 0 and 2 title in ``data``, found by a regular expression of its own."""
    found = re.findall(rb"\x1b\][02];([^\x07\x1b]*)(?:\x07|\x1b\\)", data)
    assert found, "the captures set titles"
    return found


def rec(
    record_id: str,
    state: State,
    at: float,
    *,
    kind: str | None = None,
    progress: int | None = None,
    app: str | None = None,
    title: str | None = None,
    msg: str | None = None,
    since: float | None = None,
) -> Record:
    # Every record here last changed when it was last updated, unless a test says so.
    return Record(
        record_id, state, kind, progress, app, title, msg, at, at if since is None else since
    )


def e(text: str) -> bytes:
    """protocol.md's notation: E is ESC, BEL and ST are the terminators."""
    return text.replace("BEL", "\x07").replace("ST", "\x1b\\").replace("E]", "\x1b]").encode()


def only_report(stream: bytes) -> tuple[Outcome, Report | None]:
    outcome = check(stream)
    assert outcome.output == stream
    assert len(outcome.reports) == 1
    return outcome, outcome.reports[0]


# --- protocol.md examples 1 to 20 --------------------------------------------------------------


def test_example_01_blocked_with_permission_app_and_msg() -> None:
    outcome, report = only_report(
        e(
            "E]7501;state=blocked:kind=permission:app=terraform:"
            "msg=QXBwbHkgMyB0byBhZGQsIDEgdG8gY2hhbmdlLCAwIHRvIGRlc3Ryb3k/ST"
        )
    )
    message = "Apply 3 to add, 1 to change, 0 to destroy?"
    assert report == Report(State.BLOCKED, "", "permission", None, "terraform", None, message)
    assert outcome.records == [
        rec("", State.BLOCKED, 0, kind="permission", app="terraform", msg=message)
    ]


def test_example_02_unpadded_base64() -> None:
    outcome, report = only_report(e("E]7501;state=done:msg=UGxhbgBEL"))
    assert report == Report(State.DONE, msg="Plan")
    assert outcome.records == [rec("", State.DONE, 0, msg="Plan")]


def test_example_03_space_and_tab_trimmed() -> None:
    outcome, report = only_report(e("E]7501; state = working :\tapp=cargo\tST"))
    assert report == Report(State.WORKING, app="cargo")
    assert outcome.records == [rec("", State.WORKING, 0, app="cargo")]


def test_example_04_last_pair_wins() -> None:
    outcome, report = only_report(e("E]7501;state=idle:app=a:state=done:app=bST"))
    assert report == Report(State.DONE, app="b")
    assert outcome.records == [rec("", State.DONE, 0, app="b")]


def test_example_05_malformed_and_unknown_pairs_skipped() -> None:
    outcome, report = only_report(
        e("E]7501;garbage:=x:Bad=1:app=b@d:future=yes:state=working:app=ok:::ST")
    )
    assert report == Report(State.WORKING, app="ok")
    assert outcome.records == [rec("", State.WORKING, 0, app="ok")]


def test_example_06_kind_ignored_unless_blocked() -> None:
    outcome, report = only_report(e("E]7501;state=working:kind=auth:progress=10ST"))
    assert report == Report(State.WORKING, progress=10)
    assert outcome.records == [rec("", State.WORKING, 0, progress=10)]


def test_example_07_no_kind_no_progress_when_done() -> None:
    outcome, report = only_report(e("E]7501;state=done:kind=auth:progress=10ST"))
    assert report == Report(State.DONE)
    assert outcome.records == [rec("", State.DONE, 0)]


def test_example_08_unknown_kind_and_leading_zeros() -> None:
    outcome, report = only_report(e("E]7501;state=blocked:kind=dance:progress=007ST"))
    assert report == Report(State.BLOCKED, progress=7)
    assert outcome.records == [rec("", State.BLOCKED, 0, progress=7)]


def test_example_09_newline_in_msg_discards() -> None:
    outcome, report = only_report(e("E]7501;state=done:msg=YQpiST"))
    assert report is None
    assert outcome.records == []


def test_example_10_bad_padding_discards() -> None:
    outcome, report = only_report(e("E]7501;state=done:msg=QQ=ST"))
    assert report is None
    assert outcome.records == []


def test_example_11_wrong_case_or_missing_state_discards() -> None:
    stream = e("E]7501;state=IDLESTE]7501;app=cargoST")
    outcome = check(stream)
    assert outcome.output == stream
    assert outcome.reports == [None, None]
    assert outcome.records == []


def test_example_12_invalid_id_discards() -> None:
    stream = e("E]7501;state=working:id=a//bSTE]7501;state=clear:id=a/b/c/d/e/f/g/h/iST")
    outcome = check(e("E]7501;state=done:id=a/bST") + stream)
    assert outcome.reports[1:] == [None, None]
    # Neither fell back to the root, and the clear did not clear.
    assert outcome.records == [rec("a/b", State.DONE, 0)]


def test_example_13_utf8_msg() -> None:
    outcome, report = only_report(e("E]7501;state=done:msg=5a6J5YWoST"))
    assert report == Report(State.DONE, msg="\u5b89\u5168")
    assert outcome.records == [rec("", State.DONE, 0, msg="\u5b89\u5168")]


def test_example_14_clear_keeps_siblings_that_share_a_prefix() -> None:
    stream = e(
        "E]7501;state=working:id=buildST"
        "E]7501;state=working:id=build/testST"
        "E]7501;state=done:id=builderST"
        "E]7501;state=idleST"
        "E]7501;state=clear:id=buildST"
    )
    outcome = check(stream)
    assert outcome.output == stream
    assert outcome.snapshots[3] == [
        rec("", State.IDLE, 3),
        rec("build", State.WORKING, 0),
        rec("build/test", State.WORKING, 1),
        rec("builder", State.DONE, 2),
    ]
    assert outcome.records == [rec("", State.IDLE, 3), rec("builder", State.DONE, 2)]


def test_example_15_app_inherited_from_the_root() -> None:
    stream = e("E]7501;state=working:app=terraformSTE]7501;state=working:id=deploy/euST")
    outcome = check(stream)
    assert outcome.reports[1] == Report(State.WORKING, "deploy/eu")
    assert outcome.records == [
        rec("", State.WORKING, 0, app="terraform"),
        rec("deploy/eu", State.WORKING, 1, app="terraform"),
    ]


def test_example_16_query_answered_with_its_terminator() -> None:
    outcome = check(b"a" + QUERY_BEL + b"b" + QUERY_ST + b"c")
    assert outcome.output == b"abc"
    assert outcome.events == [Query(QUERY_BEL), Query(QUERY_ST)]
    for not_a_query in (e("E]7501;??ST"), e("E]7501;?xST")):
        outcome = check(not_a_query)
        assert outcome.output == not_a_query
        assert not any(isinstance(event, Query) for event in outcome.events)
        assert outcome.reports == [None]


def test_example_17_split_reads_give_the_same_outcome() -> None:
    stream = e(
        "E]7501;state=working:app=cargo:progress=5BEL"
        "E]7501;?BEL\x1b[cE]7501;state=blocked:id=t:kind=question:msg=V2hpY2g/ST"
        "E]133;ABELE]7501;state=error:id=t/uBEL"
    )
    whole = run([stream])
    assert whole.records == [rec("t/u", State.ERROR, 4)]
    assert whole.output == stream.replace(QUERY_BEL, b"")
    # check() feeds it split at every byte boundary, in random pieces and byte by byte.
    assert check(stream) == whole


def test_example_18_cancelled_report_applies_nothing() -> None:
    stream = e("E]7501;state=done:id=xBEL") + e("E]7501;state=clear") + b"\x18"
    outcome = check(stream)
    assert outcome.output == stream
    assert outcome.events == [RawReport(b"state=done:id=x")]
    assert outcome.records == [rec("x", State.DONE, 0)]
    for cancel in (b"\x18", b"\x1a"):
        assert check(e("E]7501;state=working") + cancel).records == []


@pytest.mark.parametrize("terminator", [BEL, ST])
def test_example_19_4096_bytes_apply_and_4097_do_not(terminator: bytes) -> None:
    head = b"\x1b]7501;state=done:app=big:pad="
    fits = head + b"p" * (4096 - len(head) - len(terminator)) + terminator
    too_long = head + b"p" * (4097 - len(head) - len(terminator)) + terminator
    assert (len(fits), len(too_long)) == (4096, 4097)
    outcome = check(fits)
    assert outcome.output == fits
    assert outcome.records == [rec("", State.DONE, 0, app="big")]
    outcome = check(too_long)
    assert outcome.output == too_long
    assert outcome.events == []
    assert outcome.records == []


def test_example_20_prompt_start_keeps_only_done_and_error() -> None:
    stream = e(
        "E]7501;state=idle:id=iBEL"
        "E]7501;state=working:id=wBEL"
        "E]7501;state=done:id=dBEL"
        "E]7501;state=blocked:id=b:kind=authBEL"
        "E]7501;state=error:id=eBEL"
        "E]133;ABEL"
    )
    outcome = check(stream)
    assert outcome.output == stream
    assert [r.id for r in outcome.snapshots[4]] == ["b", "d", "e", "i", "w"]
    assert outcome.records == [rec("d", State.DONE, 2), rec("e", State.ERROR, 4)]


def test_full_reset_removes_every_record_and_soft_resets_change_nothing() -> None:
    kept = e("E]7501;state=done:id=dBEL") + b"\x1b[!p\x1b[?1049h\x1b[?1049l"
    assert check(kept).records == [rec("d", State.DONE, 0)]
    assert check(kept + b"\x1bc").records == []


# --- real captures ----------------------------------------------------------------------------


def capture(name: str) -> bytes:
    path = CAPTURES / name
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == CAPTURE_SHA256[name], f"{path} was changed"
    return data


def sequence_windows(data: bytes, margin: int = 6) -> list[int]:
    """Every cut point in and around each OSC 7501 sequence."""
    points: set[int] = set()
    start = data.find(b"\x1b]7501;")
    while start != -1:
        end = min(i for i in (data.find(BEL, start), data.find(ST, start) + 1) if i > 0)
        points.update(range(max(0, start - margin), min(len(data), end + 1 + margin) + 1))
        start = data.find(b"\x1b]7501;", start + 1)
    return sorted(points)


def assert_golden(data: bytes, expected: Outcome) -> None:
    whole = run([data])
    assert whole.output == expected.output
    assert whole.events == expected.events
    assert whole.signals == expected.signals
    assert whole.reports == expected.reports
    assert whole.snapshots == expected.snapshots
    windows = sequence_windows(data)
    assert len(windows) > 100
    for cut in windows:
        assert run([data[:cut], data[cut:]]) == whole, cut
    # Every cut point is cheap enough to try as well.
    for cut in range(len(data) + 1):
        assert run([data[:cut], data[cut:]]) == whole, cut
    rng = random.Random(7501)
    for _ in range(40):
        cuts = [rng.randrange(len(data) + 1) for _ in range(rng.randrange(2, 60))]
        assert run(split_at(data, cuts)) == whole, cuts
    for size in (1, 2, 3, 7, 64, 1024):
        assert run([data[i : i + size] for i in range(0, len(data), size)]) == whole, size


def test_captures_directory_holds_both_streams() -> None:
    assert capture("claude-code-2.1.328.bin")
    assert capture("codex-0.169.0.bin")


def test_claude_code_capture() -> None:
    data = capture("claude-code-2.1.328.bin")
    assert data.count(QUERY_BEL) == 1
    assert data.count(b"\x1b[?1004h") == 1
    assert data.count(b"\x1b[?1004l") == 2
    message = "approve Bash: touch approved-file"
    bodies = [
        b"state=working:app=claude-code",
        b"state=blocked:app=claude-code:kind=permission:msg=YXBwcm92ZSBCYXNoOiB0b3VjaCBhcHByb3ZlZC1maWxl",
        b"state=working:app=claude-code",
        b"state=done:app=claude-code",
        b"state=clear",
        b"state=clear",
    ]
    expected = Outcome(
        output=data.replace(QUERY_BEL, b""),
        events=[Query(QUERY_BEL), *(RawReport(body) for body in bodies)],
        # On at start, off as it exits (twice); no bell, no notification.
        signals=[FocusReporting(True), FocusReporting(False), FocusReporting(False)],
        reports=[
            Report(State.WORKING, app="claude-code"),
            Report(State.BLOCKED, kind="permission", app="claude-code", msg=message),
            Report(State.WORKING, app="claude-code"),
            Report(State.DONE, app="claude-code"),
            Report("clear"),
            Report("clear"),
        ],
        snapshots=[
            [],
            [rec("", State.WORKING, 1, app="claude-code")],
            [rec("", State.BLOCKED, 2, kind="permission", app="claude-code", msg=message)],
            [rec("", State.WORKING, 3, app="claude-code")],
            [rec("", State.DONE, 4, app="claude-code")],
            [],
            [],
        ],
    )
    assert_golden(data, expected)


def test_codex_capture() -> None:
    data = capture("codex-0.169.0.bin")
    assert data.count(b"\x1b[?1004h") == 1
    assert data.count(b"\x1b[6n") == 1
    bodies = [
        b"state=working:app=codex",
        b"state=blocked:app=codex:kind=permission",
        b"state=working:app=codex",
        b"state=done:app=codex",
    ]
    expected = Outcome(
        output=data,
        events=[RawReport(body) for body in bodies],
        # On at start, then a cursor position query; no bell, no notification.
        signals=[FocusReporting(True), CursorQuery()],
        reports=[
            Report(State.WORKING, app="codex"),
            Report(State.BLOCKED, kind="permission", app="codex"),
            Report(State.WORKING, app="codex"),
            Report(State.DONE, app="codex"),
        ],
        snapshots=[
            [rec("", State.WORKING, 0, app="codex")],
            [rec("", State.BLOCKED, 1, kind="permission", app="codex")],
            [rec("", State.WORKING, 2, app="codex")],
            [rec("", State.DONE, 3, app="codex")],
        ],
    )
    assert_golden(data, expected)


@pytest.mark.parametrize("name", ["claude-code-2.1.328.bin", "codex-0.169.0.bin"])
def test_a_scanner_asked_for_titles_finds_each_and_changes_nothing_else(name: str) -> None:
    data = capture(name)
    plain = run([data])
    assert plain.titles == []
    titled = run([data], titles=True)
    assert titled.titles == titles_in(data)
    assert dataclasses.replace(titled, titles=[]) == plain
    cut = len(data) // 3
    assert run([data[:cut], data[cut:]], titles=True) == titled
