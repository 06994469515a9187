"""The menu's Focus item from the worker's plans, and the away line: what the user reads
when Focus can do nothing, after a focus that only partly worked, and while away."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from desktop.test_tray_menu import ICON, NOW, FakeMenuActions, find, make_row, overview, texts
from helpers.sessions import live_session

from tray.app import focus_looks
from tray.app.away_routing import forwarded_text, most_urgent
from tray.app.focus_looks import FocusLooks, focus_label
from tray.core.away.tracker import AwayState, menu_line
from tray.core.policy.wording import Ping
from tray.core.session.model import Session
from tray.desktop.focus import FocusResult, focus_plan
from tray.desktop.tray_menu import FocusLook, MenuExtras, build_menu, row_header

KITTY_OFF = {"KITTY_WINDOW_ID": "3"}
TMUX = {"TMUX": "/tmp/tmux-1000/default,123,0", "TMUX_PANE": "%4"}


@pytest.fixture(autouse=True)
def pystray_without_display(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    yield importlib.import_module("pystray")


def session(session_id: str, terminal: dict[str, str]) -> Session:
    return dataclasses.replace(
        live_session(session_id, (), NOW), name=f"name-{session_id}", terminal=terminal
    )


def submenu(menu: Any, row: Any) -> Any:
    return find(menu, row_header(row, NOW)).submenu


def test_focus_label_names_the_reason() -> None:
    assert focus_label(None) == "Focus"
    assert focus_label("kitty: remote control is off") == "Focus (kitty: remote control is off)"
    long = focus_label("x" * 300)
    assert long.startswith("Focus (x") and len(long) <= focus_looks.LABEL_WIDTH


def test_plans_disable_focus_with_the_reason_and_enable_what_works() -> None:
    looks = FocusLooks({}, logging.getLogger("test"))
    sessions = {
        "kitty": session("kitty", KITTY_OFF),
        "tmux": session("tmux", TMUX),
        "bare": session("bare", {}),
        "host:devbox/r1": session("host:devbox/r1", {}),
    }
    found = looks.looks(sessions)
    assert found["kitty"] == FocusLook(False, "Focus (kitty: remote control is off)")
    assert found["tmux"] == FocusLook(True, "Focus")
    assert not found["bare"].enabled and found["bare"].label.startswith("Focus (no tmux pane")
    # A remote session is focused over ssh: the overview's focusable decides.
    assert "host:devbox/r1" not in found


def test_a_plan_is_made_once_per_session_until_its_terminal_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[dict[str, str]] = []
    real = focus_plan

    def counting(terminal: Any, environ: Any) -> Any:
        calls.append(dict(terminal))
        return real(terminal, environ)

    monkeypatch.setattr(focus_looks, "focus_plan", counting)
    looks = FocusLooks({}, logging.getLogger("test"))
    for _ in range(5):
        looks.looks({"a": session("a", KITTY_OFF)})
    assert calls == [KITTY_OFF]
    looks.looks({"a": session("a", TMUX)})
    assert calls == [KITTY_OFF, TMUX]


def test_an_item_is_made_once_per_session_until_its_facts_or_note_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The label is cleaned and cut text: on every refresh of a busy app it was the cost.
    labels: list[str | None] = []
    real = focus_label

    def counting(reason: str | None) -> str:
        labels.append(reason)
        return real(reason)

    monkeypatch.setattr(focus_looks, "focus_label", counting)
    looks = FocusLooks({}, logging.getLogger("test"))
    first = looks.looks({"a": session("a", KITTY_OFF), "b": session("b", TMUX)})
    for _ in range(5):
        # New Session objects with equal facts, as every read of the files makes.
        again = looks.looks({"a": session("a", dict(KITTY_OFF)), "b": session("b", TMUX)})
        assert again == first
    assert labels == ["kitty: remote control is off", None]
    looks.focused(session("b", TMUX), FocusResult(True, "raised; not the tab", partial=True))
    assert looks.looks({"a": session("a", KITTY_OFF), "b": session("b", TMUX)})["b"].notes == (
        "raised",
        "not the tab",
    )
    assert labels == ["kitty: remote control is off", None, None]
    # A session that went is forgotten: back with the same facts, its item is made anew.
    looks.looks({"a": session("a", KITTY_OFF)})
    assert looks.looks({"a": session("a", KITTY_OFF), "b": session("b", TMUX)})["b"].notes == ()
    assert labels == ["kitty: remote control is off", None, None, None]


def test_the_menu_shows_the_disabled_reason_and_the_left_click_follows_it() -> None:
    rows = (make_row("a", label="one", focusable=True), make_row("b", label="two"))
    extras = MenuExtras(
        (
            ("a", FocusLook(False, "Focus (kitty: remote control is off)")),
            ("b", FocusLook(True)),
        )
    )
    actions = FakeMenuActions()
    menu = build_menu(overview(*rows), actions, NOW, extras)
    item = find(submenu(menu, rows[0]), "Focus (kitty: remote control is off)")
    assert not item.enabled
    assert find(submenu(menu, rows[1]), "Focus").enabled
    # The most urgent session cannot be focused: a left click does nothing.
    menu(ICON)
    assert actions.posted == []


def test_what_a_focus_left_undone_is_logged_once_and_shown_under_focus(
    caplog: pytest.LogCaptureFixture,
) -> None:
    looks = FocusLooks({}, logging.getLogger("test.focus_looks"))
    gnome = session("g", {})
    note = (
        "raised GNOME Terminal's X11 window; GNOME Terminal's search provider is off, so the"
        " tab cannot be selected: run `gsettings set org.gnome.Terminal.Legacy.Settings"
        " shell-integration-enabled true`, then restart GNOME Terminal"
    )
    with caplog.at_level(logging.WARNING, "test.focus_looks"):
        assert looks.focused(gnome, FocusResult(True, note, partial=True))
        assert not looks.focused(gnome, FocusResult(True, note, partial=True))
    assert [r.getMessage() for r in caplog.records] == [f"focused name-g only in part: {note}"]
    look = looks.looks({"g": gnome})["g"]
    assert look.notes == tuple(note.split("; "))
    row = make_row("g")
    menu = build_menu(overview(row), FakeMenuActions(), NOW, MenuExtras((("g", look),)))
    items = texts(submenu(menu, row))
    at = items.index(look.label)
    assert items[at + 1 : at + 3] == note.split("; ")
    assert not find(submenu(menu, row), note.split("; ")[1]).enabled
    # A focus that works in full clears it.
    assert looks.focused(gnome, FocusResult(True, "selected the GNOME Terminal tab"))
    assert looks.looks({"g": gnome})["g"].notes == ()


def test_the_away_line_heads_the_menu_while_away() -> None:
    since = time.mktime((2026, 12, 1, 14, 2, 0, 0, 0, -1))
    line = menu_line(AwayState(True, since), True, time.strftime("%H:%M", time.localtime(since)))
    assert line == "Away since 14:02: pings also go to your phone"
    menu = build_menu(overview(make_row()), FakeMenuActions(), NOW, MenuExtras(away_line=line))
    assert texts(menu)[:2] == [line, "---"]
    assert not find(menu, line).enabled
    assert line not in texts(build_menu(overview(make_row()), FakeMenuActions(), NOW))


def test_forwarded_text_is_plain_and_names_the_machine() -> None:
    ping = Ping("build needs you", "Allow <b>rm</b> & co?\n", "critical", ("s1",))
    assert forwarded_text(ping, "laptop") == (
        "laptop · build needs you",
        "Allow <b>rm</b> & co?",
    )
    # A remote session's label already starts with its host.
    remote = Ping("devbox · api failed", "exit 2", "normal", ("host:devbox/s2",))
    assert forwarded_text(remote, "laptop") == ("devbox · api failed", "exit 2")


def test_the_most_urgent_state_decides_what_a_ping_forwards_as() -> None:
    assert most_urgent({"done", "error"}) == "error"
    assert most_urgent({"done", "blocked", "error"}) == "blocked"
    assert most_urgent({"done"}) == "done"
    assert most_urgent(set()) is None
