"""Real interactive bash, zsh and fish on a pty, driven by prompt markers.

Each shell starts without the user's rc files, in a temporary home, with a prompt that
shows how many commands it has run (``<<P3>>``). A command is done when the prompt with
the next number appears: by then the shell's own prompt hooks, tray's among them, have
run.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from ptyprocess import PtyProcess

from tray.core.session.model import Session
from tray.state.store import StateStore

TIMEOUT = 20.0
# The long-command tests' threshold: any `sleep 0.5` of theirs passes it.
LONG_COMMANDS = '[notify]\ndone_after = "0.2s"\n'
SHELLS = ("bash", "zsh", "fish")
T = TypeVar("T")

ARGV = {
    "bash": ["bash", "--norc", "--noprofile", "-i"],
    "zsh": ["zsh", "-f", "-i"],
    "fish": ["fish", "--no-config", "-i"],
}
# The prompt counts commands, not redraws: fish redraws its prompt as the user types.
PROMPT_SETUP = {
    "bash": "__tn=0; PS1='<<P$((++__tn))>> '",
    "zsh": (
        "setopt prompt_subst; __tn=0; __tcount() { (( ++__tn )) }; "
        "precmd_functions+=(__tcount); PS1='<<P${__tn}>> '"
    ),
    "fish": (
        "set -g __tn 0; function __tcount --on-event fish_postexec; set -g __tn (math $__tn + 1);"
        " end; function fish_prompt; printf '<<P%s>> ' $__tn; end"
    ),
}
PROMPT = re.compile(rb"<<P(\d+)>> ")
# What the fake agent prints: its arguments and whether it runs in a tray session.
FAKE_AGENT = """\
import json, os, sys, time
args = sys.argv[1:]
if args[:1] == ["--sleep"]:  # run that long, as a long command does: only time makes one
    time.sleep(float(args[1]))
print("<<agent " + json.dumps({
    "name": os.path.basename(sys.argv[0]),
    "argv": args,
    "session": os.environ.get("TRAY_SESSION_ID"),
    "stdin_tty": os.isatty(0),
    "stdout_tty": os.isatty(1),
}) + ">>", flush=True)
"""
AGENT_OUTPUT = re.compile(r"<<agent (\{.*?\})>>")
# The real tray's console script, with every call written down first.
LOGGING_TRAY = """\
import json, os, sys
with open(os.environ["TRAY_TEST_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
from tray.cli import entry
entry()
"""


def require(kind: str) -> None:
    if shutil.which(kind) is None:
        pytest.fail(f"{kind} is not installed (make test installs it)")


@dataclass
class Home:
    """A temporary home: config, state directory, fake agents and a logging tray."""

    root: Path
    environ: dict[str, str] = field(default_factory=dict)

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def log(self) -> Path:
        return self.root / "tray-calls.log"

    @property
    def logging_tray(self) -> Path:
        return self.root / "logging-bin" / "tray"

    @classmethod
    def create(cls, root: Path, agents: tuple[str, ...] = ("claude", "codex")) -> Home:
        home = cls(root)
        for name in ("bin", "logging-bin", "config/tray", "data", "cache", "work"):
            (root / name).mkdir(parents=True, exist_ok=True)
        for agent in agents:
            home.add_script(home.bin / agent, FAKE_AGENT)
        home.add_script(home.logging_tray, LOGGING_TRAY)
        tray_bin = Path(sys.executable).parent
        home.environ = {
            "HOME": str(root),
            "ZDOTDIR": str(root),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_CACHE_HOME": str(root / "cache"),
            "XDG_RUNTIME_DIR": str(root),
            "TRAY_STATE_DIR": str(home.state_dir),
            "TRAY_TEST_LOG": str(home.log),
            "PATH": os.pathsep.join([str(home.bin), str(tray_bin), "/usr/bin", "/bin"]),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "fish_greeting": "",
        }
        if "PYTHONPATH" in os.environ:
            home.environ["PYTHONPATH"] = os.environ["PYTHONPATH"]
        # No command of a test is a long one unless the test says so (LONG_COMMANDS): with a
        # short threshold for all, a busy machine let the shell's own `eval "$(tray init
        # bash)"` run past it, and that load became a finished session of its own.
        home.configure('[notify]\ndone_after = "1h"\n')
        return home

    def add_script(self, path: Path, source: str) -> None:
        path.write_text(f"#!{sys.executable}\n{source}")
        path.chmod(0o755)

    def count_long_commands(self) -> None:
        """Report every command that runs past 0.2 s as a long one (before the shell
        loads tray's code, which reads the threshold then)."""
        self.configure(LONG_COMMANDS)

    def configure(self, text: str) -> None:
        (self.root / "config" / "tray" / "config.toml").write_text(text)

    def sessions(self) -> list[Session]:
        found, problems = StateStore(self.state_dir).read_all(time.time())
        assert not problems
        return found

    def finished_calls(self) -> list[list[str]]:
        """The logging tray's ``_finished`` calls."""
        if not self.log.exists():
            return []
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [call for call in calls if call[:1] == ["_finished"]]


class Shell:
    """One interactive shell on its own pty."""

    def __init__(
        self,
        kind: str,
        home: Home,
        extra_env: Mapping[str, str] | None = None,
        argv: list[str] | None = None,
    ) -> None:
        self.kind = kind
        self.home = home
        self.process = PtyProcess.spawn(
            argv or ARGV[kind],
            env={**home.environ, **(extra_env or {})},
            cwd=str(home.root / "work"),
            dimensions=(50, 400),
        )
        self.output = bytearray()
        self.consumed = 0
        self.count = 0
        self.run(PROMPT_SETUP[kind])

    def close(self) -> None:
        if self.process.isalive():
            self.process.terminate(force=True)
        self.process.close(force=True)

    def __enter__(self) -> Shell:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _pump(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.process.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.process.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            return False
        self.output += chunk
        return True

    def expect(self, pattern: re.Pattern[bytes], timeout: float = TIMEOUT) -> re.Match[bytes]:
        """The next match after what earlier calls consumed."""
        deadline = time.monotonic() + timeout
        while True:
            match = pattern.search(self.output, self.consumed)
            if match:
                self.consumed = match.end()
                return match
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._pump(min(remaining, 0.2)):
                tail = bytes(self.output[-2000:]).decode(errors="replace")
                raise AssertionError(f"{self.kind}: no {pattern.pattern!r} in ...{tail!r}")

    def send(self, text: str) -> None:
        os.write(self.process.fd, text.encode())

    def run(self, line: str, timeout: float = TIMEOUT) -> str:
        """Type ``line`` and Enter; return what the shell wrote until its next prompt."""
        start = len(self.output)
        self.send(line + "\r")
        return self.wait_prompt(start, timeout)

    def wait_prompt(self, start: int | None = None, timeout: float = TIMEOUT) -> str:
        begin = self.consumed if start is None else start
        self.count += 1
        self.expect(re.compile(rb"<<P%d>> " % self.count), timeout)
        return bytes(self.output[begin : self.consumed]).decode(errors="replace")

    def load(self, program: str = "tray") -> str:
        """Load tray's code as the README says, from ``program``."""
        if self.kind == "fish":
            return self.run(f"{program} init fish | source")
        return self.run(f'eval "$({program} init {self.kind})"')

    def agent(self, line: str) -> dict[str, Any]:
        """Run a line that runs the fake agent once; what it printed."""
        found = AGENT_OUTPUT.findall(self.run(line))
        assert len(found) == 1, found
        result: dict[str, Any] = json.loads(found[0])
        return result
