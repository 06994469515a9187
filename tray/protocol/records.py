"""The record table of one terminal session, as ``protocol.md`` defines it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from tray.protocol.report import CLEAR, Report
from tray.protocol.state import FINISHED, State, most_urgent

CAPACITY = 256


@dataclass(frozen=True, slots=True)
class Record:
    """A record as read back: ``app`` is the effective app after inheritance.

    ``since`` is since when the record has said what it says now: a report that repeats
    it does not move this, any change does. The policy's settle counts from here, so
    sampling the state file can never make a flapping prompt look steady.
    """

    id: str
    state: State
    kind: str | None
    progress: int | None
    app: str | None
    title: str | None
    msg: str | None
    updated_at: float
    since: float | None = None


def _ancestors(record_id: str) -> list[str]:
    """Nearest first, ending with the root ``""``."""
    if not record_id:
        return []
    parts = record_id.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)] + [""]


class RecordTable:
    """Insertion order is update order, so the first entry is the least recently updated.

    >>> table = RecordTable()
    >>> table.apply(Report(State.WORKING, app="codex"), now=100.0)
    >>> table.apply(Report(State.BLOCKED, "build", "permission"), now=101.0)
    >>> table.state()
    'blocked'

    A record without an app takes its nearest ancestor's:

    >>> [(record.id, record.state, record.app) for record in table.records()]
    [('', 'working', 'codex'), ('build', 'blocked', 'codex')]

    A report that repeats a record keeps its ``since``; any change moves it:

    >>> table.apply(Report(State.BLOCKED, "build", "permission"), now=105.0)
    >>> table.records()[1].since
    101.0

    The end of a run keeps only the finished records:

    >>> table.apply(Report(State.DONE, "test"), now=110.0)
    >>> table.end_of_run()
    True
    >>> [record.id for record in table.records()]
    ['test']
    """

    __slots__ = ("_records",)

    def __init__(self) -> None:
        # id -> (report, updated_at, since); never a report of CLEAR, which apply takes
        self._records: dict[str, tuple[Report, float, float]] = {}

    def __len__(self) -> int:
        return len(self._records)

    def apply(self, report: Report, now: float) -> None:
        if report.state == CLEAR:
            self._clear(report.id)
            return
        since = now
        previous = self._records.pop(report.id, None)
        if previous is not None:
            if previous[0] == report:
                since = previous[2]
        elif len(self._records) >= CAPACITY:
            del self._records[next(iter(self._records))]
        self._records[report.id] = (report, now, since)

    def _clear(self, record_id: str) -> None:
        if not record_id:
            self._records.clear()
            return
        prefix = record_id + "/"
        for key in [k for k in self._records if k == record_id or k.startswith(prefix)]:
            del self._records[key]

    def end_of_run(self) -> bool:
        """The program exited or a new prompt began: drop all but done and error.

        Returns whether anything was dropped.
        """
        doomed = [k for k, (r, _, _) in self._records.items() if r.state not in FINISHED]
        for key in doomed:
            del self._records[key]
        return bool(doomed)

    def reset(self) -> bool:
        had = bool(self._records)
        self._records.clear()
        return had

    def records(self) -> list[Record]:
        """Every record, sorted by id, with app inheritance resolved."""
        result = []
        for record_id in sorted(self._records):
            report, updated_at, since = self._records[record_id]
            app = report.app
            if app is None:
                for ancestor in _ancestors(record_id):
                    entry = self._records.get(ancestor)
                    if entry is not None and entry[0].app is not None:
                        app = entry[0].app
                        break
            result.append(
                Record(
                    record_id,
                    cast(State, report.state),  # apply keeps no report of CLEAR
                    report.kind,
                    report.progress,
                    app,
                    report.title,
                    report.msg,
                    updated_at,
                    since,
                )
            )
        return result

    def state(self) -> State | None:
        return most_urgent([entry[0].state for entry in self._records.values()])
