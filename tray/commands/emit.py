"""``tray emit``: one OSC 7501 report to the controlling terminal.

Scripts run it in their loops, so it imports only the protocol and the write loop.
"""

from __future__ import annotations

import argparse
import os

from tray.base.exit_codes import UsageError
from tray.launcher.fdio import write_all
from tray.protocol.report import Report, ReportError, encode_sequence
from tray.state.environment import Environment


def run(args: argparse.Namespace, env: Environment) -> int:
    # argparse drops a "--" given as an option's value (``--msg=--``) and leaves an
    # empty list; "--" is a legitimate message, so it is put back.
    for option in ("kind", "app", "id", "title", "msg"):
        if getattr(args, option) == []:
            setattr(args, option, "--")
    if args.id == "":
        raise UsageError("tray emit: argument --id: must not be empty (omit it for the root)")
    report = Report(
        state=args.state,
        id=args.id or "",
        kind=args.kind,
        progress=args.progress,
        app=args.app,
        title=args.title,
        msg=args.msg,
    )
    try:
        sequence = encode_sequence(report)
    except ReportError as error:
        raise UsageError(f"tray emit: {error}") from None
    # Validated before opening, so a bad argument writes nothing at all.
    try:
        fd = os.open(env.tty_path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        env.stderr.write(
            f"tray emit: no terminal to write to ({env.tty_path}: {error.strerror or error})\n"
        )
        return 1
    try:
        write_all(fd, sequence)
    finally:
        os.close(fd)
    return 0
