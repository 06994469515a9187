"""Benchmarks of `tray run` against peers measured in the same run: `make bench`.

Each figure is a median over interleaved repetitions, and is printed as a ratio
against its peer, with the issue's target beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agents_bench
import answer_bench
import app_bench
import away_bench
import first_frame_bench
import phone_bench
import remote_bench
import shell_bench
import startup_bench
from harness import (
    ECHO_CHILD,
    REPORTING_CHILD,
    Run,
    bench_env,
    drain,
    round_trips,
    script_command,
    tray_command,
)


def make_text_file(path: Path, megabytes: int) -> None:
    line = b"".join(bytes([0x20 + (i * 7) % 95]) for i in range(99)) + b"\n"
    block = line * ((1 << 20) // len(line) + 1)
    with open(path, "wb") as handle:
        written = 0
        while written < megabytes << 20:
            part = block[: (megabytes << 20) - written]
            handle.write(part)
            written += len(part)


@dataclass
class Medians:
    """Each figure's own median over the runs, and the run of median time."""

    seconds: float
    cpu_seconds: float
    run: Run


def median_runs(
    label: str, runs: dict[str, Callable[[], Run]], repeat: int, cpu: bool = False
) -> dict[str, Medians]:
    samples: dict[str, list[Run]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            samples[name].append(run())
    result = {}
    for name, items in samples.items():
        items.sort(key=lambda r: r.seconds)
        result[name] = Medians(
            statistics.median(r.seconds for r in items),
            statistics.median(r.cpu_seconds for r in items),
            items[len(items) // 2],
        )
    if cpu:
        for name, figures in result.items():
            values = " ".join(f"{r.cpu_seconds:.2f}" for r in samples[name])
            print(f"  {label:<10} {name:<22} CPU {figures.cpu_seconds:6.3f} s  ({values})")
    for name, figures in result.items():
        mbps = figures.run.received / figures.seconds / 1e6
        print(f"  {label:<10} {name:<22} {figures.seconds:7.3f} s  {mbps:7.1f} MB/s")
    return result


def verdict(ratio: float, target: float, higher_is_better: bool = True) -> str:
    ok = ratio >= target if higher_is_better else ratio <= target
    return "meets" if ok else "MISSES"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--skip-app", action="store_true", help="only the launcher")
    parser.add_argument(
        "--throughput-only",
        action="store_true",
        help="only the start-up figures and the launcher's CPU and throughput",
    )
    args = parser.parse_args()
    startup_bench.report()
    first_frame_bench.report()

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        text = root / "text.txt"
        make_text_file(text, args.megabytes)
        env = bench_env(root / "state")
        cat = ["cat", str(text)]
        print(
            f"CPU and throughput: cat of a {args.megabytes} MB text file through an outer pty;"
            " CPU of the proxy process alone (for direct, of cat)"
        )
        plain = median_runs(
            "cat",
            {
                "direct": lambda: drain(cat, env),
                "script -qfec": lambda: drain(script_command(cat), env),
                "tray run": lambda: drain(tray_command(cat), env),
            },
            args.repeat,
            cpu=True,
        )
        for name, figures in plain.items():
            run = figures.run
            if run.status != 0 or run.received < args.megabytes << 20:
                print(f"  {name} failed: status {run.status}, {run.received} bytes")
                return 1
        # CPU is the steadier figure: time depends on where the kernel puts the processes.
        # Both moved the same bytes, so the ratio of their CPU is that of CPU per byte.
        for name in ("script -qfec", "tray run"):
            per_byte = plain[name].cpu_seconds / plain[name].run.received * 1e9
            print(f"  CPU per byte, {name}: {per_byte:.2f} ns")
        ratio = plain["tray run"].cpu_seconds / plain["script -qfec"].cpu_seconds
        print(
            f"  CPU per byte, tray/script: {ratio:.3f}"
            f" (target <= 1.25: {verdict(ratio, 1.25, higher_is_better=False)})"
        )
        ratio = plain["script -qfec"].seconds / plain["tray run"].seconds
        print(
            f"  tray/script throughput ratio: {ratio:.3f} (target >= 0.95: {verdict(ratio, 0.95)})"
        )
        direct = plain["direct"].seconds / plain["tray run"].seconds
        print(f"  tray/direct throughput ratio: {direct:.3f}")
        if args.throughput_only:
            return 0

        print("Throughput with 10,000 OSC 7501 progress reports a second")
        quiet = [sys.executable, "-c", REPORTING_CHILD, str(text), "0"]
        noisy = [sys.executable, "-c", REPORTING_CHILD, str(text), "10000"]
        reports = median_runs(
            "reports",
            {
                "tray, no reports": lambda: drain(tray_command(quiet), env),
                "tray, 10k reports/s": lambda: drain(tray_command(noisy), env),
            },
            args.repeat,
        )
        ratio = reports["tray, no reports"].seconds / reports["tray, 10k reports/s"].seconds
        # The reports add bytes too; compare the time to move the same file.
        print(f"  with/without reports ratio: {ratio:.3f} (target >= 0.9: {verdict(ratio, 0.9)})")

        # Where the kernel puts the processes of one run on the CPUs decides much of
        # its latency, and it keeps them there: many short runs sample that fairly,
        # a few long ones do not.
        launches = max(6, 2 * args.repeat)
        per_launch = max(20, args.keys // 3)
        print(f"Keystroke round trip, median of {launches} runs x {per_launch} keys")
        echo = [sys.executable, "-c", ECHO_CHILD]
        latencies: dict[str, list[float]] = {"direct": [], "script": [], "tray": []}
        for _ in range(launches):
            latencies["direct"] += round_trips(echo, env, per_launch)
            latencies["script"] += round_trips(script_command(echo), env, per_launch)
            latencies["tray"] += round_trips(tray_command(echo), env, per_launch)
        medians = {name: statistics.median(values) for name, values in latencies.items()}
        for name, value in medians.items():
            print(f"  {name:<8} {value * 1e6:8.1f} us")
        added_tray = medians["tray"] - medians["direct"]
        added_script = medians["script"] - medians["direct"]
        ratio = added_tray / added_script if added_script > 0 else float("inf")
        print(
            f"  added latency tray {added_tray * 1e6:.1f} us, script {added_script * 1e6:.1f} us:"
            f" ratio {ratio:.2f} (target <= 1.2: {verdict(ratio, 1.2, higher_is_better=False)})"
        )

        rss_mib = plain["tray run"].run.max_rss_kib / 1024
        print(f"Launcher peak RSS: {rss_mib:.1f} MiB (target < 40: {verdict(40, rss_mib)})")
        print(f"  (script peak RSS: {plain['script -qfec'].run.max_rss_kib / 1024:.1f} MiB)")
    answer_bench.report()
    agents_bench.report()
    if not args.skip_app:
        app_bench.report()
        away_bench.report()
        phone_bench.report()
        remote_bench.report()
    shell_bench.report()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    raise SystemExit(main())
