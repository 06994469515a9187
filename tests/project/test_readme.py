"""Every command the README shows is one the CLI and the Makefile accept.

The commands themselves are run for real by the other tests (`tray run`, `status` in
each format, `emit`, `doctor`, `demo`, `autostart`, `app`); this keeps the README from
drifting away from what exists.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tray.cli import UsageError, build_parser, parse_run_args

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")

_SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
_SPAN = re.compile(r"`(tray [^`]+)`")
_TMUX = re.compile(r"#\((tray [^)]+)\)")
_QUOTED = re.compile(r"[\'\"](tray [^\'\"]+)[\'\"]")
_MAKE = re.compile(r"(?<![\w/.-])make ([a-z]+)")
# Synopses such as `tray run [--name NAME] [--] CMD...` describe a command; they are not one.
_SYNOPSIS = re.compile(r"[\[|]|\.\.\.|\b[A-Z]{2,}\b")


def _commands() -> set[str]:
    found = {*_SPAN.findall(README), *_QUOTED.findall(README), *_TMUX.findall(README)}
    for block in _SHELL_BLOCK.findall(README):
        for line in block.splitlines():
            command = line.split(" #", 1)[0].strip().removesuffix("&").strip()
            if command.startswith("tray "):
                found.add(command)
    return {command for command in found if not _SYNOPSIS.search(command)}


TRAY_COMMANDS = sorted(_commands())
MAKE_TARGETS = sorted(set(_MAKE.findall(README)))


def test_the_readme_shows_commands() -> None:
    assert len(TRAY_COMMANDS) >= 15
    assert {"demo", "test"} <= set(MAKE_TARGETS)


@pytest.mark.parametrize("command", TRAY_COMMANDS)
def test_each_tray_command_parses(command: str) -> None:
    argv = shlex.split(command)[1:]
    try:
        if argv[0] == "run":
            if argv[1:]:  # a bare `tray run` is the command's name in a sentence
                parse_run_args(argv[1:])
        elif "--help" not in argv:
            build_parser()[0].parse_args(argv)
    except UsageError as error:
        pytest.fail(f"README shows `{command}`, which the CLI refuses: {error}")


@pytest.mark.parametrize("target", MAKE_TARGETS)
def test_each_make_target_exists(target: str) -> None:
    assert re.search(rf"^{target}:", MAKEFILE, re.M), f"README shows `make {target}`"


def _readme_tree() -> str:
    """The one tree of the code in the README: the fenced block that starts ``tray/``."""
    blocks: list[list[str]] = []
    inside = False
    for line in README.splitlines():
        if line.startswith("```"):
            inside = not inside
            if inside:
                blocks.append([])
        elif inside:
            blocks[-1].append(line)
    trees = ["\n".join(block) for block in blocks if block[:1] == ["tray/"]]
    assert len(trees) == 1, "the README shows the tree once"
    return trees[0]


def test_the_readme_tree_names_every_folder_and_top_module_of_the_package() -> None:
    package = REPO / "tray"
    tree = _readme_tree()
    folders = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("__init__.py")
        if path.parent != package
    )
    folders = [str(Path(folder).parent) for folder in folders]
    loose = sorted(
        path.name
        for path in package.glob("*.py")
        if path.name not in {"__init__.py", "__main__.py"}
    )
    missing = [f"{name}/" for name in folders if f"{Path(name).name}/" not in tree]
    missing += [name for name in loose if name not in tree]
    assert missing == []


def test_the_readme_tree_names_no_module_that_is_gone() -> None:
    tree = _readme_tree()
    named = set(re.findall(r"\b([a-z_]+\.py)\b", tree))
    present = {path.name for path in (REPO / "tray").rglob("*.py")}
    assert named - present == set()
