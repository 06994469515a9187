"""A logger of a test's own, keeping every line it gets: what an outlet said, read back."""

from __future__ import annotations

import logging
from collections.abc import Iterable


class Recorder(logging.Handler):
    """``log`` is the logger to hand the code under test; ``at(level)`` its lines so far
    (a list's append and copy are atomic: the code's threads write while the test reads)."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.log = logging.getLogger(f"tray.test.{name}.{id(self)}")
        self.log.setLevel(logging.DEBUG)
        self.log.propagate = False
        self.log.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def at(self, level: int) -> list[str]:
        return [r.getMessage() for r in list(self.records) if r.levelno == level]

    def text(self) -> str:
        return "\n".join(r.getMessage() for r in list(self.records))


def assert_no_secret(recorder: Recorder, captured: Iterable[str], secrets: Iterable[str]) -> None:
    """After a test: neither the outlet's own log, nor what else was captured (the root
    logger, stdout, stderr), holds any of ``secrets``."""
    kept = tuple(secrets)
    for text in (recorder.text(), *captured):
        for secret in kept:
            assert secret not in text
