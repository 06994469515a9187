"""Processes the tests need as they are: one that has ended, for liveness checks, and a
client of another user, for sockets that must refuse it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess

from tray.state.store import process_start_token


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
