"""`tray app` with `[away]` on a real headless desktop: its idle CPU, and the time from a
blocked report to the forwarded request.

CPU: the idle app with twenty live sessions, without `[away]` and then with it, each on
a fresh desktop of its own. With `after = "2s"` and no input on the Xvfb the user is
away during the measurement, so the X11 idle time is asked every two seconds: the
dearest case. Apprise is loaded on the forwarder's thread before measuring.

Latency: a program under `tray run` turns blocked, with a new message each time, and
writes down when; the loopback JSON server that Apprise posts to notes when each
request arrives. Both are this machine's clock.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from app_bench import BLOCKING_CHILD, _cpu_seconds, app_pid, start_desktop_app
from helpers.desktop_services import stop_process
from helpers.sessions import live_session, working
from helpers.waiting import wait_for

from tray.state.store import StateStore

IDLE_SECONDS = 20.0
PINGS = 20


class Arrivals:
    """A loopback HTTP server that notes each POST's JSON body and when it came."""

    def __init__(self) -> None:
        self.posts: list[tuple[float, dict[str, object]]] = []
        arrivals = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                at = time.time()
                data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                arrivals.posts.append((at, json.loads(data or b"{}")))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _idle_cpu(config_text: str, log_line: str) -> tuple[float, Path, list[subprocess.Popen[bytes]]]:
    """Start an app, let it settle with twenty idle sessions, and measure its CPU. The
    caller stops the processes (the latency run goes on with the [away] app)."""
    scratch = Path(tempfile.mkdtemp(prefix="tray-away-bench-"))
    started: list[subprocess.Popen[bytes]] = []
    try:
        env, _monitor, state_dir = start_desktop_app(scratch, config_text, started)
        _monitor.stop()
        log = state_dir / "app.log"
        wait_for(lambda: log.exists() and log_line in log.read_text(), 30, what="the app")
        store = StateStore(state_dir)
        now = time.time()
        for index in range(20):
            store.write(live_session(f"idle{index:02}", working(now, f"task {index}"), now))
        time.sleep(5)  # the sessions taken in, Apprise loaded, the user away
        pid = app_pid(started)
        before = _cpu_seconds(pid)
        time.sleep(IDLE_SECONDS)
        cpu = (_cpu_seconds(pid) - before) / IDLE_SECONDS
        for index in range(20):
            store.remove(f"idle{index:02}")
        (scratch / "env.json").write_text(json.dumps(env))
        return cpu, scratch, started
    except BaseException:
        for proc in reversed(started):
            stop_process(proc)
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _latencies(scratch: Path, arrivals: Arrivals) -> list[float]:
    env = json.loads((scratch / "env.json").read_text())
    log = Path(env["TRAY_STATE_DIR"]) / "app.log"
    wait_for(lambda: "away (since" in log.read_text(), 30, what="the app to see nobody")
    stamps = scratch / "stamps"
    argv = [sys.executable, "-m", "tray", "run", "--"]
    argv += [sys.executable, "-c", BLOCKING_CHILD, str(PINGS), str(stamps)]
    subprocess.run(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        check=True, timeout=PINGS * 2 + 30,
    )  # fmt: skip
    wait_for(lambda: len(arrivals.posts) >= PINGS, 30, what="every forwarded ping")
    written = {}
    for line in stamps.read_text().splitlines():
        index, stamp = line.split()
        written[f"approve step {index}"] = float(stamp)
    return sorted(at - written[str(body.get("message"))] for at, body in arrivals.posts)


def measure() -> dict[str, float]:
    peer_cpu, scratch, started = _idle_cpu("", "icon shown")
    for proc in reversed(started):
        stop_process(proc)
    shutil.rmtree(scratch, ignore_errors=True)
    arrivals = Arrivals()
    config = f'[away]\nafter = "2s"\nforward = ["json://127.0.0.1:{arrivals.port}/ping"]\n'
    started = []
    try:
        away_cpu, scratch, started = _idle_cpu(config, "away: after")
        latencies = _latencies(scratch, arrivals)
    finally:
        for proc in reversed(started):
            stop_process(proc)
        arrivals.stop()
    shutil.rmtree(scratch, ignore_errors=True)
    return {
        "peer_cpu": peer_cpu,
        "away_cpu": away_cpu,
        "median": statistics.median(latencies),
        "p95": latencies[int(0.95 * (len(latencies) - 1))],
    }


def report() -> None:
    figures = measure()
    away, peer = figures["away_cpu"] * 100, figures["peer_cpu"] * 100
    print("Tray app with [away] (X11 idle asked every 2 s while away, Apprise loaded)")
    print(
        f"  idle CPU with 20 sessions: {away:.2f}% of one core, without [away] {peer:.2f}% "
        f"(target < 1: {'meets' if away < 1 else 'MISSES'})"
    )
    median_ms, p95_ms = figures["median"] * 1000, figures["p95"] * 1000
    print(
        f"  blocked report to the forwarded request on loopback: median {median_ms:.0f} ms, "
        f"p95 {p95_ms:.0f} ms (target median < 200: {'meets' if median_ms < 200 else 'MISSES'})"
    )


if __name__ == "__main__":
    report()
