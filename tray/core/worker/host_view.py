"""Pure: the ``[[hosts]]`` sessions as the app shows them and as its policy sees them.

The links (:mod:`tray.remote.link`) hand the app each host's latest sessions and link
health; :func:`remote_view` turns those into sessions beside the local ones, with a lost
host's as last seen, and :class:`HostBacklog` keeps a host's first document from pinging
about what had finished before anyone here was looking. A lost host's sessions are kept
from pinging by the policy itself (:meth:`NotificationPolicy.set_unreachable`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from tray.core.hosts.remote_sessions import HostStatus, RemoteState, mark_stale, split_remote_id
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.policy.observe import Observation, observe_session
from tray.core.session.model import Session, expired
from tray.core.view.overview import HostLine
from tray.core.worker.marks import AppMemory
from tray.protocol.state import FINISHED

# (record id, condition, since): one occurrence of a session's finished state.
_Occurrence = tuple[str | None, tuple[str, str | None, str | None], float | None]


@dataclass(frozen=True, slots=True)
class RemoteView:
    sessions: tuple[Session, ...]  # labelled "devbox · api"; a lost host's as last seen
    stale: frozenset[str]  # ids of the sessions of hosts that cannot be reached now
    hosts: tuple[HostLine, ...]  # every configured host, in the order of config.toml
    # Hosts not heard from yet: what the app remembers of their sessions must stay.
    waiting: frozenset[str] = field(default_factory=frozenset)


def remote_view(
    hosts: Sequence[HostConfig],
    states: Mapping[str, RemoteState],
    statuses: Mapping[str, HostStatus],
    now: float,
    keep_ended: float,
    *,
    localtime: Callable[[float], time.struct_time] = time.localtime,
) -> RemoteView:
    """Every host's sessions: as received while it is connected, and as last seen
    (stale, "(last seen 14:02)") while it is unreachable. Ended ones go after
    ``keep_ended``, as local ones do."""
    sessions: list[Session] = []
    stale: set[str] = set()
    lines: list[HostLine] = []
    waiting: set[str] = set()
    for host in hosts:
        status = statuses.get(host.name)
        state = states.get(host.name)
        lost = status if status is not None and status.state == "unreachable" else None
        lines.append(HostLine(host.name, lost.line(localtime) if lost is not None else None))
        if state is None:
            waiting.add(host.name)
            continue
        if lost is not None:
            shown = mark_stale(state, lost.last_seen, localtime)
            stale.update(s.id for s in shown)
        else:
            shown = state.labelled()
        sessions += [s for s in shown if not expired(s, now, keep_ended)]
    return RemoteView(tuple(sessions), frozenset(stale), tuple(lines), frozenset(waiting))


def kept_ids(memory: AppMemory, present: Collection[str], waiting: Collection[str]) -> set[str]:
    """``present`` plus the remembered sessions of hosts not heard from yet: at start-up
    the local files are read long before any host answers, and their seen and dismissed
    marks must still be there when it does (the policy keeps their snoozes)."""
    kept = set(present)
    if waiting:
        for session_id in (*memory.seen, *memory.dismissed):
            parts = split_remote_id(session_id)
            if parts is not None and parts[0] in waiting:
                kept.add(session_id)
    return kept


def _occurrence(observation: Observation) -> _Occurrence:
    return (observation.record_id, observation.condition, observation.since)


class HostBacklog:
    """What a host's first document already said, kept from the policy.

    The policy takes done and error in the app's first snapshot as old news, and any
    request for attention dated before it; a host answers later than that, so its first
    document would otherwise announce everything that finished while nobody here was
    looking. A finished state stays quiet for as long as it is the same occurrence, and
    only attention that came after the document is passed on. A prompt still waiting is
    not old news: it pings, as a local one does at start-up.
    """

    def __init__(self) -> None:
        self._finished: dict[str, _Occurrence] = {}
        self._seq: dict[str, int] = {}  # session id -> the newest attention seq then

    def note(self, state: RemoteState, now: float) -> None:
        """``state`` is a host's first document since the app started."""
        for session in state.sessions:
            if session.attention:
                self._seq[session.id] = max(a.seq for a in session.attention)
            if session.state in FINISHED:
                self._finished[session.id] = _occurrence(observe_session(session, "", now))

    def quiet(self, observations: Iterable[Observation]) -> list[Observation]:
        """The observations, with old news taken out of them."""
        return [self._quiet(observation) for observation in observations]

    def _quiet(self, observation: Observation) -> Observation:
        sid = observation.session_id
        if observation.lead and sid in self._finished:
            if _occurrence(observation) == self._finished[sid]:
                # Still in the snapshot, so its attention is still read, but with no state
                # that could ping.
                observation = replace(observation, state=None)
            else:
                del self._finished[sid]
        floor = self._seq.get(sid)
        if floor is not None and observation.attention:
            fresh = tuple(a for a in observation.attention if a.seq > floor)
            observation = replace(observation, attention=fresh)
        return observation

    def keep(self, present: Collection[str]) -> None:
        """Forget sessions that are gone: the marks must not grow without end."""
        self._finished = {k: v for k, v in self._finished.items() if k in present}
        self._seq = {k: v for k, v in self._seq.items() if k in present}


__all__ = ["HostBacklog", "RemoteView", "kept_ids", "remote_view"]
