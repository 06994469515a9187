"""The record table: replace, clear, lifetime, capacity, inheritance, order and urgency."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import cast

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from tray.protocol.records import CAPACITY, Record, RecordTable
from tray.protocol.report import KINDS, STATES, Report
from tray.protocol.state import FINISHED, URGENCY, State, most_urgent


def table_of(*reports: Report) -> RecordTable:
    table = RecordTable()
    for now, report in enumerate(reports):
        table.apply(report, float(now))
    return table


def ids(table: RecordTable) -> list[str]:
    return [record.id for record in table.records()]


def apps(table: RecordTable) -> dict[str, str | None]:
    return {record.id: record.app for record in table.records()}


# --- replace and clear -------------------------------------------------------------------------


def test_a_report_replaces_its_record_whole() -> None:
    table = RecordTable()
    table.apply(Report(State.BLOCKED, "t", "permission", 40, "cargo", "Build", "Approve?"), 1.0)
    assert table.records() == [
        Record("t", State.BLOCKED, "permission", 40, "cargo", "Build", "Approve?", 1.0, 1.0)
    ]
    table.apply(Report(State.WORKING, "t"), 2.0)
    assert table.records() == [Record("t", State.WORKING, None, None, None, None, None, 2.0, 2.0)]
    assert len(table) == 1


def test_records_are_separate_per_id() -> None:
    table = table_of(Report(State.WORKING, "a", app="x"), Report(State.DONE, "b", msg="m"))
    assert table.records() == [
        Record("a", State.WORKING, None, None, "x", None, None, 0.0, 0.0),
        Record("b", State.DONE, None, None, None, None, "m", 1.0, 1.0),
    ]


def test_clear_removes_the_id_and_everything_under_it() -> None:
    table = table_of(
        Report(State.WORKING, "build"),
        Report(State.WORKING, "build/test"),
        Report(State.WORKING, "builder"),
        Report(State.IDLE),
    )
    table.apply(Report("clear", "build"), 9.0)
    assert ids(table) == ["", "builder"]


@pytest.mark.parametrize(
    ("cleared", "kept"),
    [
        ("a", ["", "a.b", "a.b/c", "ab", "b", "b/a"]),
        ("a/b", ["", "a", "a.b", "a.b/c", "ab", "b", "b/a"]),
        ("a.b", ["", "a", "a/b", "a/b/c", "ab", "b", "b/a"]),
        ("b", ["", "a", "a.b", "a.b/c", "a/b", "a/b/c", "ab"]),
        ("a/b/c", ["", "a", "a.b", "a.b/c", "a/b", "ab", "b", "b/a"]),
        ("zz", ["", "a", "a.b", "a.b/c", "a/b", "a/b/c", "ab", "b", "b/a"]),
        ("", []),
    ],
)
def test_clear_goes_by_whole_segments(cleared: str, kept: list[str]) -> None:
    every = ["", "a", "a/b", "a/b/c", "a.b", "a.b/c", "ab", "b", "b/a"]
    table = table_of(*(Report(State.DONE, record_id) for record_id in every))
    table.apply(Report("clear", cleared), 99.0)
    assert ids(table) == kept


def test_clearing_an_id_without_a_record_is_fine() -> None:
    table = table_of(Report(State.DONE, "x"))
    table.apply(Report("clear", "nothing/here"), 5.0)
    assert ids(table) == ["x"]
    empty = RecordTable()
    empty.apply(Report("clear"), 1.0)
    empty.apply(Report("clear", "a"), 1.0)
    assert empty.records() == []
    assert empty.state() is None


def test_clear_never_creates_a_record() -> None:
    table = RecordTable()
    table.apply(Report("clear", "a", app="x", msg="m"), 1.0)
    assert len(table) == 0


# --- lifetime and reset --------------------------------------------------------------------------


def test_end_of_run_keeps_only_done_and_error() -> None:
    table = table_of(*(Report(state, state) for state in STATES))
    assert table.end_of_run() is True
    assert ids(table) == sorted(FINISHED)
    assert table.end_of_run() is False
    assert ids(table) == ["done", "error"]


def test_end_of_run_on_an_empty_table() -> None:
    assert RecordTable().end_of_run() is False


def test_reset_removes_everything() -> None:
    table = table_of(*(Report(state, state) for state in STATES))
    assert table.reset() is True
    assert table.records() == []
    assert table.reset() is False


# --- capacity ------------------------------------------------------------------------------------


def test_capacity_evicts_the_least_recently_updated() -> None:
    table = RecordTable()
    for n in range(CAPACITY):
        table.apply(Report(State.WORKING, f"r{n}"), float(n))
    assert len(table) == CAPACITY
    table.apply(Report(State.WORKING, "new"), 1000.0)
    assert len(table) == CAPACITY
    assert "r0" not in ids(table)
    assert "r1" in ids(table)


def test_updating_refreshes_a_record() -> None:
    table = RecordTable()
    for n in range(CAPACITY):
        table.apply(Report(State.WORKING, f"r{n}"), float(n))
    table.apply(Report(State.DONE, "r0"), 500.0)  # r0 is now the most recent
    table.apply(Report(State.WORKING, "new"), 501.0)
    assert "r0" in ids(table)
    assert "r1" not in ids(table)


def test_replacing_an_existing_record_never_evicts() -> None:
    table = RecordTable()
    for n in range(CAPACITY):
        table.apply(Report(State.WORKING, f"r{n}"), float(n))
    before = set(ids(table))
    for n in range(CAPACITY):
        table.apply(Report(State.DONE, f"r{n}"), 1000.0 + n)
    assert set(ids(table)) == before
    assert {record.state for record in table.records()} == {"done"}


def test_clearing_frees_room() -> None:
    table = RecordTable()
    for n in range(CAPACITY):
        table.apply(Report(State.WORKING, f"r{n}"), float(n))
    table.apply(Report("clear", "r5"), 300.0)
    table.apply(Report(State.WORKING, "new"), 301.0)
    assert len(table) == CAPACITY
    assert "r0" in ids(table)


# --- inheritance, order, urgency -----------------------------------------------------------


def test_app_comes_from_the_nearest_ancestor_that_has_one() -> None:
    table = table_of(
        Report(State.WORKING, app="terraform"),
        Report(State.WORKING, "deploy/eu"),
        Report(State.WORKING, "a", app="alpha"),
        Report(State.WORKING, "a/b"),  # no app of its own: alpha
        Report(State.WORKING, "a/b/c/d"),  # a/b/c has no record; a/b has no app: alpha
        Report(State.WORKING, "a/x", app="own"),
        Report(State.WORKING, "a/x/y"),
        Report(State.WORKING, "ab"),  # not under "a": terraform
    )
    assert apps(table) == {
        "": "terraform",
        "a": "alpha",
        "a/b": "alpha",
        "a/b/c/d": "alpha",
        "a/x": "own",
        "a/x/y": "own",
        "ab": "terraform",
        "deploy/eu": "terraform",
    }


def test_app_is_resolved_when_read() -> None:
    table = table_of(Report(State.WORKING, "deploy/eu"))
    assert apps(table) == {"deploy/eu": None}
    table.apply(Report(State.WORKING, app="terraform"), 5.0)
    assert apps(table)["deploy/eu"] == "terraform"
    table.apply(Report(State.WORKING, app="pulumi"), 6.0)
    assert apps(table)["deploy/eu"] == "pulumi"
    table.apply(Report(State.WORKING), 7.0)
    assert apps(table) == {"": None, "deploy/eu": None}
    table.apply(Report(State.WORKING, "deploy", app="helm"), 8.0)
    assert apps(table)["deploy/eu"] == "helm"
    table.apply(Report("clear", "deploy"), 9.0)
    assert apps(table) == {"": None}


def test_records_are_sorted_by_id() -> None:
    order = ["z", "a/b", "", "a.b", "a", "B", "a/a", "0"]
    table = table_of(*(Report(State.IDLE, record_id) for record_id in order))
    assert ids(table) == sorted(order)
    assert ids(table)[0] == ""


@pytest.mark.parametrize(("more", "less"), list(itertools.combinations(URGENCY, 2)))
def test_urgency_order(more: State, less: State) -> None:
    assert URGENCY == ("blocked", "error", "working", "done", "idle")
    assert most_urgent([less, more]) == more
    assert most_urgent([more, less, less]) == more
    assert table_of(Report(less, "a"), Report(more, "b")).state() == more
    assert table_of(Report(more, "a"), Report(less, "b")).state() == more


def test_most_urgent_of_nothing() -> None:
    assert most_urgent([]) is None
    assert RecordTable().state() is None


def test_root_done_while_a_child_works_is_working() -> None:
    table = table_of(Report(State.DONE), Report(State.WORKING, "task"))
    assert table.state() == "working"


def test_since_holds_while_a_record_repeats_itself_and_moves_on_any_change() -> None:
    table = RecordTable()
    blocked = Report(State.BLOCKED, "", "permission", msg="approve?")
    table.apply(blocked, 1.0)
    table.apply(blocked, 2.0)
    assert [(r.updated_at, r.since) for r in table.records()] == [(2.0, 1.0)]
    table.apply(Report(State.BLOCKED, "", "permission", msg="approve!"), 3.0)
    assert [r.since for r in table.records()] == [3.0]
    # Flapping: every flip is a change, so the prompt is never older than its last flip.
    for step in range(10):
        table.apply(blocked if step % 2 else Report(State.WORKING), 4.0 + step)
        assert [r.since for r in table.records()] == [4.0 + step]
    table.apply(Report("clear"), 20.0)
    table.apply(blocked, 21.0)
    assert [r.since for r in table.records()] == [21.0]


# --- model-based ----------------------------------------------------------------------------


@dataclass
class Entry:
    report: Report
    updated_at: float
    touched: int  # when it was last updated, for eviction
    since: float  # when it last said something else


def under(record_id: str, cleared: str) -> bool:
    """Whether ``record_id`` is ``cleared`` or below it, compared segment by segment."""
    if not cleared:
        return True
    whole, part = record_id.split("/"), cleared.split("/")
    return whole[: len(part)] == part


class Model:
    """The table's rules restated as plainly as possible."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.clock = 0

    def apply(self, report: Report, now: float) -> None:
        self.clock += 1
        if report.state == "clear":
            for record_id in list(self.entries):
                if under(record_id, report.id):
                    del self.entries[record_id]
            return
        if report.id not in self.entries and len(self.entries) == CAPACITY:
            oldest = min(self.entries, key=lambda k: self.entries[k].touched)
            del self.entries[oldest]
        previous = self.entries.get(report.id)
        same = previous is not None and previous.report == report
        since = previous.since if previous is not None and same else now
        self.entries[report.id] = Entry(report, now, self.clock, since)

    def app_of(self, record_id: str) -> str | None:
        segments = record_id.split("/") if record_id else []
        for depth in range(len(segments), -1, -1):
            entry = self.entries.get("/".join(segments[:depth]))
            if entry is not None and entry.report.app is not None:
                return entry.report.app
        return None

    def records(self) -> list[Record]:
        return [
            Record(
                record_id,
                cast(State, entry.report.state),  # the model keeps no report of CLEAR
                entry.report.kind,
                entry.report.progress,
                self.app_of(record_id),
                entry.report.title,
                entry.report.msg,
                entry.updated_at,
                entry.since,
            )
            for record_id, entry in sorted(self.entries.items())
        ]

    def state(self) -> str | None:
        present = {entry.report.state for entry in self.entries.values()}
        for state in ("blocked", "error", "working", "done", "idle"):
            if state in present:
                return state
        return None


