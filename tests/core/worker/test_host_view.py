"""How the app shows and pings other machines' sessions: pure, with a fake clock.

Pings go through the app's own refresh (tray.core.worker.refresh.Refresh), the one the worker
runs: remote_view, build_overview, HostBacklog and the NotificationPolicy. The real
`tray app` against a real sshd is in test_app_hosts.py.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.host_sessions import make_session

from tray.core.config.settings import PolicySettings
from tray.core.hosts.remote_sessions import HostStatus, RemoteState, parse_document
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.hosts.ssh_failures import Failure
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.wording import Ping
from tray.core.session.model import Attention, Session
from tray.core.view.overview import HostLine, Overview, build_overview
from tray.core.worker.host_view import kept_ids, remote_view
from tray.core.worker.marks import AppMemory, forget_missing
from tray.core.worker.refresh import HostUpdates, Refresh
from tray.desktop.tray_menu import build_menu, host_line, row_header, stale_line
from tray.protocol.state import State
from tray.remote.stream import stream_document

T0 = time.mktime((2026, 1, 5, 14, 0, 0, 0, 0, -1))
DEVBOX = HostConfig("devbox", "me@devbox")
LAB = HostConfig("lab", "me@lab")
HOSTS = (DEVBOX, LAB)
DAY = 86400.0


def remote(host: str, *sessions: Session, at: float = T0, initial: bool = False) -> RemoteState:
    state = parse_document(host, stream_document(list(sessions)), at)
    return RemoteState(state.host, state.sessions, state.received_at, initial=initial)


def connected(host: str, at: float = T0) -> HostStatus:
    return HostStatus(host, "connected", at)


def lost(host: str, since: float, last_seen: float) -> HostStatus:
    failure = Failure("refused", f"connection refused by {host}")
    return HostStatus(host, "unreachable", since, failure, last_seen)


# What the app shows.


def test_a_connected_host_shows_its_sessions_labelled() -> None:
    state = remote("devbox", make_session("1-a", now=T0))
    view = remote_view(HOSTS, {"devbox": state}, {"devbox": connected("devbox")}, T0, DAY)
    assert [s.name for s in view.sessions] == ["devbox \u00b7 api"]
    assert view.stale == frozenset()
    assert view.hosts == (HostLine("devbox"), HostLine("lab"))
    assert view.waiting == frozenset({"lab"})


def test_a_lost_host_shows_its_sessions_as_last_seen_and_one_line() -> None:
    state = remote("devbox", make_session("1-a", now=T0))
    status = lost("devbox", T0 + 120, T0 + 60)
    view = remote_view(HOSTS, {"devbox": state}, {"devbox": status}, T0 + 300, DAY)
    (session,) = view.sessions
    assert session.name == "devbox \u00b7 api (last seen 14:01)"
    assert view.stale == {session.id}
    problem = view.hosts[0].problem
    assert problem is not None
    assert problem.startswith("unreachable since 14:02, retrying")
    assert host_line(view.hosts[0]).startswith("devbox: unreachable since 14:02, retrying")


def test_ended_remote_sessions_go_after_keep_ended() -> None:
    ended = make_session("1-old", "done", alive=False, now=T0 - 2 * DAY)
    fresh = make_session("1-new", "done", alive=False, now=T0)
    state = remote("devbox", ended, fresh)
    view = remote_view(HOSTS, {"devbox": state}, {"devbox": connected("devbox")}, T0, DAY)
    assert [s.id for s in view.sessions] == ["host:devbox/1-new"]


def test_marks_of_hosts_not_heard_from_yet_survive_the_first_local_read() -> None:
    memory = AppMemory(
        seen={"host:devbox/1-a": T0, "host:gone/1-b": T0, "1-local-gone": T0},
        dismissed=frozenset({"host:devbox/1-c", "host:lab/1-d"}),
    )
    kept = kept_ids(memory, {"host:lab/1-x"}, waiting={"devbox"})
    after = forget_missing(memory, kept)
    # devbox has not answered yet; lab has, without 1-d; "gone" is no host any more.
    assert dict(after.seen) == {"host:devbox/1-a": T0}
    assert after.dismissed == {"host:devbox/1-c"}


def test_stale_sessions_count_for_nothing_in_the_icon() -> None:
    blocked = remote("devbox", make_session("1-a", now=T0))
    status = lost("devbox", T0 + 120, T0 + 60)
    view = remote_view(HOSTS, {"devbox": blocked}, {"devbox": status}, T0 + 300, DAY)
    local = make_session("9-local", "working", now=T0)
    overview = build_overview(
        [local, *view.sessions], AppMemory(), {}, T0 + 300, stale=view.stale, hosts=view.hosts
    )
    assert overview.icon_state == State.WORKING
    assert overview.blocked_count == 0
    assert overview.tooltip == "1 working \u00b7 devbox unreachable"
    stale_row = overview.rows[-1]
    assert stale_row.stale
    assert stale_row.state == "blocked"  # what it last said, shown as such
    assert not stale_row.focusable
    assert not stale_row.needs_you


@pytest.fixture
def pystray_module(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    yield importlib.import_module("pystray")


def _texts(menu: Any, pystray: Any) -> list[str]:
    return ["---" if item is pystray.Menu.SEPARATOR else item.text for item in menu]


class _Actions:
    paused = False

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


def test_the_menu_groups_each_hosts_sessions_under_its_name(pystray_module: Any) -> None:
    now = T0 + 300
    devbox = remote("devbox", make_session("1-a", now=T0), make_session("1-b", "working", now=T0))
    lab = remote("lab", make_session("2-a", now=T0, name="web"))
    statuses = {"devbox": connected("devbox"), "lab": lost("lab", T0 + 120, T0 + 60)}
    view = remote_view(HOSTS, {"devbox": devbox, "lab": lab}, statuses, now, DAY)
    local = make_session("9-local", "working", now=T0, name="here")
    overview = build_overview(
        [local, *view.sessions], AppMemory(), {}, now, stale=view.stale, hosts=view.hosts
    )
    menu = build_menu(overview, _Actions(), now)
    rows = {row.session_id: row for row in overview.rows}
    lab_row = rows["host:lab/2-a"]
    assert _texts(menu, pystray_module)[:9] == [
        row_header(rows["9-local"], now),
        "---",
        "devbox",
        row_header(rows["host:devbox/1-a"], now),
        row_header(rows["host:devbox/1-b"], now),
        "---",
        host_line(view.hosts[1]),
        stale_line(lab_row),
        "---",
    ]
    assert stale_line(lab_row) == "lab \u00b7 web (last seen 14:01) \u2014 was blocked (permission)"
    items = list(menu)
    # The host lines and the stale session are grey: nothing there can be acted on.
    assert not items[2].enabled
    assert not items[6].enabled
    assert not items[7].enabled
    assert items[7].submenu is None
    # A host that is fine and has no sessions takes no room; a lost one says so.
    quiet = build_overview([local], AppMemory(), {}, now, hosts=(HostLine("devbox"),))
    assert "devbox" not in _texts(build_menu(quiet, _Actions(), now), pystray_module)
    alone = build_overview([], AppMemory(), {}, now, hosts=(HostLine("devbox", "unreachable"),))
    assert _texts(build_menu(alone, _Actions(), now), pystray_module)[:4] == [
        "No sessions",
        "---",
        "devbox: unreachable",
        "---",
    ]


def test_stale_ended_sessions_do_not_enable_clear_all_finished(pystray_module: Any) -> None:
    now = T0 + 300
    state = remote("devbox", make_session("1-a", "done", alive=False, now=T0))
    status = lost("devbox", T0 + 120, T0 + 60)
    view = remote_view(HOSTS, {"devbox": state}, {"devbox": status}, now, DAY)
    overview = build_overview(
        list(view.sessions), AppMemory(), {}, now, stale=view.stale, hosts=view.hosts
    )
    clear = next(item for item in build_menu(overview, _Actions(), now) if "Clear" in item.text)
    assert not clear.enabled


# What the app pings.


class Worker:
    """The app's own refresh (tray.core.worker.refresh.Refresh, as the worker runs it) for
    remote sessions, fed what the links would hand over; minus files and the screen."""

    def __init__(self, **settings: Any) -> None:
        self.now = T0
        defaults: dict[str, Any] = {"settle": 0.0, "done_after": 0.0, "remind": 300.0}
        self.policy = NotificationPolicy(
            PolicySettings(**{**defaults, **settings}), lambda: self.now, lambda _: 0
        )
        self.refresher = Refresh(HOSTS, DAY, self.policy)
        self.states: dict[str, RemoteState] = {}
        self.statuses: dict[str, HostStatus] = {}
        self.first: list[RemoteState] = []
        self.memory = AppMemory()
        self.overview: Overview | None = None

    def deliver(self, state: RemoteState) -> None:
        self.states[state.host] = state
        self.statuses[state.host] = connected(state.host, self.now)
        if state.initial:
            self.first.append(state)

    def lose(self, host: str) -> None:
        self.statuses[host] = lost(host, self.now, self.now)

    def refresh(self, at: float) -> list[Ping]:
        self.now = at
        news = HostUpdates(dict(self.states), dict(self.statuses), self.first)
        self.first = []
        shown = self.refresher.run([], news, self.memory, at)
        self.memory = shown.memory
        self.overview = shown.overview
        return list(shown.pings)


def titles(pings: list[Ping]) -> list[str]:
    return [ping.title for ping in pings]


def test_a_remote_prompt_pings_with_the_hosts_name() -> None:
    worker = Worker()
    assert worker.refresh(T0) == []  # the app's own first look: nothing from hosts yet
    blocked = make_session("1-a", msg="approve Bash: git push", now=T0)
    worker.deliver(remote("devbox", blocked, at=T0 + 1, initial=True))
    (ping,) = worker.refresh(T0 + 1)
    assert ping.title == "devbox \u00b7 api needs approval"
    assert ping.body == "approve Bash: git push"
    assert ping.session_ids == ("host:devbox/1-a",)
    assert worker.refresh(T0 + 2) == []


def test_a_hosts_first_document_announces_prompts_but_not_old_news() -> None:
    worker = Worker()
    worker.refresh(T0)
    bell = Attention(seq=3, at=T0 - 5, source="bell")
    done = dataclasses.replace(
        make_session("1-d", "done", msg="built", now=T0 - 60), attention=(bell,)
    )
    failed = make_session("1-e", "error", msg="tests failed", now=T0 - 60)
    blocked = make_session("1-b", now=T0 - 60)
    worker.deliver(remote("devbox", done, failed, blocked, at=T0 + 1, initial=True))
    assert titles(worker.refresh(T0 + 1)) == ["devbox \u00b7 api needs approval"]

    # Later news of the same sessions pings: a new bell, a new finish.
    bell2 = Attention(seq=4, at=T0 + 10, source="bell")
    worker.deliver(
        remote("devbox", dataclasses.replace(done, attention=(bell, bell2)), failed, blocked)
    )
    assert titles(worker.refresh(T0 + 10)) == ["devbox \u00b7 api rang the bell"]
    done_again = make_session("1-d", "done", msg="built again", now=T0 + 20)
    worker.deliver(remote("devbox", done_again, failed, blocked, at=T0 + 20))
    assert titles(worker.refresh(T0 + 20)) == ["devbox \u00b7 api finished"]


def test_a_lost_host_never_pings_and_its_told_prompt_stays_told_when_it_is_back() -> None:
    worker = Worker()
    worker.refresh(T0)
    blocked = make_session("1-a", msg="approve Bash: git push", now=T0)
    worker.deliver(remote("devbox", blocked, at=T0 + 1, initial=True))
    assert len(worker.refresh(T0 + 1)) == 1

    worker.lose("devbox")
    # An hour unreachable: reminders (5 min, 10, 20, 40) would all have fallen due.
    for minute in range(1, 61):
        assert worker.refresh(T0 + 1 + 60 * minute) == [], minute

    # Back, with the same prompt still waiting and a new one from another session.
    back = T0 + 3700
    worker.now = back
    new = make_session("1-n", msg="approve Bash: rm -rf build", name="web", now=back)
    worker.deliver(remote("devbox", blocked, new, at=back))
    pings = worker.refresh(back)
    assert titles(pings) == ["devbox \u00b7 web needs approval"]
    assert pings[0].body == "approve Bash: rm -rf build"
    assert worker.refresh(back + 1) == []


def test_a_prompt_that_began_while_the_host_was_lost_pings_once_when_it_is_back() -> None:
    worker = Worker()
    worker.refresh(T0)
    worker.deliver(remote("devbox", make_session("1-a", "working", now=T0), initial=True))
    assert worker.refresh(T0 + 1) == []
    worker.lose("devbox")
    assert worker.refresh(T0 + 60) == []
    blocked = make_session("1-a", msg="approve Bash: make", now=T0 + 90)
    worker.deliver(remote("devbox", blocked, at=T0 + 120))
    assert titles(worker.refresh(T0 + 120)) == ["devbox \u00b7 api needs approval"]
    assert worker.refresh(T0 + 121) == []


def test_a_users_snooze_outlasts_an_outage() -> None:
    worker = Worker()
    worker.refresh(T0)
    worker.deliver(remote("devbox", make_session("1-a", now=T0), initial=True))
    assert len(worker.refresh(T0 + 1)) == 1
    until = T0 + 7200
    worker.policy.snooze("host:devbox/1-a", until)
    worker.lose("devbox")
    worker.refresh(T0 + 60)
    worker.deliver(remote("devbox", make_session("1-a", now=T0), at=T0 + 120))
    worker.refresh(T0 + 120)
    assert worker.policy.snoozed_until("host:devbox/1-a") == until
    assert worker.overview is not None
    row = worker.overview.row("host:devbox/1-a")
    assert row is not None and row.snoozed_until == until


def test_a_lost_hosts_sessions_come_last_in_the_order_they_had() -> None:
    state = remote(
        "devbox",
        make_session("1-w", "working", name="web", now=T0 + 5),
        make_session("1-b", name="api", now=T0),
    )
    status = lost("devbox", T0 + 120, T0 + 60)
    view = remote_view(HOSTS, {"devbox": state}, {"devbox": status}, T0 + 300, DAY)
    local = make_session("9-local", "done", alive=False, now=T0)
    overview = build_overview(
        [local, *view.sessions], AppMemory(), {}, T0 + 300, stale=view.stale, hosts=view.hosts
    )
    assert [row.session_id for row in overview.rows] == [
        "9-local",
        "host:devbox/1-b",
        "host:devbox/1-w",
    ]
