"""Imports run one way: each module of ``tray/`` imports only from its own layer or below.

From the bottom: base, the pure protocol, the pure core, the state directory, the adapters
(launcher, remote, shell, desktop, outlets); the app; the commands; the command line. A lazy
import inside a function counts as much as one at the top; only imports under
``if TYPE_CHECKING:`` (for mypy, never run) are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

import tray

BASE, PROTOCOL, CORE, STATE, ADAPTERS, APP, COMMANDS, CLI = range(1, 9)
NAMES = {
    BASE: "base",
    PROTOCOL: "protocol",
    CORE: "core",
    STATE: "state",
    ADAPTERS: "adapters",
    APP: "app",
    COMMANDS: "commands",
    CLI: "cli",
}

# One folder a layer; the package itself holds only its version and the command line.
# A new folder or a module loose at the top fails the test until it is given a layer.
LAYERS: dict[str, int] = {
    "tray": BASE,  # the package itself: only __version__
    "tray.base": BASE,
    "tray.protocol": PROTOCOL,
    "tray.core": CORE,
    "tray.state": STATE,
    "tray.launcher": ADAPTERS,
    "tray.remote": ADAPTERS,
    "tray.shell": ADAPTERS,
    "tray.desktop": ADAPTERS,
    "tray.outlets": ADAPTERS,
    "tray.app": APP,
    "tray.commands": COMMANDS,
    "tray.command_table": CLI,
    "tray.cli": CLI,
    "tray.__main__": CLI,
}

PACKAGE = Path(tray.__file__).parent


def layer_of(module: str, layers: Mapping[str, int] = LAYERS) -> int | None:
    """The layer of ``module`` (or of the module ``tray.x.y`` is inside), by its longest
    matching prefix; the bare package matches only itself."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in layers and (end > 1 or len(parts) == 1):
            return layers[prefix]
    return None


def _is_type_checking(test: ast.expr) -> bool:
    # Both `if TYPE_CHECKING:` (typing's, or the module's own `TYPE_CHECKING = False`,
    # which mypy takes as true) and `if typing.TYPE_CHECKING:`.
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(nodes: Iterable[ast.AST], module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """Every module ``nodes`` import (line and absolute name), at any depth, outside
    ``if TYPE_CHECKING:`` blocks (their ``else`` still runs, so it counts)."""
    for node in nodes:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imports(node.orelse, module, is_package)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                kept = package[: len(package) - (node.level - 1)]
                base = ".".join([*kept, *([base] if base else [])])
            for alias in node.names:
                # `from tray.protocol import records` imports a module, not a name.
                yield node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base
        yield from _imports(ast.iter_child_nodes(node), module, is_package)


def upward_imports(sources: Mapping[str, tuple[str, bool]], layers: Mapping[str, int]) -> list[str]:
    """One line per import that runs up a layer, or per module without a layer.

    ``sources`` maps a module name to its source text and whether it is a package.
    """
    problems: list[str] = []
    for module, (text, is_package) in sorted(sources.items()):
        own = layer_of(module, layers)
        if own is None:
            problems.append(f"{module}: no layer (add it to LAYERS)")
            continue
        for line, imported in _imports([ast.parse(text)], module, is_package):
            if imported != "tray" and not imported.startswith("tray."):
                continue
            target = layer_of(imported, layers)
            # `from tray.x import name`: the name may be a function, so its module decides.
            if target is None and "." in imported:
                target = layer_of(imported.rsplit(".", 1)[0], layers)
            if target is None:
                problems.append(f"{module}:{line}: imports {imported}, which has no layer")
            elif target > own:
                problems.append(
                    f"{module}:{line}: {NAMES[own]} imports {imported}, "
                    f"which is {NAMES[target]}: a layer up"
                )
    return problems


def tray_sources() -> dict[str, tuple[str, bool]]:
    sources: dict[str, tuple[str, bool]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(relative.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        sources[".".join(parts)] = (path.read_text(encoding="utf-8"), is_package)
    return sources


def test_no_import_runs_up_a_layer() -> None:
    sources = tray_sources()
    assert len(sources) > 40  # the walk found the package
    assert upward_imports(sources, LAYERS) == []


def test_every_layer_is_used() -> None:
    # A layer map whose prefixes name no module would let a rename slip through.
    modules = tray_sources()
    unused = [
        prefix
        for prefix in LAYERS
        if not any(name == prefix or name.startswith(prefix + ".") for name in modules)
    ]
    assert unused == []


# The checker itself, on small made-up trees.

FAKE_LAYERS = {"tray": PROTOCOL, "tray.core": CORE, "tray.app": APP, "tray.cli": CLI}


def _check(module: str, text: str, is_package: bool = False) -> list[str]:
    return upward_imports({module: (text, is_package)}, FAKE_LAYERS)


def test_an_import_at_the_top_that_runs_up_is_found() -> None:
    assert _check("tray.core", "from tray.app.view import show\n") == [
        "tray.core:1: core imports tray.app.view.show, which is app: a layer up"
    ]
    assert _check("tray.core", "import tray.cli\n") == [
        "tray.core:1: core imports tray.cli, which is cli: a layer up"
    ]


def test_a_lazy_import_inside_a_function_is_found() -> None:
    text = "def f():\n    if True:\n        from tray.cli import main\n    return main\n"
    assert _check("tray.core", text) == [
        "tray.core:3: core imports tray.cli.main, which is cli: a layer up"
    ]


def test_a_relative_import_is_resolved() -> None:
    assert len(_check("tray.core.part", "from ..app import view\n")) == 1
    assert len(_check("tray.core", "from ..app import view\n", is_package=True)) == 1
    assert _check("tray.core.part", "from . import other\n") == []


@pytest.mark.parametrize(
    "guard", ["TYPE_CHECKING", "typing.TYPE_CHECKING"], ids=["name", "attribute"]
)
def test_only_imports_for_the_type_checker_are_left_out(guard: str) -> None:
    text = (
        "TYPE_CHECKING = False\n"
        f"if {guard}:\n"
        "    from tray.app import view\n"
        "else:\n"
        "    from tray.cli import main\n"
    )
    assert _check("tray.core", text) == [
        "tray.core:5: core imports tray.cli.main, which is cli: a layer up"
    ]


def test_downward_and_sideways_imports_and_other_packages_pass() -> None:
    text = "import json\nfrom tray import x\nfrom tray.core import y\nimport tray.app.z\n"
    assert _check("tray.app.view", text) == []


def test_a_module_or_import_without_a_layer_is_reported() -> None:
    assert _check("tray.stray", "") == ["tray.stray: no layer (add it to LAYERS)"]
    assert _check("tray.core", "from tray.stray import thing\n") == [
        "tray.core:1: imports tray.stray.thing, which has no layer"
    ]


def test_layer_of_takes_the_longest_prefix() -> None:
    assert layer_of("tray.state.app_lock") == STATE
    assert layer_of("tray.app.main") == APP
    assert layer_of("tray") == BASE
    assert layer_of("tray.nothing") is None
    assert layer_of("trayful") is None
