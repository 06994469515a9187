"""``[project] dependencies``: each library tray imports is declared, with the platforms
it is used on, and pystray is pinned to the release whose private methods
``tray/desktop/pystray_icons.py`` overrides.

pystray's private methods are checked in its installed source, read with ``ast``:
importing pystray picks a backend and needs a display.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import tray

ROOT = Path(tray.__file__).resolve().parent.parent
PYSTRAY_ICONS = ROOT / "tray" / "desktop" / "pystray_icons.py"
# Methods of pystray_icons.py's classes that are its own, not overrides: pystray must
# not have them, or they would silently replace pystray's.
OWN_METHODS = frozenset({"_show_menu", "_hand_menu", "_default_menu"})
# Attributes pystray_icons.py's classes keep for themselves.
OWN_ATTRIBUTES = frozenset({"_menus"})
# Each backend's Icon class and the classes it is built on, most derived first: (file
# under pystray's package, class name, the base named in its class statement).
GTK_FAMILY = {
    "gtk": (("_gtk.py", "Icon", "GtkIcon"), ("_util/gtk.py", "GtkIcon", "_base.Icon")),
    "appindicator": (
        ("_appindicator.py", "Icon", "GtkIcon"),
        ("_util/gtk.py", "GtkIcon", "_base.Icon"),
    ),
}
XORG = (("_xorg.py", "Icon", "_base.Icon"),)
BASE = ("_base.py", "Icon", "object")
# Which pystray_icons.py class fixes which backends, by the name of its class.
FIXES = {"GtkIcon": tuple(GTK_FAMILY), "XorgIcon": ("xorg",)}


def requirements() -> dict[str, Requirement]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        listed = tomllib.load(handle)["project"]["dependencies"]
    found: dict[str, Requirement] = {}
    for line in listed:
        requirement = Requirement(line)
        found[requirement.name.lower()] = requirement
    return found


@dataclass(frozen=True)
class Parameters:
    """A method's parameters after ``self``, as a call sees them."""

    positional: tuple[str, ...]
    defaults: int
    varargs: bool
    keywords: tuple[str, ...]
    varkw: bool

    @classmethod
    def of(cls, function: ast.FunctionDef) -> Parameters:
        arguments = function.args
        names = tuple(a.arg for a in [*arguments.posonlyargs, *arguments.args])
        return cls(
            names[1:],
            len(arguments.defaults),
            arguments.vararg is not None,
            tuple(a.arg for a in arguments.kwonlyargs),
            arguments.kwarg is not None,
        )

    def takes(self, count: int) -> bool:
        required = len(self.positional) - self.defaults
        return required <= count and (self.varargs or count <= len(self.positional))


@dataclass(frozen=True)
class PystrayClass:
    """What one backend's Icon class has, its bases' included: methods by name (the
    most derived one), and the attributes its methods assign on ``self``."""

    methods: dict[str, ast.FunctionDef]
    attributes: frozenset[str]


