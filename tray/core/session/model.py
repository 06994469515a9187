"""A session: the launcher's facts plus the record table, in the contract's shape.

This is the one place that builds and reads the session's JSON. ``tray status``, the
tray app and the state files all go through :meth:`Session.to_public`,
:meth:`Session.to_file` and :meth:`Session.from_file`.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tray.core.answers.gate import DEFAULT_SETTINGS, AnswerSettings, answers_for
from tray.protocol.records import Record
from tray.protocol.report import KINDS
from tray.protocol.state import ANSWER_NAMED, FINISHED, STATE_NAMED, Answer, State, most_urgent

FORMAT_VERSION = 1
# The version of `tray status --json`; a breaking change to its shape bumps it.
STATUS_VERSION = 1
SOURCES = ("launcher", "program")
# Whether the user's terminal has this session in front of them, from its focus reports
# (DEC mode 1004). "unknown" while the program has not turned focus reporting on.
FOCUS_STATES = ("focused", "unfocused", "unknown")
# Ways a program asks for attention besides OSC 7501, and a long shell command's end.
ATTENTION_SOURCES = ("osc9", "osc777", "osc99", "bell", "command")
ATTENTION_CONDITIONS = ("always", "unfocused", "invisible")
# The newest attention events a session file keeps; readers find new ones by ``seq``.
ATTENTION_KEPT = 8
# Shared by every session without terminal facts: read-only, so none can change another's.
_NO_TERMINAL: Mapping[str, str] = types.MappingProxyType({})


class SessionFormatError(ValueError):
    """A state file that does not hold a session this version can read."""


def launcher_state(running: bool, exit_code: int | None) -> State:
    if running:
        return State.WORKING
    return State.DONE if exit_code == 0 else State.ERROR


def session_state(
    records: tuple[Record, ...], source: str, running: bool, exit_code: int | None
) -> State | None:
    """The contract's ``state``: the most urgent record, else what the launcher knows."""
    if not running:
        # The lifetime rule, even for a session whose records were never pruned: a program
        # that is gone is never still working or blocked.
        records = tuple(r for r in records if r.state in FINISHED)
    if records:
        return most_urgent([r.state for r in records])
    if source == "launcher" or not running:
        return launcher_state(running, exit_code)
    return None


@dataclass(frozen=True, slots=True)
class Attention:
    """One request for attention: a terminal notification, a bell, or a long command's end.

    ``seq`` grows by one per event in a session, so a reader that remembers the last one
    it handled knows which are new. ``condition`` is OSC 99's ``o=``: when to show it.
    ``exit_code`` and ``duration`` are set for a finished shell command, whose command
    line is the ``title``.
    """

    seq: int
    at: float
    source: str
    title: str | None = None
    body: str | None = None
    condition: str = "always"
    exit_code: int | None = None
    duration: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": self.at,
            "source": self.source,
            "title": self.title,
            "body": self.body,
            "condition": self.condition,
            "exit_code": self.exit_code,
            "duration": self.duration,
        }


@dataclass(frozen=True, slots=True)
class Answered:
    """The last answer this session's launcher typed: which prompt (``record`` and its
    ``since``), with what, and when. The state that follows it does not ping."""

    record: str
    since: float
    answer: Answer
    at: float

    def to_json(self) -> dict[str, Any]:
        return {"record": self.record, "since": self.since, "answer": self.answer, "at": self.at}


