"""Every ``tray`` command the README and the manual in ``docs/`` show is one the CLI
accepts (the make targets, the tree and the links: test_docs.py).

The commands themselves are run for real by the other tests (`tray run`, `status` in
each format, `emit`, `doctor`, `demo`, `autostart`, `app`); this keeps the words from
drifting away from what exists.
"""

from __future__ import annotations

import re
import shlex

import pytest
from helpers.manual import manual_texts

from tray.cli import UsageError, build_parser, parse_run_args

TEXTS = manual_texts()

_SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
_SPAN = re.compile(r"`(tray [^`]+)`")
_TMUX = re.compile(r"#\((tray [^)]+)\)")
_QUOTED = re.compile(r"[\'\"](tray [^\'\"]+)[\'\"]")
# Synopses such as `tray run [--name NAME] [--] CMD...` describe a command; they are not one.
_SYNOPSIS = re.compile(r"[\[|]|\.\.\.|\b[A-Z]{2,}\b")


def _commands(text: str) -> set[str]:
    found = {*_SPAN.findall(text), *_QUOTED.findall(text), *_TMUX.findall(text)}
    for block in _SHELL_BLOCK.findall(text):
        for line in block.splitlines():
            command = line.split(" #", 1)[0].strip().removesuffix("&").strip()
            if command.startswith("tray "):
                found.add(command)
    return {command for command in found if not _SYNOPSIS.search(command)}


def _first_file_of_each() -> dict[str, str]:
    """Each command, with the first file that shows it."""
    where: dict[str, str] = {}
    for name, text in TEXTS.items():
        for command in sorted(_commands(text)):
            where.setdefault(command, name)
    return where


TRAY_COMMANDS = sorted(_first_file_of_each().items())


def test_the_readme_and_the_manual_show_commands() -> None:
    assert len(TRAY_COMMANDS) >= 15


@pytest.mark.parametrize(("command", "where"), TRAY_COMMANDS)
def test_each_tray_command_parses(command: str, where: str) -> None:
    argv = shlex.split(command)[1:]
    try:
        if argv[0] == "run":
            if argv[1:]:  # a bare `tray run` is the command's name in a sentence
                parse_run_args(argv[1:])
        elif "--help" not in argv:
            build_parser()[0].parse_args(argv)
    except UsageError as error:
        pytest.fail(f"{where} shows `{command}`, which the CLI refuses: {error}")