def pystray_source() -> Path:
    # find_spec does not run the package: pystray's __init__ picks a backend.
    spec = importlib.util.find_spec("pystray")
    assert spec is not None and spec.submodule_search_locations, "pystray is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def class_in(tree: ast.Module, name: str) -> ast.ClassDef:
    (found,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    return found


def self_attributes(node: ast.AST) -> set[str]:
    """The attributes assigned on ``self`` anywhere under ``node``."""
    return {
        n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }


def backend(name: str) -> PystrayClass:
    chain = {"xorg": XORG, **GTK_FAMILY}[name]
    methods: dict[str, ast.FunctionDef] = {}
    attributes: set[str] = set()
    for file, class_name, base in (*chain, BASE):
        found = class_in(ast.parse((pystray_source() / file).read_text("utf-8")), class_name)
        # A class built on another base than the one read next: the chain is stale.
        assert [ast.unparse(b) for b in found.bases] == [base], (file, class_name)
        for node in found.body:
            if isinstance(node, ast.FunctionDef):
                methods.setdefault(node.name, node)
        attributes |= self_attributes(found)
    return PystrayClass(methods, frozenset(attributes))


def our_classes() -> dict[str, ast.ClassDef]:
    tree = ast.parse(PYSTRAY_ICONS.read_text("utf-8"))
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def calls_on_self(cls: ast.ClassDef) -> dict[str, int]:
    """The private methods called as ``self._x(...)`` or ``super()._x(...)``, with the
    number of positional arguments given."""
    called: dict[str, int] = {}
    for node in ast.walk(cls):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        target = node.func.value
        on_self = isinstance(target, ast.Name) and target.id == "self"
        on_super = isinstance(target, ast.Call) and ast.unparse(target.func) == "super"
        if (on_self or on_super) and private(node.func.attr):
            called[node.func.attr] = len(node.args)
    return called


def attributes_used(cls: ast.ClassDef) -> set[str]:
    """The private attributes of ``self`` that the class reads, writes or calls."""
    used = {
        n.attr
        for n in ast.walk(cls)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
        and private(n.attr)
    }
    # hasattr(self, "_appindicator") leans on the name as much as a read does.
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "hasattr":
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                used.add(name.value)
    return used


def test_pystray_is_pinned_to_the_one_release_installed() -> None:
    pin = requirements()["pystray"]
    (specifier,) = pin.specifier
    # One release admitted: the private methods below are checked on that one alone.
    assert specifier.operator == "==", f"pystray{pin.specifier} admits releases unchecked"
    installed = Version(importlib.metadata.version("pystray"))
    assert installed in pin.specifier, f"pystray {installed} is installed, {pin} declared"
    # The overrides name the release they were read from, so a new pin shows them too.
    assert f"pystray{pin.specifier}" in PYSTRAY_ICONS.read_text("utf-8")


@pytest.mark.parametrize("name", sorted(FIXES))
def test_every_private_method_pystray_icons_overrides_is_pystrays(name: str) -> None:
    ours = our_classes()[name]
    backends = {b: backend(b) for b in FIXES[name]}
    defined = {n.name: n for n in ours.body if isinstance(n, ast.FunctionDef)}
    for method, function in defined.items():
        having = [b for b in backends.values() if method in b.methods]
        if method in OWN_METHODS:
            assert not having, f"pystray has a {method} of its own, which {name} replaces"
            continue
        if not private(method):
            continue
        assert having, f"{name}.{method} overrides nothing in pystray {FIXES[name]}"
        for pystray_class in having:
            theirs = Parameters.of(pystray_class.methods[method])
            assert Parameters.of(function) == theirs, f"{method}: pystray's is {theirs}"


@pytest.mark.parametrize("name", sorted(FIXES))
def test_every_private_method_and_attribute_pystray_icons_uses_is_pystrays(name: str) -> None:
    ours = our_classes()[name]
    backends = [backend(b) for b in FIXES[name]]
    own = OWN_METHODS | OWN_ATTRIBUTES
    for method, count in calls_on_self(ours).items():
        if method in own:
            continue
        having = [b.methods[method] for b in backends if method in b.methods]
        assert having, f"{name} calls {method}, which pystray {FIXES[name]} lacks"
        for function in having:
            assert Parameters.of(function).takes(count), f"{method} takes no {count} arguments"
    for attribute in attributes_used(ours) - own:
        assert any(attribute in b.methods or attribute in b.attributes for b in backends), (
            f"{name} uses {attribute}, which pystray {FIXES[name]} never sets"
        )


def test_the_backends_are_told_apart_by_the_names_robust_icon_class_looks_for() -> None:
    tree = ast.parse(PYSTRAY_ICONS.read_text("utf-8"))
    (robust,) = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "robust_icon_class"
    ]
    looked_for = {
        n.args[1].value
        for n in ast.walk(robust)
        if isinstance(n, ast.Call)
        and ast.unparse(n.func) == "hasattr"
        and isinstance(n.args[1], ast.Constant)
    }
    assert looked_for == {"_initialize", "_finalize", "_rewrite_implementation"}
    for gtk in GTK_FAMILY:
        methods = backend(gtk).methods
        assert {"_initialize", "_finalize"} <= methods.keys()
        assert "_rewrite_implementation" not in methods
    xorg = backend("xorg").methods
    assert "_rewrite_implementation" in xorg
    assert not {"_initialize", "_finalize"} & xorg.keys()


XLIB_IMPORT = re.compile(r"^\s*(?:import Xlib\b|from Xlib\b)", re.MULTILINE)


def test_python_xlib_is_declared_where_tray_imports_it() -> None:
    # Some imports are in a probe's code, run by a child interpreter: read as text.
    sites = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tray").rglob("*.py")
        if XLIB_IMPORT.search(p.read_text("utf-8"))
    )
    assert sites, "no module imports Xlib: drop python-xlib from the dependencies"
    declared = requirements()["python-xlib"]
    assert str(declared.marker) == 'sys_platform == "linux"'
    installed = Version(importlib.metadata.version("python-xlib"))
    assert installed in declared.specifier


def test_watchdog_is_required_only_where_there_is_no_inotify() -> None:
    declared = requirements()["watchdog"]
    assert str(declared.marker) == 'sys_platform != "linux"'
    assert declared.marker is not None
    assert not declared.marker.evaluate({"sys_platform": "linux"})
    assert declared.marker.evaluate({"sys_platform": "darwin"})
