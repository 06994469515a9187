"""Pure: what one refresh of the app does (:class:`Refresh`), when the app refreshes,
and when a changed menu goes to the tray, so that a storm of file changes costs a few
refreshes and fewer menu rebuilds.

Launchers rewrite their files up to ten times a second each; twenty busy sessions would
otherwise mean two hundred full refreshes a second, and a menu rebuilt for each. Both
gates let the first change after a quiet spell through at once, so an isolated report
still reaches the icon, the menu and the policy without delay.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tray.core.answers.gate import DEFAULT_SETTINGS, AnswerSettings
from tray.core.hosts.remote_sessions import HostStatus, RemoteState
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.policy.notification_policy import NotificationPolicy
from tray.core.policy.observe import observe
from tray.core.policy.wording import Ping
from tray.core.session.model import Session, expired
from tray.core.view.overview import Mutes, Overview, StateSince, build_overview
from tray.core.worker.host_view import HostBacklog, kept_ids, remote_view
from tray.core.worker.marks import AppMemory, forget_missing

# Short enough that a ping or a new icon never seems late, long enough that a busy
# directory costs a handful of refreshes a second.
REFRESH_INTERVAL = 0.25
# A menu whose only change is its text (a message, a percentage, an age) is rebuilt at
# most this often: every hand-over costs far more than a refresh, and a message two
# seconds old is as good to read as a new one. (1.0 cost a busy app, twenty sessions
# each reporting 100 times a second, ~28% more CPU, measured when every hand-over
# rebuilt every item; the gtk and appindicator backends now change the words in place,
# see tray.desktop.gtk_menu, which is cheaper but still sends every changed label.)
MENU_TEXT_PERIOD = 2.0

_NOTHING: Hashable = object()


class RefreshGate:
    """At most one requested refresh per ``interval``; every request is served by the
    next one. A request after a quiet spell goes at once; later ones wait for the
    interval's end and are served together.

    Times are passed in. A clock that goes back (a wall clock set back) opens the gate,
    so it can never stay shut for the size of the jump.
    """

    __slots__ = ("_interval", "_last", "_pending")

    def __init__(self, interval: float = REFRESH_INTERVAL) -> None:
        if interval < 0:
            raise ValueError("interval must not be negative")
        self._interval = interval
        self._last = -math.inf
        self._pending = False

    @property
    def pending(self) -> bool:
        return self._pending

    def request(self) -> None:
        """Something changed; the next refresh must see it."""
        self._pending = True

    def open_at(self, now: float) -> float:
        """From when a refresh may start (``now`` or earlier: at once)."""
        if now < self._last:
            return now
        return self._last + self._interval

    def ready_at(self, now: float) -> float | None:
        """When the pending refresh may run; None while none is pending."""
        return self.open_at(now) if self._pending else None

    def begin(self, now: float) -> bool:
        """Whether to refresh now; if so, the request is taken and the interval starts."""
        ready = self.ready_at(now)
        if ready is None or ready > now:
            return False
        self._pending = False
        self._last = now
        return True


class MenuPacer:
    """Decides when the menu is rebuilt and handed to the tray.

    The caller describes each new state twice. Its ``outline`` is what must show at
    once: the icon, whether pings are paused, and each session's place and state. Its
    ``text`` is the built menu's every word and flag. A new outline, or a change after a
    quiet ``period``, is rebuilt at once; any other change (a message, a percentage, an
    age) waits for the end of the period, and then only the latest state is built. A
    menu the tray already shows is never handed over again.
    """

    __slots__ = ("_last", "_outline", "_period", "_text", "_waiting")

    def __init__(self, period: float = MENU_TEXT_PERIOD) -> None:
        if period < 0:
            raise ValueError("period must not be negative")
        self._period = period
        self._outline: Hashable = _NOTHING
        self._text: Hashable = _NOTHING
        self._last = -math.inf
        self._waiting = False

    def ready(self, outline: Hashable, now: float) -> bool:
        """Whether to build the menu now; if not, it is held until :meth:`due_at`."""
        quiet = now >= self._last + self._period or now < self._last
        if outline != self._outline or quiet:
            return True
        self._waiting = True
        return False

    def offer(self, outline: Hashable, text: Hashable, now: float) -> bool:
        """Whether to hand the menu just built to the tray; if so, it counts as handed."""
        self._waiting = False
        if outline == self._outline and text == self._text:
            return False
        self._outline, self._text, self._last = outline, text, now
        return True

    def due_at(self) -> float | None:
        """When a held change should be built; None when none is held."""
        return self._last + self._period if self._waiting else None


@dataclass(frozen=True, slots=True)
class MenuOutlineItem:
    """One menu item as the user sees it."""

    text: str
    # enabled, visible, default, checked, radio
    flags: tuple[bool, bool, bool, bool | None, bool]
    submenu: tuple[MenuOutlineItem, ...] | None


def menu_text(menu: Any) -> tuple[MenuOutlineItem, ...]:
    """Everything a pystray menu shows: each item's text and flags, submenus included.

    Reading ``text`` runs a callable label, as a backend does when it builds the menu.
    """
    if not menu:
        return ()
    looks: list[MenuOutlineItem] = []
    for item in menu.items:
        submenu = item.submenu
        # Read once: every look at a pystray menu's truth walks all its items again.
        inner = menu_text(submenu) if submenu is not None else ()
        flags = (
            bool(item.enabled),
            bool(item.visible),
            bool(item.default),
            item.checked,
            bool(item.radio),
        )
        looks.append(MenuOutlineItem(str(item.text), flags, inner or None))
    return tuple(looks)


@dataclass(frozen=True, slots=True)
class HostUpdates:
    """What the hosts' links handed over: each host's latest sessions and link health,
    and the first document of each host heard from since the last refresh."""

    states: Mapping[str, RemoteState] = field(default_factory=dict)
    statuses: Mapping[str, HostStatus] = field(default_factory=dict)
    first: Sequence[RemoteState] = ()


@dataclass(frozen=True, slots=True)
class RefreshResult:
    """One refresh's outcome, for the worker to show and send."""

    overview: Overview
    memory: AppMemory  # with the marks of vanished sessions dropped
    mutes: Mutes  # the policy's pause and snoozes, as this overview shows them
    sessions: Mapping[str, Session]  # every session by id, dismissed ones too
    stale: frozenset[str]  # a lost host's sessions
    pings: Sequence[Ping]


