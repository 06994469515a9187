"""Agents' settings in a temporary home, for the ``tray hooks`` tests, and a terminal to
catch what hooks write."""

from __future__ import annotations

import io
import json
import os
import select
import shlex
import subprocess
import tty
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.tray_cli import tray_argv
from tray.commands.hooks import hooks
from tray.state.environment import Environment

TRAY = ["/opt/tray/bin/tray"]
OTHER_TRAY = ["/usr/bin/python3", "-m", "tray"]


def rules(name: str, *events: tuple[str, str] | tuple[str, str, str]) -> str:
    """A rules file naming hook ``events``: (event, state) or (event, state, msg)."""
    text = f'name = "{name}"\ncommands = ["{name.lower()}"]\nchecked = "1"\n'
    for event, state, *msg in events:
        text += f'\n[[hooks]]\nevent = "{event}"\nstate = "{state}"\n'
        if state == "blocked":
            text += 'kind = "permission"\n'
        if msg:
            text += f"msg = {json.dumps(msg[0])}\n"
        elif state == "blocked":
            text += 'msg = "Run: {toolInput.command}"\n'
    return text


# As tray/core/agents/copilot.toml names them: two of Copilot's notification types.
COPILOT_EVENTS = (
    ("notification:permission_prompt", "blocked", "{message}"),
    ("notification:elicitation_dialog", "blocked", "{message}"),
    ("agentStop", "done"),
)


@dataclass
class Home:
    root: Path
    environ: dict[str, str]
    stdout: io.StringIO
    stderr: io.StringIO

    @property
    def home(self) -> Path:
        return Path(self.environ["HOME"])

    @property
    def config(self) -> Path:
        return Path(self.environ["XDG_CONFIG_HOME"])

    def rules(self, app: str, text: str) -> None:
        folder = self.config / "tray" / "agents"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{app}.toml").write_text(text)

    def hooks(self, action: str, agent: str | None = None, argv: Sequence[str] = TRAY) -> int:
        self.stdout.seek(0)
        self.stdout.truncate()
        self.stderr.seek(0)
        self.stderr.truncate()
        env = Environment(environ=self.environ, stdout=self.stdout, stderr=self.stderr)
        return hooks(action, agent, env, argv)

    @property
    def said(self) -> str:
        return self.stdout.getvalue()

    @property
    def error(self) -> str:
        return self.stderr.getvalue()


def make_home(tmp_path: Path) -> Home:
    """A home with rules for the four agents' hook events, as user files."""
    (tmp_path / "home").mkdir()
    environ = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    made = Home(tmp_path, environ, io.StringIO(), io.StringIO())
    made.rules("copilot", rules("Copilot", *COPILOT_EVENTS))
    made.rules("gemini", rules("Gemini", ("Notification", "blocked"), ("AfterAgent", "done")))
    made.rules("qwen-code", rules("Qwen", ("PermissionRequest", "blocked")))
    made.rules(
        "opencode",
        rules("Opencode", ("permission.asked", "blocked", "{properties.metadata.command}")),
    )
    return made


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def command(argv: Sequence[str], app: str, event: str) -> str:
    return shlex.join([*argv, "emit", "--hook", app, event])


def copilot_file(home: Home) -> Path:
    return home.home / ".copilot" / "hooks" / "tray.json"


def copilot_hook(
    event: str, matcher: str | None = None, argv: Sequence[str] = TRAY
) -> dict[str, Any]:
    """tray's hook in Copilot's file as tray writes it for ``event`` (a rules file's name)."""
    entry: dict[str, Any] = {"type": "command"}
    if matcher is not None:
        entry["matcher"] = matcher
    return {**entry, "bash": command(argv, "copilot", event), "timeoutSec": 5}


NOTIFICATIONS = [
    copilot_hook("notification:permission_prompt", "permission_prompt"),
    copilot_hook("notification:elicitation_dialog", "elicitation_dialog"),
]


@contextmanager
def raw_terminal() -> Iterator[tuple[int, str]]:
    """A pty in raw mode: its master, and its slave's name for ``TRAY_TTY``."""
    master, slave = os.openpty()
    tty.setraw(slave)
    try:
        yield master, os.ttyname(slave)
    finally:
        os.close(slave)
        os.close(master)


def drain(master: int) -> bytes:
    """Everything waiting on the pty's master (the writers have exited)."""
    chunks = []
    while select.select([master], [], [], 0.2)[0]:
        chunks.append(os.read(master, 65536))
    return b"".join(chunks)


def install_hooks(app: str, home: Path) -> None:
    """`tray hooks install APP` as the user would run it, with ``home`` as HOME."""
    home.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [*tray_argv(), "hooks", "install", app],
        env={"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
