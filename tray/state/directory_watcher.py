"""Change detection on the state directory: wake the app when a session file changes,
and tell it which ones did.

On Linux the directory is watched with inotify directly. watchdog (elsewhere, in
:mod:`tray.state.watchdog_observer`, imported only there) hands every kernel event
through three threads of its own; twenty busy launchers cause some six hundred events a
second (each atomic write is a close, a move from and a move to), and that alone cost
several percent of a core. Read here, a batch of events is one system call and a loop
over bytes.
"""

from __future__ import annotations

import ctypes
import logging
import os
import select
import struct
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

# Past this many names not yet taken, the watcher stops listing them and reports that
# anything may have changed: a caller that never takes them must not make it grow.
MAX_PENDING_NAMES = 4096

# From inotify(7).
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
# A session file appears by a rename (atomic writes), by creation (a link) or by a
# write that ends with a close, and goes by a rename or a deletion. Opening, reading
# and modifying are left out: reads by the app itself would wake it, and a writer's
# many writes to its temporary file would each be an event.
WATCH_MASK = (
    IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
# The directory itself went, or moved away from the path: the watch sees no more.
GONE = IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF
# Some changes were not reported: events were dropped, or the watch went.
LOST = IN_Q_OVERFLOW | GONE
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
_READ_SIZE = 64 * 1024
# Long enough that twenty busy launchers wake the reader some twenty times a second,
# not a hundred (it was 10 ms: about 0.8% of a core more, in the busy app bench); short
# beside the app's own refresh interval (250 ms), which any change waits for anyway.
BATCH_PAUSE_MS = 40


def parse_events(data: bytes) -> tuple[set[str], int]:
    """The session file names in a buffer of inotify events, and the union of the
    events' masks (for :data:`LOST` and :data:`GONE`)."""
    names: set[str] = set()
    masks = 0
    offset = 0
    while offset + _EVENT.size <= len(data):
        _wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
        start = offset + _EVENT.size
        offset = start + length
        masks |= mask
        name = data[start:offset].rstrip(b"\0")
        if name.endswith(b".json"):
            names.add(os.fsdecode(name))
    return names, masks


def _libc_inotify() -> tuple[Callable[[int], int], Callable[[int, bytes, int], int]]:
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise OSError("this C library has no inotify")
    init = libc.inotify_init1
    init.argtypes = [ctypes.c_int]
    init.restype = ctypes.c_int
    add = libc.inotify_add_watch
    add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    add.restype = ctypes.c_int
    return init, add


class _InotifyReader:
    """One inotify watch on a directory, read by a daemon thread."""

    def __init__(self, directory: Path, note: Callable[[set[str], bool], None]) -> None:
        self._note = note
        init, add = _libc_inotify()
        fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))
        if add(fd, os.fsencode(directory), WATCH_MASK) < 0:
            number = ctypes.get_errno()
            os.close(fd)
            raise OSError(number, os.strerror(number), str(directory))
        self._fd = fd
        # False once the kernel dropped the watch (the directory went): from then on
        # only the caller's own timer finds changes.
        self.watching = True
        self._wake_read, self._wake_write = os.pipe2(os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._run, name="tray-inotify", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        events = select.poll()
        events.register(self._fd, select.POLLIN)
        events.register(self._wake_read, select.POLLIN)
        stop = select.poll()
        stop.register(self._wake_read, select.POLLIN)
        while self.watching:
            if self._wake_read in {fd for fd, _ in events.poll()}:
                return
            self._read()
            # Events keep coming while writers are busy: a short pause after each read
            # lets them gather, so a busy directory costs a read every few tens of milliseconds,
            # not one per event, while a change after a quiet spell is read at once.
            if stop.poll(BATCH_PAUSE_MS):
                return

    def _read(self) -> None:
        try:
            data = os.read(self._fd, _READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.watching = False
            self._note(set(), True)
            return
        names, masks = parse_events(data)
        if masks & GONE:
            self.watching = False
        if names or masks & LOST:
            self._note(names, bool(masks & LOST))

    def stop(self) -> None:
        os.write(self._wake_write, b"x")
        self._thread.join(timeout=2)
        for fd in (self._fd, self._wake_read, self._wake_write):
            os.close(fd)


class DirectoryWatcher:
    """Sets ``changed`` whenever a session file in ``directory`` appears, changes or goes,
    and keeps the names of those files for :meth:`take_changes`.

    When the platform's watcher cannot start (no inotify watches left, say), callers
    still wake on their own timeout, so the app degrades to slow polling, not to silence.
    """

    def __init__(
        self,
        directory: Path,
        changed: threading.Event,
        log: logging.Logger,
        use_inotify: bool | None = None,
    ) -> None:
        self._directory = directory
        self._changed = changed
        self._log = log
        self._use_inotify = sys.platform.startswith("linux") if use_inotify is None else use_inotify
        self._observer: BaseObserver | None = None
        self._reader: _InotifyReader | None = None
        self._lock = threading.Lock()
        self._names: set[str] = set()
        self._lost = False

    @property
    def active(self) -> bool:
        """Whether changes are being reported; if not, the caller must look itself."""
        if self._reader is not None:
            return self._reader.watching
        return self._observer is not None

    def note(self, names: set[str], lost: bool) -> None:
        """Record changed names, or that changes went unreported; the readers call it."""
        with self._lock:
            if not self._lost:
                self._names |= names
                if lost or len(self._names) > MAX_PENDING_NAMES:
                    self._lost = True
                    self._names.clear()
        self._changed.set()

    def take_changes(self) -> frozenset[str] | None:
        """The names of the session files that changed since the last call, or None when
        the watcher cannot say (too many, or events were lost): then any file may have."""
        with self._lock:
            if self._lost:
                self._lost = False
                return None
            names = frozenset(self._names)
            self._names.clear()
        return names

    def start(self) -> None:
        try:
            if self._use_inotify:
                self._reader = _InotifyReader(self._directory, self.note)
            else:
                self._observer = self._start_observer()
        except OSError as error:
            self._log.warning(
                "cannot watch %s (%s); checking for changes every few seconds instead",
                self._directory,
                error,
            )

    def _start_observer(self) -> BaseObserver:
        # Only here: on Linux watchdog is neither used nor installed.
        from tray.state.watchdog_observer import start_observer  # noqa: PLC0415

        return start_observer(self._directory, self.note)

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.stop()
            self._reader = None
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None
