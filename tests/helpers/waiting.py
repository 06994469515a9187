"""Waiting on a condition instead of sleeping: fast when things are quick, patient when
the machine is loaded."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT = 20.0


def wait_for(
    predicate: Callable[[], T | None],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = 0.02,
    what: str = "the condition",
    pump: Callable[[], None] | None = None,
) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that.

    ``pump``, when given, runs before each try instead of the pause (it reads a pty, say,
    and waits on it). Raises AssertionError naming ``what`` when ``timeout`` seconds pass
    first. The last try happens at or after the deadline, so a slow poll is never failed
    untried.
    """
    deadline = time.monotonic() + timeout
    while True:
        if pump is not None:
            pump()
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what}")
        if pump is None:
            time.sleep(interval)
