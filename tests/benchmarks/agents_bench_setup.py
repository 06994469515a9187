"""What :mod:`agents_bench` runs: the agents' rules it reads them with, the program that
plays an agent and the hook payload it hands on, the output of real agents that it sends
through the launcher, and the rules' own cost measured apart."""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from helpers.sessions import make_session  # noqa: E402

from tray.base.safe_text import clean_text  # noqa: E402
from tray.core.agents.rules import AgentRules  # noqa: E402
from tray.core.agents.tracker import AgentTracker  # noqa: E402
from tray.launcher.recorder import SessionRecorder  # noqa: E402
from tray.launcher.terminal_signals import TerminalSignals  # noqa: E402
from tray.protocol.scanner import Scanner  # noqa: E402
from tray.state.agent_files import shipped_agent_book  # noqa: E402
from tray.state.logs import LauncherLog  # noqa: E402

# Gemini CLI 0.61.0's titles as it writes them: OSC 0, padded with spaces to 80.
BLOCKED_TITLE = "✋  Action Required (api-server)"
WORKING_TITLE = "✦  Working… (api-server)"


def _titles_fit(rules: AgentRules | None) -> bool:
    if rules is None:
        return False
    tracker = AgentTracker(rules)
    working = tracker.title(clean_text(WORKING_TITLE))
    blocked = tracker.title(clean_text(BLOCKED_TITLE))
    return (
        working is not None
        and working.state == "working"
        and blocked is not None
        and (blocked.state, blocked.kind) == ("blocked", "permission")
    )


_OWN_GEMINI = """\
name = "Gemini CLI (the bench's own titles)"
commands = ["gemini"]
checked = "0.61.0"
[[titles]]
match = '^✋\\s*Action Required'
state = "blocked"
kind = "permission"
msg = "Gemini CLI: action required"
[[titles]]
match = '^[✦⏲]\\s'
state = "working"
[[titles]]
match = '^◇\\s*Ready'
state = "done"
"""

_OWN_HOOKS = """\
name = "The bench's hooks"
commands = ["tray-bench-agent"]
checked = "0"
[[hooks]]
event = "Notification"
state = "blocked"
kind = "permission"
msg = "Run: {tool_input.command}"
"""

# aider's questions, as it asks them at its prompt.
_OWN_AIDER = """\
name = "Aider (the bench's own screen rules)"
commands = ["aider"]
checked = "0"
[[screen]]
match = 'Run shell commands?\\? \\(Y\\)es/\\(N\\)o'
state = "blocked"
kind = "permission"
msg = "{match}"
[[screen]]
match = 'Allow edits to [^\\n]{1,200}\\? \\(Y\\)es/\\(N\\)o'
state = "blocked"
kind = "permission"
msg = "{match}"
[[screen]]
match = '(Add|Create new) [^\\n]{1,200}\\? \\(Y\\)es/\\(N\\)o'
state = "blocked"
kind = "question"
msg = "{match}"
"""


# The shape of Gemini CLI's hook payloads, with the fields the other agents' hooks use.
PAYLOAD = {
    "session_id": "0b6f3c1e-2f6d-4a5e-9d8e-bench",
    "transcript_path": "/home/user/.gemini/tmp/chats/session.json",
    "cwd": "/home/user/api-server",
    "hook_event_name": "Notification",
    "timestamp": "2025-01-01T00:00:00.000Z",
    "notification_type": "ToolPermission",
    "message": "Tool Shell requires confirmation",
    "details": {"type": "exec", "title": "Confirm Shell Command", "command": "touch x"},
    "tool_name": "run_shell_command",
    "tool_input": {"command": "touch approved-file", "description": "create the marker"},
    "toolName": "bash",
    "toolArgs": json.dumps({"command": "touch approved-file"}),
}

# argv: log, count, blocked (hex), working (hex), the pause, and for the hooks the shell
# command, which then gets the blocked bytes on its stdin. Each timed signal is one line
# in the log: its index and monotonic time.
PROGRAM = r"""
import os, subprocess, sys, time, tty
log, count = open(sys.argv[1], "a", buffering=1), int(sys.argv[2])
blocked, working = bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
think = float(sys.argv[5])
command = sys.argv[6] if len(sys.argv) > 6 else ""
tty.setraw(0)
os.write(1, b"READY\r\n")
for index in range(count):
    os.read(0, 1)
    time.sleep(think)
    at = time.monotonic()
    log.write(f"{index} {at!r}\n")
    if command:
        done = subprocess.run(["bash", "-c", command], input=blocked, capture_output=True)
        if done.returncode or done.stdout or done.stderr:
            log.write(f"hook {done.returncode} {done.stdout!r} {done.stderr!r}\n")
    else:
        os.write(1, blocked)
    os.read(0, 1)
    time.sleep(think)
    os.write(1, working)
"""


