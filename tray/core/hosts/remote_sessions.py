"""Pure: a remote host's status document turned into sessions this machine can show.

Everything in the document is untrusted. Sessions are read with the same parser as
state files (:meth:`Session.from_file`), then made safe for here:

- ids become ``host:<name>/<remote id>``. The ``/`` makes sure no remote id can ever
  name a local state file (the store refuses ids holding one), and a remote id must
  match a strict pattern or its session is dropped;
- text is cut to the limits a local report has (protocol.md), and counts to what a
  local state file holds;
- what only makes sense on the remote machine goes: its terminal (tmux pane, X window)
  would point at something here that happens to share the number. Its tmux pane and
  socket are kept only under keys of their own (:data:`REMOTE_PANE_KEY`,
  :data:`REMOTE_SOCKET_KEY`), which the local focus code never reads, and only when
  they have the strict shapes that let them go on the remote shell's command line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from tray.core.hosts.ssh_commands import NAME_PATTERN, valid_pane, valid_remote_id, valid_socket
from tray.core.hosts.ssh_failures import Failure
from tray.core.session.labels import session_label
from tray.core.session.model import (
    ATTENTION_KEPT,
    FORMAT_VERSION,
    STATUS_VERSION,
    Attention,
    Session,
    SessionFormatError,
)
from tray.protocol.records import CAPACITY, Record
from tray.protocol.report import MAX_APP, MAX_ID, MAX_MSG_DECODED, MAX_TITLE_DECODED

PREFIX: Final = "host:"
MAX_SESSIONS: Final = 256
MAX_NAME: Final = 256
MAX_CWD: Final = 4096
MAX_COMMAND_WORDS: Final = 64
MAX_COMMAND_WORD: Final = 1024
# Where a remote session's tmux pane and socket are kept: keys of their own, so the local
# focus code, which reads TMUX and TMUX_PANE, never takes them for a pane on this machine.
REMOTE_PANE_KEY: Final = "REMOTE_TMUX_PANE"
REMOTE_SOCKET_KEY: Final = "REMOTE_TMUX_SOCKET"
# The public shape's fields, plus the two the stream adds for labels and typing grace;
# its third, ``tmux``, is checked on its own (_remote_tmux). Anything else the remote
# sends is ignored, ``terminal`` and ``pid_start`` above all.
_KEPT_FIELDS: Final = (
    "id",
    "name",
    "command",
    "cwd",
    "pid",
    "child_pid",
    "started_at",
    "updated_at",
    "alive",
    "exit_code",
    "source",
    "records",
    "focus",
    "focus_since",
    "state_since",
    "terminal_progress",
    "attention",
    "name_given",
    "last_input_at",
)


class RemoteDocumentError(ValueError):
    """A status document that is not one this version can read at all."""


@dataclass(frozen=True, slots=True)
class RemoteState:
    """One host's sessions as its latest frame described them."""

    host: str
    sessions: tuple[Session, ...]  # ids "host:<name>/<id>"; names as the remote has them
    received_at: float  # this machine's clock when the frame arrived
    skipped: int = 0  # remote sessions dropped as malformed or over the limits
    # The first document a link delivered since it started. Like the app's own first
    # read at start-up, what it shows is old news, a prompt still waiting aside: the
    # policy should not announce sessions that finished before anyone was looking.
    initial: bool = False

    def labelled(self) -> tuple[Session, ...]:
        """The sessions named "<host> · <label>", so the menu and every notification
        say which machine ("devbox · api needs approval") with no change to either."""
        return tuple(with_host_label(self.host, session) for session in self.sessions)


def namespaced_id(host: str, remote_id: str) -> str:
    return f"{PREFIX}{host}/{remote_id}"


def split_remote_id(session_id: str) -> tuple[str, str] | None:
    """``("devbox", "<id>")`` for a remote session's id; None for a local one."""
    if not session_id.startswith(PREFIX):
        return None
    host, slash, remote_id = session_id[len(PREFIX) :].partition("/")
    if not slash or NAME_PATTERN.fullmatch(host) is None or not valid_remote_id(remote_id):
        return None
    return host, remote_id


def is_remote(session_id: str) -> bool:
    return split_remote_id(session_id) is not None


def parse_document(host: str, document: object, received_at: float) -> RemoteState:
    """The sessions in a ``tray status --json`` document from ``host``.

    A document of another shape or version raises :class:`RemoteDocumentError`; one bad
    session is skipped and counted, so the others still show.
    """
    if NAME_PATTERN.fullmatch(host) is None:
        raise ValueError(f"bad host name {host[:40]!r}")
    if not isinstance(document, dict):
        raise RemoteDocumentError("the status document is not a JSON object")
    version = document.get("version")
    if type(version) is not int or version != STATUS_VERSION:
        raise RemoteDocumentError("the status document has an unknown version")
    entries = document.get("sessions")
    if not isinstance(entries, list):
        raise RemoteDocumentError("the status document has no session list")
    sessions: list[Session] = []
    seen: set[str] = set()
    skipped = max(0, len(entries) - MAX_SESSIONS)
    for entry in entries[:MAX_SESSIONS]:
        session = _session(host, entry)
        if session is None or session.id in seen:
            skipped += 1
            continue
        seen.add(session.id)
        sessions.append(session)
    sessions.sort(key=lambda s: (s.started_at, s.id))
    return RemoteState(host, tuple(sessions), received_at, skipped)


