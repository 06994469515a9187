"""The tray's own file beside the sessions: what was seen, dismissed, paused and snoozed.

The tray never writes a launcher's file; everything it must remember lives here. The
worker keeps the seen and dismissed marks (:class:`tray.core.worker.marks.AppMemory`)
and its policy the pause and the snoozes (:class:`tray.core.view.overview.Mutes`): the
file holds both, and gives both back.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any, NamedTuple

from tray.core.view.overview import NO_MUTES, Mutes
from tray.core.worker.marks import AppMemory

FILE_NAME = "app.state"
# Readers ignore keys they do not know, so "snoozed" needed no new version.
VERSION = 1


class SavedMarks(NamedTuple):
    """What the file holds: the worker's marks, and the policy's mutes."""

    memory: AppMemory = AppMemory()
    mutes: Mutes = NO_MUTES


def _times(value: Any) -> dict[str, float]:
    """session id -> time, keeping only finite numbers: the file may be hand-edited."""
    return {
        str(key): float(time)
        for key, time in dict(value or {}).items()
        if isinstance(time, int | float) and not isinstance(time, bool) and math.isfinite(time)
    }


def load_marks(path: Path, log: logging.Logger, now: float | None = None) -> SavedMarks:
    """The remembered marks; with ``now``, snoozes that have run out are left behind."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError("unknown format")
        seen = _times(data.get("seen"))
        dismissed = frozenset(str(item) for item in list(data.get("dismissed", [])))
        paused = data.get("paused_until")
        paused_until = float(paused) if isinstance(paused, int | float) else None
        snoozed = _times(data.get("snoozed"))
    except FileNotFoundError:
        return SavedMarks()
    except (OSError, ValueError, TypeError) as error:
        log.warning("ignoring unreadable %s: %s", path, error)
        return SavedMarks()
    if now is not None:
        snoozed = {key: until for key, until in snoozed.items() if until > now}
    return SavedMarks(AppMemory(seen=seen, dismissed=dismissed), Mutes(paused_until, snoozed))


def save_marks(path: Path, memory: AppMemory, mutes: Mutes = NO_MUTES) -> None:
    document = {
        "version": VERSION,
        "seen": dict(memory.seen),
        "dismissed": sorted(memory.dismissed),
        "paused_until": mutes.paused_until,
        "snoozed": dict(mutes.snoozed),
    }
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(document).encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(temp, path)
