"""The pytest fixture of a real KDE Plasma 5.27 (helpers/plasma.py): one for the whole
test session, as it takes seconds to start, unless a test locked its screen.

``plasma`` is listed in conftest.py's MARKING_FIXTURES, so every test that uses it is a
``desktop`` test. A test that locks the screen asks for ``locking_plasma`` instead: such
tests run after all others (:func:`pytest_collection_modifyitems`), so the one Plasma
serves the whole run, locked only at its end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.plasma import Plasma, start_plasma


class _PlasmaSession:
    """The session's Plasma, started at first use and again after a test locked it:
    unlocking needs a password, and a locked screen takes every click and screenshot."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self.current: Plasma | None = None

    def live(self) -> Plasma:
        if self.current is not None and self.current.locked:
            self.current.stop()
            self.current = None
        if self.current is None:
            self.current = start_plasma(Path(self._factory.mktemp("plasma")))
        return self.current

    def stop(self) -> None:
        if self.current is not None:
            self.current.stop()


@pytest.fixture(scope="session")
def _plasma_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_PlasmaSession]:
    session = _PlasmaSession(tmp_path_factory)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def plasma(_plasma_session: _PlasmaSession) -> Plasma:
    """kwin_wayland (virtual 1280x800 output, Xwayland), kactivitymanagerd, kded5 and
    plasmashell on private buses, ready (see :func:`helpers.plasma.start_plasma`); shared
    by the tests of the session, and started anew after one called ``plasma.lock()``.
    Logs: ``plasma.directory / "NAME.log"``, or ``plasma.log(NAME)``."""
    running = _plasma_session.live()
    running.check_alive()
    return running


@pytest.fixture
def locking_plasma(plasma: Plasma) -> Plasma:
    """``plasma``, for a test that locks its screen for good (``plasma.lock()``)."""
    return plasma


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the tests that lock Plasma's screen behind every other test, keeping the
    order otherwise (the sort is stable)."""
    items.sort(key=lambda item: "locking_plasma" in getattr(item, "fixturenames", ()))
