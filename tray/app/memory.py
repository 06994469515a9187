"""The tray's own file beside the sessions: what was seen, dismissed, and paused.

The tray never writes a launcher's file; everything it must remember lives here.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from tray.app.overview import AppMemory

FILE_NAME = "app.state"
VERSION = 1


def load_memory(path: Path, log: logging.Logger) -> AppMemory:
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise ValueError("unknown format")
        seen = {
            str(key): float(value)
            for key, value in dict(data.get("seen", {})).items()
            if isinstance(value, int | float) and math.isfinite(value)
        }
        dismissed = frozenset(str(item) for item in list(data.get("dismissed", [])))
        paused = data.get("paused_until")
        paused_until = float(paused) if isinstance(paused, int | float) else None
    except FileNotFoundError:
        return AppMemory()
    except (OSError, ValueError, TypeError) as error:
        log.warning("ignoring unreadable %s: %s", path, error)
        return AppMemory()
    return AppMemory(seen=seen, dismissed=dismissed, paused_until=paused_until)


def save_memory(path: Path, memory: AppMemory) -> None:
    document = {
        "version": VERSION,
        "seen": dict(memory.seen),
        "dismissed": sorted(memory.dismissed),
        "paused_until": memory.paused_until,
    }
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(document).encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(temp, path)


def forget_missing(memory: AppMemory, present: Collection[str]) -> AppMemory:
    """Drop marks for sessions whose files are gone, so the file never grows without end."""
    seen = {key: value for key, value in memory.seen.items() if key in present}
    dismissed = frozenset(key for key in memory.dismissed if key in present)
    if len(seen) == len(memory.seen) and dismissed == memory.dismissed:
        return memory
    return replace(memory, seen=seen, dismissed=dismissed)
