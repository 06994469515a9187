"""Properties of the notification policy over generated scenarios: the burst bound,
settling, pause, snooze and focus, determinism, and wake-ups never too late."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from helpers.policy_scenarios import START, FakeClock, utc_minute
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tray.core.config.settings import PolicySettings
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.observe import Observation
from tray.core.policy.wording import Ping
from tray.core.session.model import Attention
from tray.protocol.state import State

# -- properties ------------------------------------------------------------------------

STATE_CHOICES = [None, "idle", "working", "blocked", "blocked", "error", "done"]
SESSIONS = ["a", "b", "c", "d", "e", "f"]


@dataclass
class Scenario:
    settings: PolicySettings
    steps: list[tuple[str, object]] = field(default_factory=list)


snapshot = st.lists(
    st.tuples(
        st.sampled_from(STATE_CHOICES),
        st.sampled_from([None, "permission", "question"]),
        st.sampled_from([None, "x", "y"]),
        st.sampled_from([False, False, False, True]),  # typing right now
        st.sampled_from([None, 10.0, 60.0]),  # run seconds
    ),
    min_size=len(SESSIONS),
    max_size=len(SESSIONS),
)


Snapshot = list[tuple[str | None, str | None, str | None, bool, float | None]]
Tick = tuple[object, Snapshot | None, bool, float]


def flatten(ticks: list[Tick]) -> list[tuple[str, object]]:
    steps: list[tuple[str, object]] = []
    for pause, snapshot_, call_due, seconds in ticks:
        if pause == "resume":
            steps.append(("resume", None))
        elif pause is not None:
            steps.append(("pause", pause))
        if snapshot_ is not None:
            steps.append(("update", snapshot_))
        if call_due:
            steps.append(("due", None))
        steps.append(("advance", seconds))
    return steps


# One tick: maybe pause or resume, maybe a snapshot, maybe ask for pings, then time passes.
tick = st.tuples(
    st.sampled_from([None] * 8 + [0.5, 3.0, 20.0, "resume"]),
    # Mostly no new snapshot, so that states last long enough to settle and ping: the
    # properties below hold only for scenarios that send, and they say so with assume().
    st.one_of(st.none(), st.none(), st.none(), snapshot),
    st.booleans(),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 31.0]),
)
scenarios = st.builds(
    Scenario,
    settings=st.builds(
        PolicySettings,
        settle=st.sampled_from([0.0, 0.5, 1.0, 2.5]),
        dedup_window=st.sampled_from([0.0, 5.0, 30.0]),
        burst=st.integers(min_value=0, max_value=4),
        burst_window=st.sampled_from([2.5, 10.0]),
        done_after=st.sampled_from([0.0, 30.0]),
    ),
    steps=st.lists(tick, max_size=40).map(flatten),
)


@dataclass
class Run:
    pings: list[tuple[int, float, Ping]]  # (step, time, ping)
    history: dict[str, list[tuple[int, float, str | None]]]  # session -> (step, time, state)
    pauses: list[list[float]]  # [start, end) as the test sees them
    paused_pings: list[Ping]  # pings given while a pause was on
    early: list[float]  # times due() gave pings before next_wakeup said it might


def play(scenario: Scenario) -> Run:
    clock = FakeClock()
    policy = NotificationPolicy(scenario.settings, clock, utc_minute)
    run = Run([], {s: [] for s in SESSIONS}, [], [], [])
    promised = float("inf")
    for index, (kind, arg) in enumerate(scenario.steps):
        if kind == "advance":
            assert isinstance(arg, float)
            clock.advance(arg)
            continue
        if kind == "update":
            assert isinstance(arg, list)
            observations = []
            for sid, (state, k, msg, typing, seconds) in zip(SESSIONS, arg, strict=True):
                run.history[sid].append((index, clock.now, state))
                observations.append(
                    Observation(
                        sid,
                        sid.upper(),
                        state,
                        k,
                        msg,
                        None,
                        True,
                        seconds,
                        clock.now if typing else None,
                    )
                )
            policy.update(observations)
        elif kind == "due":
            pings = policy.due()
            if pings and clock.now < promised:
                run.early.append(clock.now)
            run.pings += [(index, clock.now, p) for p in pings]
            if any(start <= clock.now < end for start, end in run.pauses):
                run.paused_pings += pings
        elif kind == "pause":
            assert isinstance(arg, float)
            for pause in run.pauses:
                pause[1] = min(pause[1], clock.now)
            run.pauses.append([clock.now, clock.now + arg])
            policy.pause(clock.now + arg)
        else:
            for pause in run.pauses:
                pause[1] = min(pause[1], clock.now)
            policy.resume()
        wakeup = policy.next_wakeup()
        promised = float("inf") if wakeup is None else wakeup
    return run


def state_entered(
    history: list[tuple[int, float, str | None]], step: int
) -> tuple[str | None, float]:
    """The state a session had at ``step`` and since when, per the updates it got."""
    current: str | None = None
    since = -1.0
    for index, at, state in history:
        if index > step:
            break
        if state != current or since < 0:
            current, since = state, at
    return current, since


# Most generated scenarios send nothing; assume() keeps the ones that do.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios)
def test_never_more_than_burst_plus_one_in_any_window(scenario: Scenario) -> None:
    run = play(scenario)
    # Only a scenario that pings more than once says anything about a window.
    assume(len(run.pings) >= 2)
    times = [t for _, t, _ in run.pings]
    window = scenario.settings.burst_window
    for start in times:
        inside = sum(1 for t in times if start <= t < start + window)
        assert inside <= scenario.settings.burst + 1


# Most generated scenarios send nothing; assume() keeps the ones that do.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios)
def test_no_ping_without_settling_in_a_pinging_state(scenario: Scenario) -> None:
    run = play(scenario)
    assume(run.pings)
    for index, moment, ping in run.pings:
        for session_id in ping.session_ids:
            state, since = state_entered(run.history[session_id], index)
            assert state in {"blocked", "error", "done"}
            assert moment - since >= scenario.settings.settle


# Most generated scenarios send nothing; assume() keeps the ones that do.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios)
def test_no_ping_while_paused(scenario: Scenario) -> None:
    # Only scenarios whose pauses matter: the same steps without pausing would ping
    # inside a pause window.
    unpaused = Scenario(
        scenario.settings, [step for step in scenario.steps if step[0] not in ("pause", "resume")]
    )
    windows = play(scenario).pauses
    would = [t for _, t, _ in play(unpaused).pings if any(a <= t < b for a, b in windows)]
    assume(would)
    assert play(scenario).paused_pings == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(scenarios)
def test_the_policy_is_deterministic(scenario: Scenario) -> None:
    first = play(scenario)
    assume(first.pings)  # two runs that send nothing would agree for any policy
    assert play(scenario) == first


@settings(max_examples=300, deadline=None)
@given(scenarios)
def test_next_wakeup_is_never_too_late(scenario: Scenario) -> None:
    assert play(scenario).early == []


@settings(max_examples=200, deadline=None)
@given(scenarios)
def test_every_ping_names_known_sessions_once(scenario: Scenario) -> None:
    for _, _, ping in play(scenario).pings:
        assert ping.session_ids
        assert len(set(ping.session_ids)) == len(ping.session_ids)
        assert set(ping.session_ids) <= set(SESSIONS)
        assert ping.urgency in ("critical", "normal")


# -- properties over every kind of input -----------------------------------------------

RICH_SESSIONS = ["a", "b", "c", "d"]
EVENT_SOURCES = ["osc9", "osc777", "osc99", "bell", "command"]

# A new attention event: source, OSC 99 condition, exit status, whether it has a title.
new_event = st.tuples(
    st.sampled_from(EVENT_SOURCES),
    st.sampled_from(["always", "unfocused", "invisible"]),
    st.sampled_from([0, 2]),
    st.booleans(),
)
rich_snapshot = st.lists(
    st.tuples(
        st.sampled_from(STATE_CHOICES),
        st.sampled_from([None, "permission", "question"]),
        st.sampled_from([None, "x", "y"]),
        st.booleans(),  # typing right now
        st.sampled_from(["focused", "unfocused", "unknown"]),
        st.one_of(st.none(), new_event),
        st.booleans(),  # whether since is reported
        st.booleans(),  # a blocked child record besides
    ),
    min_size=len(RICH_SESSIONS),
    max_size=len(RICH_SESSIONS),
)
EventSpec = tuple[str, str, int, bool]
SessionSpec = tuple[str | None, str | None, str | None, bool, str, EventSpec | None, bool, bool]
Action = tuple[str, str, float]  # (what, session, seconds)
RichTick = tuple[Action | None, list[SessionSpec] | None, bool, float]
action = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.tuples(st.just("pause"), st.just(""), st.sampled_from([3.0, 60.0])),
    st.just(("resume", "", 0.0)),
    st.tuples(st.just("snooze"), st.sampled_from(RICH_SESSIONS), st.sampled_from([3.0, 400.0])),
    st.tuples(st.just("unsnooze"), st.sampled_from(RICH_SESSIONS), st.just(0.0)),
)
rich_tick = st.tuples(
    action,
    st.one_of(st.none(), rich_snapshot),
    st.booleans(),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.5, 5.0, 31.0, 200.0]),
)
rich_settings = st.builds(
    PolicySettings,
    settle=st.sampled_from([0.0, 0.5, 1.0]),
    dedup_window=st.sampled_from([0.0, 5.0, 30.0]),
    burst=st.integers(min_value=0, max_value=4),
    burst_window=st.sampled_from([2.5, 10.0]),
    typing_grace=st.sampled_from([0.0, 5.0]),
    done_after=st.sampled_from([0.0, 30.0]),
    when_focused=st.booleans(),
    terminal_notifications=st.booleans(),
    remind=st.sampled_from([0.0, 5.0, 60.0]),
)


@dataclass
class RichRun:
    pings: list[tuple[float, Ping]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def play_rich(config: PolicySettings, ticks: list[RichTick]) -> RichRun:
    """Drives the policy as the app would, checking after each due() what must hold."""
    clock = FakeClock()
    policy = NotificationPolicy(config, clock, utc_minute)
    run = RichRun()
    pauses: list[list[float]] = []
    snoozes: dict[str, list[list[float]]] = {s: [] for s in RICH_SESSIONS}
    focus = dict.fromkeys(RICH_SESSIONS, "unknown")
    typed: dict[str, float | None] = dict.fromkeys(RICH_SESSIONS)
    conditions: dict[str, tuple[str | None, ...]] = {}
    since: dict[str, float] = {}
    events: dict[str, list[Attention]] = {s: [] for s in RICH_SESSIONS}
    promised: float = math.inf

    def end(spans: list[list[float]]) -> None:
        for span in spans:
            span[1] = min(span[1], clock.now)

    for act, snapshot_, call_due, seconds in ticks:
        if act is not None:
            what, target, length = act
            if what == "pause":
                end(pauses)
                pauses.append([clock.now, clock.now + length])
                policy.pause(clock.now + length)
            elif what == "resume":
                end(pauses)
                policy.resume()
            elif what == "snooze":
                end(snoozes[target])
                snoozes[target].append([clock.now, clock.now + length])
                policy.snooze(target, clock.now + length)
            else:
                end(snoozes[target])
                policy.unsnooze(target)
        if snapshot_ is not None:
            observations: list[Observation] = []
            for sid, entry in zip(RICH_SESSIONS, snapshot_, strict=True):
                state, kind, msg, typing, seen, event, report, child = entry
                focus[sid] = seen
                if typing:
                    typed[sid] = clock.now
                if conditions.get(sid) != (state, kind, msg):
                    conditions[sid] = (state, kind, msg)
                    since[sid] = clock.now
                if event is not None:
                    source, condition, code, titled = event
                    command = source == "command"
                    events[sid].append(
                        Attention(
                            len(events[sid]) + 1,
                            clock.now,
                            source,
                            "T" if titled else None,
                            "B",
                            condition,
                            code if command else None,
                            40.0 if command else None,
                        )
                    )
                lead = Observation(
                    session_id=sid,
                    label=sid.upper(),
                    state=None if state is None else State(state),
                    kind=kind,
                    msg=msg,
                    run_seconds=60.0,
                    last_input_at=typed[sid],
                    record_id="" if state in ("blocked", "error", "done") else None,
                    since=since[sid] if report else None,
                    focus=seen,
                    attention=tuple(events[sid][-8:]),
                )
                observations.append(lead)
                if child:
                    observations.append(
                        replace(
                            lead,
                            state=State.BLOCKED,
                            kind="permission",
                            msg="child",
                            record_id="agent/1",
                            lead=False,
                            child="helper",
                            since=START,
                            attention=(),
                        )
                    )
            policy.update(observations)
        if act is not None or snapshot_ is not None:
            # A new snapshot or a pause changes what may come; the promise is renewed.
            wakeup = policy.next_wakeup()
            promised = math.inf if wakeup is None else wakeup
        if call_due:
            pings = policy.due()
            if pings and clock.now < promised:
                run.violations.append(f"early at {clock.now}")
            for ping in pings:
                run.pings.append((clock.now, ping))
                if any(a <= clock.now < b for a, b in pauses):
                    run.violations.append(f"paused at {clock.now}")
                for sid in ping.session_ids:
                    if any(a <= clock.now < b for a, b in snoozes[sid]):
                        run.violations.append(f"{sid} snoozed at {clock.now}")
                    if focus[sid] == "focused" and not config.when_focused:
                        run.violations.append(f"{sid} focused at {clock.now}")
                if len(set(ping.session_ids)) != len(ping.session_ids) or not ping.session_ids:
                    run.violations.append(f"bad session ids {ping.session_ids}")
        wakeup = policy.next_wakeup()
        promised = math.inf if wakeup is None else wakeup
        clock.advance(seconds)
    return run


@settings(max_examples=400, deadline=None)
@given(rich_settings, st.lists(rich_tick, max_size=40))
def test_rich_nothing_while_paused_snoozed_or_focused_and_never_early(
    config: PolicySettings, ticks: list[RichTick]
) -> None:
    assert play_rich(config, ticks).violations == []


@settings(max_examples=300, deadline=None)
@given(rich_settings, st.lists(rich_tick, max_size=40))
def test_rich_never_more_than_burst_plus_one_in_any_window(
    config: PolicySettings, ticks: list[RichTick]
) -> None:
    times = [t for t, _ in play_rich(config, ticks).pings]
    for start in times:
        inside = sum(1 for t in times if start <= t < start + config.burst_window)
        assert inside <= config.burst + 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(rich_settings, st.lists(rich_tick, max_size=40))
def test_rich_the_policy_is_deterministic(config: PolicySettings, ticks: list[RichTick]) -> None:
    first = play_rich(config, ticks)
    assume(first.pings)  # as above: only runs that send something say anything
    assert play_rich(config, ticks) == first
