"""``tray status``: the sessions as a table or JSON, a status-bar line, or the jsonl stream."""

from __future__ import annotations

import argparse
import io
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import Final

from tray.base.exit_codes import UsageError
from tray.commands.status_table import format_table
from tray.core.config.hosts import HostConfig
from tray.core.session.model import Session, status_document
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.logs import stderr_log
from tray.state.session_feed import SessionFeed
from tray.state.store import StateStore

# ssh can take seconds per host; a few at a time keeps many hosts from taking minutes.
MAX_PARALLEL_HOSTS: Final = 8


def run(args: argparse.Namespace, env: Environment) -> int:
    if args.json and args.format not in (None, "json"):
        raise UsageError(f"tray status: --json and --format {args.format} disagree")
    style = "json" if args.json else args.format or "table"
    if args.watch and style == "table":
        raise UsageError("tray status: --watch needs --format json, waybar, tmux or jsonl")
    if style == "jsonl":
        return _stream(args, env)
    if args.watch or style in ("waybar", "tmux"):
        from tray.commands.statusbar import show  # noqa: PLC0415 - only for a status bar

        return show(style, args.watch, env)
    if args.host and args.local:
        raise UsageError("tray status: --host and --local disagree")
    config = load_config(env)
    keep_ended = config.sessions.keep_ended
    now = env.clock()
    store = StateStore(env.state_dir())
    store.prune(now, keep_ended)
    local = SessionFeed(
        store, keep_ended, stderr_log("tray.commands.status", env.stderr, "tray status")
    )
    sessions, problems = local.read(now)
    if args.host:
        sessions = []
    status = 0
    if not args.local:
        remote, status = remote_sessions(args.host, config.hosts, env)
        sessions += remote
    if local.report(problems):
        status = 1
    if style == "json":
        env.stdout.write(json.dumps(status_document(sessions, config.answer), indent=2) + "\n")
    else:
        env.stdout.write(format_table(sessions, now, terminal_width(env)))
    return status


def _stream(args: argparse.Namespace, env: Environment) -> int:
    """The state as framed lines, for the tray of another machine that reads it over ssh."""
    from tray.remote.stream import run_stream  # noqa: PLC0415 - only for the stream

    if args.host or args.local:
        raise UsageError("tray status: --format jsonl lists this machine's sessions only")
    stdout = os.fdopen(env.stdout_fd, "wb", closefd=False)
    if not args.watch:  # one frame: an input that has already ended
        return run_stream(env, io.BytesIO(), stdout)
    stdin = os.fdopen(env.stdin_fd, "rb", buffering=0, closefd=False)
    return run_stream(env, stdin, stdout)


def remote_sessions(
    names: Sequence[str] | None, hosts: Sequence[HostConfig], env: Environment
) -> tuple[list[Session], int]:
    """Every listed host's sessions, asked for in parallel; a lost host is one stderr line."""
    from tray.remote.actions import RemoteError, fetch_state  # noqa: PLC0415 - only with hosts

    known = {host.name: host for host in hosts}
    for name in names or ():
        if name not in known:
            raise UsageError(f"tray status: no [[hosts]] entry named {name!r}")
    chosen = [known[name] for name in dict.fromkeys(names)] if names else list(hosts)
    if not chosen:
        return [], 0

    def ask(host: HostConfig) -> list[Session] | str:
        try:
            return list(fetch_state(host).labelled())
        except RemoteError as error:
            return error.failure.line()

    sessions: list[Session] = []
    status = 0
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_HOSTS, len(chosen))) as pool:
        for host, answer in zip(chosen, pool.map(ask, chosen), strict=True):
            if isinstance(answer, str):
                env.stderr.write(f"tray status: {host.name}: {answer}\n")
                status = 1
            else:
                sessions += answer
    return sessions, status


def terminal_width(env: Environment) -> int | None:
    """COLUMNS, else the terminal's width; a pipe gets whole lines."""
    columns = env.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    with suppress(OSError):
        if os.isatty(env.stdout_fd):
            return os.get_terminal_size(env.stdout_fd).columns or None
    return None
