"""Imports run one way: each module of ``tray/`` imports only from its own tier or below,
and the folders inside ``tray/core`` import one way too.

The tiers, from the bottom: base, the pure protocol, the pure core; the ground adapters
(state, terminal); the session's adapters (launcher, remote, shell); the desktop's
adapters, desktop then outlets above it; the app; the commands; the command line. In the
two tiers of adapters side by side, the ground and the session's, a folder never imports
another: code one of them needs from another sits a tier down. A lazy import inside a
function counts as much as one at the top; only imports under ``if TYPE_CHECKING:`` (for
mypy, never run) are left out. There is no list of exceptions.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

import tray

BASE, PROTOCOL, CORE, GROUND, SESSION, DESKTOP, OUTLETS, APP, COMMANDS, CLI = range(1, 11)
NAMES = {
    BASE: "base",
    PROTOCOL: "protocol",
    CORE: "core",
    GROUND: "ground",
    SESSION: "session adapters",
    DESKTOP: "desktop",
    OUTLETS: "outlets",
    APP: "app",
    COMMANDS: "commands",
    CLI: "cli",
}

# One folder a layer; the package itself holds only its version and the command line.
# A new folder or a module loose at the top fails the test until it is given a tier.
LAYERS: dict[str, int] = {
    "tray": BASE,  # the package itself: only __version__
    "tray.base": BASE,
    "tray.protocol": PROTOCOL,
    "tray.core": CORE,
    "tray.state": GROUND,
    "tray.terminal": GROUND,
    "tray.launcher": SESSION,
    "tray.remote": SESSION,
    "tray.shell": SESSION,
    "tray.desktop": DESKTOP,
    "tray.outlets": OUTLETS,
    "tray.app": APP,
    "tray.commands": COMMANDS,
    "tray.command_table": CLI,
    "tray.cli": CLI,
    "tray.__main__": CLI,
}

# Tiers whose folders stand side by side, each one kind of I/O: none imports another.
APART: frozenset[int] = frozenset({GROUND, SESSION})

# The folders of tray/core, bottom up: each may import only those before it.
CORE_ORDER: tuple[str, ...] = (
    "answers",
    "config",
    "session",
    "agents",
    "away",
    "hosts",
    "view",
    "policy",
    "worker",
)

PACKAGE = Path(tray.__file__).parent


def _prefix_of(module: str, layers: Mapping[str, int]) -> str | None:
    """The longest prefix of ``module`` that ``layers`` names; the bare package matches
    only itself."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in layers and (end > 1 or len(parts) == 1):
            return prefix
    return None


def layer_of(module: str, layers: Mapping[str, int] = LAYERS) -> int | None:
    """The tier of ``module`` (or of the module ``tray.x.y`` is inside), by its longest
    matching prefix."""
    prefix = _prefix_of(module, layers)
    return None if prefix is None else layers[prefix]


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


def upward_imports(
    sources: Mapping[str, tuple[str, bool]],
    layers: Mapping[str, int],
    apart: Collection[int] = APART,
) -> list[str]:
    """One line per import that runs up a tier, or sideways between two folders of a tier
    in ``apart``, or per module without a tier.

    ``sources`` maps a module name to its source text and whether it is a package.
    """
    problems: list[str] = []
    for module, (text, is_package) in sorted(sources.items()):
        own = _prefix_of(module, layers)
        if own is None:
            problems.append(f"{module}: no layer (add it to LAYERS)")
            continue
        for line, imported in _tray_imports(text, module, is_package):
            target = _prefix_of(imported, layers)
            # `from tray.x import name`: the name may be a function, so its module decides.
            if target is None and "." in imported:
                target = _prefix_of(imported.rsplit(".", 1)[0], layers)
            if target is None:
                problems.append(f"{module}:{line}: imports {imported}, which has no layer")
            elif layers[target] > layers[own]:
                problems.append(
                    f"{module}:{line}: {NAMES[layers[own]]} imports {imported}, "
                    f"which is {NAMES[layers[target]]}: a layer up"
                )
            elif layers[target] == layers[own] in apart and target != own:
                problems.append(
                    f"{module}:{line}: {own} imports {imported}, which is {target}: "
                    f"beside it in the {NAMES[layers[own]]} tier"
                )
    return problems


