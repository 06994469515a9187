"""``tray dismiss``: forget ended sessions."""

from __future__ import annotations

import argparse

from tray.base.exit_codes import UsageError
from tray.base.safe_text import clean_text
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.store import Dismissal, StateStore


def run(args: argparse.Namespace, env: Environment) -> int:
    if args.ended == bool(args.ids):
        raise UsageError("tray dismiss: give session IDs or --ended, not both or neither")
    keep_ended = load_config(env, agent_keys={}).sessions.keep_ended
    store = StateStore(env.state_dir())
    store.prune(env.clock(), keep_ended)
    if args.ended:
        store.dismiss_ended()
        return 0
    status = 0
    for session_id in args.ids:
        outcome = store.dismiss(session_id)
        shown = clean_text(session_id)
        if outcome is Dismissal.RUNNING:
            env.stderr.write(f"tray dismiss: {shown} is still running; end it first\n")
            status = 1
        elif outcome is Dismissal.NOT_FOUND:
            env.stderr.write(f"tray dismiss: no session {shown}\n")
            status = 1
    return status
