"""The tray's own file beside the sessions: what was seen, dismissed, paused and snoozed.

The tray never writes a launcher's file; everything it must remember lives here.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from tray.app.overview import AppMemory

FILE_NAME = "app.state"
# Readers ignore keys they do not know, so "snoozed" needed no new version.
VERSION = 1


def _times(value: Any) -> dict[str, float]:
    """session id -> time, keeping only finite numbers: the file may be hand-edited."""
    return {
        str(key): float(time)
        for key, time in dict(value or {}).items()
        if isinstance(time, int | float) and not isinstance(time, bool) and math.isfinite(time)
    }


def load_memory(path: Path, log: logging.Logger, now: float | None = None) -> AppMemory:
    """The remembered state; with ``now``, snoozes that have run out are left behind."""
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
        return AppMemory()
    except (OSError, ValueError, TypeError) as error:
        log.warning("ignoring unreadable %s: %s", path, error)
        return AppMemory()
    if now is not None:
        snoozed = _running(snoozed, now)
    return AppMemory(seen=seen, dismissed=dismissed, paused_until=paused_until, snoozed=snoozed)


def save_memory(path: Path, memory: AppMemory) -> None:
    document = {
        "version": VERSION,
        "seen": dict(memory.seen),
        "dismissed": sorted(memory.dismissed),
        "paused_until": memory.paused_until,
        "snoozed": dict(memory.snoozed),
    }
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(document).encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(temp, path)


def _running(snoozed: Mapping[str, float], now: float) -> dict[str, float]:
    return {key: until for key, until in snoozed.items() if until > now}


def forget_missing(
    memory: AppMemory, present: Collection[str], now: float | None = None
) -> AppMemory:
    """Drop marks for sessions whose files are gone, so the file never grows without end;
    with ``now``, also snoozes that have run out. Returns ``memory`` itself when nothing
    was dropped."""
    seen = {key: value for key, value in memory.seen.items() if key in present}
    dismissed = frozenset(key for key in memory.dismissed if key in present)
    snoozed = {key: value for key, value in memory.snoozed.items() if key in present}
    if now is not None:
        snoozed = _running(snoozed, now)
    if (
        len(seen) == len(memory.seen)
        and dismissed == memory.dismissed
        and len(snoozed) == len(memory.snoozed)
    ):
        return memory
    return replace(memory, seen=seen, dismissed=dismissed, snoozed=snoozed)


def snooze(memory: AppMemory, session_ids: Collection[str], until: float) -> AppMemory:
    """The memory with these sessions snoozed until ``until``; a later snooze already
    in place is kept."""
    snoozed = dict(memory.snoozed)
    for session_id in session_ids:
        snoozed[session_id] = max(until, snoozed.get(session_id, -math.inf))
    return replace(memory, snoozed=snoozed)


def unsnooze(memory: AppMemory, session_id: str) -> AppMemory:
    return replace(
        memory, snoozed={key: value for key, value in memory.snoozed.items() if key != session_id}
    )
