"""The ``tray`` command line: arguments and dispatch; each command is a small function.

Each command imports what it needs when it runs: ``tray run`` starts every agent and
``tray emit`` runs in scripts' loops, so neither pays for argparse, the status table, the
demo, the tray app's libraries or D-Bus.
"""

from __future__ import annotations

import gc
import os
import sys

from tray import __version__
from tray.environment import Environment

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import NoReturn

    from _typeshed import SupportsWrite

    from tray.remote.hosts import HostConfig
    from tray.session import Session

USAGE_ERROR = 2
STATUS_FORMATS = ("table", "json", "waybar", "tmux", "jsonl")


class UsageError(Exception):
    """Bad command-line arguments; the message is the whole line, program name included."""


class _HelpRequested(Exception):  # noqa: N818 - a signal to print help, not an error
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse  # noqa: PLC0415 - not on the path of `tray run`

    class Parser(argparse.ArgumentParser):
        """argparse that reports instead of printing and exiting, so ``main`` stays in control."""

        def error(self, message: str) -> NoReturn:
            raise UsageError(f"{self.prog}: {message}")

        def print_help(self, file: SupportsWrite[str] | None = None) -> None:
            raise _HelpRequested(self.format_help())

        def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
            raise UsageError(f"{self.prog}: {(message or 'error').strip()}")

    return Parser


