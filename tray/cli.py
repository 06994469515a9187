"""The ``tray`` command line: arguments and dispatch; each command is a small function."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn

from tray import __version__
from tray.commands.demo import (
    DEFAULT_BLOCKED_SECONDS,
    DEFAULT_STEP_SECONDS,
    parse_seconds,
    run_demo,
)
from tray.commands.status_table import format_table
from tray.config import ConfigError, load_config
from tray.environment import Environment
from tray.protocol.report import Report, ReportError, encode_sequence
from tray.session import status_document
from tray.store import Dismissal, StateStore, StoreError, expired
from tray.text import clean_text

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

USAGE_ERROR = 2
# _LAZY: commands import their modules when they run, so `tray emit` in a script's loop
# does not pay for the launcher, the tray app's libraries or D-Bus on every call.
STATUS_FORMATS = ("table", "json", "waybar", "tmux")

_DIGITS = re.compile(r"[0-9]+", re.ASCII)


class UsageError(Exception):
    """Bad command-line arguments; the message is the whole line, program name included."""


class _HelpRequested(Exception):  # noqa: N818 - a signal to print help, not an error
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _Parser(argparse.ArgumentParser):
    """argparse that reports instead of printing and exiting, so ``main`` stays in control."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        raise _HelpRequested(self.format_help())

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(f"{self.prog}: {(message or 'error').strip()}")


def build_parser() -> tuple[_Parser, dict[str, _Parser]]:
    parser = _Parser(
        prog="tray",
        description="Know, from anywhere on your desktop, which terminal session needs you.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run = commands.add_parser(
        "run",
        help="run a command on its own terminal and record its state",
        usage="tray run [-h] [--name NAME] [--] CMD [ARG...]",
        description="Run CMD on a new pseudo-terminal, passing bytes through untouched, and "
        "record the state it reports. Options go before CMD; everything from CMD on is "
        "passed to it as is.",
        allow_abbrev=False,
    )
    run.add_argument("--name", help="the session's name (default: derived from CMD)")
    run.add_argument("cmd", metavar="CMD", help="the command to run")
    run.add_argument("args", metavar="ARG", nargs="*", help="its arguments")
    status = commands.add_parser(
        "status",
        help="list the sessions",
        description="List the sessions, oldest first.",
        allow_abbrev=False,
    )
    status.add_argument("--json", action="store_true", help="print the JSON of the contract")
    status.add_argument(
        "--format",
        choices=STATUS_FORMATS,
        help="table (the default), json (the same as --json), or one line for waybar or tmux",
    )
    status.add_argument(
        "--watch",
        action="store_true",
        help="with --format json, waybar or tmux: print a new line whenever it changes",
    )
    dismiss = commands.add_parser(
        "dismiss",
        help="forget ended sessions",
        description="Remove ended sessions from the list. Running sessions cannot be dismissed.",
        allow_abbrev=False,
    )
    dismiss.add_argument("ids", metavar="ID", nargs="*", help="a session id from tray status")
    dismiss.add_argument("--ended", action="store_true", help="dismiss every ended session")
    emit = commands.add_parser(
        "emit",
        help="write a status report to this terminal",
        description="Write one OSC 7501 report to the controlling terminal (/dev/tty).",
        allow_abbrev=False,
    )
    emit.add_argument("state", metavar="STATE", help="idle, working, done, blocked, error or clear")
    emit.add_argument("--kind", help="with blocked: permission, question or auth")
    emit.add_argument(
        "--progress", type=_progress, help="with working or blocked: a whole number 0 to 100"
    )
    emit.add_argument("--app", help="a stable program name, such as cargo")
    emit.add_argument("--id", help="the record's id, such as build/test (default: the root)")
    emit.add_argument("--title", help="a short label that tells records apart")
    emit.add_argument("--msg", help="one line: what it is doing, waiting for, or finished with")
    app = commands.add_parser(
        "app",
        help="run the tray icon",
        description="Run the tray icon and notifications in the foreground until quit.",
        allow_abbrev=False,
    )
    autostart = commands.add_parser(
        "autostart",
        help="start the tray icon when you log in",
        description="Write, remove or show the entry that starts 'tray app' at login: an "
        "XDG autostart entry or a systemd user unit on Linux, a LaunchAgent on macOS.",
        allow_abbrev=False,
    )
    autostart.add_argument("action", choices=("enable", "disable", "status"))
    autostart.add_argument(
        "--systemd",
        action="store_true",
        help="on Linux, enable a systemd user unit instead of an XDG autostart entry",
    )
    doctor = commands.add_parser(
        "doctor",
        help="check that the icon and notifications can be seen",
        description="Check the display, the tray, the notification server, the state "
        "directory and this terminal; one line each. Exits 1 when something needed is missing.",
        allow_abbrev=False,
    )
    demo = commands.add_parser(
        "demo",
        help="show the icon and a notification with a pretend agent",
        description="Start the tray app if needed, then run a short scripted session under "
        "tray run: working, blocked on a permission, working, done. It runs nothing and "
        "writes no file.",
        allow_abbrev=False,
    )
    demo.add_argument(
        "--step-seconds",
        metavar="SECONDS",
        type=parse_seconds,
        default=DEFAULT_STEP_SECONDS,
        help=f"how long each working step lasts (default: {DEFAULT_STEP_SECONDS:g})",
    )
    demo.add_argument(
        "--blocked-seconds",
        metavar="SECONDS",
        type=parse_seconds,
        default=DEFAULT_BLOCKED_SECONDS,
        help="how long the permission waits for Enter before approving itself "
        f"(default: {DEFAULT_BLOCKED_SECONDS:g})",
    )
    return parser, {
        "run": run,
        "status": status,
        "dismiss": dismiss,
        "emit": emit,
        "app": app,
        "autostart": autostart,
        "doctor": doctor,
        "demo": demo,
    }


