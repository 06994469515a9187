"""Start-up: `tray run -- true` against `asciinema rec -c true`, its Python peer.

Each program runs from a venv of its own, installed as a user installs it
(:mod:`bench_venvs`): tray plainly, not editable, with its dependencies only, and
asciinema 2.4.0 from the package index. Beside them, as neighbours with no target:
``script -qfec true`` (the C peer), a bare ``python -I -c pass`` and
``python -I -c "import ptyprocess"`` of tray's venv (what the interpreter and the pty
library cost before tray's own code runs).

Each run is on an outer pty of its own, as in a terminal, and is timed from the fork to
its exit, everything it wrote read. Each figure is the median of interleaved runs. The
bytecode caches are written and used, as after ``pip install`` (which compiles them):
PYTHONDONTWRITEBYTECODE is dropped, and one warm-up round comes first. Each `tray run`
gets an empty state directory on tmpfs (/dev/shm), as a user's $XDG_RUNTIME_DIR is, so
it never prunes the sessions of the runs before it; asciinema writes its recording to
a file there (``--overwrite``, ``-q`` for no banner) and reads its config from there,
so it needs none and no network. CPU time (the process and all it waited for) is beside
the wall-clock time: on a machine busy with other work it varies less.

Run standalone (``.venv/bin/python tests/benchmarks/startup_bench.py``) or from run.py.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_venvs import asciinema, fair_venv
from harness import _spawn_on_pty

RUNS = 15
TARGET = 0.7
BARE = "python -I -c pass"
PTYPROCESS = 'python -I -c "import ptyprocess"'
SCRIPT = "script -qfec true"
ASCIINEMA = "asciinema rec -c true"
TRAY = "tray run -- true"


def time_on_pty(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run on a fresh outer pty, from fork to exit."""
    started = time.perf_counter()
    pid, master = _spawn_on_pty(argv, env)
    output = b""
    try:
        while chunk := os.read(master, 65536):
            output += chunk
    except OSError:  # EIO: every process on the pty has gone
        pass
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - started
    os.close(master)
    if os.waitstatus_to_exitcode(status) != 0:
        text = output.decode(errors="replace")
        raise RuntimeError(f"{' '.join(argv)} failed ({status}): {text}")
    return elapsed, usage.ru_utime + usage.ru_stime


def measure(
    commands: dict[str, list[str]], runs: int, env: dict[str, str], state: Path
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall-clock and CPU seconds of each command, over interleaved runs."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(runs + 1):
        for name, argv in commands.items():
            shutil.rmtree(state, ignore_errors=True)
            wall, cpu = time_on_pty(argv, env)
            if round_:  # the first round only warms the caches up
                walls[name].append(wall)
                cpus[name].append(cpu)
    wall_median = {name: statistics.median(values) for name, values in walls.items()}
    cpu_median = {name: statistics.median(values) for name, values in cpus.items()}
    return wall_median, cpu_median


def bench_environ(root: Path) -> dict[str, str]:
    """The environment of every start-up run: nothing of the user's tray or asciinema."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TRAY_", "ASCIINEMA_"))
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(
        TERM="xterm-256color",
        TRAY_STATE_DIR=str(root / "state"),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_RUNTIME_DIR=str(root / "runtime"),
        ASCIINEMA_CONFIG_HOME=str(root / "asciinema"),
    )
    return env


def report(runs: int = RUNS) -> bool:
    """Print the figures; whether the target is met."""
    python = fair_venv()
    recorder = asciinema()
    # On tmpfs where there is one, as $XDG_RUNTIME_DIR is on any systemd desktop: on a
    # disk, each rename of the state file waits for the journal.
    memory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=memory) as scratch:
        root = Path(scratch)
        cast = root / "true.cast"
        commands = {
            BARE: [str(python), "-I", "-c", "pass"],
            PTYPROCESS: [str(python), "-I", "-c", "import ptyprocess"],
            SCRIPT: ["script", "-qfec", "true", "/dev/null"],
            ASCIINEMA: [str(recorder), "rec", "-q", "--overwrite", "-c", "true", str(cast)],
            TRAY: [str(python.with_name("tray")), "run", "--", "true"],
        }
        wall, cpu = measure(commands, runs, bench_environ(root), root / "state")
        if not cast.is_file():
            raise RuntimeError(f"asciinema wrote no recording to {cast}")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"Start-up: median of {runs} interleaved runs, each on an outer pty, bytecode cached"
        f" (load average {load})\n"
        f"  tray:      {python.parent.parent}, a plain install of tray and its dependencies\n"
        f"  asciinema: {recorder.parent.parent}, asciinema from the package index"
    )
    for name, seconds in wall.items():
        print(f"  {name:<36} {seconds * 1000:7.1f} ms   cpu {cpu[name] * 1000:6.1f} ms")
    ratio = wall[TRAY] / wall[ASCIINEMA]
    met = ratio <= TARGET
    print(
        f"  {TRAY} / {ASCIINEMA}: {ratio:.2f} (cpu {cpu[TRAY] / cpu[ASCIINEMA]:.2f})"
        f" (target <= {TARGET}: {'meets' if met else 'MISSES'})"
    )
    return met


if __name__ == "__main__":
    report()