@dataclass(frozen=True, slots=True)
class Session:
    """One session as the launcher knows it; built positionally too, in this order."""

    id: str
    name: str
    command: tuple[str, ...]
    cwd: str
    pid: int
    child_pid: int | None
    started_at: float
    updated_at: float
    alive: bool = True
    exit_code: int | None = None
    source: str = "launcher"
    records: tuple[Record, ...] = ()
    # Beyond the contract: what readers need for liveness and for the tray.
    pid_start: str | None = None
    last_input_at: float | None = None
    # A factory only because dataclass refuses an unhashable default: every session
    # without terminal facts shares the one read-only mapping.
    terminal: Mapping[str, str] = field(default_factory=lambda: _NO_TERMINAL)
    name_given: bool = False  # whether ``name`` came from --name
    # Additive fields of the contract (docs/contract.md, the state format).
    focus: str = "unknown"
    focus_since: float | None = None
    state_since: float | None = None  # since when ``state`` has been what it is
    attention: tuple[Attention, ...] = ()
    terminal_progress: int | None = None  # OSC 9;4 progress, for programs without 7501
    cwd_reported: bool = False  # ``cwd`` came from the program's OSC 7, not the start
    answered: Answered | None = None  # the last answer typed through tray

    @property
    def running(self) -> bool:
        return self.alive and self.exit_code is None

    @property
    def state(self) -> State | None:
        return session_state(self.records, self.source, self.running, self.exit_code)

    def ended(self, exit_code: int | None, now: float) -> Session:
        """The session after its program stopped: the lifetime rule drops records."""
        kept = tuple(r for r in self.records if r.state in FINISHED)
        return replace(self, alive=False, exit_code=exit_code, records=kept, updated_at=now)

    def to_public(self, answering: AnswerSettings = DEFAULT_SETTINGS) -> dict[str, Any]:
        """The contract's object. ``answering`` is the reader's ``[answer]`` settings,
        which decide each record's ``answers``."""
        running = self.running
        return {
            "id": self.id,
            "name": self.name,
            "command": list(self.command),
            "cwd": self.cwd,
            "pid": self.pid,
            "child_pid": self.child_pid,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
            "alive": self.alive,
            "exit_code": self.exit_code,
            "state": self.state,
            "source": self.source,
            "records": [
                {
                    "id": r.id,
                    "state": r.state,
                    "kind": r.kind,
                    "progress": r.progress,
                    "app": r.app,
                    "title": r.title,
                    "msg": r.msg,
                    "updated_at": r.updated_at,
                    "since": r.since,
                    "answers": answers_for(r, running, answering),
                }
                for r in self.records
            ],
            "focus": self.focus,
            "focus_since": self.focus_since,
            "state_since": self.state_since,
            "terminal_progress": self.terminal_progress,
            "attention": [a.to_json() for a in self.attention],
        }

    def to_file(self) -> dict[str, Any]:
        document = {"version": FORMAT_VERSION, **self.to_public()}
        document["pid_start"] = self.pid_start
        document["last_input_at"] = self.last_input_at
        document["terminal"] = dict(self.terminal)
        document["name_given"] = self.name_given
        document["cwd_reported"] = self.cwd_reported
        document["answered"] = None if self.answered is None else self.answered.to_json()
        return document

    @classmethod
    def from_file(cls, document: object) -> Session:
        """Read a state file's JSON; raises :class:`SessionFormatError` when malformed."""
        try:
            return _parse(document)
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            if isinstance(error, SessionFormatError):
                raise
            raise SessionFormatError(f"malformed session: {error}") from None


def _expect(value: object, kind: type | tuple[type, ...], name: str) -> Any:
    if isinstance(value, bool) and kind is not bool and bool not in _as_tuple(kind):
        raise SessionFormatError(f"{name} has the wrong type")
    if not isinstance(value, kind):
        raise SessionFormatError(f"{name} has the wrong type")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _optional(value: object, kind: type | tuple[type, ...], name: str) -> Any:
    return None if value is None else _expect(value, kind, name)


def _time(value: object, name: str) -> float:
    try:
        number = float(_expect(value, (int, float), name))
    except OverflowError:
        # JSON integers have no size limit; float() refuses the huge ones.
        raise SessionFormatError(f"{name} is out of range") from None
    if not math.isfinite(number):
        raise SessionFormatError(f"{name} is not a finite number")
    return number


def _record(item: object) -> Record:
    entry = _expect(item, dict, "record")
    name = _expect(entry["state"], str, "record state")
    state = STATE_NAMED.get(name)
    if state is None:
        raise SessionFormatError(f"unknown record state {name[:20]!r}")
    kind = _optional(entry.get("kind"), str, "kind")
    if kind is not None and kind not in KINDS:
        raise SessionFormatError(f"unknown kind {kind[:20]!r}")
    progress = _optional(entry.get("progress"), int, "progress")
    if progress is not None and not 0 <= progress <= 100:
        raise SessionFormatError("progress out of range")
    return Record(
        id=_expect(entry["id"], str, "record id"),
        state=state,
        kind=kind,
        progress=progress,
        app=_optional(entry.get("app"), str, "app"),
        title=_optional(entry.get("title"), str, "title"),
        msg=_optional(entry.get("msg"), str, "msg"),
        updated_at=_time(entry["updated_at"], "record updated_at"),
        since=_optional_time(entry.get("since"), "record since"),
    )


def _optional_time(value: object, name: str) -> float | None:
    return None if value is None else _time(value, name)