def _session(host: str, entry: object) -> Session | None:
    if not isinstance(entry, dict):
        return None
    remote_id = entry.get("id")
    if not isinstance(remote_id, str) or not valid_remote_id(remote_id):
        return None
    fields: dict[str, Any] = {key: entry[key] for key in _KEPT_FIELDS if key in entry}
    records = fields.get("records")
    if isinstance(records, list):
        fields["records"] = records[:CAPACITY]
    command = fields.get("command")
    if isinstance(command, list):
        fields["command"] = command[:MAX_COMMAND_WORDS]
    attention = fields.get("attention")
    if isinstance(attention, list):
        fields["attention"] = attention[-ATTENTION_KEPT:]
    try:
        session = Session.from_file({**fields, "version": FORMAT_VERSION})
    except SessionFormatError:
        return None
    return replace(
        session,
        id=namespaced_id(host, remote_id),
        name=clip(session.name, MAX_NAME),
        command=tuple(clip(word, MAX_COMMAND_WORD) for word in session.command),
        cwd=clip(session.cwd, MAX_CWD),
        records=tuple(sorted((_record(r) for r in session.records), key=lambda r: r.id)),
        attention=tuple(_attention(a) for a in session.attention),
        terminal=_remote_tmux(entry.get("tmux")),
        pid_start=None,
    )


def _remote_tmux(value: object) -> dict[str, str]:
    """The stream's ``{"pane": "%3", "socket": "/tmp/tmux-1000/default"}``, kept only
    when both have the strict shapes :func:`tray.core.hosts.ssh_commands.focus_argv` accepts."""
    if not isinstance(value, dict):
        return {}
    pane, socket = value.get("pane"), value.get("socket")
    if not isinstance(pane, str) or not isinstance(socket, str):
        return {}
    if not valid_pane(pane) or not valid_socket(socket):
        return {}
    return {REMOTE_PANE_KEY: pane, REMOTE_SOCKET_KEY: socket}


def remote_tmux(session: Session) -> tuple[str, str] | None:
    """A remote session's tmux pane and socket, when its host recorded valid ones."""
    pane = session.terminal.get(REMOTE_PANE_KEY)
    socket = session.terminal.get(REMOTE_SOCKET_KEY)
    if pane is None or socket is None or not valid_pane(pane) or not valid_socket(socket):
        return None
    return pane, socket


def _record(record: Record) -> Record:
    return replace(
        record,
        id=clip(record.id, MAX_ID),
        app=_optional_clip(record.app, MAX_APP),
        title=_optional_clip(record.title, MAX_TITLE_DECODED),
        msg=_optional_clip(record.msg, MAX_MSG_DECODED),
    )


def _attention(attention: Attention) -> Attention:
    return replace(
        attention,
        title=_optional_clip(attention.title, MAX_TITLE_DECODED),
        body=_optional_clip(attention.body, MAX_MSG_DECODED),
    )


def clip(text: str, limit: int) -> str:
    """At most ``limit`` bytes of UTF-8, cut at a character boundary, as reports are."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore")


def _optional_clip(text: str | None, limit: int) -> str | None:
    return None if text is None else clip(text, limit)


def with_host_label(host: str, session: Session) -> Session:
    return replace(session, name=f"{host} \u00b7 {session_label(session)}", name_given=True)


def clock_time(
    moment: float, localtime: Callable[[float], time.struct_time] = time.localtime
) -> str:
    """The local time of day, such as "14:02": when a host was last heard from."""
    return time.strftime("%H:%M", localtime(moment))


def mark_stale(
    state: RemoteState,
    last_seen: float | None = None,
    localtime: Callable[[float], time.struct_time] = time.localtime,
) -> tuple[Session, ...]:
    """A lost host's sessions as last seen, labelled, and saying when in their name:
    "devbox · api (last seen 14:02)".

    They stay alive: nothing says they ended, only that nobody can see them now. Their
    state does not change while the host is lost, so the policy finds no new event in
    them, and no notification passes old news off as fresh. ``last_seen`` is the last
    frame of any kind (:attr:`HostStatus.last_seen`), else the state's own arrival.
    """
    seen = state.received_at if last_seen is None else last_seen
    note = f" (last seen {clock_time(seen, localtime)})"
    return tuple(replace(s, name=s.name + note) for s in state.labelled())


__all__ = [
    "PREFIX",
    "REMOTE_PANE_KEY",
    "REMOTE_SOCKET_KEY",
    "RemoteDocumentError",
    "RemoteState",
    "clip",
    "is_remote",
    "mark_stale",
    "namespaced_id",
    "parse_document",
    "remote_tmux",
    "split_remote_id",
    "with_host_label",
]


LinkState = Literal["connecting", "connected", "unreachable"]


@dataclass(frozen=True, slots=True)
class HostStatus:
    host: str
    state: LinkState
    since: float  # when this state began; for "unreachable", when the host was lost
    failure: Failure | None = None  # why it is unreachable, with a fix when there is one
    last_seen: float | None = None  # the last frame from the host, if any ever came

    def line(self, localtime: Callable[[float], time.struct_time] = time.localtime) -> str:
        """ "unreachable since 14:02, retrying: connection refused by ...", one line."""
        if self.state == "connected":
            return f"connected since {clock_time(self.since, localtime)}"
        if self.state == "connecting":
            return "connecting"
        text = f"unreachable since {clock_time(self.since, localtime)}, retrying"
        return f"{text}: {self.failure.reason}" if self.failure is not None else text
