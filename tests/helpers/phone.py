"""The phone's side of ``[away] answer`` for tests of the real app: what the ntfy stand-in
(:class:`helpers.ntfy_standin.FakeNtfy`) was sent on the user's topic, a tap on a button
performed exactly as its ntfy ``http`` action states, and a small program under a real
`tray run` whose permission prompt (OSC 7501) the buttons answer.

The program logs every read it gets, in hex, one line a read: what the launcher typed
into it, or the user. It puts up a new prompt (another message, so another ``since``)
each time the test asks for one, without any key going in.
"""

from __future__ import annotations

import base64
import json
import secrets
import sys
import time
import urllib.request
from pathlib import Path
from typing import cast

from helpers.desktop_apps import TIMEOUT, RunningApp
from helpers.drained_pty import DrainedPty
from helpers.ntfy_standin import FakeNtfy
from helpers.tray_cli import tray_argv
from helpers.waiting import wait_for
from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.report import Report, encode_sequence
from tray.protocol.state import State
from tray.state.store import StateStore

Message = dict[str, object]
Action = dict[str, object]


def new_topic() -> str:
    """A topic as a user picks one: unguessable, so a secret to hunt for in the output."""
    return f"tray-{secrets.token_hex(8)}"


def prompts(fake: FakeNtfy, topic: str) -> list[Message]:
    """The published messages that carry buttons."""
    return [m for m in fake.published(topic) if m.get("actions")]


def told(fake: FakeNtfy, topic: str) -> list[str]:
    """What the app told the phone came of its taps (the messages tagged "tray"; the
    pings carry their state's tag)."""
    return [str(m["message"]) for m in fake.published(topic) if m.get("tags") == ["tray"]]


def tokens(fake: FakeNtfy, topic: str) -> list[str]:
    """Every token the app put on a button."""
    actions = [cast(list[Action], m["actions"]) for m in prompts(fake, topic)]
    return [str(action["body"]) for each in actions for action in each]


def wait_prompt(fake: FakeNtfy, topic: str, count: int, timeout: float = TIMEOUT) -> Message:
    """The ``count``-th message with buttons on ``topic``, once it is there."""
    found = wait_for(
        lambda: prompts(fake, topic)[count - 1 :],
        timeout,
        what=f"prompt {count} published with its buttons",
    )
    return found[0]


def wait_told(
    fake: FakeNtfy, topic: str, line: str, count: int = 1, timeout: float = TIMEOUT
) -> None:
    """Until ``line`` has been published back ``count`` times."""
    wait_for(
        lambda: told(fake, topic).count(line) >= count,
        timeout,
        what=f"{line!r} published back",
    )


def button(message: Message, label: str) -> Action:
    actions = cast(list[Action], message["actions"])
    (found,) = [a for a in actions if a.get("label") == label]
    return found


