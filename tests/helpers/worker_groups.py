"""Which tests share one xdist worker under `make test` (``--dist loadgroup``).

A GNOME Shell or a KDE Plasma takes most of a minute to start and is a session fixture:
every test that uses one should run on the worker that started it. xdist groups tests by
an ``xdist_group`` marker, which it reads by renaming each item's node id, and pytest 9's
node ids can no longer be renamed, so the groups are found here instead, from each test
module's source, for the scheduler to use (``GroupedScheduling``):
- a module whose tests name a whole desktop's fixture (``DESKTOP_GROUPS``) among their
  arguments or ``usefixtures`` joins that desktop's group;
- a module that says ``pytest.mark.xdist_group("NAME")`` joins NAME (one module's costly
  module-scoped fixture, made once).
Every other test is a group of its own, spread as ``--dist load`` spreads them.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import Any

import pytest

# xdist ships no type information.
from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]

# The fixtures that start a whole desktop, and the group of the tests that share each.
DESKTOP_GROUPS = {"gnome_shell": "gnome-shell", "plasma": "plasma", "locking_plasma": "plasma"}


def _named_fixture(node: ast.AST) -> str | None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        return next((arg.arg for arg in arguments if arg.arg in DESKTOP_GROUPS), None)
    return None


def _marked_group(node: ast.AST) -> tuple[str, str] | None:
    """("xdist_group", NAME) or ("usefixtures", FIXTURE) for such a call, else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    words = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if node.func.attr == "xdist_group" and words:
        return ("xdist_group", words[0])
    fixture = next((word for word in words if word in DESKTOP_GROUPS), None)
    if node.func.attr == "usefixtures" and fixture is not None:
        return ("usefixtures", fixture)
    return None


@cache
def module_group(path: Path) -> str | None:
    """The group of every test in the module at ``path``, or None."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (OSError, SyntaxError, ValueError):
        return None  # not a module of ours: its tests go wherever there is room
    for node in ast.walk(tree):
        fixture = _named_fixture(node)
        if fixture is not None:
            return DESKTOP_GROUPS[fixture]
        marked = _marked_group(node)
        if marked is not None:
            kind, word = marked
            return word if kind == "xdist_group" else DESKTOP_GROUPS[word]
    return None


class GroupedScheduling(LoadGroupScheduling):  # type: ignore[misc]
    """``--dist loadgroup``, with the groups read from the test modules' source."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._root = config.rootpath

    def _split_scope(self, nodeid: str) -> str:
        group = module_group(self._root / nodeid.split("::", 1)[0])
        return nodeid if group is None else group
