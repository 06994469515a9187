"""The tray menu built from an overview, driven through pystray's own item objects."""

from __future__ import annotations

import importlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL, AnswerTarget
from tray.core.hosts.remote_sessions import clock_time
from tray.core.view.overview import ChildRow, Overview, Row
from tray.core.worker.user_actions import (
    PAUSE_SECONDS,
    Answer,
    ClearFinished,
    Copy,
    Dismiss,
    Focus,
    MarkSeen,
    Pause,
    Resume,
    Snooze,
    Unsnooze,
    UserAction,
)
from tray.desktop.tray_menu import (
    CHILD_INDENT,
    HEADER_WIDTH,
    MESSAGE_WIDTH,
    NO_SESSIONS,
    PAUSE,
    RESUME,
    SNOOZE,
    UNSNOOZE,
    build_menu,
    child_line,
    row_header,
    shorten,
)
from tray.protocol.state import State

NOW = 10_000.0
ICON = object()  # stands in for the pystray.Icon that backends pass to actions


@pytest.fixture(autouse=True)
def pystray_without_display(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Menus need only pystray's pure classes; the dummy backend imports without X.

    The variable is restored after the test so subprocesses started by other tests
    still choose their own backend.
    """
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    yield importlib.import_module("pystray")


@dataclass
class FakeMenuActions:
    """The app as the menu reaches it: keeps what the items post. Its clock stands
    where the test puts it, so an action's time shows it was taken at the click."""

    paused: bool = False
    clock: float = NOW
    posted: list[UserAction] = field(default_factory=list)
    quits: int = 0

    def now(self) -> float:
        return self.clock

    def post(self, action: UserAction) -> None:
        self.posted.append(action)
        # As the app's worker would, for the Pause item to read.
        if isinstance(action, Pause | Resume):
            self.paused = isinstance(action, Pause)

    def quit(self) -> None:
        self.quits += 1


def make_row(session_id: str = "s1", **changes: Any) -> Row:
    row = Row(
        session_id=session_id,
        label="api · ~/src/api",
        state=State.BLOCKED,
        kind="question",
        since=NOW - 300,
        msg="Allow edits to config.toml?",
        alive=True,
        exit_code=None,
        unseen=False,
        focusable=True,
    )
    return replace(row, **changes)


def overview(*rows: Row) -> Overview:
    return Overview(icon_state="calm", blocked_count=0, tooltip="t", rows=rows)


SEPARATOR = "---"


def texts(menu: Any) -> list[str]:
    separator = importlib.import_module("pystray").Menu.SEPARATOR
    return [SEPARATOR if item is separator else item.text for item in menu]


def find(menu: Any, text: str) -> Any:
    matches = [item for item in menu if item.text == text]
    assert len(matches) == 1, (text, texts(menu))
    return matches[0]


def test_no_sessions() -> None:
    actions = FakeMenuActions()
    menu = build_menu(overview(), actions, NOW)
    assert texts(menu) == [NO_SESSIONS, SEPARATOR, "Clear all finished", PAUSE, "Quit"]
    assert not find(menu, NO_SESSIONS).enabled
    assert not find(menu, "Clear all finished").enabled
    menu(ICON)  # a left click with no default does nothing
    assert actions.posted == []


def test_one_submenu_per_session_in_overview_order() -> None:
    rows = (
        make_row("a", label="first"),
        make_row("b", label="second", state="working", kind=None, msg=None),
        make_row("c", label="third", state="done", kind=None, alive=False, exit_code=0),
    )
    menu = build_menu(overview(*rows), FakeMenuActions(), NOW)
    headers = [item.text for item in menu if item.submenu is not None]
    assert headers == [
        "first — blocked (question) 5m",
        "second — working 5m",
        "third — done, ended 5m",
    ]


def test_submenu_items_follow_the_row() -> None:
    row = make_row("a", msg="x" * 200, focusable=True, unseen=False, alive=True)
    submenu = find(build_menu(overview(row), FakeMenuActions(), NOW), row_header(row, NOW)).submenu
    message = next(iter(submenu))
    assert message.text == "x" * (MESSAGE_WIDTH - 1) + "…"
    assert not message.enabled
    assert texts(submenu)[1] == SEPARATOR
    separator = importlib.import_module("pystray").Menu.SEPARATOR
    enabled = {item.text: item.enabled for item in submenu if item is not separator}
    assert enabled == {
        message.text: False,
        "Focus": True,
        "Copy message": True,
        "Mark seen": False,
        SNOOZE: True,
        "Dismiss": False,
    }

    other = make_row("b", msg=None, focusable=False, unseen=True, alive=False, state="error")
    submenu = find(
        build_menu(overview(other), FakeMenuActions(), NOW), row_header(other, NOW)
    ).submenu
    enabled = {item.text: item.enabled for item in submenu}
    assert enabled == {
        "Focus": False,
        "Copy message": False,
        "Mark seen": True,
        # An ended session sends nothing more to snooze.
        SNOOZE: False,
        "Dismiss": True,
    }


def test_items_run_their_action_for_their_session() -> None:
    actions = FakeMenuActions()
    rows = (make_row("a", label="one"), make_row("b", label="two", unseen=True, alive=False))
    menu = build_menu(overview(*rows), actions, NOW)
    for row in rows:
        submenu = find(menu, row_header(row, NOW)).submenu
        for text in ("Focus", "Copy message", "Mark seen", SNOOZE, "Dismiss"):
            find(submenu, text)(ICON)
    assert actions.posted == [
        action
        for sid in ("a", "b")
        for action in (
            Focus(sid),
            Copy(sid),
            MarkSeen(sid, NOW),
            Snooze((sid,), NOW + PAUSE_SECONDS),
            Dismiss(sid),
        )
    ]


def test_app_items() -> None:
    actions = FakeMenuActions()
    menu = build_menu(overview(make_row(state="done", alive=False)), actions, NOW)
    clear = find(menu, "Clear all finished")
    assert clear.enabled
    clear(ICON)
    find(menu, "Quit")(ICON)
    assert actions.posted == [ClearFinished()]
    assert actions.quits == 1


def test_pause_item_toggles_and_follows_the_state() -> None:
    actions = FakeMenuActions()
    menu = build_menu(overview(), actions, NOW)
    actions.clock = NOW + 30  # the pause's hour runs from the click
    find(menu, PAUSE)(ICON)
    assert actions.posted == [Pause(NOW + 30 + PAUSE_SECONDS)]
    # The same menu object now offers to resume: the text is read when shown.
    find(menu, RESUME)(ICON)
    assert actions.posted == [Pause(NOW + 30 + PAUSE_SECONDS), Resume()]
    assert PAUSE in texts(menu)

    paused = FakeMenuActions(paused=True)
    assert RESUME in texts(build_menu(overview(), paused, NOW))


def test_left_click_focuses_the_most_urgent_session_when_it_can() -> None:
    actions = FakeMenuActions()
    rows = (make_row("urgent"), make_row("later"))
    menu = build_menu(overview(*rows), actions, NOW)
    menu(ICON)
    assert actions.posted == [Focus("urgent")]
    # The default item is not shown twice: it lives in the session's submenu.
    assert "Focus" not in texts(menu)

    actions = FakeMenuActions()
    rows = (make_row("urgent", focusable=False), make_row("later"))
    build_menu(overview(*rows), actions, NOW)(ICON)
    assert actions.posted == []


def test_clear_is_disabled_when_nothing_finished() -> None:
    menu = build_menu(overview(make_row(state="working", alive=True)), FakeMenuActions(), NOW)
    assert not find(menu, "Clear all finished").enabled


def test_header_without_state() -> None:
    alive = make_row(state=None, kind=None)
    ended = make_row(state=None, kind=None, alive=False)
    assert row_header(alive, NOW) == "api · ~/src/api — running 5m"
    assert row_header(ended, NOW) == "api · ~/src/api — ended 5m"


def test_long_labels_and_messages_stay_on_one_short_line() -> None:
    row = make_row(label="l" * 300, msg="a\nb\t c" + " " * 10)
    assert len(row_header(row, NOW)) <= 80
    assert shorten("a\nb\t c \u202e  ", 60) == "a b c"
    assert shorten("abcdef", 6) == "abcdef"
    assert shorten("abcdefg", 6) == "abcde…"


# -- sub-agents and tasks ------------------------------------------------------------------


def child(record_id: str, **changes: Any) -> ChildRow:
    made = ChildRow(
        record_id=record_id,
        label=record_id,
        state=State.WORKING,
        kind=None,
        progress=None,
        msg=None,
        since=NOW - 120,
    )
    return replace(made, **changes)


def test_children_sit_indented_under_their_session_in_order() -> None:
    kids = (
        child("t1", label="tests", state="blocked", kind="permission", msg="approve rm -rf build"),
        child("t2", label="lint", progress=40, since=NOW - 30),
    )
    rows = (
        make_row("a", label="api", children=kids, more_children=3),
        make_row("b", label="docs", state="working", kind=None, msg=None),
    )
    menu = build_menu(overview(*rows), FakeMenuActions(), NOW)
    assert texts(menu)[:5] == [
        "api — blocked (question) 5m",
        CHILD_INDENT + "tests — blocked (permission) 2m · approve rm -rf build",
        CHILD_INDENT + "lint — working 40% 30s",
        CHILD_INDENT + "and 3 more",
        "docs — working 5m",
    ]
    more = find(menu, CHILD_INDENT + "and 3 more")
    assert not more.enabled
    assert more.submenu is None


def test_a_child_line_has_focus_and_copy_for_its_own_message() -> None:
    kids = (child("t1", label="tests", msg="approve rm"), child("t2", label="lint"))
    actions = FakeMenuActions()
    row = make_row("a", children=kids, focusable=True)
    menu = build_menu(overview(row), actions, NOW)
    first = find(menu, child_line(kids[0], NOW)).submenu
    assert texts(first) == ["approve rm", SEPARATOR, "Focus", "Copy message"]
    find(first, "Focus")(ICON)
    find(first, "Copy message")(ICON)
    second = find(menu, child_line(kids[1], NOW)).submenu
    assert {item.text: item.enabled for item in second} == {"Focus": True, "Copy message": False}
    assert actions.posted == [Focus("a"), Copy("a", "t1")]

    unfocusable = make_row("b", children=kids, focusable=False)
    menu = build_menu(overview(unfocusable), FakeMenuActions(), NOW)
    assert not find(find(menu, child_line(kids[0], NOW)).submenu, "Focus").enabled


def test_child_lines_stay_on_one_short_line() -> None:
    line = child_line(child("t", label="x" * 200, msg="m" * 200), NOW)
    assert line.startswith(CHILD_INDENT + "x")
    assert len(line) <= HEADER_WIDTH
    assert "— working 2m · m" in line
    assert (
        child_line(child("t", label="lint", state="done"), NOW) == CHILD_INDENT + "lint — done 2m"
    )


# -- needs you, progress, snooze ------------------------------------------------------------


def test_header_shows_progress_needs_you_and_snooze() -> None:
    until = NOW + 1800
    row = make_row(state="working", kind=None, progress=42)
    assert row_header(row, NOW) == "api · ~/src/api — working 42% 5m"
    row = make_row(state="working", kind=None, needs_you=True)
    assert row_header(row, NOW) == "api · ~/src/api — working 5m · needs you"
    row = make_row(snoozed_until=until)
    assert row_header(row, NOW) == (
        f"api · ~/src/api — blocked (question) 5m · snoozed until {clock_time(until)}"
    )


def test_a_long_label_gives_way_to_the_markers() -> None:
    row = make_row(label="l" * 300, needs_you=True, snoozed_until=NOW + 60)
    header = row_header(row, NOW)
    assert len(header) <= HEADER_WIDTH
    assert header.endswith(f"· needs you · snoozed until {clock_time(NOW + 60)}")


def test_clock_time_is_local_hours_and_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    # NOW is 02:46:40 UTC on 1 January 1970, 12:46:40 in a zone ten hours ahead: the
    # local hours and minutes, two digits each, and the seconds dropped, not rounded.
    try:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        assert clock_time(NOW) == "02:46"
        monkeypatch.setenv("TZ", "XYZ-10")
        time.tzset()
        assert clock_time(NOW) == "12:46"
        assert clock_time(NOW + 19) == "12:46"
        assert clock_time(NOW + 20) == "12:47"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_mark_seen_clears_a_bell() -> None:
    actions = FakeMenuActions()
    row = make_row("a", state="working", needs_you=True, unseen=False)
    submenu = find(build_menu(overview(row), actions, NOW), row_header(row, NOW)).submenu
    mark = find(submenu, "Mark seen")
    assert mark.enabled
    actions.clock = NOW + 5  # seen when clicked, not when the menu was built
    mark(ICON)
    assert actions.posted == [MarkSeen("a", NOW + 5)]


def test_a_snoozed_session_offers_unsnooze() -> None:
    actions = FakeMenuActions()
    row = make_row("a", snoozed_until=NOW + 600)
    submenu = find(build_menu(overview(row), actions, NOW), row_header(row, NOW)).submenu
    assert SNOOZE not in texts(submenu)
    unsnooze = find(submenu, UNSNOOZE)
    assert unsnooze.enabled
    unsnooze(ICON)
    assert actions.posted == [Unsnooze("a")]


# Answering: Approve and Deny on a prompt tray can answer, naming the prompt shown.


def test_a_prompt_tray_can_answer_has_approve_and_deny_for_that_prompt() -> None:
    target = AnswerTarget("a", "", NOW - 40)
    row = make_row("a", kind="permission", answer=target)
    actions = FakeMenuActions()
    submenu = find(build_menu(overview(row), actions, NOW), row_header(row, NOW)).submenu
    shown = texts(submenu)
    assert shown[2:4] == [APPROVE_LABEL, DENY_LABEL]  # after the message, before Focus
    assert find(submenu, APPROVE_LABEL).enabled and find(submenu, DENY_LABEL).enabled
    find(submenu, APPROVE_LABEL)(ICON)
    find(submenu, DENY_LABEL)(ICON)
    assert actions.posted == [
        Answer("a", "", NOW - 40, "approve"),
        Answer("a", "", NOW - 40, "deny"),
    ]


def test_a_prompt_tray_cannot_answer_has_neither() -> None:
    row = make_row("a", kind="question")
    submenu = find(build_menu(overview(row), FakeMenuActions(), NOW), row_header(row, NOW)).submenu
    assert APPROVE_LABEL not in texts(submenu) and DENY_LABEL not in texts(submenu)


def test_a_child_prompt_is_answered_for_its_own_record() -> None:
    target = AnswerTarget("a", "agent/2", NOW - 7)
    kids = (
        child("agent/1", state="blocked", kind="question", msg="which?"),
        child("agent/2", state="blocked", kind="permission", msg="approve rm", answer=target),
    )
    row = make_row("a", state="working", kind=None, msg=None, children=kids)
    actions = FakeMenuActions()
    menu = build_menu(overview(row), actions, NOW)
    assert APPROVE_LABEL not in texts(find(menu, row_header(row, NOW)).submenu)
    assert APPROVE_LABEL not in texts(find(menu, child_line(kids[0], NOW)).submenu)
    second = find(menu, child_line(kids[1], NOW)).submenu
    find(second, DENY_LABEL)(ICON)
    assert actions.posted == [Answer("a", "agent/2", NOW - 7, "deny")]
