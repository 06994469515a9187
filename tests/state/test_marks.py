"""The tray's own marks file: what it keeps, across restarts, and what it lets go."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from tray.core.view.overview import Mutes
from tray.core.worker.marks import AppMemory, forget_missing
from tray.state.marks_file import FILE_NAME, SavedMarks, load_marks, save_marks

LOG = logging.getLogger("tray.test.memory")
NOW = 10_000.0


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / FILE_NAME


def test_everything_survives_a_restart(path: Path) -> None:
    memory = AppMemory(seen={"a": 5.0}, dismissed=frozenset({"b"}))
    mutes = Mutes(paused_until=NOW + 60, snoozed={"a": NOW + 3600, "c": NOW + 10})
    save_marks(path, memory, mutes)
    assert load_marks(path, LOG) == (memory, mutes)
    assert load_marks(path, LOG, now=NOW) == (memory, mutes)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_resume_is_saved_as_no_pause(path: Path) -> None:
    save_marks(path, AppMemory(), Mutes())
    assert json.loads(path.read_text())["paused_until"] is None
    assert load_marks(path, LOG).mutes.paused_until is None


def test_snoozes_that_ran_out_are_left_behind_on_load(path: Path) -> None:
    save_marks(path, AppMemory(), Mutes(snoozed={"a": NOW + 1, "b": NOW, "c": NOW - 100}))
    assert load_marks(path, LOG, now=NOW).mutes.snoozed == {"a": NOW + 1}


def test_a_file_from_before_snoozes_still_loads(path: Path) -> None:
    path.write_text(json.dumps({"version": 1, "seen": {"a": 1.5}, "dismissed": []}))
    assert load_marks(path, LOG) == SavedMarks(AppMemory(seen={"a": 1.5}), Mutes())


def test_unusable_snooze_times_are_skipped(path: Path) -> None:
    document = {
        "version": 1,
        "snoozed": {"a": NOW + 5, "b": "soon", "c": None, "d": True, "e": float("inf")},
    }
    path.write_text(json.dumps(document))
    assert load_marks(path, LOG).mutes.snoozed == {"a": NOW + 5}


def test_a_missing_or_broken_file_is_an_empty_memory(
    path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert load_marks(path, LOG) == SavedMarks()
    path.write_text("{not json")
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        assert load_marks(path, LOG) == SavedMarks()
    assert "ignoring unreadable" in caplog.text


def test_forget_missing_drops_the_marks_of_gone_sessions() -> None:
    memory = AppMemory(seen={"a": 1.0, "gone": 1.0}, dismissed=frozenset({"gone"}))
    kept = forget_missing(memory, {"a", "b"})
    assert kept.seen == {"a": 1.0}
    assert kept.dismissed == frozenset()


def test_forget_missing_returns_the_same_memory_when_nothing_goes() -> None:
    memory = AppMemory(seen={"a": 1.0}, dismissed=frozenset({"a"}))
    assert forget_missing(memory, {"a"}) is memory
