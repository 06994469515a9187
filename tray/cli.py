"""The ``tray`` command line: arguments and dispatch, from one table of commands.

Each command is one :class:`Command` in :data:`COMMANDS`: its help, its arguments, and
the function (in its own module) that runs it. The module is imported only when the
command runs: ``tray run`` starts every agent and ``tray emit`` runs in scripts' loops,
so neither pays for argparse, the status table, the demo, the tray app's libraries or
D-Bus.
"""

from __future__ import annotations

import gc
import os
import sys

from tray import __version__
from tray.environment import Environment
from tray.usage import UsageError
from tray.value import Value

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, Final, NoReturn

    from _typeshed import SupportsWrite

    Argument = tuple[tuple[str, ...], dict[str, Any]]

USAGE_ERROR = 2


class Command(Value):
    """One command: ``handler`` and ``more_arguments`` are ``"module:function"``, looked
    up only when needed; a command without ``help`` is hidden from ``tray --help``."""

    __slots__ = ("arguments", "description", "handler", "help", "more_arguments", "name", "usage")

    def __init__(
        self,
        name: str,
        handler: str | None,
        help: str | None,
        description: str | None = None,
        arguments: tuple[Argument, ...] = (),
        *,
        usage: str | None = None,
        more_arguments: str | None = None,
    ) -> None:
        self.name: Final = name
        self.handler: Final = handler
        self.help: Final = help
        self.description: Final = description
        self.arguments: Final = arguments
        self.usage: Final = usage
        self.more_arguments: Final = more_arguments


def _progress(text: str) -> int:
    import argparse  # noqa: PLC0415 - argparse calls this, so it is loaded already

    # Only plain decimal digits: int() would also take "+5", " 5", "1_0" and other scripts' digits.
    if not (text.isascii() and text.isdigit()) or int(text) > 100:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 100, not {text!r}")
    return int(text)


COMMANDS: tuple[Command, ...] = (
    Command(
        "run",
        None,  # parsed by parse_run_args: everything from CMD on is passed as is
        "run a command on its own terminal and record its state",
        "Run CMD on a new pseudo-terminal, passing bytes through untouched, and record the "
        "state it reports. Options go before CMD; everything from CMD on is passed to it as is.",
        (
            (("--name",), {"help": "the session's name (default: derived from CMD)"}),
            (("cmd",), {"metavar": "CMD", "help": "the command to run"}),
            (("args",), {"metavar": "ARG", "nargs": "*", "help": "its arguments"}),
        ),
        usage="tray run [-h] [--name NAME] [--] CMD [ARG...]",
    ),
    Command(
        "status",
        "tray.commands.status:run",
        "list the sessions",
        "List the sessions, oldest first.",
        (
            (("--json",), {"action": "store_true", "help": "print the JSON of the contract"}),
            (
                ("--format",),
                {
                    "choices": ("table", "json", "waybar", "tmux", "jsonl"),
                    "help": "table (the default), json (the same as --json), one line for "
                    "waybar or tmux, or jsonl: framed lines for another machine's tray (over ssh)",
                },
            ),
            (
                ("--watch",),
                {
                    "action": "store_true",
                    "help": "with --format json, waybar, tmux or jsonl: print a new line "
                    "whenever it changes",
                },
            ),
            (
                ("--host",),
                {
                    "action": "append",
                    "metavar": "NAME",
                    "help": "only the sessions of this [[hosts]] entry (may be repeated)",
                },
            ),
            (
                ("--local",),
                {"action": "store_true", "help": "only this machine's sessions, none over ssh"},
            ),
        ),
    ),
    Command(
        "dismiss",
        "tray.commands.dismiss:run",
        "forget ended sessions",
        "Remove ended sessions from the list. Running sessions cannot be dismissed.",
        (
            (("ids",), {"metavar": "ID", "nargs": "*", "help": "a session id from tray status"}),
            (("--ended",), {"action": "store_true", "help": "dismiss every ended session"}),
        ),
    ),
    Command(
        "emit",
        "tray.commands.emit:run",
        "write a status report to this terminal",
        "Write one OSC 7501 report to the controlling terminal (/dev/tty).",
        (
            (
                ("state",),
                {"metavar": "STATE", "help": "idle, working, done, blocked, error or clear"},
            ),
            (("--kind",), {"help": "with blocked: permission, question or auth"}),
            (
                ("--progress",),
                {"type": _progress, "help": "with working or blocked: a whole number 0 to 100"},
            ),
            (("--app",), {"help": "a stable program name, such as cargo"}),
            (("--id",), {"help": "the record's id, such as build/test (default: the root)"}),
            (("--title",), {"help": "a short label that tells records apart"}),
            (("--msg",), {"help": "one line: what it is doing, waiting for, or finished with"}),
        ),
    ),
    Command(
        "answer",
        "tray.commands.answer:run",
        "approve or deny a permission prompt from anywhere",
        "Answer a session's permission prompt: its own launcher types the app's keys, only "
        "while that prompt stands and you have not typed into it. Exit 0: answered; 1: "
        "refused, with the reason; 2: usage.",
        (
            (("session",), {"metavar": "SESSION", "help": "a session id from tray status --json"}),
            (("answer",), {"metavar": "approve|deny", "choices": ("approve", "deny")}),
            (
                ("--record",),
                {
                    "metavar": "ID",
                    "help": "the record to answer ('' is the root; default: the one blocked)",
                },
            ),
            (
                ("--since",),
                {
                    "metavar": "T",
                    "help": "the record's since, as tray status --json gives it: answer only "
                    "that prompt",
                },
            ),
            (("--host",), {"metavar": "NAME", "help": "a session of this [[hosts]] entry"}),
        ),
    ),
    Command(
        "app",
        "tray.commands.elsewhere:app",
        "run the tray icon",
        "Run the tray icon and notifications in the foreground until quit.",
    ),
    Command(
        "autostart",
        "tray.commands.autostart:command",
        "start the tray icon when you log in",
        "Write, remove or show the entry that starts 'tray app' at login: an XDG autostart "
        "entry or a systemd user unit on Linux, a LaunchAgent on macOS.",
        (
            (("action",), {"choices": ("enable", "disable", "status")}),
            (
                ("--systemd",),
                {
                    "action": "store_true",
                    "help": "on Linux, enable a systemd user unit instead of an XDG autostart "
                    "entry",
                },
            ),
        ),
    ),
    Command(
        "doctor",
        "tray.commands.doctor:command",
        "check that the icon and notifications can be seen",
        "Check the display, the tray, the notification server, the state directory and this "
        "terminal; one line each. Exits 1 when something needed is missing.",
    ),
    Command(
        "demo",
        "tray.commands.demo:command",
        "show the icon and a notification with a pretend agent",
        "Start the tray app if needed, then run a short scripted session under tray run: "
        "working, blocked on a permission, working, done. It runs nothing and writes no file.",
        # Their help shows the demo's defaults, which would mean importing the demo for
        # every command: added only when the demo (or every command) is parsed.
        more_arguments="tray.commands.demo:add_arguments",
    ),
    Command(
        "init",
        "tray.commands.elsewhere:init",
        "print the shell code for your rc file (bash, zsh or fish)",
        "Print the code that runs the agents in [shell] wrap under tray run and records long "
        'commands: eval "$(tray init bash)" in ~/.bashrc, eval "$(tray init zsh)" in '
        "~/.zshrc, tray init fish | source in ~/.config/fish/config.fish.",
        ((("shell",), {"metavar": "SHELL", "nargs": "?", "help": "bash, zsh or fish"}),),
    ),
    # Hidden (no help): what the shell hooks run after a long command.
    Command(
        "_finished",
        "tray.commands.elsewhere:finished",
        None,
        None,
        (
            (("--cmdline",), {"required": True}),
            (("--status",), {"type": int, "required": True}),
            (("--duration",), {"type": float, "required": True}),
            (("--end",), {"type": float}),
            (("--cwd",), {}),
            (("--pid",), {"type": int}),
            (("--tty",), {}),
        ),
    ),
)
_BY_NAME = {command.name: command for command in COMMANDS}


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