def build_parser(
    command: str | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, with a subparser for each command.

    ``demo``'s options are there only when ``command`` is None or "demo": their help
    shows the demo's defaults, which would mean importing the demo for every command.
    """
    parser_class = _parser_class()
    parser = parser_class(
        prog="tray",
        description="Know, from anywhere on your desktop, which terminal session needs you.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
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
        help="table (the default), json (the same as --json), one line for waybar or tmux, "
        "or jsonl: framed lines for another machine's tray (over ssh)",
    )
    status.add_argument(
        "--watch",
        action="store_true",
        help="with --format json, waybar, tmux or jsonl: print a new line whenever it changes",
    )
    status.add_argument(
        "--host",
        action="append",
        metavar="NAME",
        help="only the sessions of this [[hosts]] entry (may be repeated)",
    )
    status.add_argument(
        "--local", action="store_true", help="only this machine's sessions, none over ssh"
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
    if command in (None, "demo"):
        _add_demo_arguments(demo)
    init = commands.add_parser(
        "init",
        help="print the shell code for your rc file (bash, zsh or fish)",
        description="Print the code that runs the agents in [shell] wrap under tray run and "
        'records long commands: eval "$(tray init bash)" in ~/.bashrc, eval "$(tray init '
        'zsh)" in ~/.zshrc, tray init fish | source in ~/.config/fish/config.fish.',
        allow_abbrev=False,
    )
    init.add_argument("shell", metavar="SHELL", nargs="?", help="bash, zsh or fish")
    # Hidden (no help): what the shell hooks run after a long command.
    finished = commands.add_parser("_finished", allow_abbrev=False)
    finished.add_argument("--cmdline", required=True)
    finished.add_argument("--status", type=int, required=True)
    finished.add_argument("--duration", type=float, required=True)
    finished.add_argument("--end", type=float)
    finished.add_argument("--cwd")
    finished.add_argument("--pid", type=int)
    finished.add_argument("--tty")
    return parser, {
        "run": run,
        "status": status,
        "dismiss": dismiss,
        "emit": emit,
        "app": app,
        "autostart": autostart,
        "doctor": doctor,
        "demo": demo,
        "init": init,
        "_finished": finished,
    }


def _add_demo_arguments(demo: argparse.ArgumentParser) -> None:
    from tray.commands.demo import (  # noqa: PLC0415 - only for `tray demo`
        DEFAULT_BLOCKED_SECONDS,
        DEFAULT_STEP_SECONDS,
        parse_seconds,
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


def _progress(text: str) -> int:
    import argparse  # noqa: PLC0415 - argparse calls this, so it is loaded already

    # Only plain decimal digits: int() would also take "+5", " 5", "1_0" and other scripts' digits.
    if not (text.isascii() and text.isdigit()) or int(text) > 100:
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
            raise _HelpRequested(build_parser("run")[1]["run"].format_help())
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
    try:
        if argv and argv[0] == "run":
            name, command = parse_run_args(argv[1:])
            return _guarded("run", env, lambda: _run(command, name, env))
        parser, _ = build_parser(next((word for word in argv if word[:1] != "-"), ""))
        args, extra = parser.parse_known_args(argv)
        if args.version:
            env.stdout.write(f"tray {__version__}\n")
            return 0
        if args.command is None:
            raise UsageError(
                "tray: missing COMMAND (run, status, dismiss, emit, app, init, doctor or demo)"
            )
        if extra:
            raise UsageError(f"tray {args.command}: unrecognized arguments: {' '.join(extra)}")
        handler = _COMMANDS[args.command]
        return _guarded(args.command, env, lambda: handler(args, env))
    except _HelpRequested as help_text:
        env.stdout.write(help_text.text)
        return 0
    except UsageError as error:
        known = argv[0] if argv and argv[0] in ("run", *_COMMANDS) else None
        hint = f"tray {known} --help" if known else "tray --help"
        env.stderr.write(f"{_one_line(str(error))} (see '{hint}')\n")
        return USAGE_ERROR


def _guarded(command: str, env: Environment, action: Callable[[], int]) -> int:
    """Run a command, turning the errors a user can cause into one line each."""
    try:
        return action()
    except UsageError:
        raise
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        raise  # entry() handles a reader that went away
    except OSError as error:
        env.stderr.write(f"tray {command}: {_describe(error)}\n")
        return 1
    except Exception as error:
        # Imported only now: an instance exists, so its module is loaded already.
        from tray.config import ConfigError  # noqa: PLC0415
        from tray.protocol.report import ReportError  # noqa: PLC0415
        from tray.store import StoreError  # noqa: PLC0415

        if isinstance(error, ConfigError):
            env.stderr.write(f"tray {command}: {_one_line(str(error))}\n")
            return USAGE_ERROR
        if isinstance(error, (StoreError, ReportError)):
            env.stderr.write(f"tray {command}: {_one_line(str(error))}\n")
            return 1
        raise


def _describe(error: OSError) -> str:
    if error.strerror and error.filename is not None:
        return _one_line(f"{os.fsdecode(error.filename)}: {error.strerror}")
    return _one_line(error.strerror or str(error))


def _one_line(text: str) -> str:
    return " ".join(text.split())


# Commands.


def _run(command: list[str], name: str | None, env: Environment) -> int:
    from tray.launcher.run import run_session  # noqa: PLC0415 - each command imports its own

    return run_session(command, name, env)


def _status(args: argparse.Namespace, env: Environment) -> int:
    import json  # noqa: PLC0415 - each command imports its own

    from tray.commands.status_table import format_table  # noqa: PLC0415
    from tray.config import load_config  # noqa: PLC0415
    from tray.session import status_document  # noqa: PLC0415
    from tray.store import StateStore, expired  # noqa: PLC0415
    from tray.text import clean_text  # noqa: PLC0415

    if args.json and args.format not in (None, "json"):
        raise UsageError(f"tray status: --json and --format {args.format} disagree")
    style = "json" if args.json else args.format or "table"
    if args.watch and style == "table":
        raise UsageError("tray status: --watch needs --format json, waybar, tmux or jsonl")
    if style == "jsonl":
        return _stream(args, env)
    if args.watch or style in ("waybar", "tmux"):
        from tray.commands.statusbar import show  # noqa: PLC0415 - each command imports its own

        return show(style, args.watch, env)
    if args.host and args.local:
        raise UsageError("tray status: --host and --local disagree")
    config = load_config(env)
    keep_ended = config.sessions.keep_ended
    now = env.clock()
    store = StateStore(env.state_dir())
    store.prune(now, keep_ended)
    sessions, problems = store.read_all(now)
    sessions = [s for s in sessions if not expired(s, now, keep_ended)]
    if args.host:
        sessions = []
    status = 0
    if not args.local:
        remote, status = _remote_sessions(args.host, config.hosts, env)
        sessions += remote
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


def _stream(args: argparse.Namespace, env: Environment) -> int:
    """The state as framed lines, for the tray of another machine that reads it over ssh."""
    import io  # noqa: PLC0415 - each command imports its own

    from tray.remote.stream import run_stream  # noqa: PLC0415

    if args.host or args.local:
        raise UsageError("tray status: --format jsonl lists this machine's sessions only")
    stdout = os.fdopen(env.stdout_fd, "wb", closefd=False)
    if not args.watch:  # one frame: an input that has already ended
        return run_stream(env, io.BytesIO(), stdout)
    stdin = os.fdopen(env.stdin_fd, "rb", buffering=0, closefd=False)
    return run_stream(env, stdin, stdout)


def _remote_sessions(
    names: Sequence[str] | None, hosts: Sequence[HostConfig], env: Environment
) -> tuple[list[Session], int]:
    """Every listed host's sessions, asked for in parallel; a lost host is one stderr line."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    from tray.remote.link import RemoteError, fetch_state  # noqa: PLC0415

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
    with ThreadPoolExecutor(max_workers=min(8, len(chosen))) as pool:
        for host, answer in zip(chosen, pool.map(ask, chosen), strict=True):
            if isinstance(answer, str):
                env.stderr.write(f"tray status: {host.name}: {answer}\n")
                status = 1
            else:
                sessions += answer
    return sessions, status


def _dismiss(args: argparse.Namespace, env: Environment) -> int:
    from tray.config import load_config  # noqa: PLC0415 - each command imports its own
    from tray.store import Dismissal, StateStore  # noqa: PLC0415
    from tray.text import clean_text  # noqa: PLC0415

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
    from tray.protocol.report import Report, ReportError, encode_sequence  # noqa: PLC0415

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
    from tray.app.main import run_app  # noqa: PLC0415 - each command imports its own

    return run_app(env)


def _autostart(args: argparse.Namespace, env: Environment) -> int:
    from tray.commands.autostart import run_autostart  # noqa: PLC0415 - each command imports its own

    return run_autostart(args.action, args.systemd, env)


def _doctor(args: argparse.Namespace, env: Environment) -> int:
    from tray.commands.doctor import run_doctor  # noqa: PLC0415 - each command imports its own

    return run_doctor(env)


def _demo(args: argparse.Namespace, env: Environment) -> int:
    from tray.commands.demo import run_demo  # noqa: PLC0415 - each command imports its own

    return run_demo(env, args.step_seconds, args.blocked_seconds)


def _init(args: argparse.Namespace, env: Environment) -> int:
    from tray.shell.init import run_init  # noqa: PLC0415 - each command imports its own

    return run_init(args.shell, env)


def _finished(args: argparse.Namespace, env: Environment) -> int:
    from tray.shell.finished import run_finished  # noqa: PLC0415 - each command imports its own

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


_COMMANDS: dict[str, Callable[[argparse.Namespace, Environment], int]] = {
    "status": _status,
    "dismiss": _dismiss,
    "emit": _emit,
    "app": _app,
    "autostart": _autostart,
    "doctor": _doctor,
    "demo": _demo,
    "init": _init,
    "_finished": _finished,
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
    # The interpreter's exit collects garbage through every object there is, some
    # milliseconds of each `tray run` for nothing: the process is ending. Frozen objects
    # are left out; their memory goes with the process, and files are still flushed.
    gc.freeze()
    sys.exit(status)
