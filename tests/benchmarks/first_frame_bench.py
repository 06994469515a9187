"""Start-up with a real agent: Claude Code's first frame, alone and under `tray run`.

The figure is the time from the start of ``claude`` (or of ``tray run -- claude``) to
Claude Code's first frame: its prompt mark (U+276F) drawn on the terminal. The terminal is the
agents' tests' own (:class:`helpers.agent_terminal.PlayedTerminal`), which answers the queries
a terminal answers at start (DA1, the cursor, the colours, the OSC 7501 probe) the same
way in both runs; under `tray run`, tray answers the OSC 7501 probe itself, as it does
for any terminal. Claude Code runs as in those tests (:func:`helpers.agents.claude_home`):
a private home with its first-run questions answered, its API the loopback stand-in,
which a start without a prompt never calls. tray is the plain install of
:func:`bench_venvs.fair_venv`; each of its runs gets an empty state directory on tmpfs.

Beside them, with no target, the floor of any launcher the issue allows: the plain
install's ``python -I`` imports ptyprocess and execs ``claude`` in its place, with no pty
of its own, no keeper and no proxy. That is what starting Python and loading the pty
library cost before the program can start; what `tray run` adds past it is its own.

Each figure is the median of interleaved runs, after a warm-up round, and beside it the
median of each round's own ratio (runs of one round share the machine's load of the
moment). The agent comes from ``make agents`` (``.agents``); without it this benchmark
fails, and says so.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(Path(__file__).resolve().parent)]

from bench_venvs import fair_venv  # noqa: E402
from helpers.agent_standins import FakeAnthropic  # noqa: E402
from helpers.agent_terminal import CLAUDE, PlayedTerminal  # noqa: E402
from helpers.agents import claude_home  # noqa: E402

RUNS = 10
TARGET = 1.05
FIRST_FRAME = "\u276f".encode()  # the mark of its input prompt
# A loaded machine can take seconds to start Node; this is only the give-up time.
_PATIENCE = 60.0
ALONE = "claude"
FLOOR = "python, ptyprocess, exec"
UNDER_TRAY = "tray run -- claude"
# The floor: the interpreter and the pty library, then the program in the same process.
_FLOOR_CODE = "import os, sys, ptyprocess; os.execv(sys.argv[1], sys.argv[1:])"


def _first_frame(argv: list[str], work: Path, env: dict[str, str]) -> float:
    """Seconds from the start of ``argv`` on a played terminal to its first frame."""
    started = time.perf_counter()
    terminal = PlayedTerminal(argv, work, env)
    try:
        terminal.wait_for("the first frame", lambda: FIRST_FRAME in terminal.output, _PATIENCE)
        return time.perf_counter() - started
    finally:
        terminal.close()


def _run(root: Path, base_url: str, how: str, python: Path) -> float:
    """One run in a fresh home (and state directory, under tray)."""
    env, work = claude_home(root, base_url)
    argv = [str(CLAUDE), "--permission-mode", "default"]
    if how == UNDER_TRAY:
        argv = [str(python.with_name("tray")), "run", "--", *argv]
        env = env | {"TRAY_STATE_DIR": str(root / "state")}
    elif how == FLOOR:
        argv = [str(python), "-I", "-c", _FLOOR_CODE, *argv]
    return _first_frame(argv, work, env)


def report(runs: int = RUNS) -> bool:
    """Print the figures; whether the target is met."""
    if not CLAUDE.exists():
        print(f"Claude Code's first frame: MISSES: no {CLAUDE} (run `make agents`)")
        return False
    python = fair_venv()
    samples: dict[str, list[float]] = {ALONE: [], FLOOR: [], UNDER_TRAY: []}
    memory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with FakeAnthropic() as fake, tempfile.TemporaryDirectory(dir=memory) as scratch:
        for round_ in range(runs + 1):
            for name, values in samples.items():
                seconds = _run(Path(tempfile.mkdtemp(dir=scratch)), fake.url, name, python)
                if round_:  # the first round only warms the caches up
                    values.append(seconds)
        if fake.requests:
            raise RuntimeError(f"Claude Code called the model at start: {fake.paths}")
    medians = {name: statistics.median(values) for name, values in samples.items()}
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"Claude Code's first frame (its prompt drawn), median of {runs} interleaved runs"
        f" (load average {load}); the test's terminal answers the same queries in both"
    )
    for name, values in samples.items():
        spread = " ".join(f"{value * 1000:.0f}" for value in sorted(values))
        print(f"  {name:<24} {medians[name] * 1000:7.1f} ms  ({spread})")
    paired = {
        name: statistics.median(
            mine / alone for alone, mine in zip(samples[ALONE], samples[name], strict=True)
        )
        for name in (FLOOR, UNDER_TRAY)
    }
    floor = medians[FLOOR] / medians[ALONE]
    print(
        f"  {FLOOR} / {ALONE}: {floor:.3f} (each round's own: {paired[FLOOR]:.3f});"
        f" the least any launcher on ptyprocess adds, no target"
    )
    ratio = medians[UNDER_TRAY] / medians[ALONE]
    met = ratio <= TARGET
    verdict = "meets" if met else "MISSES"
    print(
        f"  {UNDER_TRAY} / {ALONE}: {ratio:.3f} (each round's own: {paired[UNDER_TRAY]:.3f})"
        f" (target <= {TARGET}: {verdict})"
    )
    return met


if __name__ == "__main__":
    report()
