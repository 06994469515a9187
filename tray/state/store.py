"""The state directory: one JSON file per session, written atomically, read with liveness
(:mod:`tray.state.liveness`).

Layout: ``<id>.json`` per session, and ``<id>.answer``, the answer socket of a session
whose launcher runs (see :mod:`tray.state.answer_channel`), which goes with the
session's file. Names starting with ``.`` are never sessions: writers'
temporary files are ``.<id>.<pid>.<n>.tmp``, and other tools may keep dotfiles beside
the sessions.

Inside, paths are strings handled with ``os`` (the launcher's own are strings), and a
caller is handed a :class:`~pathlib.Path`. json is imported where a file is read or
written.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from contextlib import suppress
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import Any

from tray.core.session.model import Session, SessionFormatError, expired
from tray.state.liveness import pid_exists, with_liveness
from tray.state.private_directory import private_directory_problem

# A path as callers give one: the launcher's strings, the app's and tests' Paths.
PathArgument = str | os.PathLike[str]

SUFFIX = ".json"
ANSWER_SUFFIX = ".answer"
TEMP_SUFFIX = ".tmp"
# Far above any real session (256 records of bounded size); stops a stray file eating memory.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_ID_LENGTH = 200
# A writer that died between creating and renaming its temp file leaves it behind.
STALE_TEMP_AGE = 60.0

_temp_counter = itertools.count()


class StoreError(Exception):
    """The state directory cannot be used safely; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Problem:
    """A file that could not be read, kept so callers can warn once about it."""

    path: Path
    reason: str


class Dismissal(Enum):
    """What :meth:`StateStore.dismiss` did."""

    REMOVED = "removed"
    NOT_FOUND = "not found"
    RUNNING = "running"


@dataclass(frozen=True, slots=True)
class _Loaded:
    session: Session
    # Which version of the file was read, so a removal never hits a newer one.
    identity: tuple[int, int, int, int]


def valid_session_id(session_id: str) -> bool:
    return (
        0 < len(session_id) <= MAX_ID_LENGTH
        and not session_id.startswith(".")
        and "/" not in session_id
        and "\0" not in session_id
    )


def file_identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


