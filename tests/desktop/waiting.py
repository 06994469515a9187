"""Waiting on a condition instead of sleeping: fast when things are quick, patient when
the machine is loaded."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT = 20.0


def wait_for(
    predicate: Callable[[], T],
    timeout: float = DEFAULT_TIMEOUT,
    interval: float = 0.05,
    what: str = "the condition",
) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that.

    Raises AssertionError naming ``what`` when ``timeout`` seconds pass first. The last
    try happens at or after the deadline, so a slow poll is never failed untried.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what}")
        time.sleep(interval)
