"""Change detection on the state directory: wake the app when a session file changes."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
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
# Opening and reading a file are events too; reacting to them would make every read of
# the directory trigger the next one.
CHANGES = frozenset(
    {
        EVENT_TYPE_CREATED,
        EVENT_TYPE_MODIFIED,
        EVENT_TYPE_MOVED,
        EVENT_TYPE_DELETED,
        EVENT_TYPE_CLOSED,
    }
)


class _Handler(FileSystemEventHandler):
    def __init__(self, changed: threading.Event) -> None:
        self._changed = changed

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in CHANGES:
            return
        # Atomic writes land as a move of a temp file onto "<id>.json".
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            path = raw.decode() if isinstance(raw, bytes) else raw
            if path.endswith(SESSION_SUFFIX):
                self._changed.set()
                return


class DirectoryWatcher:
    """Sets ``changed`` whenever a session file in ``directory`` appears, changes or goes.

    When the platform's watcher cannot start (no inotify watches left, say), callers
    still wake on their own timeout, so the app degrades to slow polling, not to silence.
    """

    def __init__(self, directory: Path, changed: threading.Event, log: logging.Logger) -> None:
        self._directory = directory
        self._changed = changed
        self._log = log
        self._observer: BaseObserver | None = None

    @property
    def active(self) -> bool:
        return self._observer is not None

    def start(self) -> None:
        observer = Observer()
        observer.daemon = True
        try:
            observer.schedule(_Handler(self._changed), str(self._directory), recursive=False)
            observer.start()
        except OSError as error:
            self._log.warning(
                "cannot watch %s (%s); checking for changes every few seconds instead",
                self._directory,
                error,
            )
            return
        self._observer = observer

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None
