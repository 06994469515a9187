"""Which test modules can reach a process, a pty, a socket or a display, read from their
imports alone (helpers/tiers.py sorts the suite's tiers by it).

A module is followed through every import it makes, at its top or inside a function,
into the tests' own modules and tray's; a module outside both is looked up in
``REACHING`` by its dotted name.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
# Where ``import x`` finds the suite's and tray's own modules (pyproject's pythonpath).
SEARCH = (TESTS, ROOT)

# The modules that start processes, open ptys or sockets, or talk to a bus or a display.
REACHING = frozenset(
    {
        "subprocess",
        "pty",
        "ptyprocess",
        "socket",
        "socketserver",
        "multiprocessing",
        "asyncio",
        "http",
        "urllib.request",
        "dbus_fast",
        "desktop_notifier",
        "apprise",
        "pystray",
        "gi",
        "Xlib",
        "watchdog",
    }
)


def _reaching(name: str) -> bool:
    return any(name == it or name.startswith(it + ".") for it in REACHING)


def _local(name: str) -> Path | None:
    relative = Path(*name.split("."))
    for base in SEARCH:
        for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


@cache
def _imported(path: Path) -> frozenset[str]:
    """The dotted names ``path`` imports, each ``from a import b`` as both a and a.b."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: set[str] = set()
    package = path.parent
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.parents[node.level - 2] if node.level > 1 else package
                root = next(b for b in SEARCH if anchor.is_relative_to(b))
                prefix = ".".join(anchor.relative_to(root).parts)
                base = f"{prefix}.{base}".strip(".")
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(names)


@cache
def reaches(path: Path) -> str | None:
    """The first module outside the suite and tray, in ``REACHING``, that ``path`` can
    import; None when there is none."""
    seen: set[Path] = set()
    todo = [path.resolve()]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for name in sorted(_imported(current)):
            found = _local(name)
            if found is not None:
                todo.append(found.resolve())
            elif _reaching(name):
                return name
    return None