def _progress(text: str) -> int:
    # Only plain decimal digits: int() would also take "+5", " 5", "1_0" and other scripts' digits.
    if _DIGITS.fullmatch(text) is None or int(text) > 100:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 100, not {text!r}")
    return int(text)


def parse_run_args(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """``run``'s options end at the first word that is not one: the rest is CMD verbatim."""
    name: str | None = None
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            index += 1
            break
        if word in ("-h", "--help"):
            raise _HelpRequested(build_parser()[1]["run"].format_help())
        if word == "--name":
            if index + 1 >= len(argv):
                raise UsageError("tray run: argument --name: expected one argument")
            name = argv[index + 1]
            index += 2
            continue
        if word.startswith("--name="):
            name = word.removeprefix("--name=")
            index += 1
            continue
        if word.startswith("-") and word != "-":
            raise UsageError(f"tray run: unknown option {word!r} (put CMD after '--')")
        break
    command = list(argv[index:])
    if not command:
        raise UsageError("tray run: missing CMD to run")
    if name is not None and not name.strip():
        raise UsageError("tray run: argument --name: must not be empty")
    return name, command


def main(argv: list[str], env: Environment) -> int:
    parser, subparsers = build_parser()
    try:
        if argv and argv[0] == "run":
            name, command = parse_run_args(argv[1:])
            return _guarded("run", env, lambda: _run(command, name, env))
        args, extra = parser.parse_known_args(argv)
        if args.version:
            env.stdout.write(f"tray {__version__}\n")
            return 0
        if args.command is None:
            raise UsageError(
                "tray: missing COMMAND (run, status, dismiss, emit, app, doctor or demo)"
            )
        if extra:
            raise UsageError(f"tray {args.command}: unrecognized arguments: {' '.join(extra)}")
        handler = _COMMANDS[args.command]
        return _guarded(args.command, env, lambda: handler(args, env))
    except _HelpRequested as help_text:
        env.stdout.write(help_text.text)
        return 0
    except UsageError as error:
        known = argv[0] if argv and argv[0] in subparsers else None
        hint = f"tray {known} --help" if known else "tray --help"
        env.stderr.write(f"{_one_line(str(error))} (see '{hint}')\n")
        return USAGE_ERROR


def _guarded(command: str, env: Environment, action: Callable[[], int]) -> int:
    """Run a command, turning the errors a user can cause into one line each."""
    try:
        return action()
    except UsageError:
        raise
    except ConfigError as error:
        env.stderr.write(f"tray {command}: {_one_line(str(error))}\n")
        return USAGE_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # entry() handles a reader that went away
    except (StoreError, ReportError) as error:
        env.stderr.write(f"tray {command}: {_one_line(str(error))}\n")
        return 1
    except OSError as error:
        env.stderr.write(f"tray {command}: {_describe(error)}\n")
        return 1


def _describe(error: OSError) -> str:
    if error.strerror and error.filename is not None:
        return _one_line(f"{os.fsdecode(error.filename)}: {error.strerror}")
    return _one_line(error.strerror or str(error))


def _one_line(text: str) -> str:
    return " ".join(text.split())


# Commands.


def _run(command: list[str], name: str | None, env: Environment) -> int:
    from tray.launcher.run import run_session  # noqa: PLC0415 - see _LAZY

    return run_session(command, name, env)


def _status(args: argparse.Namespace, env: Environment) -> int:
    if args.json and args.format not in (None, "json"):
        raise UsageError(f"tray status: --json and --format {args.format} disagree")
    style = "json" if args.json else args.format or "table"
    if args.watch and style == "table":
        raise UsageError("tray status: --watch needs --format json, waybar or tmux")
    if args.watch or style in ("waybar", "tmux"):
        from tray.commands.statusbar import show  # noqa: PLC0415 - see _LAZY

        return show(style, args.watch, env)
    keep_ended = load_config(env).sessions.keep_ended
    now = env.clock()
    store = StateStore(env.state_dir())
    store.prune(now, keep_ended)
    sessions, problems = store.read_all(now)
    sessions = [s for s in sessions if not expired(s, now, keep_ended)]
    status = 0
    for problem in problems:
        reason = _one_line(clean_text(problem.reason))
        if problem.path == store.directory:
            env.stderr.write(
                f"tray status: cannot read {clean_text(str(problem.path))}: {reason}\n"
            )
            status = 1
        else:
            env.stderr.write(f"tray status: skipping {clean_text(str(problem.path))}: {reason}\n")
    if style == "json":
        env.stdout.write(json.dumps(status_document(sessions), indent=2) + "\n")
    else:
        env.stdout.write(format_table(sessions, now, _terminal_width(env)))
    return status


def _dismiss(args: argparse.Namespace, env: Environment) -> int:
    if args.ended == bool(args.ids):
        raise UsageError("tray dismiss: give session IDs or --ended, not both or neither")
    keep_ended = load_config(env).sessions.keep_ended
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


def _emit(args: argparse.Namespace, env: Environment) -> int:
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
        view = memoryview(sequence)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return 0


def _app(args: argparse.Namespace, env: Environment) -> int:
    from tray.app.main import run_app  # noqa: PLC0415 - see _LAZY

    return run_app(env)


def _autostart(args: argparse.Namespace, env: Environment) -> int:
    from tray.commands.autostart import run_autostart  # noqa: PLC0415 - see _LAZY

    return run_autostart(args.action, args.systemd, env)


def _doctor(args: argparse.Namespace, env: Environment) -> int:
    from tray.commands.doctor import run_doctor  # noqa: PLC0415 - see _LAZY

    return run_doctor(env)


def _demo(args: argparse.Namespace, env: Environment) -> int:
    return run_demo(env, args.step_seconds, args.blocked_seconds)


_COMMANDS: dict[str, Callable[[argparse.Namespace, Environment], int]] = {
    "status": _status,
    "dismiss": _dismiss,
    "emit": _emit,
    "app": _app,
    "autostart": _autostart,
    "doctor": _doctor,
    "demo": _demo,
}


def _terminal_width(env: Environment) -> int | None:
    """COLUMNS, else the terminal's width; a pipe gets whole lines."""
    columns = env.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if os.isatty(env.stdout_fd):
            return os.get_terminal_size(env.stdout_fd).columns or None
    except OSError:
        pass
    return None


def entry() -> None:
    """The console script."""
    env = Environment()
    try:
        status = main(sys.argv[1:], env)
        env.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``tray status | head``): stop quietly, as a shell tool does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        status = 1
    sys.exit(status)
