"""Pure: the sessions as the table `tray status` prints for people."""

from __future__ import annotations

from collections.abc import Sequence

from tray.base.safe_text import cells, clean_text, cut, format_age, pad
from tray.core.session.model import Session
from tray.core.view.overview import lead_record

NAME_WIDTH = 24
HEADER = ("ID", "NAME", "STATE", "AGE", "MSG")


def format_table(sessions: Sequence[Session], now: float, width: int | None) -> str:
    """One row per session; lines are cut to ``width`` cells when it is given."""
    if not sessions:
        return "no sessions\n"
    rows = [HEADER, *(_row(session, now) for session in sessions)]
    widths = [max(cells(row[column]) for row in rows) for column in range(len(HEADER) - 1)]
    lines = []
    for row in rows:
        padded = [pad(text, widths[column]) for column, text in enumerate(row[:-1])]
        line = "  ".join([*padded, row[-1]]).rstrip()
        lines.append(cut(line, width) if width else line)
    return "\n".join(lines) + "\n"


def _row(session: Session, now: float) -> tuple[str, str, str, str, str]:
    record = lead_record(session)
    state = session.state or "-"
    if record is not None:
        details = [record.kind] if record.kind else []
        if record.progress is not None:
            details.append(f"{record.progress}%")
        if details:
            state = f"{state} ({', '.join(details)})"
    if record is not None:
        since = record.updated_at
    elif session.running:
        since = session.started_at
    else:
        since = session.updated_at
    message = ""
    if record is not None:
        message = record.msg or record.title or ""
    if not message and not session.running:
        message = _ending(session)
    name = cut(clean_text(session.name), NAME_WIDTH)
    return (clean_text(session.id), name, state, format_age(now - since), clean_text(message))


def _ending(session: Session) -> str:
    if session.exit_code is None:
        return "ended without an exit status (launcher gone)"
    return f"exited with status {session.exit_code}"