def tap(action: Action, body: str | None = None) -> int:
    """What the ntfy app does for an ``http`` action: its method, URL, headers and body,
    nothing else (``body`` in place of the action's, for a forged or replayed reply).
    The server's status."""
    headers = cast(dict[str, str], action.get("headers", {}))
    request = urllib.request.Request(  # noqa: S310 - the test's own loopback URL
        str(action["url"]),
        data=(str(action["body"]) if body is None else body).encode(),
        headers=dict(headers),
        method=str(action["method"]),
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310 - loopback
        response.read()
        return int(response.status)


def token_fields(token: str) -> dict[str, object]:
    """The signed payload of a token (``t1.PAYLOAD.MAC``), read as the app wrote it."""
    payload = token.split(".")[1]
    return cast(dict[str, object], json.loads(base64.urlsafe_b64decode(payload + "==")))


def flip_one_byte(token: str, where: int) -> str:
    """``token`` with the character at ``where`` changed to another base64 character."""
    old = token[where]
    return f"{token[:where]}{'B' if old == 'A' else 'A'}{token[where + 1 :]}"


def answer_config(url: str, token: str | None = None, settle: float = 0.2) -> str:
    """Away once the display has had no input for 2 s; no reminders (each test counts
    what is published); answering from the phone at ``url``."""
    config = (
        f'[notify]\nsettle = {settle}\nremind = "0"\nburst = 50\ndone_after = 0\n'
        f'[away]\nafter = "2s"\nanswer = "{url}"\n'
    )
    return config + (f'answer_token = "{token}"\n' if token else "")


# `tray app` with its stdout sent where its stderr goes (start_app_process drops stdout),
# so that a test reads all it printed.
APP_ARGV = (
    "-c",
    "import os, runpy, sys; os.dup2(2, 1); sys.argv = ['tray', 'app'];"
    " runpy.run_module('tray', run_name='__main__')",
)


# A piece of a token this long is a leak too (its head, its signature).
PIECE = 12


def pieces(secret: str) -> list[str]:
    """``secret`` itself when short; else every piece of it PIECE characters long."""
    if len(secret) <= 2 * PIECE:
        return [secret]
    return [secret[at : at + PIECE] for at in range(len(secret) - PIECE + 1)]


def no_secrets(app: RunningApp, output: Path, hidden: list[str]) -> None:
    """Neither the app's output, its log, the launchers' log nor a state file holds any
    of ``hidden``, nor any piece of a long one (a token)."""
    texts = [output.read_text(errors="replace")]
    for pattern in ("*.log", "*.json"):
        texts += [path.read_text(errors="replace") for path in app.state_dir.glob(pattern)]
    for secret in hidden:
        for piece in pieces(secret):
            for text in texts:
                assert piece not in text, f"a secret in the app's output: {piece!r}"


# argv: the log of reads, the file whose appearance asks for the next prompt, then each
# prompt's report in hex (the first at once).
PROGRAM = r"""
import os, select, sys, tty
log = open(sys.argv[1], "a", buffering=1)
go, reports = sys.argv[2], sys.argv[3:]
tty.setraw(0)
os.write(1, bytes.fromhex(reports.pop(0)) + b"PROMPT\r\n")
while True:
    if select.select([0], [], [], 0.05)[0]:
        try:
            data = os.read(0, 1024)
        except OSError:
            break
        if not data:
            break
        log.write(data.hex() + "\n")
    if os.path.exists(go) and reports:
        os.unlink(go)
        os.write(1, bytes.fromhex(reports.pop(0)) + b"PROMPT AGAIN\r\n")
"""


def prompt_report(msg: str) -> Report:
    # An app whose keys tray knows (claude-code: 1 approves, Esc denies): answerable.
    return Report(State.BLOCKED, "", "permission", None, "claude-code", None, msg)


class PromptProgram:
    """`tray run --name NAME -- python3 -c PROGRAM ...` on a real pty, as a terminal
    holds it (:class:`helpers.drained_pty.DrainedPty`)."""

    def __init__(self, app: RunningApp, name: str, messages: list[str], work: Path) -> None:
        self.name = name
        self.state_dir = app.state_dir
        self.reads_path = work / f"{name}.reads"
        self.reads_path.touch()
        self._go = work / f"{name}.go"
        reports = [encode_sequence(prompt_report(msg)).hex() for msg in messages]
        program = [sys.executable, "-c", PROGRAM, str(self.reads_path), str(self._go), *reports]
        self._pty = DrainedPty([*tray_argv("run", "--name", name, "--"), *program], app.env)

    def reads(self) -> list[str]:
        return self.reads_path.read_text().split()

    def type(self, data: bytes) -> None:
        """The user's keys, into the terminal that holds `tray run`."""
        self._pty.type(data)

    def session(self) -> Session | None:
        sessions, _ = StateStore(self.state_dir).read_all(time.time())
        return next((s for s in sessions if s.name == self.name), None)

    def prompt(self) -> tuple[Session, Record] | None:
        """The session and its standing permission prompt, as the state file has it."""
        session = self.session()
        if session is None:
            return None
        for record in session.records:
            if record.state == "blocked" and record.kind == "permission" and record.since:
                return session, record
        return None

    def wait_prompt(self, after: float | None = None) -> tuple[Session, float]:
        """The session and its prompt's ``since``, once one newer than ``after`` stands."""

        def newer() -> tuple[Session, float] | None:
            found = self.prompt()
            if found is None or found[1].since in (None, after):
                return None
            return found[0], found[1].since

        return wait_for(newer, TIMEOUT, what=f"{self.name}'s prompt in the state file")

    def reprompt(self, after: float) -> float:
        """Put up the next prompt (no key goes in); its ``since``."""
        self._go.touch()
        return self.wait_prompt(after)[1]

    def close(self) -> None:
        self._pty.close()


__all__ = [
    "APP_ARGV",
    "PromptProgram",
    "answer_config",
    "button",
    "flip_one_byte",
    "new_topic",
    "no_secrets",
    "prompts",
    "tap",
    "token_fields",
    "tokens",
    "told",
    "wait_prompt",
    "wait_told",
]