def _tray_imports(text: str, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    for line, imported in _imports([ast.parse(text)], module, is_package):
        if imported == "tray" or imported.startswith("tray."):
            yield line, imported


def _core_folder(module: str) -> str | None:
    """The folder of tray/core that ``module`` is in or names; "" for the package itself."""
    parts = module.split(".")
    if parts[:2] != ["tray", "core"]:
        return None
    return parts[2] if len(parts) > 2 else ""


def backward_core_imports(
    sources: Mapping[str, tuple[str, bool]], order: Sequence[str] = CORE_ORDER
) -> list[str]:
    """One line per import, inside tray/core, of a folder that comes later in ``order``
    than the importer's own (the package itself comes first), or per module or import in
    no folder of ``order``."""
    rank = {"": -1, **{folder: number for number, folder in enumerate(order)}}
    problems: list[str] = []
    for module, (text, is_package) in sorted(sources.items()):
        own = _core_folder(module)
        if own is None:
            continue
        if own not in rank:
            problems.append(f"{module}: in no folder of CORE_ORDER")
            continue
        for line, imported in _tray_imports(text, module, is_package):
            target = _core_folder(imported)
            if target is None or target == own:
                continue
            if target not in rank:
                problems.append(f"{module}:{line}: imports {imported}, in no folder of CORE_ORDER")
            elif rank[target] > rank[own]:
                problems.append(
                    f"{module}:{line}: {own or 'tray.core'} imports {imported}, "
                    f"from {target}, which comes after it"
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


def test_the_folders_of_core_import_one_way() -> None:
    sources = tray_sources()
    assert any(name.startswith("tray.core.worker.") for name in sources)
    assert backward_core_imports(sources) == []


def test_every_core_folder_is_in_the_order() -> None:
    folders = {
        path.name for path in (PACKAGE / "core").iterdir() if (path / "__init__.py").exists()
    }
    assert folders == set(CORE_ORDER)


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
    assert layer_of("tray.state.app_lock") == GROUND
    assert layer_of("tray.terminal.raw_mode") == GROUND
    assert layer_of("tray.remote.link") == SESSION
    assert layer_of("tray.app.main") == APP
    assert layer_of("tray") == BASE
    assert layer_of("tray.nothing") is None
    assert layer_of("trayful") is None


SIDE_BY_SIDE = {
    "tray.state": GROUND,
    "tray.terminal": GROUND,
    "tray.launcher": SESSION,
    "tray.remote": SESSION,
    "tray.cli": CLI,
    "tray.command_table": CLI,
}


def _sideways(module: str, text: str) -> list[str]:
    return upward_imports({module: (text, False)}, SIDE_BY_SIDE)


def test_a_sideways_import_between_adapters_side_by_side_is_found() -> None:
    assert _sideways("tray.remote.link", "from tray.launcher.answer_socket import LIMIT\n") == [
        "tray.remote.link:1: tray.remote imports tray.launcher.answer_socket.LIMIT, "
        "which is tray.launcher: beside it in the session adapters tier"
    ]
    assert _sideways("tray.state.store", "def f():\n    import tray.terminal.raw_mode\n") == [
        "tray.state.store:2: tray.state imports tray.terminal.raw_mode, "
        "which is tray.terminal: beside it in the ground tier"
    ]


def test_inside_a_folder_down_a_tier_and_in_other_tiers_sideways_passes() -> None:
    assert (
        _sideways("tray.remote.link", "from tray.remote import frames\nimport tray.state\n") == []
    )
    assert _sideways("tray.cli", "from tray.command_table import COMMANDS\n") == []


def _core(module: str, text: str, is_package: bool = False) -> list[str]:
    return backward_core_imports({module: (text, is_package)}, ("first", "second"))


def test_a_core_folder_may_import_itself_and_the_folders_before_it() -> None:
    text = "from tray.core.first.a import b\nfrom tray.core.second import c\nimport tray.base\n"
    assert _core("tray.core.second.module", text) == []


def test_a_core_folder_importing_a_later_one_is_found() -> None:
    assert _core("tray.core.first.module", "from tray.core.second.c import d\n") == [
        "tray.core.first.module:1: first imports tray.core.second.c.d, "
        "from second, which comes after it"
    ]
    lazy = "def f():\n    from ..second import c\n    return c\n"
    assert len(_core("tray.core.first.module", lazy)) == 1
    assert len(_core("tray.core", "from tray.core import first\n", is_package=True)) == 1


def test_a_core_import_for_the_type_checker_is_left_out() -> None:
    text = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tray.core.second import c\n"
    )
    assert _core("tray.core.first.module", text) == []


def test_a_core_module_or_import_outside_the_order_is_reported() -> None:
    assert _core("tray.core.stray", "") == ["tray.core.stray: in no folder of CORE_ORDER"]
    assert _core("tray.core.second.m", "from tray.core.third import x\n") == [
        "tray.core.second.m:1: imports tray.core.third.x, in no folder of CORE_ORDER"
    ]
    assert _core("tray.app.main", "from tray.core.second import x\n") == []
