"""The tray's own memory file: what it keeps, across restarts, and what it lets go."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from tray.core.view.marks import forget_missing, snooze, unsnooze
from tray.core.view.overview import AppMemory
from tray.state.marks_file import FILE_NAME, load_memory, save_memory

LOG = logging.getLogger("tray.test.memory")
NOW = 10_000.0


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / FILE_NAME


def test_everything_survives_a_restart(path: Path) -> None:
    memory = AppMemory(
        seen={"a": 5.0},
        dismissed=frozenset({"b"}),
        paused_until=NOW + 60,
        snoozed={"a": NOW + 3600, "c": NOW + 10},
    )
    save_memory(path, memory)
    assert load_memory(path, LOG) == memory
    assert load_memory(path, LOG, now=NOW) == memory
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_snoozes_that_ran_out_are_left_behind_on_load(path: Path) -> None:
    save_memory(path, AppMemory(snoozed={"a": NOW + 1, "b": NOW, "c": NOW - 100}))
    assert load_memory(path, LOG, now=NOW).snoozed == {"a": NOW + 1}


def test_a_file_from_before_snoozes_still_loads(path: Path) -> None:
    path.write_text(json.dumps({"version": 1, "seen": {"a": 1.5}, "dismissed": []}))
    assert load_memory(path, LOG) == AppMemory(seen={"a": 1.5})


def test_unusable_snooze_times_are_skipped(path: Path) -> None:
    document = {
        "version": 1,
        "snoozed": {"a": NOW + 5, "b": "soon", "c": None, "d": True, "e": float("inf")},
    }
    path.write_text(json.dumps(document))
    assert load_memory(path, LOG).snoozed == {"a": NOW + 5}


def test_a_missing_or_broken_file_is_an_empty_memory(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert load_memory(path, LOG) == AppMemory()
    path.write_text("{not json")
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        assert load_memory(path, LOG) == AppMemory()
    assert "ignoring unreadable" in caplog.text


def test_snooze_and_unsnooze() -> None:
    memory = snooze(AppMemory(), ["a", "b"], NOW + 3600)
    assert memory.snoozed == {"a": NOW + 3600, "b": NOW + 3600}
    # A second snooze never shortens one in place.
    memory = snooze(memory, ["a"], NOW + 60)
    assert memory.snoozed["a"] == NOW + 3600
    memory = snooze(memory, ["b"], NOW + 7200)
    assert memory.snoozed["b"] == NOW + 7200
    assert unsnooze(memory, "a").snoozed == {"b": NOW + 7200}
    assert unsnooze(memory, "zz").snoozed == memory.snoozed


def test_forget_missing_drops_snoozes_of_gone_sessions_and_expired_ones() -> None:
    memory = AppMemory(
        seen={"a": 1.0, "gone": 1.0},
        dismissed=frozenset({"gone"}),
        snoozed={"a": NOW + 10, "b": NOW - 1, "gone": NOW + 10},
    )
    kept = forget_missing(memory, {"a", "b"})
    assert kept.seen == {"a": 1.0}
    assert kept.dismissed == frozenset()
    assert kept.snoozed == {"a": NOW + 10, "b": NOW - 1}
    assert forget_missing(memory, {"a", "b"}, now=NOW).snoozed == {"a": NOW + 10}


def test_forget_missing_returns_the_same_memory_when_nothing_goes() -> None:
    memory = AppMemory(seen={"a": 1.0}, snoozed={"a": NOW + 10})
    assert forget_missing(memory, {"a"}, now=NOW) is memory
    assert forget_missing(memory, {"a"}) is memory