def _lookup(target: str) -> Callable[..., Any]:
    """The function named by ``"module:function"``, its module imported now."""
    import importlib  # noqa: PLC0415 - loaded by the interpreter already

    module, _, name = target.partition(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


def build_parser(
    command: str | None = None,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, with a subparser for each command.

    A command's ``more_arguments`` are added only when ``command`` is None or that command.
    """
    parser_class = _parser_class()
    parser = parser_class(
        prog="tray",
        description="Know, from anywhere on your desktop, which terminal session needs you.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    parsers: dict[str, argparse.ArgumentParser] = {}
    for entry in COMMANDS:
        options: dict[str, Any] = {"allow_abbrev": False}
        if entry.help is not None:  # argparse lists any parser given a help, even None
            options["help"] = entry.help
        if entry.description is not None:
            options["description"] = entry.description
        if entry.usage is not None:
            options["usage"] = entry.usage
        sub = commands.add_parser(entry.name, **options)
        for flags, argument in entry.arguments:
            sub.add_argument(*flags, **argument)
        if entry.more_arguments is not None and command in (None, entry.name):
            _lookup(entry.more_arguments)(sub)
        parsers[entry.name] = sub
    return parser, parsers


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


def _shown_names() -> str:
    """ "run, status, ... or init": the commands ``tray --help`` lists."""
    names = [entry.name for entry in COMMANDS if entry.help is not None]
    return f"{', '.join(names[:-1])} or {names[-1]}"


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
            raise UsageError(f"tray: missing COMMAND ({_shown_names()})")
        if extra:
            raise UsageError(f"tray {args.command}: unrecognized arguments: {' '.join(extra)}")
        target = _BY_NAME[args.command].handler
        assert target is not None  # only `run` has none, and it is handled above
        return _guarded(args.command, env, lambda: int(_lookup(target)(args, env)))
    except _HelpRequested as help_text:
        env.stdout.write(help_text.text)
        return 0
    except UsageError as error:
        known = argv[0] if argv and argv[0] in _BY_NAME else None
        hint = f"tray {known} --help" if known else "tray --help"
        env.stderr.write(f"{_one_line(str(error))} (see '{hint}')\n")
        return USAGE_ERROR


def _run(command: list[str], name: str | None, env: Environment) -> int:
    from tray.launcher.run import run_session  # noqa: PLC0415 - each command imports its own

    return run_session(command, name, env)


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


def entry() -> None:
    """The console script."""
    env = Environment()
    try:
        status = main(sys.argv[1:], env)
        env.stdout.flush()
    except BrokenPipeError:
        # The reader went away (``tray status | head``): stop quietly, as a shell tool does.
        from tray.logs import discard_output  # noqa: PLC0415 - only then

        discard_output(sys.stdout.fileno())
        status = 1
    # The interpreter's exit collects garbage through every object there is, some
    # milliseconds of each `tray run` for nothing: the process is ending. Frozen objects
    # are left out; their memory goes with the process, and files are still flushed.
    gc.freeze()
    sys.exit(status)


__all__ = ["COMMANDS", "Command", "UsageError", "build_parser", "entry", "main", "parse_run_args"]
