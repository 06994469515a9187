"""Answering from the phone: from the tap to the key in the program's input.

A real ``tray app`` on a headless desktop (app_bench's Xvfb, bus, dunst and trayer), with
``[away] after = "2s"`` and ``answer`` on a loopback stand-in of ntfy
(tests/helpers/ntfy_standin.py); nobody touches the Xvfb, so the user is away. A real
``tray run`` in the app's state directory runs answer_bench's program: a permission
prompt as Claude Code reports it, a fresh one after each key, noting the monotonic time
at which its read returns.

For each prompt the bench waits, off the clock, until the app has published it with its
buttons and the launcher's gate has let the prompt settle (:data:`SETTLE`). Then it plays
the phone: it notes the monotonic time and performs the Approve action's request exactly
as the action states it (method, URL, headers, body). The figure runs from there to the
key in the program's input: the stand-in handing the reply to the app's stream, the
worker's check of the token, the launcher's socket and its gate.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from functools import partial
from http import HTTPStatus
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(Path(__file__).resolve().parent)]

from answer_bench import _measure, _wait  # noqa: E402
from app_bench import start_desktop_app  # noqa: E402
from helpers.desktop_services import stop_process  # noqa: E402
from helpers.ntfy_standin import FakeNtfy  # noqa: E402
from helpers.phone import tap  # noqa: E402

TARGET = 1.0
SAMPLES = 20
TOPIC = "tray-bench-phone-7f3k2q9x"


def _buttons(ntfy: FakeNtfy, seen: int) -> dict[str, object] | None:
    """The Approve action of the first published prompt after the ``seen`` before it."""
    asked = [m for m in ntfy.published(TOPIC) if m.get("actions")]
    if len(asked) <= seen:
        return None
    actions = asked[seen]["actions"]
    assert isinstance(actions, list)
    return next(a for a in actions if isinstance(a, dict) and a.get("label") == "Approve")


def measure(samples: int = SAMPLES) -> list[float]:
    started: list[subprocess.Popen[bytes]] = []
    with FakeNtfy() as ntfy, tempfile.TemporaryDirectory() as scratch:
        config = f'[away]\nafter = "2s"\nanswer = "{ntfy.url}/{TOPIC}"\n'
        try:
            env, monitor, state_dir = start_desktop_app(Path(scratch), config, started)
            monitor.stop()
            log = state_dir / "app.log"
            _wait(
                lambda: log.exists() and "away (since" in log.read_text(),
                "the app to see nobody at the desk",
                timeout=60,
            )
            return _run(env, state_dir, ntfy, samples)
        finally:
            for proc in reversed(started):
                stop_process(proc)


def _run(env: dict[str, str], state_dir: Path, ntfy: FakeNtfy, samples: int) -> list[float]:
    """answer_bench's loop, with the phone's tap as the answer."""
    found: list[dict[str, object]] = []

    def meanwhile(index: int) -> None:
        # The app has published the prompt with its buttons: waited for off the clock.
        action = _wait(partial(_buttons, ntfy, index), f"prompt {index} on the phone")
        assert isinstance(action, dict)
        found.append(action)

    def answer(_session: str, _record: str, _since: float) -> tuple[bool, str]:
        status = tap(found.pop())
        return status == HTTPStatus.OK, f"the stand-in answered the tap with {status}"

    argv = [sys.executable, "-m", "tray", "run", "--"]
    return _measure(argv, env, state_dir, answer, samples, meanwhile)


def report(samples: int = SAMPLES) -> None:
    print(
        "Answering from the phone: the tap (the Approve action's request to a loopback ntfy)"
        " to the key in the program's input"
    )
    try:
        latencies = measure(samples)
    except (RuntimeError, OSError, AssertionError) as error:
        print(f"  failed: {' '.join(str(error).split())[:400]}")
        return
    median = statistics.median(latencies)
    verdict = "meets" if median < TARGET else "MISSES"
    print(
        f"  median of {len(latencies)}: {median * 1000:.1f} ms (min {min(latencies) * 1000:.1f},"
        f" max {max(latencies) * 1000:.1f}); target < {TARGET * 1000:.0f} ms: {verdict}"
    )


if __name__ == "__main__":
    report()
