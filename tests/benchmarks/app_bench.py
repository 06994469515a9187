"""`tray app` figures on a real headless desktop: ping latency, and CPU idle and busy.

Latency: from a program under `tray run` writing a blocked report to the app's Notify
call on the bus, both timed by this machine's clock (the program writes its time down,
and dbus-monitor stamps each message). The settle window is 0 here; with the default
window the ping comes that much later.

Busy: twenty real `tray run` launchers whose programs each send a hundred progress
reports a second, with a new message in each; every launcher rewrites its state file at
most ten times a second, so the app sees about two hundred file changes a second.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from helpers.desktop_services import (  # noqa: E402
    BusMonitor,
    base_env,
    start_bus,
    start_dunst,
    start_trayer,
    start_xvfb,
    stop_process,
)
from helpers.sessions import live_session, working  # noqa: E402
from helpers.waiting import wait_for  # noqa: E402

from tray.state.store import StateStore  # noqa: E402

# A program that turns blocked, with a new message each time, and notes when it wrote.
BLOCKING_CHILD = r"""
import base64, sys, time
count, stamps = int(sys.argv[1]), sys.argv[2]
out = sys.stdout
with open(stamps, "w") as log:
    for index in range(count):
        out.write("\x1b]7501;state=working\x07"); out.flush()
        time.sleep(0.4)
        msg = base64.b64encode(f"approve step {index}".encode()).decode()
        stamp = time.time()
        out.write(f"\x1b]7501;state=blocked:kind=permission:msg={msg}\x07"); out.flush()
        log.write(f"{index} {stamp}\n"); log.flush()
        time.sleep(0.4)
"""

# A program that reports progress, with a new message each time, at ``rate`` a second.
PROGRESS_CHILD = r"""
import base64, sys, time
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
out = sys.stdout
start = time.monotonic()
index = 0
while time.monotonic() - start < seconds:
    msg = base64.b64encode(f"step {index}".encode()).decode()
    out.write(f"\x1b]7501;state=working:progress={index % 101}:msg={msg}\x07"); out.flush()
    index += 1
    time.sleep(max(0.0, start + index / rate - time.monotonic()))
"""
BUSY_SESSIONS = 20
BUSY_RATE = 100.0

_NOTIFY_TIME = re.compile(r"^method call time=([0-9.]+) .*member=Notify$")


def _notify_times(monitor: BusMonitor) -> list[float]:
    return [
        float(match.group(1))
        for line in monitor.text().splitlines()
        if (match := _NOTIFY_TIME.match(line.strip()))
    ]


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_STEP = re.compile(r"step (\d+)")


def _steps(state_dir: Path) -> dict[str, int]:
    """How many reports each busy program had sent, from the last message in its file."""
    sessions, _ = StateStore(state_dir).read_all(time.time())
    return {
        session.id: int(match.group(1))
        for session in sessions
        for record in session.records[:1]
        if (match := _STEP.fullmatch(record.msg or ""))
    }


# The busy programs' own limit, in seconds: far past any window, they are stopped first.
BUSY_PROGRAM_LIMIT = 600


def _busy_cpu(
    app_pid: int, env: dict[str, str], state_dir: Path, seconds: float
) -> tuple[float, float]:
    """The app's share of a core while the busy launchers run, and the slowest
    program's pace in reports a second (to show the load was what it claims)."""
    warmup = 3.0
    launchers: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(BUSY_SESSIONS):
            launchers.append(
                subprocess.Popen(
                    [
                        *[sys.executable, "-m", "tray", "run", "--"],
                        *[sys.executable, "-c", PROGRESS_CHILD],
                        # Until stopped below: a program that ended inside the window
                        # (launchers start slowly on a busy machine) would change the
                        # menu's shape and measure a rebuild, not the steady load.
                        *[str(BUSY_RATE), str(BUSY_PROGRAM_LIMIT)],
                    ],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                )
            )
        wait_for(
            lambda: len(list(state_dir.glob("*.json"))) >= BUSY_SESSIONS,
            30,
            what="the busy sessions",
        )
        time.sleep(warmup)  # let the app take in the new sessions
        steps = _steps(state_dir)
        before = _cpu_seconds(app_pid)
        time.sleep(seconds)
        busy = (_cpu_seconds(app_pid) - before) / seconds
        after = _steps(state_dir)
        sent = [after.get(key, 0) - step for key, step in steps.items()]
        pace = min(sent) / seconds if len(sent) == BUSY_SESSIONS else 0.0
        return busy, pace
    finally:
        for launcher in launchers:
            stop_process(launcher)


FAST_PINGS = '\n[notify]\nsettle = 0\nburst = 1000\nburst_window = 1\nstates = ["blocked"]\n'


