"""The sessions of a state directory, kept between the app's reads.

Apart from the store because only the app keeps sessions between reads; `tray run` never
imports this.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from tray.core.session.model import Session, SessionFormatError
from tray.state.liveness import with_liveness
from tray.state.store import (
    Problem,
    StateStore,
    file_identity,
    is_session_file,
    problem_reason,
)


@dataclass(frozen=True, slots=True)
class _Cached:
    """What one file held when last read: a session (liveness applied) or a problem.

    ``identity`` is None when the file could not even be looked at: then it is read
    again every time.
    """

    identity: tuple[int, int, int, int] | None
    session: Session | None
    problem: str | None = None


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
            if is_session_file(name):
                self._read(name, None, changed=True)

    def rescan(self) -> None:
        """Look at every file in the directory, reading only those that changed."""
        try:
            listed = set(self._store._session_names())
        except OSError as error:
            self._entries.clear()
            self._directory_problem = Problem(self._store.directory, problem_reason(error))
            return
        self._directory_problem = None
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
            return file_identity(os.stat(self._file(name), follow_symlinks=False))
        except OSError:
            return None

    def _file(self, name: str) -> str:
        return os.path.join(self._store._directory, name)

    def _read(
        self, name: str, identity: tuple[int, int, int, int] | None, changed: bool = False
    ) -> None:
        """``identity`` is the file's before the read: kept for a file that fails, so a
        rescan reads it again only once it changed.

        A file the watcher named (``changed``) is looked at only when it fails, after the
        read (a newer version that came meanwhile is named again), and its launcher is
        asked only when the version kept was found dead (see the class)."""
        try:
            loaded = self._store._load(self._file(name))
        except FileNotFoundError:
            self._entries.pop(name, None)  # removed: dismissed, pruned or renamed away
            return
        except (OSError, ValueError, SessionFormatError) as error:
            if changed:
                identity = self._look(name)
            self._entries[name] = _Cached(identity, None, problem_reason(error))
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
