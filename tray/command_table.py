"""The one table of ``tray``'s commands: each one's help, arguments, and the function
(in its own module) that runs it."""

from __future__ import annotations

import argparse
from dataclasses import KW_ONLY, dataclass
from typing import Any

from tray.protocol.state import ANSWERS

Argument = tuple[tuple[str, ...], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Command:
    """One command: ``handler`` and ``more_arguments`` are ``"module:function"``, looked
    up only when needed; a command without ``help`` is hidden from ``tray --help``."""

    name: str
    handler: str | None
    help: str | None
    description: str | None = None
    arguments: tuple[Argument, ...] = ()
    _: KW_ONLY
    usage: str | None = None
    more_arguments: str | None = None


def _progress(text: str) -> int:
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
        "Write one OSC 7501 report to the session's terminal ($TRAY_TTY, else /dev/tty).",
        (
            (
                ("state",),
                {
                    "metavar": "STATE",
                    "nargs": "?",
                    "help": "idle, working, done, blocked, error or clear",
                },
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
            (
                ("--hook",),
                {
                    "nargs": 2,
                    "metavar": ("APP", "EVENT"),
                    "help": "instead of STATE: report an agent's hook EVENT from its rules, "
                    "with the hook's JSON on stdin (what 'tray hooks install' sets up); "
                    "always exits 0",
                },
            ),
        ),
        usage="tray emit [-h] STATE [--kind K] [--progress N] [--app NAME] [--id ID] "
        "[--title TEXT] [--msg TEXT]\n       tray emit --hook APP EVENT",
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
            (("answer",), {"metavar": "|".join(ANSWERS), "choices": ANSWERS}),
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
        "hooks",
        "tray.commands.hooks:run",
        "add or take back tray's hooks in an agent's settings",
        "For an agent that reports no state itself: install adds a hook for each event its "
        "rules name, each running 'tray emit --hook AGENT EVENT', and says what it changes; "
        "remove takes exactly those away; list (the default) shows what is installed.",
        (
            (("action",), {"nargs": "?", "choices": ("list", "install", "remove")}),
            (
                ("agent",),
                {
                    "metavar": "AGENT",
                    "nargs": "?",
                    "help": "copilot, gemini, opencode or qwen-code",
                },
            ),
        ),
    ),
    Command(
        "app",
        "tray.commands.lazy_dispatch:app",
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
        "tray.commands.lazy_dispatch:init",
        "print the shell code for your rc file (bash, zsh or fish)",
        "Print the code that runs the agents in [shell] wrap under tray run and records long "
        'commands: eval "$(tray init bash)" in ~/.bashrc, eval "$(tray init zsh)" in '
        "~/.zshrc, tray init fish | source in ~/.config/fish/config.fish.",
        ((("shell",), {"metavar": "SHELL", "nargs": "?", "help": "bash, zsh or fish"}),),
    ),
    # Hidden (no help): what the shell hooks run after a long command.
    Command(
        "_finished",
        "tray.commands.lazy_dispatch:finished",
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
BY_NAME = {command.name: command for command in COMMANDS}


__all__ = ["BY_NAME", "COMMANDS", "Command"]