def start_desktop_app(
    scratch: Path,
    config_text: str,
    started: list[subprocess.Popen[bytes]],
    drop: tuple[str, ...] = (),
) -> tuple[dict[str, str], BusMonitor, Path]:
    """Xvfb, a bus, dunst, trayer and `tray app` with ``config_text`` plus settings that
    ping at once; every process goes into ``started`` for the caller to stop. Returns
    the app's environment, a monitor of the bus and the state directory."""
    xvfb, display = start_xvfb(scratch / "xvfb.log")
    started.append(xvfb)
    bus, address = start_bus(scratch / "bus")
    started.append(bus)
    env = base_env(DISPLAY=display, DBUS_SESSION_BUS_ADDRESS=address)
    env = {key: value for key, value in env.items() if key not in drop}
    started.append(start_dunst(env, scratch / "dunst").proc)
    started.append(start_trayer(env, scratch / "trayer.log"))
    monitor = BusMonitor(env, scratch / "monitor.log")
    config = scratch / "config" / "tray"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(config_text + FAST_PINGS)
    state_dir = scratch / "state"
    env.update(
        TRAY_STATE_DIR=str(state_dir),
        XDG_CONFIG_HOME=str(scratch / "config"),
        PYTHONPATH=str(REPO),
    )
    started.append(
        subprocess.Popen(
            [sys.executable, "-m", "tray", "app"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    return env, monitor, state_dir


def app_pid(started: list[subprocess.Popen[bytes]]) -> int:
    """The app is the last process start_desktop_app started."""
    return started[-1].pid


def measure(
    pings: int = 40, idle_seconds: float = 30.0, busy_seconds: float = 20.0
) -> dict[str, float]:
    scratch = Path(tempfile.mkdtemp(prefix="tray-app-bench-"))
    started: list[subprocess.Popen[bytes]] = []
    monitor: BusMonitor | None = None
    try:
        env, monitor, state_dir = start_desktop_app(scratch, "", started)
        pid = app_pid(started)
        wait_for((state_dir / "app.log").exists, 30, what="the app")

        stamps = scratch / "stamps"
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "tray",
                "run",
                "--",
                sys.executable,
                "-c",
                BLOCKING_CHILD,
                str(pings),
                str(stamps),
            ],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=pings * 2 + 30,
        )
        assert child.returncode == 0
        wait_for(lambda: len(_notify_times(monitor)) >= pings, 30, what="every ping")
        written = [float(line.split()[1]) for line in stamps.read_text().splitlines()]
        latencies = sorted(n - w for n, w in zip(_notify_times(monitor), written, strict=True))

        # Idle: twenty live sessions that do not change.
        store = StateStore(state_dir)
        now = time.time()
        for index in range(20):
            store.write(live_session(f"idle{index:02}", working(now, f"task {index}"), now))
        time.sleep(3)  # let the app take in the new sessions before measuring idle
        before = _cpu_seconds(pid)
        time.sleep(idle_seconds)
        idle = (_cpu_seconds(pid) - before) / idle_seconds
        for index in range(20):
            store.remove(f"idle{index:02}")
        busy, pace = _busy_cpu(pid, env, state_dir, busy_seconds)
        return {
            "median": statistics.median(latencies),
            "p95": latencies[int(0.95 * (len(latencies) - 1))],
            "idle_cpu": idle,
            "busy_cpu": busy,
            "busy_pace": pace,
        }
    finally:
        if monitor is not None:
            monitor.stop()
        for proc in reversed(started):
            stop_process(proc)
        shutil.rmtree(scratch, ignore_errors=True)


def report() -> None:
    figures = measure()
    median_ms = figures["median"] * 1000
    p95_ms = figures["p95"] * 1000
    print("Tray app: blocked report to Notify on the bus (settle 0)")
    print(f"  median {median_ms:.0f} ms (target < 150: {'meets' if median_ms < 150 else 'MISSES'})")
    print(f"  p95    {p95_ms:.0f} ms (target < 400: {'meets' if p95_ms < 400 else 'MISSES'})")
    idle = figures["idle_cpu"] * 100
    print(
        f"Idle tray with 20 sessions: {idle:.2f}% of one core (target < 1: "
        f"{'meets' if idle < 1 else 'MISSES'})"
    )
    busy = figures["busy_cpu"] * 100
    print(
        f"Busy tray, {BUSY_SESSIONS} launchers x {BUSY_RATE:.0f} progress reports/s: "
        f"{busy:.2f}% of one core (target < 5: {'meets' if busy < 5 else 'MISSES'})"
    )
    print(f"  the slowest program sent {figures['busy_pace']:.0f} reports/s")


if __name__ == "__main__":
    report()
