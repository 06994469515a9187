"""Start-up: `tray run -- true` against a bare `python -I -c pass` of the same interpreter.

Each figure is the median of interleaved runs. The bytecode caches are written and used,
as after ``pip install`` (which compiles them): PYTHONDONTWRITEBYTECODE is dropped, and
one warm-up run of each comes first. Each `tray run` gets an empty state directory, so
it never prunes the sessions of the runs before it. stdin and stdout are /dev/null (pipe
mode); on a terminal the launcher only adds a few termios calls. CPU time is beside
the wall-clock time: on a machine busy with other work it varies less.

Run standalone (``.venv/bin/python tests/benchmarks/startup_bench.py``) or from run.py.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

RUNS = 10
TARGET = 2.0


def _time(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (the process and all it waited for) of one run."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.stderr is not None
    errors = process.stderr.read()
    process.stderr.close()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {errors.decode(errors='replace')}")
    return elapsed, usage.ru_utime + usage.ru_stime


def report(runs: int = RUNS) -> None:
    python = sys.executable
    console_script = Path(python).with_name("tray")
    commands = {
        "python -I -c pass": [python, "-I", "-c", "pass"],
        "tray run -- true": [str(console_script), "run", "--", "true"],
        "python -m tray run -- true": [python, "-m", "tray", "run", "--", "true"],
    }
    if not console_script.exists():
        del commands["tray run -- true"]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        state = root / "state"
        env = {key: value for key, value in os.environ.items() if not key.startswith("TRAY_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(
            TRAY_STATE_DIR=str(state),
            XDG_CONFIG_HOME=str(root / "config"),
            XDG_RUNTIME_DIR=str(root / "runtime"),
        )
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(runs + 1):
            for name, argv in commands.items():
                shutil.rmtree(state, ignore_errors=True)
                wall, cpu = _time(argv, env)
                if round_:  # the first round only warms the caches up
                    walls[name].append(wall)
                    cpus[name].append(cpu)
    wall_median = {name: statistics.median(values) for name, values in walls.items()}
    cpu_median = {name: statistics.median(values) for name, values in cpus.items()}
    bare = wall_median["python -I -c pass"]
    bare_cpu = cpu_median["python -I -c pass"]
    print(f"Start-up: median of {runs} interleaved runs, bytecode cached, {python}")
    for name, seconds in wall_median.items():
        ratio = seconds / bare
        line = (
            f"  {name:<28} {seconds * 1000:7.1f} ms  {ratio:5.2f}x"
            f"   cpu {cpu_median[name] * 1000:6.1f} ms  {cpu_median[name] / bare_cpu:5.2f}x"
        )
        if name != "python -I -c pass":
            line += f"  (target <= {TARGET:.1f}x: {'meets' if ratio <= TARGET else 'MISSES'})"
        print(line)
    if "tray run -- true" in wall_median:
        extra = wall_median["tray run -- true"] - wall_median["python -m tray run -- true"]
        extra_cpu = cpu_median["tray run -- true"] - cpu_median["python -m tray run -- true"]
        print(
            f"  the console script against python -m tray: {extra * 1000:+.1f} ms,"
            f" cpu {extra_cpu * 1000:+.1f} ms"
        )


if __name__ == "__main__":
    report()
