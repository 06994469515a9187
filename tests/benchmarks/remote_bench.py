"""A remote session's blocked report to the app's ``on_state``, over real ssh on loopback.

The "remote" is a second state directory behind a real sshd on this machine. Each
sample writes a blocked session file there, as a remote ``tray run`` would, and times
until HostLink hands the app a state holding it: the remote watcher, the stream, sshd,
ssh and the link's reader. The Notify hop after that is the app's, measured by
app_bench.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from remote.sshd import SSHD, Remote, Sshd, client_environ, host_config, make_session  # noqa: E402

from tray.remote.link import HostLink, HostStatus  # noqa: E402
from tray.remote.sessions import RemoteState  # noqa: E402

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
                remote.write(replace(base, updated_at=time.time()))
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


def report(samples: int = SAMPLES) -> None:
    print("Remote: a blocked report on another host to the app's on_state, over loopback ssh")
    if shutil.which(SSHD) is None or shutil.which("ssh") is None:
        print("  skipped: needs openssh-server and openssh-client")
        return
    try:
        latencies = measure(samples)
    except RuntimeError as error:
        print(f"  failed: {' '.join(str(error).split())[:300]}")
        return
    median = statistics.median(latencies)
    verdict = "meets" if median < TARGET_SECONDS else "MISSES"
    print(
        f"  median of {len(latencies)}: {median * 1000:.1f} ms "
        f"(min {min(latencies) * 1000:.1f}, max {max(latencies) * 1000:.1f}); "
        f"target < {TARGET_SECONDS * 1000:.0f} ms: {verdict}"
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    report()
