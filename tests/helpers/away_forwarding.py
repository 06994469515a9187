"""What the away tests on a real desktop check the same way once the app sees the user
away: a blocked ping of a session written now reaches the phone (the loopback JSON
receiver) with this machine's name in the title and the program's words as the body."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from helpers.desktop_apps import TIMEOUT
from helpers.receiver import Receiver
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for
from tray.base.safe_text import clean_text
from tray.state.store import StateStore


def forward_config(receiver: Receiver, after: str) -> str:
    """An app config with ``[away]``: ``after``, and forwarding to ``receiver``."""
    url = f"json://127.0.0.1:{receiver.port}/hook"
    return f'[notify]\nsettle = 0.2\n[away]\nafter = "{after}"\nforward = ["{url}"]\n'


def blocked_ping_is_forwarded(state_dir: Path, receiver: Receiver, what: str) -> None:
    """Write a blocked session into the app's ``state_dir``; wait until the receiver has
    the forwarded ping (``what`` says when, for the timeout's message)."""
    host = clean_text(socket.gethostname())
    store = StateStore(state_dir)
    store.ensure()
    now = time.time()
    store.write(live_session("build", blocked("Run the migration?", now), now))
    wait_for(
        lambda: any(
            r.body.get("title") == f"{host} · build needs approval"
            and r.body.get("message") == "Run the migration?"
            for r in receiver.requests
        ),
        TIMEOUT,
        what=f"the blocked ping forwarded {what}",
    )
