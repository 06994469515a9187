"""Answering a permission prompt from the desktop: the keys table and the gate.

Pure: no file, socket or clock. The launcher asks :func:`decide` whether to type, with
its own record table and the time of the user's last key; ``tray status`` asks
:func:`answers_for` what to offer. Keys only ever come from the agents' rules files or the
user's ``[answer.apps]``; nothing a program reports can choose or change them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tray.protocol.records import Record
from tray.protocol.state import ANSWER_NAMED, ANSWERS, Answer, State

ESC = "\x1b"
# A key string is a keystroke or two, never a macro: long strings would let a config
# type whole commands into an agent.
MAX_KEYS = 16
# How long a prompt must have stood before keys go in. Codex 0.171.0 reports `blocked`
# a frame before its dialog takes keys: a "y" typed at once was lost (tried at 0 s, fine
# at 0.3 s), and a lost key may land in the composer. The launcher holds an early
# answer until then and checks again.
SETTLE = 1.0
# A ``since`` read back from JSON by another program may lose the last bits of a double;
# two prompts of one record are never this close.
SINCE_TOLERANCE = 1e-6
# Enter (CR, LF) picks whatever option the cursor stands on, so no key string holds one.
_ENTER = frozenset("\r\n")


@dataclass(frozen=True, slots=True)
class AppKeys:
    """The keys that answer one app's permission prompt."""

    approve: str
    deny: str

    def keys(self, answer: Answer) -> str:
        return self.approve if answer == Answer.APPROVE else self.deny


@dataclass(frozen=True, slots=True)
class AnswerSettings:
    """``[answer]``: whether answering is on, and the keys of each app: those of the
    agents' rules files (``core/agents/*.toml``, checked against the real agents by
    tests/agents/), then the user's ``[answer.apps]``. With none given, no app's prompt
    is answered."""

    enabled: bool = True
    apps: Mapping[str, AppKeys] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A copy: the caller's dict, changed later, must not change the settings.
        object.__setattr__(self, "apps", dict(self.apps))

    def keys_for(self, app: str | None) -> AppKeys | None:
        return None if app is None else self.apps.get(app)


DEFAULT_SETTINGS = AnswerSettings()


def key_string(value: object, *, allow_enter: bool = False) -> str:
    """A string of keys, checked: ValueError says what is wrong with it, and the caller
    which key of which file it was. ``allow_enter`` only where a rules file says why
    Enter is safe at that prompt (it submits a typed answer, or the dialog always opens
    on the option it picks)."""
    if value is None:
        raise ValueError("missing")
    if not isinstance(value, str):
        raise ValueError("expected a string of keys")
    if not value:
        raise ValueError("empty")
    if len(value) > MAX_KEYS:
        raise ValueError(f"longer than {MAX_KEYS} characters")
    entered = _ENTER & set(value)
    if entered and not (allow_enter and entered == {"\r"}):
        raise ValueError("holds Enter, which picks whatever the cursor is on")
    if ESC in value[:-1]:
        # Esc followed by anything reads as Alt+key, so Esc may only come last.
        raise ValueError("Esc may only be the last key")
    for char in value:
        if char in (ESC, "\r"):
            continue  # both checked above
        if ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F:
            raise ValueError(f"holds the control character U+{ord(char):04X}")
    return value


@dataclass(frozen=True, slots=True)
class Request:
    """An answer asked for: ``record`` the record id, ``since`` the prompt it answers
    (``None``: the prompt standing now)."""

    answer: str
    record: str | None = None
    since: float | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What the gate decided: ``keys`` to type (bytes), or ``reason`` (one short line).

    Keys go in no earlier than ``not_before`` (the prompt's ``since`` plus
    :data:`SETTLE`), after the gate has been asked again at that moment.
    """

    keys: bytes | None
    reason: str | None
    record: str | None = None
    since: float | None = None
    not_before: float | None = None

    @property
    def ok(self) -> bool:
        return self.keys is not None


# The reasons, as the contract words them: each fits after "api-server: ".
GONE = "the prompt is gone"
CHANGED = "the prompt has changed"
TYPED = "you typed into the session since it appeared"
NO_KEYS = "the app has no keys"
ENDED = "the session has ended"
OFF = "answering is off"
SEVERAL = "several prompts stand; pick one with --record"
NONE_STANDS = "no prompt stands"
ANSWERED = "the prompt is gone: it was answered already"
BAD_ANSWER = "the answer must be approve or deny"


def _refuse(reason: str, record: str | None = None, since: float | None = None) -> Decision:
    return Decision(None, reason, record, since)


def pick_record(records: Iterable[Record], record_id: str | None) -> Record | str:
    """The record a request without ``--record`` means, or the reason there is none.

    The root when it is the one blocked, else the only blocked record; with several, the
    caller must pick.
    """
    blocked = [r for r in records if r.state == State.BLOCKED]
    if record_id is not None:
        found = next((r for r in records if r.id == record_id), None)
        return GONE if found is None else found
    if not blocked:
        return NONE_STANDS
    root = next((r for r in blocked if r.id == ""), None)
    if root is not None:
        return root
    if len(blocked) > 1:
        return SEVERAL
    return blocked[0]


def decide(
    records: tuple[Record, ...],
    request: Request,
    last_input_at: float | None,
    settings: AnswerSettings,
    *,
    alive: bool = True,
    answered: tuple[str, float] | None = None,
) -> Decision:
    """Whether the launcher may type the answer, and what.

    ``last_input_at`` is the time of the user's own last key, paste or mouse input (never
    a terminal's reply), on the same clock as the records' ``since``. ``answered`` is
    the (record, since) this launcher last typed for: a prompt is answered once.
    """
    answer = ANSWER_NAMED.get(request.answer)
    if answer is None:
        return _refuse(BAD_ANSWER)
    if not alive:
        return _refuse(ENDED, request.record, request.since)
    if not settings.enabled:
        return _refuse(OFF, request.record, request.since)
    picked = pick_record(records, request.record)
    if isinstance(picked, str):
        return _refuse(picked, request.record, request.since)
    record = picked
    if record.state != State.BLOCKED or record.kind != "permission":
        return _refuse(GONE, record.id, request.since)
    if record.since is None:
        # A record whose start is unknown cannot be named, so it is never answered.
        return _refuse(CHANGED, record.id, request.since)
    if request.since is not None and abs(request.since - record.since) > SINCE_TOLERANCE:
        return _refuse(CHANGED, record.id, request.since)
    if answered is not None and answered == (record.id, record.since):
        return _refuse(ANSWERED, record.id, record.since)
    # Typing at or after the prompt's moment wins: the user may have answered it already.
    if last_input_at is not None and last_input_at >= record.since:
        return _refuse(TYPED, record.id, record.since)
    keys = settings.keys_for(record.app)
    if keys is None:
        return _refuse(NO_KEYS, record.id, record.since)
    typed = keys.keys(answer).encode()
    return Decision(typed, None, record.id, record.since, record.since + SETTLE)


def answers_for(record: Record, alive: bool, settings: AnswerSettings) -> list[Answer]:
    """The contract's ``answers`` of one record: what tray can answer it with now."""
    if not (alive and settings.enabled):
        return []
    if record.state != State.BLOCKED or record.kind != "permission" or record.since is None:
        return []
    if settings.keys_for(record.app) is None:
        return []
    return list(ANSWERS)
