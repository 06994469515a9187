"""The state directory watched with watchdog, where there is no inotify (not Linux).

Imported only on that path: on Linux watchdog is not even installed (pyproject.toml's
marker), and :mod:`tray.state.directory_watcher` reads inotify itself.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

SESSION_SUFFIX = ".json"

# Stopping an observer races with its reader thread, and watchdog logs that at ERROR
# ("queue_events() called when the thread is inactive"). Where nothing configured
# logging, Python would print it on the user's terminal.
logging.getLogger("watchdog").addHandler(logging.NullHandler())

# The events that can mean a session file changed. Opening and reading are events too;
# reacting to them would make every read of the directory trigger the next one.
WATCHDOG_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileDeletedEvent,
]


class _Handler(FileSystemEventHandler):
    def __init__(self, note: Callable[[set[str], bool], None]) -> None:
        self._note = note

    def on_any_event(self, event: FileSystemEvent) -> None:
        # Atomic writes land as a move of a temp file onto "<id>.json".
        names = set()
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            path = os.fsdecode(raw)
            if path.endswith(SESSION_SUFFIX):
                names.add(os.path.basename(path))
        if names:
            self._note(names, False)


def start_observer(directory: Path, note: Callable[[set[str], bool], None]) -> BaseObserver:
    """A started observer of ``directory`` that calls ``note(names, False)`` with the
    session files that changed. Raises OSError when the directory cannot be watched."""
    observer = Observer()
    observer.daemon = True
    observer.schedule(
        _Handler(note),
        str(directory),
        recursive=False,
        event_filter=WATCHDOG_EVENTS,
    )
    observer.start()
    return observer