class Rules:
    """The agents the bench runs, from the shipped files where they have what it needs,
    else from files of its own in a private ``$XDG_CONFIG_HOME/tray/agents``."""

    def __init__(self, config_home: Path) -> None:
        book = shipped_agent_book()
        folder = config_home / "tray" / "agents"
        folder.mkdir(parents=True)
        self.titles = "the shipped gemini.toml"
        if not _titles_fit(book.get("gemini")):
            (folder / "gemini.toml").write_text(_OWN_GEMINI, encoding="utf-8")
            self.titles = "the bench's own gemini.toml (the shipped one lacks these titles)"
        hooked = [
            (rules.app, rule.event)
            for rules in book.agents
            for rule in rules.hooks
            if (rule.effect.state, rule.effect.kind) == ("blocked", "permission")
        ]
        hooked.sort(key=lambda pair: pair[0] != "gemini")
        if hooked:
            self.hook = hooked[0]
            self.hooks = f"the shipped {self.hook[0]}.toml"
        else:
            (folder / "tray-bench-agent.toml").write_text(_OWN_HOOKS, encoding="utf-8")
            self.hook = ("tray-bench-agent", "Notification")
            self.hooks = "the bench's own rules file (no shipped agent has a blocked hook)"
        aider = book.get("aider")
        if aider is not None and aider.screen:
            self.screen = "the shipped aider.toml"
        else:
            (folder / "aider.toml").write_text(_OWN_AIDER, encoding="utf-8")
            self.screen = "the bench's own aider.toml (none shipped with screen rules)"


# --- the output ------------------------------------------------------------------------------

_OSC_7501 = re.compile(rb"\x1b\]7501;[^\x07\x1b]*(?:\x07|\x1b\\)")


def agent_stream() -> bytes:
    """One pass over every capture of a real agent's output, without OSC 7501."""
    files = sorted((REPO / "tests" / "data" / "captures").glob("*.bin"))
    files += sorted((REPO / "tests" / "data" / "agents").glob("*.bin"))
    return b"".join(_OSC_7501.sub(b"", path.read_bytes()) for path in files)


def write_stream(path: Path, megabytes: int) -> None:
    one = agent_stream()
    size = megabytes << 20
    with open(path, "wb") as handle:
        for _ in range(size // len(one)):
            handle.write(one)
        handle.write(one[: size % len(one)])


# --- the rules' own cost, measured apart ----------------------------------------------------

# The pty hands the launcher a program's output in reads of about this size.
_READ = 4096


def _chunk_cost(chunks: list[bytes], rules: AgentRules | None) -> float:
    """CPU seconds of the launcher's per-read work on ``chunks``: the scanner, and the
    recorder for the reads with events, with the agent's rules or without."""
    recorder = SessionRecorder(
        make_session("bench", time.time()),
        time.time,
        LauncherLog(None, "bench", time.time),
        TerminalSignals("bench", 30.0),
    )
    scanner = Scanner()
    if rules is not None:  # as the launcher does once it has read the agents' rules
        recorder.watch_agent(AgentTracker(rules))
        meanings = recorder.title_meanings()
        scanner.read_titles(meanings is not None, meanings)
    feed, apply = scanner.feed, recorder.apply
    started = time.process_time()
    for chunk in chunks:
        events = feed(chunk).events
        if events:
            apply(events)
    return time.process_time() - started


def rules_cost_per_byte(rules: AgentRules, megabytes: int, rounds: int) -> tuple[float, float]:
    """Nanoseconds a byte of the agents' stream costs the launcher's per-read work without
    the rules, and what the rules add to that: the median over interleaved rounds of each
    round's difference, all in this one process, where the load of the machine that makes
    whole runs differ by a tenth moves both sides of a round alike."""
    one = agent_stream()
    data = one * max(1, (megabytes << 20) // len(one))
    chunks = [data[at : at + _READ] for at in range(0, len(data), _READ)]
    _chunk_cost(chunks, rules)  # the lazy imports and the rules' caches, once
    without: list[float] = []
    added: list[float] = []
    for _ in range(rounds):
        plain = _chunk_cost(chunks, None)
        with_rules = _chunk_cost(chunks, rules)
        without.append(plain)
        added.append(with_rules - plain)
    scale = 1e9 / len(data)
    return statistics.median(without) * scale, statistics.median(added) * scale
