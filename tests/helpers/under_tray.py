"""What the tests of real agents under `tray run` do with the state file and the terminal.

The test plays the outer side of the agent's pty; the answer goes as a script's would:
the real CLI, ``tray answer SESSION approve|deny --since T``, with the session id and
``since`` read from the state file, to the launcher's own answer socket.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from helpers.agent_terminal import PlayedTerminal
from helpers.agents import TRAY
from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.state.store import StateStore


def session(state_dir: Path) -> Session | None:
    """The one session in the state file, if exactly one is there."""
    found, _ = StateStore(state_dir).read_all(time.time())
    return found[0] if len(found) == 1 else None


def prompt(state_dir: Path) -> tuple[Session, Record] | None:
    """The session and its permission prompt's record, while one stands."""
    current = session(state_dir)
    if current is None:
        return None
    for record in current.records:
        if record.state == "blocked" and record.kind == "permission" and record.since:
            return current, record
    return None


def state(state_dir: Path) -> str | None:
    current = session(state_dir)
    return None if current is None else current.state


def wait_done(terminal: PlayedTerminal, state_dir: Path) -> None:
    terminal.wait_for("the session to be done", lambda: state(state_dir) == "done")


def answer(
    terminal: PlayedTerminal,
    state_dir: Path,
    app: str,
    reply: str,
    *,
    after: float | None = None,
    timeout: float = 60.0,
) -> float:
    """Wait (up to ``timeout``) for a prompt in the state file newer than ``after``, check
    whose it is, then `tray answer` it with ``reply`` as a script would while the test
    keeps playing the terminal. The prompt's ``since``."""

    def newer() -> tuple[Session, Record] | None:
        found = prompt(state_dir)
        return found if found is not None and found[1].since != after else None

    terminal.wait_for("the prompt in the state file", lambda: newer() is not None, timeout)
    found = newer()
    assert found is not None
    current, record = found
    assert (current.state, record.app, record.kind) == ("blocked", app, "permission")
    since = record.since
    done: list[subprocess.CompletedProcess[str]] = []
    client = threading.Thread(
        target=lambda: done.append(
            subprocess.run(
                [*TRAY, "answer", current.id, reply, "--since", repr(since)],
                env={"TRAY_STATE_DIR": str(state_dir), "PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        )
    )
    client.start()
    terminal.wait_for("tray answer to return", lambda: not client.is_alive())
    client.join()
    assert (done[0].returncode, done[0].stderr) == (0, "")
    written = session(state_dir)
    assert written is not None
    assert written.answered is not None
    assert (written.answered.since, written.answered.answer) == (since, reply)
    assert since is not None
    return since


def say(terminal: PlayedTerminal, text: str, enter_after: float = 0.0) -> None:
    """The user's next message: typed, seen on the screen, then Enter on its own, at
    least ``enter_after`` seconds later (some agents read an Enter hard on the heels of
    typed text as part of a paste, a newline; a person's Enter comes later)."""
    shown = len(terminal.screen_text())
    terminal.write(text.encode())
    terminal.wait_for("the typed text", lambda: text in terminal.screen_text()[shown - 200 :])
    typed = time.monotonic()
    while time.monotonic() < typed + enter_after:
        terminal.pump(0.01)
    terminal.write(b"\r")
