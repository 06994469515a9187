"""An outer pty that plays the user's terminal, for timing proxies against each other."""

from __future__ import annotations

import fcntl
import os
import select
import shlex
import signal
import struct
import sys
import termios
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Run:
    seconds: float
    received: int
    status: int
    max_rss_kib: int
    # CPU time (user + system) of the process on the outer pty alone, its children's
    # excluded: the proxy's own work, for `tray run` and `script` alike.
    cpu_seconds: float


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def own_cpu_seconds(pid: int) -> float:
    """User plus system time of ``pid`` itself, from proc(5); it may be a zombie.

    Neither wait4's rusage nor RUSAGE_CHILDREN would do: they add in every descendant
    the process waited for, and both proxies wait for the command they run.
    """
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    # utime and stime are fields 14 and 15 of proc(5); the split starts at field 3.
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def tray_command(argv: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "tray", "run", "--", *argv]


def script_command(argv: Sequence[str]) -> list[str]:
    return ["script", "-qfec", shlex.join(argv), "/dev/null"]


def _spawn_on_pty(argv: Sequence[str], env: dict[str, str]) -> tuple[int, int]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(master)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        if slave > 2:
            os.close(slave)
        os.execvpe(argv[0], list(argv), env)  # noqa: S606
    os.close(slave)
    return pid, master


def bench_env(state_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["TRAY_STATE_DIR"] = str(state_dir)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["TERM"] = "xterm-256color"
    return env


def drain(argv: Sequence[str], env: dict[str, str]) -> Run:
    """Run argv on a fresh outer pty, read everything it writes, time it."""
    pid, master = _spawn_on_pty(argv, env)
    received = 0
    start = time.perf_counter()
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        received += len(chunk)
    seconds = time.perf_counter() - start
    # Its times are read once it has ended, before it is reaped.
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    cpu = own_cpu_seconds(pid)
    _, status, usage = os.wait4(pid, 0)
    os.close(master)
    return Run(seconds, received, os.waitstatus_to_exitcode(status), usage.ru_maxrss, cpu)


def round_trips(
    argv: Sequence[str], env: dict[str, str], count: int, warmup: int = 20
) -> list[float]:
    """Latency of one typed byte echoed back by a raw-mode child, ``count`` times.

    The first ``warmup`` keys are typed but not counted: right after start the
    processes are still settling onto CPUs.
    """
    pid, master = _spawn_on_pty(argv, env)
    ready = b""
    deadline = time.monotonic() + 20
    while b"READY" not in ready and time.monotonic() < deadline:
        if select.select([master], [], [], 1)[0]:
            ready += os.read(master, 4096)
    if b"READY" not in ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise RuntimeError(f"{argv[0]} never became ready: {ready!r}")
    samples = []
    for index in range(warmup + count):
        byte = bytes([0x61 + index % 26])
        start = time.perf_counter()
        os.write(master, byte)
        got = b""
        while byte not in got:
            select.select([master], [], [], 5)
            got += os.read(master, 4096)
        if index >= warmup:
            samples.append(time.perf_counter() - start)
    os.write(master, b"\x04")
    try:
        while os.read(master, 4096):
            pass
    except OSError:
        pass
    os.waitpid(pid, 0)
    os.close(master)
    return samples


# A child that puts its terminal in raw mode and echoes every byte until Ctrl-D.
ECHO_CHILD = r"""
import os, sys, termios, tty
fd = sys.stdin.fileno()
saved = termios.tcgetattr(fd)
tty.setraw(fd)
os.write(1, b"READY")
try:
    while True:
        data = os.read(fd, 1024)
        if not data or b"\x04" in data:
            break
        os.write(1, data)
finally:
    termios.tcsetattr(fd, termios.TCSADRAIN, saved)
"""

# A child that writes a text file and OSC 7501 progress reports at a given rate.
REPORTING_CHILD = r"""
import os, sys, time
path, rate = sys.argv[1], float(sys.argv[2])
with open(path, "rb") as handle:
    data = handle.read()
step = 64 * 1024
start = time.perf_counter()
sent = 0
out = sys.stdout.buffer
for offset in range(0, len(data), step):
    out.write(data[offset:offset + step])
    if rate:
        due = int((time.perf_counter() - start) * rate)
        while sent < due:
            out.write(b"\x1b]7501;state=working:progress=%d\x07" % (sent % 101))
            sent += 1
out.flush()
print(f"\nreports={sent}", file=sys.stderr)
"""
