"""The ``>>>`` examples in the protocol's docstrings run, and say what the code does.

Every module of :mod:`tray.protocol` must have examples, and so must
:mod:`tray.core.config.durations` and ``parsing``, :mod:`tray.base.memo`, the overview's
icons and the agents' rules: a module that loses its last one fails here, as does an
example that no longer holds. Run by the normal ``pytest``, whose test paths hold no module
of ``tray``.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import types

import pytest

import tray.protocol

MODULES = [
    *sorted(f"tray.protocol.{info.name}" for info in pkgutil.iter_modules(tray.protocol.__path__)),
    "tray.core.config.durations",
    "tray.core.config.parsing",
    "tray.core.view.overview",
    "tray.base.memo",
    "tray.core.agents.rules",
    "tray.core.agents.tracker",
]


def run_examples(module: types.ModuleType) -> tuple[int, int, str]:
    """How many examples ``module``'s docstrings hold, how many failed, and the report."""
    report: list[str] = []
    runner = doctest.DocTestRunner(verbose=False)
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)
    return runner.tries, runner.failures, "".join(report)


def test_the_walk_finds_every_protocol_module() -> None:
    assert "tray.protocol.scanner" in MODULES
    assert "tray.protocol.terminal_input" in MODULES
    assert len(MODULES) >= 7


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_hold(name: str) -> None:
    tries, failures, report = run_examples(importlib.import_module(name))
    assert tries > 0, f"{name} has no >>> examples"
    assert failures == 0, report


# The runner itself, on made-up modules.


def _made_up(source: str) -> types.ModuleType:
    module = types.ModuleType("made_up")
    exec(source, module.__dict__)  # noqa: S102 - the test's own text
    return module


DOUBLE = 'def double(n):\n    """\n    {doc}\n    """\n    return 2 * n\n'


def test_an_example_that_does_not_hold_is_a_failure() -> None:
    tries, failures, report = run_examples(_made_up(DOUBLE.format(doc=">>> double(2)\n    5")))
    assert (tries, failures) == (1, 1)
    assert "Expected:\n    5\nGot:\n    4" in report


def test_examples_that_hold_pass_and_a_module_without_any_is_seen() -> None:
    assert run_examples(_made_up(DOUBLE.format(doc=">>> double(2)\n    4"))) == (1, 0, "")
    assert run_examples(_made_up(DOUBLE.format(doc="Twice n."))) == (0, 0, "")
