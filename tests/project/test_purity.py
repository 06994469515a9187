"""The pure folders import no I/O: ``tray/base``, ``tray/protocol`` and ``tray/core``.

No module there imports a module of the standard library that reaches the system (files,
processes, sockets, threads, signals, terminals, the interpreter's own streams), nor a
library that does I/O. Every import counts: at the top, inside a function, under ``if
TYPE_CHECKING:``, and ``__import__`` or ``importlib.import_module`` with a literal name.
There is no list of exceptions: I/O that a pure module needs moves out to the layer
that does it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import tray

PURE_FOLDERS = ("base", "protocol", "core")

FORBIDDEN = frozenset(
    {
        # The standard library's I/O.
        "os",
        "socket",
        "subprocess",
        "threading",
        "ctypes",
        "select",
        "signal",
        "fcntl",
        "termios",
        "pty",
        "shutil",
        "tempfile",
        "asyncio",
        "io",
        "pathlib",
        "logging",
        "sys",
        "urllib",
        "http",
        "ssl",
        "mmap",
        "multiprocessing",
        "concurrent",
        # The I/O libraries tray uses.
        "pystray",
        "PIL",
        "desktop_notifier",
        "dbus_fast",
        "apprise",
        "watchdog",
        "ptyprocess",
        "platformdirs",
        "gi",
        "Xlib",
    }
)

PACKAGE = Path(tray.__file__).parent


def _imported(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Every absolute module name ``tree`` imports, with its line, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            # A relative import stays inside tray, which is checked module by module.
            if node.level == 0 and node.module is not None:
                yield node.lineno, node.module
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func) and node.args:
            name = node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                yield node.lineno, name.value


def _is_dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in ("__import__", "import_module")
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def io_imports(source: str, where: str) -> list[str]:
    """One line per import of a forbidden module (or one inside it) in ``source``."""
    return [
        f"{where}:{line}: imports {name}"
        for line, name in _imported(ast.parse(source))
        if name.split(".")[0] in FORBIDDEN
    ]


def pure_modules() -> list[Path]:
    return sorted(path for folder in PURE_FOLDERS for path in (PACKAGE / folder).rglob("*.py"))


def test_the_pure_folders_import_no_io() -> None:
    modules = pure_modules()
    assert len(modules) > 25  # the walk found the folders, and their subfolders
    problems = [
        problem
        for path in modules
        for problem in io_imports(
            path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent))
        )
    ]
    assert problems == []


def test_the_walk_reaches_every_pure_folder_and_subfolder() -> None:
    folders = {path.parent.relative_to(PACKAGE).as_posix() for path in pure_modules()}
    assert {
        "base",
        "protocol",
        "core/session",
        "core/policy",
        "core/view",
        "core/worker",
    } <= folders


# The checker itself, on made-up sources.


@pytest.mark.parametrize(
    "source",
    [
        "import os\n",
        "import os.path\n",
        "import json, subprocess\n",
        "import threading as t\n",
        "from pathlib import Path\n",
        "from concurrent.futures import ThreadPoolExecutor\n",
        "from urllib.parse import quote\n",
        "from PIL import Image\n",
        "import dbus_fast.aio\n",
        "def f():\n    import socket\n    return socket\n",
        "class C:\n    def m(self):\n        if True:\n            from sys import argv\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from io import BytesIO\n",
        "try:\n    import fcntl\nexcept ImportError:\n    fcntl = None\n",
        "x = __import__('signal')\n",
        "import importlib\nx = importlib.import_module('logging.handlers')\n",
    ],
)
def test_any_import_of_io_is_found(source: str) -> None:
    problems = io_imports(source, "made_up.py")
    assert len(problems) == 1
    assert problems[0].startswith("made_up.py:")


def test_the_problem_names_the_line_and_the_module() -> None:
    source = "import json\n\n\ndef f():\n    from os import environ\n    return environ\n"
    assert io_imports(source, "tray/core/x.py") == ["tray/core/x.py:5: imports os"]


@pytest.mark.parametrize(
    "source",
    [
        "import json\nimport re\nimport math\n",
        "from dataclasses import dataclass\nfrom typing import Final\n",
        "from tray.protocol.records import Record\n",
        "from . import os\n",  # tray's own module of that name, not the standard one
        "import osmium\nimport system\nimport iota\n",  # names that only start alike
        "from collections.abc import Mapping\n",
    ],
)
def test_pure_imports_pass(source: str) -> None:
    assert io_imports(source, "made_up.py") == []
