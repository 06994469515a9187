"""A real `tray app` process for the desktop tests, with a config and state of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from helpers.desktop_services import stop_process
from helpers.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0


@dataclass
class RunningApp:
    proc: subprocess.Popen[bytes]
    state_dir: Path
    env: dict[str, str]

    @property
    def log(self) -> str:
        try:
            return (self.state_dir / "app.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""


def start_app_process(
    desktop_env: dict[str, str],
    tmp_path: Path,
    config: str,
    argv: tuple[str, ...] = ("-m", "tray", "app"),
    stderr: Path | None = None,
) -> RunningApp:
    state_dir = tmp_path / "state"  # a test may fill it before the app starts
    config_home = tmp_path / "config"
    (config_home / "tray").mkdir(parents=True)
    (config_home / "tray" / "config.toml").write_text(config)
    env = {
        **desktop_env,
        "TRAY_STATE_DIR": str(state_dir),
        "XDG_CONFIG_HOME": str(config_home),
        "PYTHONPATH": str(REPO),
    }
    with open(stderr or os.devnull, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, *argv],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    app = RunningApp(proc, state_dir, env)
    try:
        wait_for(lambda: "tray backend:" in app.log, TIMEOUT, what="the app to start")
    except BaseException:
        stop_process(proc)
        raise
    return app


StartApp = Callable[..., RunningApp]


def run_icon_driver(
    module: str, env: dict[str, str], timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """``python -m MODULE`` from the repository, on pystray's appindicator backend: a test
    module whose ``__main__`` drives a real icon in a process of its own (GTK's main loop
    and pystray's threads stay out of the test's). ``env`` is its desktop."""
    return subprocess.run(
        [sys.executable, "-m", module],
        cwd=REPO,
        env={**env, "PYSTRAY_BACKEND": "appindicator", "PYTHONPATH": f"{REPO}:{REPO / 'tests'}"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
