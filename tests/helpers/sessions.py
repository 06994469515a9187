"""Sessions and records as a live launcher writes them, for tests that need exact control.

This test process stands in for the launcher, so the liveness check finds them alive.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.liveness import process_start_token


def live_session(
    session_id: str,
    records: tuple[Record, ...],
    now: float,
    terminal: dict[str, str] | None = None,
) -> Session:
    """A live session of this test process; ``terminal``: the facts that find its tab."""
    return Session(
        id=session_id,
        name=session_id,
        name_given=True,
        command=("agent",),
        cwd="/tmp",
        pid=os.getpid(),
        child_pid=None,
        started_at=now,
        updated_at=now,
        source="program",
        records=records,
        pid_start=process_start_token(os.getpid()),
        terminal=terminal or {},
    )


def blocked(msg: str, now: float) -> tuple[Record, ...]:
    return (Record("", State.BLOCKED, "permission", None, "agent", None, msg, now),)


def working(now: float, msg: str | None = None) -> tuple[Record, ...]:
    return (Record("", State.WORKING, None, None, "agent", None, msg, now),)


def make_record(record_id: str, state: str, at: float, **fields: Any) -> Record:
    values: dict[str, Any] = dict.fromkeys(("kind", "progress", "app", "title", "msg"))
    values.update(fields)
    return Record(id=record_id, state=State(state), updated_at=at, **values)


def make_session(session_id: str, started_at: float, **changes: Any) -> Session:
    """A session whose launcher is the test process itself, so it stays alive."""
    base = Session(
        id=session_id,
        name=session_id,
        command=("sh", "-c", "true"),
        cwd="/",
        pid=os.getpid(),
        child_pid=None,
        started_at=started_at,
        updated_at=started_at,
        pid_start=process_start_token(os.getpid()),
    )
    return replace(base, **changes)
