"""The one re-reading loop (``tray.state.session_feed.emit_on_change``) and the one
reading of the sessions."""

from __future__ import annotations

import logging
from pathlib import Path

from tray.state.session_feed import ChangeSignal, SessionFeed, emit_on_change
from tray.state.store import StateStore

LOG = logging.getLogger("tray.test.live")


def test_a_quiet_watch_beats_and_a_changed_line_goes_out_at_once(tmp_path: Path) -> None:
    lines = iter(["a", "a", "a", "b", "b"])
    out: list[str] = []

    def line() -> str:
        return next(lines)

    emit_on_change(
        line,
        out.append,
        ChangeSignal(tmp_path / "missing", LOG),
        period=0.001,
        stopping=lambda: len(out) >= 4,
        beat=lambda: out.append("beat"),
        beat_every=0.0,
    )
    # Unchanged rounds beat instead of repeating the line; a new line is not a beat.
    assert out == ["a", "beat", "beat", "b"]


def test_after_a_wake_the_watch_waits_out_the_interval(tmp_path: Path) -> None:
    changes = ChangeSignal(tmp_path / "missing", LOG)
    paused: list[float] = []
    rounds = 0

    def line() -> str:
        nonlocal rounds
        rounds += 1
        changes.changed.set()  # as if a file changed during the read
        return str(rounds)

    emit_on_change(
        line,
        lambda _text: None,
        changes,
        period=10.0,
        stopping=lambda: rounds == 3,
        min_interval=60.0,
        pause=paused.append,
    )
    assert len(paused) == 2
    assert all(50.0 < seconds <= 60.0 for seconds in paused)


def test_an_unreadable_file_and_an_unreadable_directory_are_named(tmp_path: Path) -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    log = logging.getLogger("tray.test.live.problems")
    log.addHandler(handler)
    try:
        state = tmp_path / "state"
        state.mkdir()
        (state / "broken.json").write_text("{")
        reader = SessionFeed(StateStore(state), 60.0, log)
        assert reader.current(1000.0) == []
        missing = SessionFeed(StateStore(tmp_path / "file"), 60.0, log)
        (tmp_path / "file").write_text("")
        sessions, problems = missing.read(1000.0)
        assert sessions == []
        assert missing.report(problems)
    finally:
        log.removeHandler(handler)
    messages = [record.getMessage() for record in records]
    assert messages[0].startswith(f"skipping {state / 'broken.json'}: ")
    assert messages[1].startswith(f"cannot read {tmp_path / 'file'}: ")
