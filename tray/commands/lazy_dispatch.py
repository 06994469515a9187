"""Commands whose work lives in another package: each turns the parsed arguments into
that package's call, and imports it only then."""

from __future__ import annotations

import argparse

from tray.state.environment import Environment


def app(args: argparse.Namespace, env: Environment) -> int:
    from tray.app.start import run_app  # noqa: PLC0415 - only for `tray app`

    return run_app(env)


def init(args: argparse.Namespace, env: Environment) -> int:
    from tray.shell.init import run_init  # noqa: PLC0415 - only for `tray init`

    return run_init(args.shell, env)


def finished(args: argparse.Namespace, env: Environment) -> int:
    from tray.shell.finished import run_finished  # noqa: PLC0415 - only for the shell hooks

    return run_finished(
        args.cmdline,
        args.status,
        args.duration,
        env,
        cwd=args.cwd,
        pid=args.pid,
        tty=args.tty,
        end=args.end,
    )
