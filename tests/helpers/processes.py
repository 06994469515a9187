"""Processes the tests need as they are: one that has ended, for liveness checks, and a
client of another user, for sockets that must refuse it; and what /proc says of others."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess

from tray.state.liveness import process_start_token


def dead_process() -> tuple[int, str]:
    """The pid and start token of a process that has exited and been reaped."""
    child = subprocess.Popen(["sleep", "60"])
    token = process_start_token(child.pid)
    child.kill()
    child.wait()
    assert token is not None
    return child.pid, token


NOBODY = 65534


def ask_as_nobody(path: str, request: bytes) -> str:
    """Send ``request`` to the Unix socket at ``path`` from a forked child that became
    ``nobody`` (the tests run as root); what it got back, "EACCES", or the error."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        outcome = b"?"
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(5)
                client.connect(path)
                # Refused before it spoke: the reply is still there to read.
                with contextlib.suppress(BrokenPipeError):
                    client.sendall(request)
                outcome = client.recv(4096) or b"closed"
        except PermissionError:
            outcome = b"EACCES"
        except OSError as error:
            outcome = repr(error).encode()
        finally:
            os.write(write_end, outcome)
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        seen = pipe.read()
    os.waitpid(pid, 0)
    return seen.decode(errors="replace")


def children_of(root: int) -> list[int]:
    """Every descendant of ``root``, found through /proc, deepest last."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(entry)] = int(fields[1])
    found: list[int] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found.append(pid)
                frontier.append(pid)
    return found


def process_name(pid: int) -> str:
    """The command name of ``pid`` (its comm), "" when it is gone."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def process_age(pid: int) -> float | None:
    """How many seconds ago ``pid`` started (to a clock tick), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            # The fields after the command name; the start time is the 22nd field.
            started = int(handle.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/uptime", "rb") as handle:
            uptime = float(handle.read().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    return uptime - started / os.sysconf("SC_CLK_TCK")


def parent_of(pid: int) -> int | None:
    """The parent pid of ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def runs_session(pid: int, session_id: str) -> bool:
    """Whether ``pid`` is still the command of session ``session_id`` (``tray run`` hands
    its command TRAY_SESSION_ID), not a process of another test that took the pid since:
    the suite runs on several workers, and a kill by a stale pid ended one of theirs."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read().split(b"\0")
    except OSError:
        return False
    return f"TRAY_SESSION_ID={session_id}".encode() in environ