# Few ids, many of them prefixes of each other, so clears and inheritance meet often.
ID_POOL = ["", "a", "a/b", "a/b/c", "a/bc", "a.b", "ab", "b", "b/a"]
record_ids = st.sampled_from(ID_POOL)
states = st.sampled_from(STATES)
record_apps = st.sampled_from([None, None, "x", "y"])


@st.composite
def reports(draw: st.DrawFn) -> Report:
    state = draw(states)
    return Report(
        state,
        draw(record_ids),
        draw(st.sampled_from((None, *KINDS))) if state == "blocked" else None,
        draw(st.one_of(st.none(), st.integers(0, 100)))
        if state in ("working", "blocked")
        else None,
        draw(record_apps),
        draw(st.sampled_from([None, "t"])),
        draw(st.sampled_from([None, "m"])),
    )


class TableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.table = RecordTable()
        self.model = Model()
        self.now = 0.0
        self.flooded = 0

    def tick(self) -> float:
        self.now += 1.0
        return self.now

    @rule(report=reports())
    def apply(self, report: Report) -> None:
        now = self.tick()
        self.table.apply(report, now)
        self.model.apply(report, now)

    @rule(record_id=st.sampled_from([*ID_POOL, "flood"]))
    def clear(self, record_id: str) -> None:
        now = self.tick()
        self.table.apply(Report("clear", record_id), now)
        self.model.apply(Report("clear", record_id), now)

    @rule(
        count=st.one_of(st.integers(1, 20), st.integers(CAPACITY - 10, CAPACITY + 10)), state=states
    )
    def flood(self, count: int, state: State) -> None:
        # Enough distinct records at once to reach the capacity within a short run.
        for _ in range(count):
            self.flooded += 1
            report = Report(state, f"flood/{self.flooded}")
            now = self.tick()
            self.table.apply(report, now)
            self.model.apply(report, now)

    @rule(data=st.data())
    def touch_existing(self, data: st.DataObject) -> None:
        if not self.model.entries:
            return
        record_id = data.draw(st.sampled_from(sorted(self.model.entries)))
        report = Report(State.DONE, record_id)
        now = self.tick()
        self.table.apply(report, now)
        self.model.apply(report, now)

    @rule()
    def end_of_run(self) -> None:
        before = len(self.model.entries)
        self.model.entries = {
            k: e for k, e in self.model.entries.items() if e.report.state in ("done", "error")
        }
        assert self.table.end_of_run() == (len(self.model.entries) < before)

    @rule()
    def reset(self) -> None:
        had = bool(self.model.entries)
        self.model.entries = {}
        assert self.table.reset() == had

    @invariant()
    def agrees_with_the_model(self) -> None:
        assert self.table.records() == self.model.records()
        assert self.table.state() == self.model.state()
        assert len(self.table) == len(self.model.entries) <= CAPACITY


TableMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
test_table_against_model = TableMachine.TestCase
