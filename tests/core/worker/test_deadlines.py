"""The worker's one clock of deadlines, and when it refreshes, on a clock the test turns.

:func:`run` plays the worker's loop as it is in tray.app.main: each pass asks the
schedule what is due, refreshes if anything is, and otherwise sleeps until the earliest
deadline, or the next change when it is not letting changes gather.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from tray.core.worker.deadlines import (
    CHANGES,
    MENU,
    RESCAN,
    WAKEUP,
    Deadlines,
    RefreshSchedule,
    not_before,
)

INTERVAL = 0.25
RESCAN_EVERY = 2.0
# The worker never sleeps longer than this (tray.app.main: the liveness period).
LONGEST = 2.0


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_name_holds_one_time_and_none_clears_it() -> None:
    clock = Clock(10.0)
    deadlines = Deadlines(clock)
    deadlines.set("a", 12.0)
    deadlines.set("b", 11.0)
    deadlines.set("a", 13.0)  # moved, not added
    assert deadlines.earliest() == 11.0
    assert deadlines.due(12.5) == {"b"}
    assert deadlines.due(13.0) == {"a", "b"}
    deadlines.set("b", None)
    deadlines.set("a", math.nan)
    assert deadlines.get("a") is None and deadlines.get("b") is None
    assert deadlines.earliest() is None
    assert deadlines.due(1e12) == frozenset()


def test_the_wait_is_until_the_earliest_on_its_own_clock_within_bounds() -> None:
    clock = Clock(10.0)
    deadlines = Deadlines(clock)
    assert deadlines.wait_time(LONGEST) == LONGEST  # nothing set: still wakes now and then
    deadlines.set("soon", 10.5)
    deadlines.set("later", 11.0)
    assert deadlines.wait_time(LONGEST) == 0.5
    clock.now = 10.4  # the pass's work took its time: the wait is measured after it
    assert math.isclose(deadlines.wait_time(LONGEST), 0.1)
    clock.now = 20.0  # overdue: at once, never a negative wait
    assert deadlines.wait_time(LONGEST) == 0.0
    clock.now = -1000.0  # a wall clock set back: the wait stays bounded
    assert deadlines.wait_time(LONGEST) == LONGEST


def test_not_before_puts_a_time_off_and_keeps_none() -> None:
    assert not_before(None, 5.0) is None
    assert not_before(3.0, 5.0) == 5.0
    assert not_before(7.0, 5.0) == 7.0


@dataclass
class Worker:
    """What the played worker did: when it refreshed, whether it read every file, and
    what was due."""

    refreshes: list[tuple[float, bool, set[str]]] = field(default_factory=list)

    def times(self) -> list[float]:
        return [moment for moment, _, _ in self.refreshes]


def run(
    until: float,
    *,
    changes: Sequence[float] = (),
    wakeups: Sequence[float] = (),
    held: float | None = None,
    watching: bool = True,
    interval: float = INTERVAL,
) -> Worker:
    """The worker's loop from time 0 to ``until``. ``wakeups``: when the policy wants a
    look (each served by the first refresh at or after it); ``held``: a menu change held
    until then (served likewise)."""
    clock = Clock()
    schedule = RefreshSchedule(clock, RESCAN_EVERY, interval)
    worker = Worker()
    to_come = sorted(changes)
    asked = sorted(wakeups)
    menu = held
    for _ in range(100_000):
        while to_come and to_come[0] <= clock.now:
            to_come.pop(0)
            schedule.request()  # the watcher's flag, seen at the top of the pass
        due = schedule.due(clock.now, asked[0] if asked else None, menu)
        if due:
            rescan = schedule.begin(clock.now, due, watching=watching)
            worker.refreshes.append((clock.now, rescan, set(due)))
            asked = [moment for moment in asked if moment > clock.now]
            if menu is not None and menu <= clock.now:
                menu = None
            continue
        wake = clock.now + schedule.wait_time(LONGEST)
        if to_come and not schedule.gathering:
            wake = min(wake, to_come[0])
        if wake > until:
            return worker
        clock.now = wake
    raise AssertionError("the worker never slept")


def test_the_first_pass_reads_every_file_at_once_then_every_rescan_period() -> None:
    worker = run(5.0)
    assert worker.refreshes[0] == (0.0, True, {RESCAN})
    assert worker.times() == [0.0, 2.0, 4.0]
    assert all(rescan for _, rescan, _ in worker.refreshes)


def test_a_change_after_a_quiet_spell_refreshes_at_once_and_a_storm_gathers() -> None:
    storm = [1.0 + tick * 0.01 for tick in range(50)]  # a hundred changes a second
    worker = run(1.9, changes=storm)
    after = [(moment, due) for moment, _, due in worker.refreshes if moment >= 1.0]
    assert after[0] == (1.0, {CHANGES})  # the first at once
    # Then one per interval, each serving all the changes since the one before.
    assert [moment for moment, _ in after] == [1.0, 1.25, 1.5]
    assert all(due == {CHANGES} for _, due in after)


def test_the_timed_look_leaves_the_gate_open_for_a_change_right_after_it() -> None:
    worker = run(2.5, changes=[2.05])
    assert worker.refreshes[-2:] == [(2.0, True, {RESCAN}), (2.05, False, {CHANGES})]


def test_a_wakeup_waits_for_the_gate_and_a_future_one_is_slept_until() -> None:
    # A change at 1.0 starts the gate's interval; a reminder due at 1.1 waits for 1.25.
    worker = run(1.9, changes=[1.0], wakeups=[1.1, 1.7])
    assert worker.refreshes[1:] == [
        (1.0, False, {CHANGES}),
        (1.25, False, {WAKEUP}),
        (1.7, False, {WAKEUP}),
    ]


def test_a_held_menu_change_is_built_at_its_time() -> None:
    worker = run(1.0, held=0.6)
    assert worker.refreshes[1:] == [(0.6, False, {MENU})]


def test_without_a_watcher_every_refresh_reads_every_file() -> None:
    worker = run(1.0, changes=[0.5])
    assert worker.refreshes[1] == (0.5, False, {CHANGES})
    blind = run(1.0, changes=[0.5], watching=False)
    assert blind.refreshes[1] == (0.5, True, {CHANGES})


def test_changes_gather_only_while_a_refresh_is_asked_for_and_the_gate_is_shut() -> None:
    clock = Clock(0.0)
    schedule = RefreshSchedule(clock, RESCAN_EVERY, INTERVAL)
    schedule.request()
    due = schedule.due(0.0, None, None)
    assert due == {CHANGES, RESCAN}
    assert schedule.begin(0.0, due, watching=True)  # one refresh, reading every file
    assert not schedule.gathering  # nothing asked: a change wakes the worker
    schedule.request()
    assert schedule.gathering  # asked, and the gate shut: changes gather
    assert schedule.due(0.1, None, None) == frozenset()
    assert schedule.deadlines.get(CHANGES) == INTERVAL
    assert schedule.due(INTERVAL, None, None) == {CHANGES}


@given(
    st.lists(st.floats(min_value=0, max_value=8, allow_nan=False), max_size=120),
    st.lists(st.floats(min_value=0, max_value=8, allow_nan=False), max_size=10),
)
def test_every_change_and_wakeup_is_served_within_an_interval_and_refreshes_are_spaced(
    changes: list[float], wakeups: list[float]
) -> None:
    worker = run(10.0, changes=changes, wakeups=wakeups)
    asked = [r for r in worker.refreshes if r[2] != {RESCAN}]
    for earlier, later in itertools.pairwise(asked):
        assert later[0] - earlier[0] >= INTERVAL - 1e-9
    times = worker.times()
    for moment in [*changes, *wakeups]:
        served = [t for t in times if t >= moment]
        assert served, moment
        assert served[0] - moment <= INTERVAL + 1e-9
