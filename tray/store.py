"""The state directory: one JSON file per session, written atomically, read with liveness.

Layout: ``<id>.json`` per session, and ``<id>.answer``, the answer socket of a session
whose launcher runs (see :mod:`tray.launcher.answer_socket`), which goes with the
session's file. Names starting with ``.`` are never sessions: writers'
temporary files are ``.<id>.<pid>.<n>.tmp``, and other tools may keep dotfiles beside
the sessions.
"""

from __future__ import annotations

import enum
import errno
import itertools
import json
import os
import stat
import sys

from tray.session import Session, SessionFormatError
from tray.value import Value

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Final

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


def process_start_token(pid: int) -> str | None:
    """Something that differs between two processes that had the same pid, or None."""
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            # The command name may hold spaces and parentheses: split after the last ")".
            fields = stat_file.read().rsplit(b")", 1)[1].split()
        return fields[19].decode("ascii")  # starttime, field 22 of proc(5)
    except FileNotFoundError:
        return None
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    if sys.platform.startswith("linux"):
        return None
    import subprocess  # noqa: PLC0415 - not on Linux, where every `tray run` comes by

    try:
        result = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None


def pid_exists(pid: int) -> bool:
    # 0 and negative pids name process groups, which would make any session look alive.
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def launcher_alive(pid: int, token: str | None) -> bool:
    """Whether the launcher that recorded ``pid`` and ``token`` still runs.

    A different start token means the pid now belongs to another process.
    """
    if not pid_exists(pid):
        return False
    current = process_start_token(pid)
    if token is None or current is None:
        return current is not None or token is None
    return current == token


def expired(session: Session, now: float, keep_ended: float) -> bool:
    """An ended session past its keep time: no longer listed, and its file may go."""
    return not session.alive and now - session.updated_at > keep_ended


class Problem(Value):
    """A file that could not be read, kept so callers can warn once about it."""

    __slots__ = ("path", "reason")

    def __init__(self, path: Path, reason: str) -> None:
        self.path: Final = path
        self.reason: Final = reason


class Dismissal(enum.Enum):
    REMOVED = "removed"
    NOT_FOUND = "not found"
    RUNNING = "running"


class _Loaded(Value):
    __slots__ = ("identity", "session")

    def __init__(self, session: Session, identity: tuple[int, int, int, int]) -> None:
        self.session: Final = session
        # Which version of the file was read, so a removal never hits a newer one.
        self.identity: Final = identity


def valid_session_id(session_id: str) -> bool:
    return (
        0 < len(session_id) <= MAX_ID_LENGTH
        and not session_id.startswith(".")
        and "/" not in session_id
        and "\0" not in session_id
    )


def _identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)


def with_liveness(session: Session) -> Session:
    """``session`` as it stands: ended when the launcher that claims it runs is gone."""
    if session.alive and not launcher_alive(session.pid, session.pid_start):
        # Its last write time stays, so a dead session still ages out.
        return session.ended(session.exit_code, session.updated_at)
    return session


class StateStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def ensure(self) -> None:
        """Create the directory private to this user, or make an existing one so."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(self.directory)
        if not stat.S_ISDIR(info.st_mode):
            raise StoreError(f"state directory {self.directory} is not a directory")
        if info.st_uid != os.geteuid():
            # Another user's directory could feed us sessions or read ours.
            raise StoreError(
                f"state directory {self.directory} belongs to uid {info.st_uid}, not to you"
            )
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(self.directory, 0o700)

    def path_for(self, session_id: str) -> Path:
        if not valid_session_id(session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        return self.directory / f"{session_id}{SUFFIX}"

    def write(self, session: Session) -> None:
        """Replace the session's file atomically; readers never see a torn file."""
        target = self.path_for(session.id)
        # Unique per process and per call, so concurrent writers never share a temp file.
        temp = self.directory / f".{session.id}.{os.getpid()}.{next(_temp_counter)}{TEMP_SUFFIX}"
        data = json.dumps(session.to_file(), separators=(",", ":")).encode("utf-8")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o600)
        try:
            try:
                os.fchmod(fd, 0o600)  # the umask must not loosen or tighten it
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(temp, target)
        except BaseException:
            _unlink_quietly(temp)
            raise

    def read(self, path: Path) -> Session:
        """One session file; raises OSError, ValueError or SessionFormatError."""
        return self._load(path).session

    def _load(self, path: Path) -> _Loaded:
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
            document = json.loads(data)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
        session = Session.from_file(document)
        expected_name = path.name.removesuffix(SUFFIX)
        if session.id != expected_name:
            raise ValueError(f"holds session {session.id!r}, not {expected_name!r}")
        ordered = tuple(sorted(session.records, key=lambda record: record.id))
        if ordered != session.records:
            session = session.replace(records=ordered)
        return _Loaded(session, _identity(info))

    def _session_paths(self) -> list[Path]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        return [self.directory / name for name in sorted(names) if _session_name(name)]

    def _load_live(self, path: Path) -> _Loaded:
        """A session with liveness applied: a dead launcher's session is ended."""
        loaded = self._load(path)
        session = with_liveness(loaded.session)
        if session is not loaded.session:
            return _Loaded(session, loaded.identity)
        return loaded

    def _scan(self) -> tuple[list[tuple[Path, _Loaded]], list[Problem]]:
        loaded: list[tuple[Path, _Loaded]] = []
        problems: list[Problem] = []
        try:
            paths = self._session_paths()
        except OSError as error:
            return loaded, [Problem(self.directory, _reason(error))]
        for path in paths:
            try:
                loaded.append((path, self._load_live(path)))
            except FileNotFoundError:
                continue  # removed since the listing: dismissed or pruned meanwhile
            except (OSError, ValueError, SessionFormatError) as error:
                problems.append(Problem(path, _reason(error)))
        loaded.sort(key=lambda item: (item[1].session.started_at, item[1].session.id))
        return loaded, problems

    def read_all(self, now: float) -> tuple[list[Session], list[Problem]]:
        """Every session, oldest first, with dead launchers' sessions ended.

        ``now`` is accepted for callers' symmetry with :meth:`prune`; liveness needs no
        clock. A missing directory holds no sessions; an unreadable one is a problem whose
        path is the directory itself.
        """
        loaded, problems = self._scan()
        return [item.session for _, item in loaded], problems

    def prune(self, now: float, keep_ended: float) -> int:
        """Delete the files of sessions that ended more than ``keep_ended`` seconds ago.

        Also clears temp files left by writers that died. Returns how many sessions went.
        """
        loaded, _ = self._scan()
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
        path = self.path_for(session_id)
        try:
            item = self._load_live(path)
        except FileNotFoundError:
            return Dismissal.NOT_FOUND
        except (OSError, ValueError, SessionFormatError):
            try:
                path.unlink()
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
        return Dismissal.RUNNING if path.exists() else Dismissal.NOT_FOUND

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
            self.path_for(session_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def _remove_answer_socket(self, session_id: str) -> None:
        """The session's answer socket, if one is left (its launcher was killed): only
        ever a socket, never another file of that name."""
        if not valid_session_id(session_id):
            return
        path = self.directory / f"{session_id}{ANSWER_SUFFIX}"
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                path.unlink()
        except OSError:
            pass

    def _clear_orphan_sockets(self) -> None:
        """Answer sockets whose session file is gone (removed by an older tray, or by
        hand) and whose launcher is gone too: the id starts with its pid."""
        try:
            names = os.listdir(self.directory)
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

    def _remove_if_unchanged(self, path: Path, item: _Loaded) -> bool:
        try:
            if _identity(os.stat(path, follow_symlinks=False)) != item.identity:
                return False
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def _clear_stale_temps(self, now: float) -> None:
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            if not (name.startswith(".") and name.endswith(TEMP_SUFFIX)):
                continue
            parts = name.split(".")
            # ".<id>.<pid>.<n>.tmp": the id may hold dots, so the pid is third from the end.
            if len(parts) < 5 or not parts[-3].isdigit():
                continue
            path = self.directory / name
            try:
                age = now - os.stat(path, follow_symlinks=False).st_mtime
            except OSError:
                continue
            if age > STALE_TEMP_AGE and not pid_exists(int(parts[-3])):
                _unlink_quietly(path)


class _Cached(Value):
    """What one file held when last read: a session (liveness applied) or a problem.

    ``identity`` is None when the file could not even be looked at: then it is read
    again every time.
    """

    __slots__ = ("identity", "problem", "session")

    def __init__(
        self,
        identity: tuple[int, int, int, int] | None,
        session: Session | None,
        problem: str | None = None,
    ) -> None:
        self.identity: Final = identity
        self.session: Final = session
        self.problem: Final = problem


class SessionCache:
    """The sessions of a state directory, kept between reads so that a busy directory
    costs one read per file that changed, not one per file.

    :meth:`reload` reads the files a watcher named. :meth:`rescan` looks at the whole
    directory: it reads only files whose identity (inode, modification time, size)
    differs from the version kept, drops those gone, and asks again whether each live
    session's launcher runs, since a launcher killed outright never writes its end.

    A file :meth:`reload` reads is taken as its launcher wrote it, without asking /proc
    whether that launcher runs: only a live launcher writes a live session, and a busy
    directory changes hundreds of times a second, so the question would cost more than
    the read. One killed just after its write is caught by the next rescan, as one
    killed between writes is. A session the rescan found dead stays dead on a reload
    until its launcher is asked again: a file touched by someone else never brings a
    dead launcher back.
    """

    def __init__(self, store: StateStore) -> None:
        self._store = store
        self._entries: dict[str, _Cached] = {}
        self._directory_problem: Problem | None = None

    def reload(self, names: Iterable[str]) -> None:
        """Read these files again; one that is gone takes its session with it."""
        for name in names:
            if _session_name(name):
                self._read(name, None, changed=True)

    def rescan(self) -> None:
        """Look at every file in the directory, reading only those that changed."""
        try:
            paths = self._store._session_paths()
        except OSError as error:
            self._entries.clear()
            self._directory_problem = Problem(self._store.directory, _reason(error))
            return
        self._directory_problem = None
        listed = {path.name for path in paths}
        for name in self._entries.keys() - listed:
            del self._entries[name]
        for name in sorted(listed):
            identity = self._look(name)
            known = self._entries.get(name)
            if known is None or identity is None or known.identity != identity:
                self._read(name, identity)
            elif known.session is not None and known.session.alive:
                session = with_liveness(known.session)
                if session is not known.session:
                    self._entries[name] = _Cached(known.identity, session)

    def sessions(self) -> tuple[list[Session], list[Problem]]:
        """Like :meth:`StateStore.read_all`, from what was read last."""
        if self._directory_problem is not None:
            return [], [self._directory_problem]
        sessions = [entry.session for entry in self._entries.values() if entry.session]
        sessions.sort(key=lambda session: (session.started_at, session.id))
        problems = [
            Problem(self._store.directory / name, entry.problem)
            for name, entry in sorted(self._entries.items())
            if entry.problem is not None
        ]
        return sessions, problems

    def _look(self, name: str) -> tuple[int, int, int, int] | None:
        try:
            return _identity(os.stat(self._store.directory / name, follow_symlinks=False))
        except OSError:
            return None

    def _read(
        self, name: str, identity: tuple[int, int, int, int] | None, changed: bool = False
    ) -> None:
        """``identity`` is the file's before the read: kept for a file that fails, so a
        rescan reads it again only once it changed.

        A file the watcher named (``changed``) is looked at only when it fails, after the
        read (a newer version that came meanwhile is named again), and its launcher is
        asked only when the version kept was found dead (see the class)."""
        try:
            loaded = self._store._load(self._store.directory / name)
        except FileNotFoundError:
            self._entries.pop(name, None)  # removed: dismissed, pruned or renamed away
            return
        except (OSError, ValueError, SessionFormatError) as error:
            if changed:
                identity = self._look(name)
            self._entries[name] = _Cached(identity, None, _reason(error))
            return
        session = loaded.session
        if not changed or self._found_dead(name, session):
            session = with_liveness(session)
        self._entries[name] = _Cached(loaded.identity, session)

    def _found_dead(self, name: str, session: Session) -> bool:
        """Whether the version kept of a file that claims ``session`` alive was ended
        by the liveness check, for the same launcher."""
        if not session.alive:
            return False
        known = self._entries.get(name)
        kept = None if known is None else known.session
        return (
            kept is not None
            and not kept.alive
            and (kept.pid, kept.pid_start) == (session.pid, session.pid_start)
        )


def _session_name(name: str) -> bool:
    return name.endswith(SUFFIX) and valid_session_id(name.removesuffix(SUFFIX))


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        if error.errno == errno.ELOOP:
            return "is a symbolic link"
        return error.strerror
    return str(error)


def _unlink_quietly(path: Path) -> bool:
    try:
        path.unlink()
    except OSError:
        return False
    return True


__all__ = [
    "ANSWER_SUFFIX",
    "Dismissal",
    "Problem",
    "SessionCache",
    "StateStore",
    "StoreError",
    "expired",
    "launcher_alive",
    "pid_exists",
    "process_start_token",
    "valid_session_id",
    "with_liveness",
]
