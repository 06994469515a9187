"""The ``tray`` command line: arguments and dispatch, from one table of commands.

Each command is one :class:`~tray.command_table.Command` in
:data:`tray.command_table.COMMANDS`: its help, its arguments, and the function (in its
own module) that runs it. The module is imported only when the
command runs: ``tray run`` starts every agent and ``tray emit`` runs in scripts' loops
and agents' hooks, so none pays for the status table, the demo, the tray app's libraries
or D-Bus. ``tray run`` and the hooks' form, ``tray emit --hook APP EVENT``, are read
without argparse too: the first starts every agent, and the second runs at each event of
an agent's, which waits for it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from typing import TYPE_CHECKING

from tray import __version__
from tray.base.exit_codes import FAILURE, INTERRUPTED, SUCCESS, USAGE_ERROR, UsageError
from tray.state.environment import Environment

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    from _typeshed import SupportsWrite

    Argument = tuple[tuple[str, ...], dict[str, Any]]


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
    """The parser, with a subparser for each command, or for ``command`` alone when it
    names one (the word on the command line): nothing else can be parsed then, and
    ``tray emit`` runs in scripts' loops and agents' hooks, where building the other
    commands' parsers was a third of its start. A command's ``more_arguments`` are added
    only when ``command`` is None or that command.
    """
    parser_class = _parser_class()
    parser = parser_class(
        prog="tray",
        description="Know, from anywhere on your desktop, which terminal session needs you.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    # The prog given, argparse does not format this parser's usage to make one up.
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=parser_class, prog="tray"
    )
    parsers: dict[str, argparse.ArgumentParser] = {}
    from tray.command_table import COMMANDS  # noqa: PLC0415 - not on the path of `tray run`

    for entry in COMMANDS:
        if command and entry.name != command:
            continue
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


def _is_hook_form(argv: Sequence[str]) -> bool:
    """``emit --hook APP EVENT`` exactly, with no word an option: what argparse would read
    as that form alone (anything else goes to it, and its errors)."""
    return (
        len(argv) == 4
        and argv[0] == "emit"
        and argv[1] == "--hook"
        and not any(word.startswith("-") for word in argv[2:])
    )


def _shown_names() -> str:
    """ "run, status, ... or init": the commands ``tray --help`` lists."""
    from tray.command_table import COMMANDS  # noqa: PLC0415 - not on the path of `tray run`

    names = [entry.name for entry in COMMANDS if entry.help is not None]
    return f"{', '.join(names[:-1])} or {names[-1]}"


def main(argv: list[str], env: Environment) -> int:
    try:
        if argv and argv[0] == "run":
            name, command = parse_run_args(argv[1:])
            return _guarded("run", env, lambda: _run(command, name, env))
        if _is_hook_form(argv):
            from tray.commands.emit import run_hook  # noqa: PLC0415 - each command its own

            return _guarded("emit", env, lambda: run_hook(argv[2], argv[3], env))
        word = next((word for word in argv if word[:1] != "-"), "")
        from tray.command_table import BY_NAME  # noqa: PLC0415 - not on the path of `tray run`

        if word and word not in BY_NAME:
            # argparse would list every choice, the shell hooks' private `_finished` too;
            # this says the same in its words ("invalid choice", which an older tray's
            # reply is recognised by over ssh) with only the commands `--help` shows.
            raise UsageError(
                f"tray: argument COMMAND: invalid choice: {word!r} (choose from {_shown_names()})"
            )
        parser, _ = build_parser(word)
        args, extra = parser.parse_known_args(argv)
        if args.version:
            env.stdout.write(f"tray {__version__}\n")
            return SUCCESS
        if args.command is None:
            raise UsageError(f"tray: missing COMMAND ({_shown_names()})")
        if extra:
            raise UsageError(f"tray {args.command}: unrecognized arguments: {' '.join(extra)}")
        target = BY_NAME[args.command].handler
        assert target is not None  # only `run` has none, and it is handled above
        return _guarded(args.command, env, lambda: int(_lookup(target)(args, env)))
    except _HelpRequested as help_text:
        env.stdout.write(help_text.text)
        return SUCCESS
    except UsageError as error:
        from tray.command_table import BY_NAME  # noqa: PLC0415 - not on the path of `tray run`

        known = argv[0] if argv and argv[0] in BY_NAME else None
        hint = f"tray {known} --help" if known else "tray --help"
        env.stderr.write(f"{_one_line(str(error))} (see '{hint}')\n")
        return USAGE_ERROR


def _run(command: list[str], name: str | None, env: Environment) -> int:
    # Loading the launcher and starting the command make thousands of objects and no
    # garbage: the collections they would set off are milliseconds of every start. The
    # launcher turns collection back on once the command runs, and this does when the
    # command could not start (main() may be called by a longer-lived program).
    gc.disable()
    try:
        from tray.launcher.run import run_session  # noqa: PLC0415 - each command imports its own

        return run_session(command, name, env)
    finally:
        gc.enable()


def _guarded(command: str, env: Environment, action: Callable[[], int]) -> int:
    """Run a command, turning the errors a user can cause into one line each."""
    try:
        return action()
    except UsageError:
        raise
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:
        raise  # entry() handles a reader that went away
    except OSError as error:
        env.stderr.write(f"tray {command}: {_describe(error)}\n")
        return FAILURE
    except Exception as error:
        # Imported only now: an instance exists, so its module is loaded already.
        from tray.core.config.settings import ConfigError  # noqa: PLC0415
        from tray.protocol.report import ReportError  # noqa: PLC0415
        from tray.state.store import StoreError  # noqa: PLC0415

        if isinstance(error, ConfigError):
            env.stderr.write(f"tray {command}: {_one_line(str(error))}\n")
            return USAGE_ERROR
        if isinstance(error, (StoreError, ReportError)):
            env.stderr.write(f"tray {command}: {_one_line(str(error))}\n")
            return FAILURE
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
        from tray.state.logs import discard_output  # noqa: PLC0415 - only then

        discard_output(sys.stdout.fileno())
        status = FAILURE
    if sys.argv[1:2] == ["run"]:
        # The interpreter's exit tears every module down and collects their garbage:
        # about 3 ms of each `tray run` for nothing, as the process is ending. The
        # launcher writes its files with os.write and registers no atexit handler, so
        # only the standard streams hold buffered text.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # closed or gone: nothing to say
                stream.flush()
        os._exit(status)
    # Elsewhere, frozen objects are at least left out of the exit's collection.
    gc.freeze()
    sys.exit(status)


__all__ = ["UsageError", "build_parser", "entry", "main", "parse_run_args"]