class Refresh:
    """One pass of the worker, fed the sessions read and a clock reading: the sessions
    kept, the overview the icon and menu show, and the pings due.

    It owns what must carry over between passes (when each state began, a host's old
    news) and drives the policy; the worker reads the files, shows and sends.
    """

    def __init__(
        self,
        hosts: Sequence[HostConfig],
        keep_ended: float,
        policy: NotificationPolicy,
        *,
        localtime: Callable[[float], time.struct_time] = time.localtime,
        answering: AnswerSettings = DEFAULT_SETTINGS,
    ) -> None:
        self.policy = policy
        self._answering = answering  # which prompts the menu and pings offer to answer
        self._hosts = hosts
        self._keep_ended = keep_ended
        self._localtime = localtime
        self._since = StateSince()
        self._old_news = HostBacklog()

    def run(
        self, local: Sequence[Session], news: HostUpdates, memory: AppMemory, now: float
    ) -> RefreshResult:
        keep_ended = self._keep_ended
        sessions = [s for s in local if not expired(s, now, keep_ended)]
        view = remote_view(
            self._hosts, news.states, news.statuses, now, keep_ended, localtime=self._localtime
        )
        sessions += view.sessions
        for state in news.first:
            self._old_news.note(state, now)
        present = {s.id for s in sessions}
        self._old_news.keep(present)
        memory = forget_missing(memory, kept_ids(memory, present, view.waiting))
        shown = [s for s in sessions if s.id not in memory.dismissed]
        since = self._since.update(shown, now)
        mutes = self.policy.mutes()
        overview = build_overview(
            shown,
            memory,
            since,
            now,
            mutes=mutes,
            stale=view.stale,
            hosts=view.hosts,
            answering=self._answering,
        )
        labels = {row.session_id: row.label for row in overview.rows}
        self.policy.set_unreachable(view.stale)
        # Every prompt (child records too) and every request for attention.
        observations = [o for s in shown for o in observe(s, labels[s.id], now, self._answering)]
        self.policy.update(self._old_news.quiet(observations))
        pings = self.policy.due()
        by_id = {s.id: s for s in sessions}
        return RefreshResult(overview, memory, mutes, by_id, view.stale, pings)


def age_marks(overview: Overview, now: float) -> tuple[int, ...]:
    """Every age the menu shows, sessions' and children's, in whole minutes: the menu
    needs rebuilding when one of them moves, even if the overview itself is unchanged."""
    marks: list[int] = []
    for row in overview.rows:
        marks.append(int((now - row.since) // 60))
        marks.extend(int((now - child.since) // 60) for child in row.children)
    return tuple(marks)


def shown_key(overview: Overview, paused: bool, now: float) -> Hashable:
    """Equal for two refreshes that show the same menu: the worker skips the second."""
    return (overview, paused, age_marks(overview, now))


def menu_outline(overview: Overview, paused: bool) -> Hashable:
    """What must reach the menu at once (see :class:`MenuPacer`). The session ids are in
    it also because two sessions with the same words can swap places, and their actions
    must follow."""
    return (
        overview.icon_state,
        overview.blocked_count,
        paused,
        tuple(
            (row.session_id, row.state, row.alive, row.unseen, row.stale) for row in overview.rows
        ),
        overview.hosts,
    )
