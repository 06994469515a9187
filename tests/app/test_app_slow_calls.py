"""The worker never waits on another program: while a focus and an answer hang, a new
blocked report still reaches the notifier in its usual time.

A real TrayApp (its worker, watcher, policy and refresh) on a real state directory. What
hangs is real too: a tmux server stopped with SIGSTOP, so `tmux select-window` waits on
it, and a launcher whose answer socket listens but is not read yet, so the answer waits
for its reply. The notifier is a small recorder that writes down each notification with
the moment it came (as test_app_worker's and test_app_answers' do, without the moment).
Once the new ping is in, the tmux server and the launcher go on, and the focus and the
answer finish as they would have.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.fake_launcher import FakeLauncher
from helpers.fake_notifier import FakeNotifier
from helpers.fake_tray_icon import FakeTrayIcon
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for

from tray.app.main import TrayApp
from tray.app.start import build_app
from tray.core.answers.target import AnswerTarget
from tray.core.worker.user_actions import Focus, answer_to
from tray.protocol.records import Record
from tray.protocol.state import State
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.store import StateStore

# A blocked report reaches the notifier within a refresh or two on a quiet machine (the
# interval is 0.25 s); 2 s leaves room for a loaded one, and is still shorter than every
# wait held here: tmux's 3 s (TOOL_TIMEOUT), ssh's 5 s for a remote focus, a launcher's
# 9 s (REPLY_TIMEOUT). The old worker, stuck in the first of them, missed it.
PING_WITHIN = 2.0


class LogLines(logging.Handler):
    """Every line the app logs, as text."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def logged(name: str) -> Iterator[tuple[logging.Logger, LogLines]]:
    log = logging.getLogger(name)
    lines = LogLines()
    log.addHandler(lines)
    log.setLevel(logging.DEBUG)
    try:
        yield log, lines
    finally:
        log.removeHandler(lines)


def run_tmux(socket: Path, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-S", str(socket), *args],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm"},
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return done.stdout.strip()


@dataclass
class StoppedTmux:
    """A tmux server with two windows, the first selected; ``pane`` is the second's.
    Stopped with SIGSTOP until :meth:`go_on`: every client waits on it meanwhile."""

    socket: Path
    pid: int
    pane: str
    stopped: bool = True

    def go_on(self) -> None:
        if self.stopped:
            os.kill(self.pid, signal.SIGCONT)
            self.stopped = False

    def window(self) -> str:
        return run_tmux(self.socket, "display", "-p", "#{window_index}")

    def terminal(self) -> dict[str, str]:
        """What a launcher in that pane records, as TMUX and TMUX_PANE say."""
        return {"TMUX": f"{self.socket},{self.pid},0", "TMUX_PANE": self.pane}

    def clients_waiting(self) -> bool:
        """Whether a `tmux ... select-window` for this server is running now."""
        needle = str(self.socket).encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    words = handle.read().split(b"\0")
            except OSError:
                continue
            if needle in words and b"select-window" in words:
                return True
        return False


@contextmanager
def stopped_tmux(folder: Path) -> Iterator[StoppedTmux]:
    if shutil.which("tmux") is None:
        pytest.fail("needs tmux (make test installs it)")
    socket = folder / "tmux.sock"
    run_tmux(socket, "new-session", "-d", "-s", "work", "-x", "100", "-y", "30")
    try:
        run_tmux(socket, "new-window", "-t", "work:1")
        pane = run_tmux(socket, "display", "-p", "-t", "work:1", "#{pane_id}")
        run_tmux(socket, "select-window", "-t", "work:0")
        pid = int(run_tmux(socket, "display", "-p", "#{pid}"))
        os.kill(pid, signal.SIGSTOP)
        tmux = StoppedTmux(socket, pid, pane)
        try:
            yield tmux
        finally:
            tmux.go_on()
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], timeout=10, check=False)


def prompt(since: float) -> Record:
    return Record(
        "", State.BLOCKED, "permission", None, "claude-code", None, "approve", since, since
    )


def app_on(
    state_dir: Path,
    config_home: Path,
    config: str,
    notifier: FakeNotifier,
    log: logging.Logger,
    *,
    host: FakeTrayIcon | None = None,
    environ: dict[str, str] | None = None,
) -> TrayApp:
    (config_home / "tray").mkdir(parents=True, exist_ok=True)
    (config_home / "tray" / "config.toml").write_text(config, encoding="utf-8")
    env = Environment(
        environ={
            **(environ or {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}),
            "TRAY_STATE_DIR": str(state_dir),
            "XDG_CONFIG_HOME": str(config_home),
        }
    )
    return build_app(
        env,
        load_config(env),
        log,
        host or FakeTrayIcon(),  # type: ignore[arg-type]
        lambda *_callbacks: notifier,  # type: ignore[arg-type]
    )


def ping_comes_in_time(notifier: FakeNotifier, write: Callable[[], None], key: str) -> float:
    """Write a new blocked session; how long its ping took (at most PING_WITHIN)."""
    written = time.monotonic()
    write()
    sent = wait_for(lambda: notifier.sent_at(key), PING_WITHIN, what=f"the ping for {key}")
    return sent - written


def test_a_blocked_report_pings_in_time_while_a_local_focus_and_answer_wait(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")  # menus built without a display
    store = StateStore(state_dir)
    since = time.time() - 5  # settled: the launcher types as soon as it reads
    notifier = FakeNotifier()
    with (
        logged("test-app-slow-calls") as (log, lines),
        stopped_tmux(tmp_path) as tmux,
    ):
        launcher = FakeLauncher(state_dir, "1-asks", (prompt(since),), serving=False)
        try:
            store.write(live_session("1-asks", (prompt(since),), time.time(), {}))
            store.write(live_session("2-in-tmux", (), time.time(), tmux.terminal()))
            app = app_on(state_dir, tmp_path / "config", "[notify]\nsettle = 0\n", notifier, log)
            app.start()
            try:
                target = AnswerTarget("1-asks", "", since)
                wait_for(lambda: target in notifier.answers, what="the prompt's ping")
                # A click on Focus, then on Approve: each now waits on a program that
                # does not answer.
                app.post(Focus("2-in-tmux"))
                app.post(answer_to(target, "approve"))
                wait_for(tmux.clients_waiting, what="tmux to be asked")
                wait_for(launcher.knocked, what="the launcher to be asked")

                ping_comes_in_time(
                    notifier,
                    lambda: store.write(
                        live_session("3-new", blocked("approve rm", time.time()), time.time())
                    ),
                    "3-new",
                )
                # Both were still waiting when it came.
                assert launcher.typed == [] and notifier.withdrawn == []
                assert tmux.clients_waiting()

                tmux.go_on()
                launcher.serve()
                wait_for(lambda: notifier.withdrawn == [target], what="the answer to settle")
                wait_for(lambda: tmux.window() == "1", what="the focus to select the pane")
            finally:
                app.stop()
        finally:
            launcher.close()
    assert launcher.typed == [b"1"]
    assert not [line for line in lines.lines if "cannot focus" in line or "failed" in line]
