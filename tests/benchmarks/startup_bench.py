"""Start-up: `tray run -- true` against a bare `python -I -c pass` of the same venv.

The fair baseline is a venv that holds tray and its dependencies and nothing else,
installed as a user would install it: a plain, not editable, ``pip install``. The
project's own ``.venv`` makes every start pay for the editable install's finder (which
imports pathlib and re) and the dev tools' ``.pth`` files; its figures are printed too,
as they were before. That venv is built once, in ``.venv-bench`` beside the project's
(gitignored), and tray is reinstalled into it whenever its sources change.

Each figure is the median of interleaved runs. The bytecode caches are written and used,
as after ``pip install`` (which compiles them): PYTHONDONTWRITEBYTECODE is dropped, and
one warm-up run of each comes first. Each `tray run` gets an empty state directory, so
it never prunes the sessions of the runs before it; it is on tmpfs (/dev/shm), as a
user's $XDG_RUNTIME_DIR is. stdin and stdout are /dev/null (pipe
mode); on a terminal the launcher only adds a few termios calls. CPU time is beside
the wall-clock time: on a machine busy with other work it varies less.

Run standalone (``.venv/bin/python tests/benchmarks/startup_bench.py``) or from run.py.
"""

from __future__ import annotations

import hashlib
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
REPO = Path(__file__).resolve().parents[2]
BENCH_VENV = REPO / ".venv-bench"
# What a non-editable install is built from; tests and dev files stay out.
_SOURCES = ("pyproject.toml", "README.md", "tray", "icons")
# pip resolves the dependencies over the network or a local index: give it time.
_INSTALL_TIMEOUT = 900
BARE = "python -I -c pass"
TRAY = "tray run -- true"
MODULE = "python -m tray run -- true"


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


def _source_digest(files: Sequence[Path]) -> str:
    digest = hashlib.sha256(sys.version.encode())
    for path in files:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _source_files() -> list[Path]:
    files: list[Path] = []
    for name in _SOURCES:
        top = REPO / name
        if top.is_file():
            files.append(top)
            continue
        files += sorted(
            path for path in top.rglob("*") if path.is_file() and "__pycache__" not in path.parts
        )
    return files


def _pip(python: Path, *arguments: str) -> None:
    # The project venv's pip installs into the bench venv, which has no pip (nor
    # setuptools, whose .pth file every start would pay for).
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *arguments],
        check=True,
        timeout=_INSTALL_TIMEOUT,
    )


def fair_venv() -> Path:
    """The bench venv's python, with the current tray installed; built when missing."""
    python = BENCH_VENV / "bin" / "python"
    files = _source_files()
    digest = _source_digest(files)
    stamp = BENCH_VENV / "tray-sources.sha256"
    # The dependencies come from pyproject.toml: when it changes, start from scratch.
    deps = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    deps_stamp = BENCH_VENV / "tray-deps.sha256"
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return python
    fresh = not python.exists() or not deps_stamp.exists() or deps_stamp.read_text() != deps
    print(f"  ({'building' if fresh else 'updating'} the fair baseline venv {BENCH_VENV})")
    if fresh:
        shutil.rmtree(BENCH_VENV, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(BENCH_VENV)],
            check=True,
            timeout=120,
        )
    with tempfile.TemporaryDirectory() as scratch:
        # A copy, so the build leaves no build/ or egg-info in the checkout, and no file
        # deleted since the last build lingers in a reused build/ directory.
        tree = Path(scratch, "tray")
        for path in files:
            target = tree / path.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        if fresh:
            _pip(python, str(tree))
        else:
            _pip(python, "--no-deps", "--force-reinstall", str(tree))
    deps_stamp.write_text(deps)
    stamp.write_text(digest)
    return python


def _commands(python: Path, label: str) -> dict[str, list[str]]:
    console_script = python.with_name("tray")
    commands = {
        f"{label}: {BARE}": [str(python), "-I", "-c", "pass"],
        f"{label}: {TRAY}": [str(console_script), "run", "--", "true"],
        f"{label}: {MODULE}": [str(python), "-m", "tray", "run", "--", "true"],
    }
    if not console_script.exists():
        del commands[f"{label}: {TRAY}"]
    return commands


def measure(commands: dict[str, list[str]], runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall-clock and CPU seconds of each command, over interleaved runs."""
    # The state directory on tmpfs where there is one, as $XDG_RUNTIME_DIR is on any
    # systemd desktop: on a disk, each rename of the state file waits for the journal.
    memory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=memory) as scratch:
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
    return wall_median, cpu_median


def _print_venv(label: str, wall: dict[str, float], cpu: dict[str, float]) -> float | None:
    """One venv's lines; the `tray run` ratio to its bare start, or None."""
    bare = wall[f"{label}: {BARE}"]
    bare_cpu = cpu[f"{label}: {BARE}"]
    tray_ratio = None
    for name, seconds in wall.items():
        if not name.startswith(label + ":"):
            continue
        ratio = seconds / bare
        line = (
            f"  {name:<40} {seconds * 1000:7.1f} ms  {ratio:5.2f}x"
            f"   cpu {cpu[name] * 1000:6.1f} ms  {cpu[name] / bare_cpu:5.2f}x"
        )
        if name == f"{label}: {TRAY}":
            tray_ratio = ratio
        print(line)
    console, module = f"{label}: {TRAY}", f"{label}: {MODULE}"
    if console in wall:
        extra = wall[console] - wall[module]
        extra_cpu = cpu[console] - cpu[module]
        print(
            f"  {label}: the console script against python -m tray: {extra * 1000:+.1f} ms,"
            f" cpu {extra_cpu * 1000:+.1f} ms"
        )
    return tray_ratio


def report(runs: int = RUNS) -> None:
    fair = fair_venv()
    project = Path(sys.executable)
    commands = {**_commands(fair, "fair"), **_commands(project, "project")}
    wall, cpu = measure(commands, runs)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"Start-up: median of {runs} interleaved runs, bytecode cached (load average {load})\n"
        f"  fair:    {fair}, a plain install of tray and its dependencies only\n"
        f"  project: {project}, the editable install with the dev tools"
    )
    ratio = _print_venv("fair", wall, cpu)
    _print_venv("project", wall, cpu)
    if ratio is not None:
        verdict = "meets" if ratio <= TARGET else "MISSES"
        print(
            f"  tray run -- true / python -I -c pass, fair venv: {ratio:.2f}"
            f" (target <= {TARGET:.1f}: {verdict})"
        )


if __name__ == "__main__":
    report()
