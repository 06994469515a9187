"""A real agent on a real pty, with the test playing its terminal.

The test holds the pty's master, as a terminal emulator does. It answers the queries the
agents send at start (DA1, the cursor position, the colours, the OSC 7501 probe) the way
a terminal does, and reads the agent's OSC 7501 reports with tray's own scanner and
record table. It never answers a prompt by itself: a test decides what to type.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ptyprocess import PtyProcess

from tray.protocol.output_events import Query, RawReport
from tray.protocol.records import Record, RecordTable
from tray.protocol.report import parse_body
from tray.protocol.scanner import Scanner

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
AGENTS = PROJECT_ROOT / ".agents" / "node_modules"
CLAUDE = AGENTS / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
CODEX = (
    AGENTS
    / "@openai"
    / "codex-linux-x64"
    / "vendor"
    / "x86_64-unknown-linux-musl"
    / "bin"
    / "codex"
)
ROWS, COLS = 30, 100

# Queries a terminal answers, and its answers (those of a plain xterm-like terminal).
_REPLIES: tuple[tuple[re.Pattern[bytes], Callable[[re.Match[bytes]], bytes]], ...] = (
    (re.compile(rb"\x1b\[0?c"), lambda m: b"\x1b[?62;22c"),
    (re.compile(rb"\x1b\[>0?c"), lambda m: b"\x1b[>1;10;0c"),
    (re.compile(rb"\x1b\[\??6n"), lambda m: b"\x1b[1;1R"),
    (re.compile(rb"\x1b\[5n"), lambda m: b"\x1b[0n"),
    (
        re.compile(rb"\x1b\](1[01]);\?(\x07|\x1b\\)"),
        lambda m: b"\x1b]" + m[1] + b";rgb:ffff/ffff/ffff" + m[2],
    ),
    (re.compile(rb"\x1b\[18t"), lambda m: b"\x1b[8;%d;%dt" % (ROWS, COLS)),
    (re.compile(rb"\x1b\[14t"), lambda m: b"\x1b[4;%d;%dt" % (ROWS * 16, COLS * 8)),
)


class PlayedTerminal:
    """A program on a pty whose terminal is this object."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: dict[str, str]) -> None:
        self.env = env
        self.process = PtyProcess.spawn(list(argv), cwd=str(cwd), env=env, dimensions=(ROWS, COLS))
        self.output = bytearray()
        self.table = RecordTable()
        self.reports: list[bytes] = []
        self._answered_to = 0
        self._scanner = Scanner()
        self.clock = time.monotonic

    def pump(self, timeout: float = 0.05) -> None:
        """Read what the program wrote within ``timeout``, answering its queries."""
        fd = self.process.fd
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return
        try:
            data = os.read(fd, 65536)
        except OSError:
            return
        if not data:
            return
        self.output += data
        result = self._scanner.feed(data)
        for event in result.events:
            if isinstance(event, Query) and event.number == 7501:  # not kitty's OSC 99 one
                self.write(event.answer)
            elif isinstance(event, RawReport):
                self.reports.append(event.body)
                report = parse_body(event.body)
                if report is not None:
                    self.table.apply(report, self.clock())
        self._answer_queries()

    def _answer_queries(self) -> None:
        # Searched in the whole output, from the end of the last answered one, so a query
        # split across reads is answered once it is whole.
        while True:
            found = [
                (match.start(), match, reply)
                for pattern, reply in _REPLIES
                if (match := pattern.search(self.output, self._answered_to)) is not None
            ]
            if not found:
                return
            _, match, reply = min(found, key=lambda entry: entry[0])
            self._answered_to = match.end()
            self.write(reply(match))

    def write(self, data: bytes) -> None:
        os.write(self.process.fd, data)

    def records(self) -> list[Record]:
        return self.table.records()

    def wait_for(self, what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                tail = bytes(self.output[-1500:]).decode(errors="replace")
                raise AssertionError(f"timed out waiting for {what}; screen tail:\n{tail}")
            if not self.process.isalive():
                self.pump(0)
                if check():
                    return
                tail = bytes(self.output[-1500:]).decode(errors="replace")
                raise AssertionError(f"the program ended waiting for {what}:\n{tail}")
            self.pump()

    def screen_text(self) -> str:
        """The output with escape sequences removed, for "does it say X" checks."""
        text = re.sub(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]", b" ", bytes(self.output))
        text = re.sub(rb"\x1b\][^\x07\x1b]*(\x07|\x1b\\)", b"", text)
        return re.sub(r"\s+", " ", text.decode(errors="replace"))

    def blocked(self) -> Record | None:
        return next(
            (r for r in self.records() if r.state == "blocked" and r.kind == "permission"), None
        )

    def close(self) -> None:
        if self.process.isalive():
            self.process.terminate(force=True)
        self.process.close(force=True)
        # Codex starts an app-server daemon of its own, in a session of its own, from the
        # binary it unpacks into CODEX_HOME: it outlives the agent unless ended here.
        home = self.env.get("CODEX_HOME")
        if home:
            end_processes_under(Path(home))


def end_processes_under(folder: Path) -> list[int]:
    """SIGKILL every process of ours whose program file lies in ``folder``; their pids."""
    ended = []
    prefix = str(folder.resolve()) + os.sep
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            program = os.readlink(f"/proc/{entry}/exe")
        except OSError:  # gone, or not ours to look at
            continue
        if program.startswith(prefix):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry), signal.SIGKILL)
                ended.append(int(entry))
    return ended
