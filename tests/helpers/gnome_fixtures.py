"""The pytest fixture of a real GNOME Shell 43, headless (helpers/gnome_shell.py): one for
the whole test session, since it takes seconds to start and a test leaves it as it found
it (``gnome_shell.clear_notifications()``, its own apps stopped).

Listed in tests/conftest.py ``pytest_plugins``, and in its MARKING_FIXTURES: a test that
uses ``gnome_shell`` is a ``desktop`` test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from helpers.gnome_shell import GnomeShell


@pytest.fixture(scope="session")
def gnome_shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GnomeShell]:
    """GNOME Shell on its own Wayland display, buses and folders; see
    :class:`helpers.gnome_shell.GnomeShell` for what a test does with it (``env`` for
    clients, ``eval``, ``click``, ``banner``, ``screenshot``...). Its logs are in
    ``gnome_shell.directory``."""
    # Imported here: it loads PyGObject, which a run without this fixture never needs.
    from helpers.gnome_shell import start_gnome_shell  # noqa: PLC0415

    shell = start_gnome_shell(tmp_path_factory.mktemp("gnome"))
    try:
        yield shell
    finally:
        shell.stop()