def _attention(item: object) -> Attention:
    entry = _expect(item, dict, "attention")
    source = _expect(entry["source"], str, "attention source")
    if source not in ATTENTION_SOURCES:
        raise SessionFormatError(f"unknown attention source {source[:20]!r}")
    condition = _expect(entry.get("condition", "always"), str, "attention condition")
    if condition not in ATTENTION_CONDITIONS:
        raise SessionFormatError(f"unknown attention condition {condition[:20]!r}")
    return Attention(
        seq=_expect(entry["seq"], int, "attention seq"),
        at=_time(entry["at"], "attention at"),
        source=source,
        title=_optional(entry.get("title"), str, "attention title"),
        body=_optional(entry.get("body"), str, "attention body"),
        condition=condition,
        exit_code=_optional(entry.get("exit_code"), int, "attention exit_code"),
        duration=_optional_time(entry.get("duration"), "attention duration"),
    )


def _parse(document: object) -> Session:
    data = _expect(document, dict, "session")
    version = data.get("version")
    # ``True == 1`` and ``1.0 == 1`` in Python; neither is this format's version.
    if type(version) is not int or version != FORMAT_VERSION:
        known = type(version) is int and 0 <= version < 1000
        raise SessionFormatError(f"unsupported version {version}" if known else "no usable version")
    source = _expect(data["source"], str, "source")
    if source not in SOURCES:
        raise SessionFormatError(f"unknown source {source[:20]!r}")
    command = _expect(data["command"], list, "command")
    terminal = _expect(data.get("terminal") or {}, dict, "terminal")
    last_input = data.get("last_input_at")
    return Session(
        id=_expect(data["id"], str, "id"),
        name=_expect(data["name"], str, "name"),
        command=tuple(_expect(part, str, "command") for part in command),
        cwd=_expect(data["cwd"], str, "cwd"),
        pid=_expect(data["pid"], int, "pid"),
        child_pid=_optional(data.get("child_pid"), int, "child_pid"),
        started_at=_time(data["started_at"], "started_at"),
        updated_at=_time(data["updated_at"], "updated_at"),
        alive=_expect(data["alive"], bool, "alive"),
        exit_code=_optional(data.get("exit_code"), int, "exit_code"),
        source=source,
        records=tuple(_record(item) for item in _expect(data["records"], list, "records")),
        pid_start=_optional(data.get("pid_start"), str, "pid_start"),
        last_input_at=None if last_input is None else _time(last_input, "last_input_at"),
        terminal={
            _expect(k, str, "terminal"): _expect(v, str, "terminal") for k, v in terminal.items()
        },
        name_given=_expect(data.get("name_given", False), bool, "name_given"),
        cwd_reported=_expect(data.get("cwd_reported", False), bool, "cwd_reported"),
        focus=_focus(data.get("focus", "unknown")),
        focus_since=_optional_time(data.get("focus_since"), "focus_since"),
        state_since=_optional_time(data.get("state_since"), "state_since"),
        attention=tuple(
            _attention(item) for item in _expect(data.get("attention", []), list, "attention")
        )[-ATTENTION_KEPT:],
        terminal_progress=_progress(data.get("terminal_progress")),
        answered=_answered(data.get("answered")),
    )


def _answered(value: object) -> Answered | None:
    if value is None:
        return None
    entry = _expect(value, dict, "answered")
    name = _expect(entry["answer"], str, "answered answer")
    answer = ANSWER_NAMED.get(name)
    if answer is None:
        raise SessionFormatError(f"unknown answer {name[:20]!r}")
    return Answered(
        record=_expect(entry["record"], str, "answered record"),
        since=_time(entry["since"], "answered since"),
        answer=answer,
        at=_time(entry["at"], "answered at"),
    )


def _focus(value: object) -> str:
    focus = _expect(value, str, "focus")
    if focus not in FOCUS_STATES:
        raise SessionFormatError(f"unknown focus {focus[:20]!r}")
    return str(focus)


def _progress(value: object) -> int | None:
    progress = _optional(value, int, "terminal_progress")
    if progress is not None and not 0 <= progress <= 100:
        raise SessionFormatError("terminal_progress out of range")
    return progress if progress is None else int(progress)


def status_document(
    sessions: Sequence[Session], answering: AnswerSettings = DEFAULT_SETTINGS
) -> dict[str, Any]:
    """What `tray status --json` prints."""
    return {
        "version": STATUS_VERSION,
        "sessions": [s.to_public(answering) for s in sessions],
    }


def expired(session: Session, now: float, keep_ended: float) -> bool:
    """An ended session past its keep time: no longer listed, and its file may go."""
    return not session.alive and now - session.updated_at > keep_ended


def answered_prompt(session: Session) -> tuple[str, float] | None:
    """The (record, since) of the last answer the session's launcher typed for tray."""
    answered = session.answered
    return None if answered is None else (answered.record, answered.since)
