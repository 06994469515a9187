"""What `tray init` costs a shell: latency added to each prompt, and time to load.

Prompt latency: an interactive shell on a pty runs a short command (``:`` or ``true``)
many times; the time from Enter to the next prompt is measured with and without tray's
code loaded, interleaved, and the medians compared. The target is under 2 ms added.
Load time is the ``eval "$(tray init SHELL)"`` a shell pays once when it starts.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from helpers.shells import SHELLS, Home, Shell  # noqa: E402

SHORT = {"bash": ":", "zsh": ":", "fish": "true"}
TARGET_MS = 2.0


def _prompt_times(shell: Shell, count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        shell.run(SHORT[shell.kind])
        times.append(time.perf_counter() - start)
    return times


def measure(kind: str, rounds: int = 10, per_round: int = 30) -> tuple[float, float, float]:
    """Median prompt time without and with tray's code, and the median load time (s)."""
    with tempfile.TemporaryDirectory() as scratch:
        home = Home.create(Path(scratch))
        home.configure("")  # the default threshold, as users have it
        plain: list[float] = []
        loaded: list[float] = []
        loads: list[float] = []
        with Shell(kind, home) as without, Shell(kind, home) as with_tray:
            start = time.perf_counter()
            with_tray.load()
            loads.append(time.perf_counter() - start)
            for _ in range(rounds):
                plain += _prompt_times(without, per_round)
                loaded += _prompt_times(with_tray, per_round)
            for _ in range(4):
                start = time.perf_counter()
                with_tray.load()
                loads.append(time.perf_counter() - start)
        return statistics.median(plain), statistics.median(loaded), statistics.median(loads)


def report() -> None:
    print("Shell integration: prompt latency added by tray init (median of 300 prompts)")
    for kind in SHELLS:
        if shutil.which(kind) is None:
            print(f"  {kind:<5} not installed")
            continue
        plain, loaded, load = measure(kind)
        added_ms = (loaded - plain) * 1000
        verdict = "meets" if added_ms < TARGET_MS else "MISSES"
        print(
            f"  {kind:<5} without {plain * 1000:6.2f} ms  with {loaded * 1000:6.2f} ms  "
            f"added {added_ms:+.3f} ms (target < {TARGET_MS:g}: {verdict});  "
            f"load {load * 1000:5.1f} ms"
        )


if __name__ == "__main__":
    report()
