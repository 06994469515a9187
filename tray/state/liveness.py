"""Whether a session's launcher still runs: the pid it recorded, and that pid's start
time, so a pid the system gave to another process since does not keep a session alive.

Read from ``/proc`` on Linux (``ps`` elsewhere), at every read of the state directory's
sessions, and by the desktop's focus, which checks a terminal's pid the same way.
"""

from __future__ import annotations

import os
import sys

from tray.core.session.model import Session


def process_start_token(pid: int) -> str | None:
    """Something that differs between two processes that had the same pid, or None."""
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            # The command name may hold spaces and parentheses: split after the last ")".
            fields = stat_file.read().rsplit(b")", 1)[1].split()
        return fields[19].decode("ascii")  # starttime, field 22 of proc(5)
    except FileNotFoundError:
        return None
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    if sys.platform.startswith("linux"):
        return None
    import subprocess  # noqa: PLC0415 - only where there is no /proc

    try:
        result = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None


def pid_exists(pid: int) -> bool:
    # 0 and negative pids name process groups, which would make any session look alive.
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def launcher_alive(pid: int, token: str | None) -> bool:
    """Whether the launcher that recorded ``pid`` and ``token`` still runs.

    A different start token means the pid now belongs to another process.
    """
    if not pid_exists(pid):
        return False
    current = process_start_token(pid)
    if token is None or current is None:
        return current is not None or token is None
    return current == token


def with_liveness(session: Session) -> Session:
    """``session`` as it stands: ended when the launcher that claims it runs is gone."""
    if session.alive and not launcher_alive(session.pid, session.pid_start):
        # Its last write time stays, so a dead session still ages out.
        return session.ended(session.exit_code, session.updated_at)
    return session
