"""What every test shares: the tiers and their markers (helpers/tiers.py), the fixtures
of the private desktop, of the private sshd and of the state directory, and hypothesis's
two profiles.

``make check`` runs ``pytest --tier=check`` with the ``quick`` profile; ``make test`` runs
every test with the ``thorough`` one, the examples each test asks for.
"""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import settings

# The fixtures of the private desktop, of the private sshd and the shared plain ones, for
# a test in any folder; and the tiers.
pytest_plugins = [
    "helpers.tiers",
    "helpers.fixtures",
    "helpers.desktop_fixtures",
    "helpers.gnome_fixtures",
    "helpers.plasma_fixtures",
    "helpers.sshd_fixtures",
]

# A run started under nohup (or by anything else that ignores SIGHUP) would hand that on to
# every command the tests start under `tray run`, as a shell does; the tests of the
# launcher's hangup expect the default disposition that a terminal gives a command.
signal.signal(signal.SIGHUP, signal.SIG_DFL)
# Likewise a run started in the background by a shell without job control (a script's
# `make test &`) ignores SIGINT and SIGQUIT, and every command it starts would too; the
# tests of Ctrl-C and Ctrl-\ expect them as a terminal's foreground job has them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)

# The quick profile's ceiling on any test's examples, its own settings included: enough to
# find what a change breaks on most runs, while `make test` keeps looking as hard as each
# test asks.
QUICK_EXAMPLES = 25
settings.register_profile("thorough", deadline=None)
settings.register_profile("quick", max_examples=QUICK_EXAMPLES, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "thorough"))


def _capped(chosen: settings) -> settings:
    return settings(chosen, max_examples=min(chosen.max_examples, QUICK_EXAMPLES))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under the quick profile, hold every test to its ceiling: a test's own
    ``@settings(max_examples=...)`` would otherwise outrank the profile."""
    if settings.get_current_profile_name() != "quick":
        return
    for item in items:
        test = getattr(item, "obj", None)
        inner = getattr(test, "hypothesis", None)
        chosen = getattr(test, "_hypothesis_internal_use_settings", None)
        if inner is not None and isinstance(chosen, settings):
            test._hypothesis_internal_use_settings = _capped(chosen)  # type: ignore[union-attr]
        machine = getattr(item, "cls", None)
        if isinstance(getattr(machine, "settings", None), settings):
            machine.settings = _capped(machine.settings)  # type: ignore[union-attr]
