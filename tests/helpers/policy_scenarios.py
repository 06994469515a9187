"""Builders for the notification policy's tests: a fake clock, observations, records,
attention events and sessions, and loops that ask the policy for pings as the app does."""

from __future__ import annotations

from collections.abc import Callable

from tray.core.config.settings import PolicySettings
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.observe import Observation
from tray.core.policy.wording import Ping
from tray.core.session.model import Attention, Session
from tray.protocol.records import Record
from tray.protocol.state import State

START = 1_000_020.0  # an exact multiple of 60, so local minutes are easy to read
BLOCKED = frozenset({"blocked"})


class FakeClock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def utc_minute(moment: float) -> int:
    return int(moment // 60) % 1440


def make(settings_: PolicySettings | None = None) -> tuple[NotificationPolicy, FakeClock]:
    clock = FakeClock()
    policy = NotificationPolicy(settings_ or PolicySettings(), clock, utc_minute)
    # The first snapshot is a baseline; most tests are about what happens after it.
    policy.update([])
    return policy, clock


def obs(
    session_id: str = "s1",
    state: str | None = "blocked",
    *,
    kind: str | None = "permission",
    msg: str | None = "approve Bash: touch notes.txt",
    label: str | None = None,
    exit_code: int | None = None,
    run_seconds: float | None = None,
    last_input_at: float | None = None,
    since: float | None = None,
    focus: str = "unknown",
    record_id: str | None = None,
    child: str | None = None,
    attention: tuple[Attention, ...] = (),
) -> Observation:
    return Observation(
        session_id=session_id,
        label=label or f"claude-code · {session_id}",
        state=None if state is None else State(state),
        kind=kind if state == "blocked" else None,
        msg=msg,
        exit_code=exit_code,
        alive=True,
        run_seconds=run_seconds,
        last_input_at=last_input_at,
        record_id=record_id,
        lead=child is None,
        child=child,
        since=since,
        focus=focus,
        attention=attention,
    )


def ids(pings: list[Ping]) -> list[tuple[str, ...]]:
    return [p.session_ids for p in pings]


def at_minute(minute: int) -> float:
    return START - START % 86400 + 86400 + minute * 60


def sess(*records: Record, **changes: object) -> Session:
    base: dict[str, object] = {
        "id": "s1",
        "name": "claude",
        "command": ("claude",),
        "cwd": "/w",
        "pid": 1,
        "child_pid": 2,
        "started_at": 1000.0,
        "updated_at": 1000.0,
        "source": "program" if records else "launcher",
        "records": records,
    }
    base.update(changes)
    return Session(**base)  # type: ignore[arg-type]


def att(
    seq: int,
    at: float,
    source: str = "osc9",
    *,
    title: str | None = None,
    body: str | None = None,
    condition: str = "always",
    exit_code: int | None = None,
    duration: float | None = None,
) -> Attention:
    return Attention(seq, at, source, title, body, condition, exit_code, duration)


def record(
    record_id: str,
    state: str,
    *,
    kind: str | None = None,
    msg: str | None = None,
    title: str | None = None,
    at: float = START,
    since: float | None = None,
) -> Record:
    return Record(record_id, State(state), kind, None, "claude-code", title, msg, at, since)


def run_until(
    policy: NotificationPolicy,
    clock: FakeClock,
    end: float,
    snapshot: list[Observation] | None = None,
    step: float = 0.5,
) -> list[tuple[float, Ping]]:
    """Asks for pings every ``step`` seconds up to ``end``, re-sending ``snapshot``."""
    shown: list[tuple[float, Ping]] = []
    while clock.now < end:
        clock.advance(step)
        if snapshot is not None:
            policy.update(snapshot)
        shown += [(clock.now, p) for p in policy.due()]
    return shown


def follow(
    policy: NotificationPolicy,
    clock: FakeClock,
    end: float,
    snapshot: Callable[[], list[Observation]],
) -> list[tuple[float, Ping]]:
    """Wakes exactly when the policy asks to, as the app does, up to ``end``."""
    shown: list[tuple[float, Ping]] = []
    while True:
        wakeup = policy.next_wakeup()
        if wakeup is None or wakeup > end:
            return shown
        clock.now = max(clock.now, wakeup)
        policy.update(snapshot())
        shown += [(clock.now, p) for p in policy.due()]
