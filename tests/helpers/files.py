"""The process's file-creation settings, changed for one test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def umask(mask: int) -> Iterator[None]:
    """Run the block with ``mask`` as the umask, and put the old one back after."""
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)
