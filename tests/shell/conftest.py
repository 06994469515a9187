"""Fixtures for the shell integration: a temporary home, and shells on a pty in it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.shells import SHELLS, Home, Shell, require


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home.create(tmp_path)


@pytest.fixture(params=SHELLS)
def kind(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    require(name)
    return name


@pytest.fixture
def shell(kind: str, home: Home) -> Iterator[Shell]:
    with Shell(kind, home) as started:
        yield started
