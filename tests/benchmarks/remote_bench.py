"""A remote session's blocked report, over real ssh on loopback, to the app.

The "remote" is a second state directory behind a real sshd on this machine. Each
sample writes a blocked session file there, as a remote ``tray run`` would, and times
until:

- HostLink hands the app a state holding it: the remote watcher, the stream, sshd, ssh
  and the link's reader;
- a real ``tray app`` with the host in its config.toml (settle 0) calls Notify on a
  private bus, timed by dbus-monitor's stamps: all of the above, plus the app's refresh
  and policy and the notifier. Xvfb, trayer and dunst as in app_bench.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from app_bench import start_desktop_app  # noqa: E402
from helpers.desktop_services import (  # noqa: E402
    BusMonitor,
    stop_process,
)
from helpers.host_sessions import make_session  # noqa: E402
from helpers.sshd import (  # noqa: E402
    SSHD,
    Remote,
    Sshd,
    client_environ,
    host_config,
    hosts_toml,
)
from helpers.waiting import wait_for  # noqa: E402

from tray.core.hosts.remote_sessions import RemoteState  # noqa: E402
from tray.remote.link import HostLink, HostStatus  # noqa: E402

TARGET_SECONDS = 0.3
SAMPLES = 20
# Longer than the link's 0.1 s between documents, so no sample waits on coalescing.
GAP = 0.3


class _Waiter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wanted: str | None = None
        self._arrived = threading.Event()
        self.at = 0.0

    def expect(self, msg: str) -> None:
        with self._lock:
            self._wanted = msg
            self._arrived.clear()

    def on_state(self, host: str, state: RemoteState) -> None:
        now = time.perf_counter()
        with self._lock:
            wanted = self._wanted
        for session in state.sessions:
            if session.state == "blocked" and any(r.msg == wanted for r in session.records):
                self.at = now
                self._arrived.set()

    def on_status(self, host: str, status: HostStatus) -> None:
        pass

    def wait(self, timeout: float) -> bool:
        return self._arrived.wait(timeout)


def measure(samples: int = SAMPLES) -> list[float]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        server = Sshd(root / "sshd")
        server.start()
        remote = Remote(root / "remote")
        waiter = _Waiter()
        link = HostLink(
            host_config(server, remote), waiter.on_state, waiter.on_status, environ=client_environ()
        )
        base = make_session("4242-bench", "working")
        try:
            waiter.expect("warm-up")
            link.start()
            remote.write(make_session("4242-bench", "blocked", msg="warm-up"))
            if not waiter.wait(30):
                raise RuntimeError("the link never delivered the first state")
            latencies = []
            for index in range(samples):
                remote.write(dataclasses.replace(base, updated_at=time.time()))
                time.sleep(GAP)
                msg = f"approve step {index}"
                waiter.expect(msg)
                started = time.perf_counter()
                remote.write(make_session("4242-bench", "blocked", msg=msg))
                if not waiter.wait(10):
                    raise RuntimeError(f"sample {index} never arrived")
                latencies.append(waiter.at - started)
                time.sleep(GAP)
        finally:
            link.stop()
            server.stop()
    return latencies


_NOTIFY = re.compile(r"^method call time=([0-9.]+) .*member=Notify$")


def _notify_times(monitor: BusMonitor) -> list[float]:
    return [
        float(match.group(1))
        for line in monitor.text().splitlines()
        if (match := _NOTIFY.match(line.strip()))
    ]


def _more_than(monitor: BusMonitor, count: int) -> bool:
    return len(_notify_times(monitor)) > count


def measure_notify(samples: int = SAMPLES) -> list[float]:
    """Seconds from writing a blocked session on the remote to the app's Notify call."""
    scratch = Path(tempfile.mkdtemp(prefix="tray-remote-bench-"))
    started: list[subprocess.Popen[bytes]] = []
    monitor: BusMonitor | None = None
    server = Sshd(scratch / "sshd")
    try:
        server.start()
        remote = Remote(scratch / "remote")
        _, monitor, state_dir = start_desktop_app(
            scratch,
            hosts_toml(host_config(server, remote)),
            started,
            drop=("SSH_AUTH_SOCK", "SSH_AGENT_PID"),
        )
        watch = monitor
        log = state_dir / "app.log"
        wait_for(
            lambda: log.exists() and "devbox: connected" in log.read_text(), 30, what="the link"
        )
        base = make_session("4242-bench", "working")
        latencies = []
        for index in range(samples):
            remote.write(dataclasses.replace(base, updated_at=time.time()))
            time.sleep(GAP)
            count = len(_notify_times(watch))
            written = time.time()
            remote.write(make_session("4242-bench", "blocked", msg=f"approve step {index}"))
            wait_for(partial(_more_than, watch, count), 10, what=f"ping {index}")
            latencies.append(_notify_times(watch)[count] - written)
            time.sleep(GAP)
        return latencies
    finally:
        if monitor is not None:
            monitor.stop()
        for proc in reversed(started):
            stop_process(proc)
        server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def _line(latencies: list[float]) -> str:
    median = statistics.median(latencies)
    verdict = "meets" if median < TARGET_SECONDS else "MISSES"
    return (
        f"  median of {len(latencies)}: {median * 1000:.1f} ms "
        f"(min {min(latencies) * 1000:.1f}, max {max(latencies) * 1000:.1f}); "
        f"target < {TARGET_SECONDS * 1000:.0f} ms: {verdict}"
    )


def report(samples: int = SAMPLES) -> None:
    print("Remote: a blocked report on another host to the app's on_state, over loopback ssh")
    if shutil.which(SSHD) is None or shutil.which("ssh") is None:
        print("  skipped: needs openssh-server and openssh-client")
        return
    try:
        print(_line(measure(samples)))
    except RuntimeError as error:
        print(f"  failed: {' '.join(str(error).split())[:300]}")
    print("Remote: the same, to the app's Notify call on the bus (settle 0)")
    try:
        print(_line(measure_notify(samples)))
    except (RuntimeError, AssertionError) as error:
        print(f"  failed: {' '.join(str(error).split())[:300]}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    report()
