"""Session files as a live launcher writes them, for tests that need exact control.

This test process stands in for the launcher, so the liveness check finds them alive.
"""

from __future__ import annotations

import os

from tray.protocol.records import Record
from tray.session import Session
from tray.store import process_start_token


def live_session(session_id: str, records: tuple[Record, ...], now: float) -> Session:
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
    )


def blocked(msg: str, now: float) -> tuple[Record, ...]:
    return (Record("", "blocked", "permission", None, "agent", None, msg, now),)


def working(now: float, msg: str | None = None) -> tuple[Record, ...]:
    return (Record("", "working", None, None, "agent", None, msg, now),)
