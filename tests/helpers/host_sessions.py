"""A session as a host's tray lists it: one agent's record, on a launcher that is this
test process (so it counts as running) or one that has gone."""

from __future__ import annotations

import os
import time

from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.state import STATE_NAMED
from tray.state.liveness import process_start_token


def make_session(
    session_id: str,
    state: str = "blocked",
    *,
    msg: str | None = "approve Bash: touch notes.txt",
    name: str = "api",
    alive: bool = True,
    now: float | None = None,
) -> Session:
    """A session whose launcher is this process, so it counts as running (or, not
    ``alive``, one that is gone); ``state`` "launcher" is one with no record."""
    moment = time.time() if now is None else now
    records: tuple[Record, ...] = ()
    if state != "launcher":
        records = (
            Record(
                id="",
                state=STATE_NAMED[state],
                kind="permission" if state == "blocked" else None,
                progress=None,
                app="claude-code",
                title=None,
                msg=msg,
                updated_at=moment,
            ),
        )
    return Session(
        id=session_id,
        name=name,
        command=("claude",),
        cwd="/home/me/api",
        pid=os.getpid() if alive else 2**22 + 7,
        child_pid=None,
        started_at=moment - 10,
        updated_at=moment,
        alive=alive,
        exit_code=None if alive else 0,
        source="program" if records else "launcher",
        records=records,
        pid_start=process_start_token(os.getpid()) if alive else None,
        name_given=True,
    )