class StateStore:
    """The state directory of ``directory``: a str (the launcher's) or a Path."""

    def __init__(self, directory: PathArgument) -> None:
        self._directory_path = Path(directory)
        # The string the internals join names to, as the Path prints.
        self._directory = os.fspath(self._directory_path)
        # What this store last wrote of each session, by the file's identity: a prune
        # tells this process's own running session from the file's identity alone, so
        # that `tray run` never parses (or imports json for) the file it just wrote.
        self._written: dict[str, tuple[tuple[int, int, int, int], Session]] = {}

    @property
    def directory(self) -> Path:
        return self._directory_path

    def ensure(self) -> None:
        """Create the directory private to this user, or make an existing one so."""
        problem = private_directory_problem(self._directory)
        if problem is not None:
            raise StoreError(problem)

    def path_for(self, session_id: str) -> Path:
        return Path(self._file_for(session_id))

    def _file_for(self, session_id: str) -> str:
        if not valid_session_id(session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        return os.path.join(self._directory, f"{session_id}{SUFFIX}")

    def write(self, session: Session) -> None:
        """Replace the session's file atomically; readers never see a torn file."""
        target = self._file_for(session.id)
        # Unique per process and per call, so concurrent writers never share a temp file.
        temp = os.path.join(
            self._directory, f".{session.id}.{os.getpid()}.{next(_temp_counter)}{TEMP_SUFFIX}"
        )
        data = _json_text(session).encode("utf-8")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        self._written.pop(session.id, None)
        fd = os.open(temp, flags, 0o600)
        try:
            try:
                os.fchmod(fd, 0o600)  # the umask must not loosen or tighten it
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                # The rename keeps device, inode, modification time and size.
                identity = file_identity(os.fstat(fd))
            finally:
                os.close(fd)
            os.replace(temp, target)
        except BaseException:
            _unlink_quietly(temp)
            raise
        self._written[session.id] = (identity, session)

    def read(self, path: PathArgument) -> Session:
        """One session file; raises OSError, ValueError or SessionFormatError."""
        return self._load(path).session

    def _load(self, path: PathArgument) -> _Loaded:
        # O_NONBLOCK so a FIFO planted in the directory cannot hang a reader.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError("not a regular file")
            if info.st_size > MAX_FILE_BYTES:
                raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
            chunks = []
            remaining = MAX_FILE_BYTES + 1
            while remaining > 0:
                chunk = os.read(fd, min(remaining, 1 << 16))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
        if not data:
            raise ValueError("empty file")
        try:
            document = _parse_json(data)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
        session = Session.from_file(document)
        expected_name = os.path.basename(path).removesuffix(SUFFIX)
        if session.id != expected_name:
            raise ValueError(f"holds session {session.id!r}, not {expected_name!r}")
        ordered = tuple(sorted(session.records, key=lambda record: record.id))
        if ordered != session.records:
            session = replace(session, records=ordered)
        return _Loaded(session, file_identity(info))

    def _session_names(self) -> list[str]:
        """The session files' names, sorted; raises OSError but for a missing directory."""
        try:
            names = os.listdir(self._directory)
        except FileNotFoundError:
            return []
        return [name for name in sorted(names) if is_session_file(name)]

    def _load_live(self, path: PathArgument) -> _Loaded:
        """A session with liveness applied: a dead launcher's session is ended."""
        loaded = self._load(path)
        session = with_liveness(loaded.session)
        if session is not loaded.session:
            return _Loaded(session, loaded.identity)
        return loaded

    def _scan(
        self, *, own: bool = False
    ) -> tuple[list[tuple[str, _Loaded]], list[tuple[str, str]]]:
        """Every session file, read, with liveness; and the paths that failed, with why.

        ``own``: a file as this store last wrote it is not read again, its session taken
        as written (for a prune, whose decision needs only fields a file keeps exactly).
        """
        loaded: list[tuple[str, _Loaded]] = []
        problems: list[tuple[str, str]] = []
        try:
            names = self._session_names()
        except OSError as error:
            return loaded, [(self._directory, problem_reason(error))]
        for name in names:
            path = os.path.join(self._directory, name)
            try:
                item = self._as_written(name, path) if own else None
                loaded.append((path, item or self._load_live(path)))
            except FileNotFoundError:
                continue  # removed since the listing: dismissed or pruned meanwhile
            except (OSError, ValueError, SessionFormatError) as error:
                problems.append((path, problem_reason(error)))
        loaded.sort(key=lambda item: (item[1].session.started_at, item[1].session.id))
        return loaded, problems

    def _as_written(self, name: str, path: str) -> _Loaded | None:
        """The session this store last wrote to ``path``, if the file is still that one."""
        written = self._written.get(name.removesuffix(SUFFIX))
        if written is None:
            return None
        identity, session = written
        try:
            if file_identity(os.stat(path, follow_symlinks=False)) != identity:
                return None
        except OSError:
            return None
        return _Loaded(with_liveness(session), identity)

    def read_all(self, now: float) -> tuple[list[Session], list[Problem]]:
        """Every session, oldest first, with dead launchers' sessions ended.

        ``now`` is accepted for callers' symmetry with :meth:`prune`; liveness needs no
        clock. A missing directory holds no sessions; an unreadable one is a problem whose
        path is the directory itself.
        """
        loaded, problems = self._scan()
        return [item.session for _, item in loaded], [
            Problem(Path(path), reason) for path, reason in problems
        ]

    def prune(self, now: float, keep_ended: float) -> int:
        """Delete the files of sessions that ended more than ``keep_ended`` seconds ago.

        Also clears temp files left by writers that died. Returns how many sessions went.
        """
        loaded, _ = self._scan(own=True)
        removed = 0
        for path, item in loaded:
            if expired(item.session, now, keep_ended) and self._remove_if_unchanged(path, item):
                self._remove_answer_socket(item.session.id)
                removed += 1
        self._clear_stale_temps(now)
        self._clear_orphan_sockets()
        return removed

    def dismiss(self, session_id: str) -> Dismissal:
        """Remove an ended session's file; a running session's file stays.

        A file that cannot be read is removed: asking for it by id is asking for it gone.
        """
        if not valid_session_id(session_id):
            return Dismissal.NOT_FOUND
        path = self._file_for(session_id)
        try:
            item = self._load_live(path)
        except FileNotFoundError:
            return Dismissal.NOT_FOUND
        except (OSError, ValueError, SessionFormatError):
            try:
                os.unlink(path)
            except FileNotFoundError:
                return Dismissal.NOT_FOUND
            self._remove_answer_socket(session_id)
            return Dismissal.REMOVED
        if item.session.alive:
            return Dismissal.RUNNING
        if self._remove_if_unchanged(path, item):
            self._remove_answer_socket(session_id)
            return Dismissal.REMOVED
        # The file changed under us: only a live launcher writes, so it is running.
        return Dismissal.RUNNING if _exists(path) else Dismissal.NOT_FOUND

    def dismiss_ended(self) -> list[str]:
        """Remove every ended session's file; returns their ids."""
        loaded, _ = self._scan()
        removed = [
            item.session.id
            for path, item in loaded
            if not item.session.alive and self._remove_if_unchanged(path, item)
        ]
        for session_id in removed:
            self._remove_answer_socket(session_id)
        return removed

    def remove(self, session_id: str) -> bool:
        self._remove_answer_socket(session_id)
        try:
            os.unlink(self._file_for(session_id))
        except FileNotFoundError:
            return False
        return True

    def _remove_answer_socket(self, session_id: str) -> None:
        """The session's answer socket, if one is left (its launcher was killed): only
        ever a socket, never another file of that name."""
        if not valid_session_id(session_id):
            return
        path = os.path.join(self._directory, f"{session_id}{ANSWER_SUFFIX}")
        with suppress(OSError):
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)

    def _clear_orphan_sockets(self) -> None:
        """Answer sockets whose session file is gone (removed by an older tray, or by
        hand) and whose launcher is gone too: the id starts with its pid."""
        try:
            names = os.listdir(self._directory)
        except OSError:
            return
        present = set(names)
        for name in names:
            if not name.endswith(ANSWER_SUFFIX):
                continue
            session_id = name.removesuffix(ANSWER_SUFFIX)
            if f"{session_id}{SUFFIX}" in present or not valid_session_id(session_id):
                continue
            pid = session_id.partition("-")[0]
            # Only what is surely a dead launcher's: a live one, or an id of another
            # form, is left be.
            if pid.isdigit() and not pid_exists(int(pid)):
                self._remove_answer_socket(session_id)

    def _remove_if_unchanged(self, path: PathArgument, item: _Loaded) -> bool:
        try:
            if file_identity(os.stat(path, follow_symlinks=False)) != item.identity:
                return False
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True

    def _clear_stale_temps(self, now: float) -> None:
        try:
            names = os.listdir(self._directory)
        except OSError:
            return
        for name in names:
            if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
                continue
            parts = name.split(".")
            # ".<id>.<pid>.<n>.tmp": the id may hold dots, so the pid is third from the end.
            if len(parts) < 5 or not parts[-3].isdigit():
                continue
            path = os.path.join(self._directory, name)
            try:
                age = now - os.stat(path, follow_symlinks=False).st_mtime
            except OSError:
                continue
            if age > STALE_TEMP_AGE and not pid_exists(int(parts[-3])):
                _unlink_quietly(path)


def is_session_file(name: str) -> bool:
    return name.endswith(SUFFIX) and valid_session_id(name.removesuffix(SUFFIX))


def problem_reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        if error.errno == errno.ELOOP:
            return "is a symbolic link"
        return error.strerror
    return str(error)


def _unlink_quietly(path: str) -> bool:
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def _exists(path: str) -> bool:
    """``Path(path).exists()``: an error other than the path's absence is raised."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return False
        raise
    return True


def _json_text(session: Session) -> str:
    """The session's file: json's compact text."""
    import json  # noqa: PLC0415 - see the module

    text: str = json.dumps(session.to_file(), separators=(",", ":"))
    return text


def _parse_json(data: bytes) -> Any:
    """The document in a session file."""
    import json  # noqa: PLC0415 - see the module

    return json.loads(data)


__all__ = [
    "ANSWER_SUFFIX",
    "Dismissal",
    "Problem",
    "StateStore",
    "StoreError",
    "file_identity",
    "is_session_file",
    "problem_reason",
    "valid_session_id",
]
