"""The notifier against a real dunst on a private bus, watched with dbus-monitor."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.desktop_services import (
    NOTIFICATIONS,
    BusMonitor,
    Dunst,
    MenuDunst,
    NotifyCall,
    base_env,
    name_has_owner,
    parse_notify_calls,
    start_bus,
    start_dunst,
    start_menu_dunst,
    stop_process,
)
from helpers.waiting import wait_for

from tray.outlets.notifier import SNOOZE_ACTION, SNOOZE_LABEL, Notifier


class Recorder(logging.Handler):
    """A logger of its own for one notifier, keeping every record."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.log = logging.getLogger(f"tray.test.notifier.{id(self)}")

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def at(self, level: int) -> list[str]:
        return [record.getMessage() for record in self.records if record.levelno == level]

    def outcomes(self) -> int:
        """Notifications the notifier gave up on: the outage's warning, then drops."""
        return len(self.at(logging.WARNING)) + sum(
            message.startswith("notification dropped") for message in self.at(logging.DEBUG)
        )


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    handler = Recorder()
    handler.log.setLevel(logging.DEBUG)
    handler.log.propagate = False
    handler.log.addHandler(handler)
    yield handler
    handler.log.removeHandler(handler)


def notifier_threads() -> int:
    """The bus loop threads: the notifier, alone on its bus here, runs one while open."""
    return sum(thread.name == "tray-bus" for thread in threading.enumerate())


def make_notifier(
    recorder: Recorder, clicks: list[str], snoozes: list[tuple[str, ...]] | None = None
) -> Notifier:
    on_snooze = None if snoozes is None else snoozes.append
    return Notifier(
        "tray-test", lambda key, _token: clicks.append(key), recorder.log, on_snooze=on_snooze
    )


@pytest.fixture
def on_dunst(dunst: Dunst, monkeypatch: pytest.MonkeyPatch) -> Iterator[Dunst]:
    """The shared dunst, emptied, with this process's bus pointed at it."""
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", dunst.address)
    dunst.close_all()
    yield dunst
    dunst.close_all()


def test_one_notify_call_with_the_body_cleaned_and_escaped(
    on_dunst: Dunst, bus_monitor: BusMonitor, recorder: Recorder
) -> None:
    clicks: list[str] = []
    notifier = make_notifier(recorder, clicks)
    try:
        notifier.send(
            "build \u2066done\u2069",
            "<b>rm -rf</b> & \u202eevil\u202c\u200b now\x07",
            "critical",
            "session-secret-key",
        )
        [call] = bus_monitor.wait_for_notify(1)
        wait_for(lambda: on_dunst.count() == 1, what="dunst to show the notification")
    finally:
        notifier.close()

    assert bus_monitor.notify_calls() == [call]
    assert call.app_name == "tray-test"
    assert call.summary == "build done"
    assert call.body == "&lt;b&gt;rm -rf&lt;/b&gt; &amp; evil now"
    assert call.urgency == 2
    assert "default" in call.actions[::2]
    # The key is for on_click only; it never goes on the bus.
    assert "session-secret-key" not in bus_monitor.text()
    assert recorder.at(logging.WARNING) == []


def test_clicking_a_notification_calls_on_click_with_its_key(
    on_dunst: Dunst, bus_monitor: BusMonitor, recorder: Recorder
) -> None:
    clicks: list[str] = []
    notifier = make_notifier(recorder, clicks)
    try:
        keys: list[str] = []
        for number, (key, urgency) in enumerate([("session-a", "normal"), ("session-b", "low")]):
            keys.append(key)
            notifier.send("needs you", f"approve {number}", urgency, key)
            wait_for(lambda: on_dunst.count() == 1, what="dunst to show it")
            on_dunst.action(0)
            wait_for(lambda: len(clicks) == len(keys), what=f"click {number}")
            # dunstctl's action leaves the notification open (a mouse click closes it).
            on_dunst.close_all()
    finally:
        notifier.close()

    assert clicks == ["session-a", "session-b"]
    assert [call.urgency for call in bus_monitor.notify_calls()] == [1, 0]


def test_on_click_may_close_the_notifier(on_dunst: Dunst, recorder: Recorder) -> None:
    notifiers: list[Notifier] = []
    notifier = Notifier("tray-test", lambda _key, _token: notifiers[0].close(), recorder.log)
    notifiers.append(notifier)
    running = notifier_threads()
    try:
        notifier.send("quit", "from the click", "normal", "k")
        wait_for(lambda: on_dunst.count() == 1, what="dunst to show it")
        on_dunst.action(0)
        wait_for(lambda: notifier_threads() == running - 1, what="the bus loop thread to end")
    finally:
        notifier.close()
    assert recorder.at(logging.ERROR) == []


def test_no_server_warns_once_per_outage_and_recovers(
    xvfb_display: str,
    tmp_path: Path,
    recorder: Recorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bus, address = start_bus(tmp_path / "bus")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    env = base_env(DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=address)
    clicks: list[str] = []
    notifier = make_notifier(recorder, clicks)
    servers: list[Dunst] = []
    try:
        for number in range(3):
            notifier.send("lost", f"number {number}", "normal", "lost")
        wait_for(lambda: recorder.outcomes() == 3, what="three dropped notifications")
        [warning] = recorder.at(logging.WARNING)
        assert "no notification server" in warning

        servers.append(start_dunst(env, tmp_path / "dunst"))
        notifier.send("back", "delivered", "normal", "first-server")
        wait_for(lambda: servers[0].count() == 1, what="delivery once dunst runs")
        assert any("back" in message for message in recorder.at(logging.INFO))

        # A second outage is a second warning, and a restarted server works in full.
        servers[0].stop()
        wait_for(lambda: not name_has_owner(env, NOTIFICATIONS), what="dunst to leave")
        notifier.send("lost", "again", "normal", "lost")
        notifier.send("lost", "and again", "normal", "lost")
        wait_for(lambda: recorder.outcomes() == 5, what="two more dropped notifications")
        assert len(recorder.at(logging.WARNING)) == 2

        servers.append(start_dunst(env, tmp_path / "dunst"))
        notifier.send("back", "again", "normal", "second-server")
        wait_for(lambda: servers[1].count() == 1, what="delivery to the new dunst")
        servers[1].action(0)
        wait_for(lambda: clicks == ["second-server"], what="the click on the new dunst")
    finally:
        notifier.close()
        for server in servers:
            server.stop()
        stop_process(bus)
    assert len(recorder.at(logging.WARNING)) == 2


def test_a_server_the_bus_can_start_is_started_by_the_first_notification(
    xvfb_display: str, tmp_path: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = tmp_path / "services"
    services.mkdir()
    dunst_config = tmp_path / "dunstrc"
    dunst_config.write_text("[global]\n    markup = full\n")
    (services / "org.freedesktop.Notifications.service").write_text(
        "[D-BUS Service]\n"
        "Name=org.freedesktop.Notifications\n"
        f"Exec=/usr/bin/dunst -config {dunst_config}\n"
    )
    bus, address = start_bus(tmp_path / "bus", services, base_env(DISPLAY=xvfb_display))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    env = base_env(DISPLAY=xvfb_display, DBUS_SESSION_BUS_ADDRESS=address)
    monitor = BusMonitor(env, tmp_path / "monitor.log")
    notifier = make_notifier(recorder, [])
    try:
        assert not name_has_owner(env, NOTIFICATIONS)
        notifier.send("started", "by the bus", "normal", "key")
        [call] = monitor.wait_for_notify(1)
        assert call.summary == "started"
        assert name_has_owner(env, NOTIFICATIONS)
        assert recorder.at(logging.WARNING) == []
    finally:
        notifier.close()
        monitor.stop()
        subprocess.run(
            ["dunstctl", "close-all"], env=env, timeout=10, check=False, capture_output=True
        )
        _stop_bus_service(env)
        stop_process(bus)


def _stop_bus_service(env: dict[str, str]) -> None:
    """The activated dunst is the bus's child, not ours: end it through its pid on the bus."""
    reply = subprocess.run(
        [
            "dbus-send",
            "--print-reply=literal",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.GetConnectionUnixProcessID",
            f"string:{NOTIFICATIONS}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    words = reply.stdout.split()
    if reply.returncode == 0 and words and words[-1].isdigit():
        os.kill(int(words[-1]), signal.SIGTERM)


def test_no_bus_at_all_warns_once_and_close_still_works(
    tmp_path: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")
    notifier = make_notifier(recorder, [])
    try:
        notifier.send("a", "b", "normal", "k")
        notifier.send("a", "b", "low", "k")
        wait_for(lambda: recorder.outcomes() == 2, what="two dropped notifications")
    finally:
        notifier.close()
    [warning] = recorder.at(logging.WARNING)
    assert "cannot reach the D-Bus session bus" in warning


def test_close_stops_the_thread_and_later_sends_are_ignored(
    tmp_path: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")

    before = notifier_threads()
    notifier = make_notifier(recorder, [])
    assert notifier_threads() == before + 1
    notifier.close()
    assert notifier_threads() == before
    notifier.send("after", "close", "normal", "k")
    notifier.close()
    assert recorder.outcomes() == 0


def test_an_unknown_urgency_is_a_programming_error(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path / 'no-bus'}")
    notifier = make_notifier(recorder, [])
    try:
        with pytest.raises(ValueError, match="urgency"):
            notifier.send("a", "b", "urgent", "k")
    finally:
        notifier.close()


def test_neither_title_nor_body_can_inject_markup_into_what_dunst_shows(
    on_dunst: Dunst, recorder: Recorder
) -> None:
    notifier = make_notifier(recorder, [])
    try:
        notifier.send("<i>title</i>", "<i>body</i> a < b", "low", "k")
        wait_for(lambda: on_dunst.count() == 1, what="dunst to show it")
    finally:
        notifier.close()
    on_dunst.close_all()
    ours = [entry for entry in on_dunst.history() if entry["appname"] == "tray-test"]
    newest = max(ours, key=lambda entry: int(str(entry["id"])))
    assert newest["summary"] == "<i>title</i>"  # dunst escapes the summary itself
    # "message" is the markup dunst renders: the text is in it, and no <i> element.
    message = str(newest["message"])
    assert "&lt;i&gt;title&lt;/i&gt;" in message
    assert "&lt;i&gt;body&lt;/i&gt; a &lt; b" in message
    assert "<i>" not in message


MONITOR_OUTPUT = """\
signal time=1.0 sender=org.freedesktop.DBus -> destination=:1.2 serial=2 member=NameAcquired
   string ":1.2"
method call time=2.0 sender=:1.3 -> destination=:1.0 serial=7 member=Notify
   string "app"
   uint32 5
   string ""
   string "say "hi""
   string "line one
line two"
   array [
      string "default"
      string ""
   ]
   array [
      dict entry(
         string "urgency"
         variant             byte 2
      )
   ]
   int32 -1
method call time=3.0 sender=:1.3 -> destination=:1.0 serial=8 member=Notify
   string "still arriving"
   uint32 0
"""


def test_the_monitor_parser_reads_raw_strings_and_skips_unfinished_calls() -> None:
    assert parse_notify_calls(MONITOR_OUTPUT) == [
        NotifyCall(
            "app", 5, "", 'say "hi"', "line one\nline two", ["default", ""], {"urgency": 2}, -1
        )
    ]


# -- the snooze button ---------------------------------------------------------------------


def test_a_notification_with_snooze_ids_has_a_snooze_button(
    on_dunst: Dunst, bus_monitor: BusMonitor, recorder: Recorder
) -> None:
    notifier = make_notifier(recorder, [], [])
    try:
        notifier.send("api needs you", "approve", "normal", "session-a", ("session-a",))
        notifier.send("plain", "no ids to snooze", "normal", "session-b")
        first, second = bus_monitor.wait_for_notify(2)
    finally:
        notifier.close()
    assert first.actions == ["default", "", SNOOZE_ACTION, SNOOZE_LABEL]
    assert second.actions == ["default", ""]
    # Session ids are for the callbacks only; they never go on the bus.
    assert "session-a" not in bus_monitor.text()


def test_without_on_snooze_there_is_no_snooze_button(
    on_dunst: Dunst, bus_monitor: BusMonitor, recorder: Recorder
) -> None:
    notifier = make_notifier(recorder, [])
    try:
        notifier.send("api needs you", "approve", "normal", "session-a", ("session-a",))
        [call] = bus_monitor.wait_for_notify(1)
    finally:
        notifier.close()
    assert call.actions == ["default", ""]


def test_a_click_still_focuses_when_the_snooze_button_is_there(
    on_dunst: Dunst, recorder: Recorder
) -> None:
    clicks: list[str] = []
    snoozes: list[tuple[str, ...]] = []
    notifier = make_notifier(recorder, clicks, snoozes)
    try:
        notifier.send("api needs you", "approve", "normal", "session-a", ("session-a",))
        wait_for(lambda: on_dunst.count() == 1, what="dunst to show it")
        on_dunst.action(0)
        wait_for(lambda: clicks == ["session-a"], what="the click")
    finally:
        notifier.close()
    assert snoozes == []


@pytest.fixture
def menu_dunst(
    xvfb_display: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MenuDunst]:
    started = start_menu_dunst(xvfb_display, tmp_path / "menu-dunst", SNOOZE_LABEL)
    try:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", started.dunst.address)
        yield started
    finally:
        started.stop()


def test_pressing_snooze_hands_the_sessions_to_on_snooze(
    menu_dunst: MenuDunst, tmp_path: Path, recorder: Recorder
) -> None:
    dunst = menu_dunst.dunst
    monitor = BusMonitor(dunst.env, tmp_path / "monitor.log")
    clicks: list[str] = []
    snoozes: list[tuple[str, ...]] = []
    notifier = make_notifier(recorder, clicks, snoozes)
    try:
        notifier.send("2 sessions need you", "api, docs", "critical", "", ("s-api", "s-docs"))
        [call] = monitor.wait_for_notify(1)
        wait_for(lambda: dunst.count() == 1, what="dunst to show it")
        # The context menu lists the buttons; the stub picks "Snooze 1 h".
        dunst.ctl("context")
        wait_for(lambda: snoozes == [("s-api", "s-docs")], what="the snooze callback")
        invoked = re.compile(rf'member=ActionInvoked\n\s+uint32 \d+\n\s+string "{SNOOZE_ACTION}"')
        wait_for(lambda: invoked.search(monitor.text()), what="ActionInvoked on the bus")
    finally:
        notifier.close()
        monitor.stop()
    assert call.actions == ["default", "", SNOOZE_ACTION, SNOOZE_LABEL]
    assert SNOOZE_LABEL in menu_dunst.offered.read_text()
    assert clicks == []
    assert recorder.at(logging.ERROR) == []


def test_a_failing_on_snooze_is_logged_and_the_notifier_goes_on(
    menu_dunst: MenuDunst, recorder: Recorder
) -> None:
    dunst = menu_dunst.dunst

    def broken(_ids: tuple[str, ...]) -> None:
        raise RuntimeError("boom")

    clicks: list[str] = []
    notifier = Notifier(
        "tray-test", lambda key, _token: clicks.append(key), recorder.log, on_snooze=broken
    )
    try:
        notifier.send("a", "b", "normal", "k1", ("k1",))
        wait_for(lambda: dunst.count() == 1, what="dunst to show it")
        dunst.ctl("context")
        wait_for(lambda: recorder.at(logging.ERROR), what="the logged failure")
        dunst.close_all()
        notifier.send("c", "d", "normal", "k2", ("k2",))
        wait_for(lambda: dunst.count() == 1, what="the next one")
        dunst.action(0)
        wait_for(lambda: clicks == ["k2"], what="the next click")
    finally:
        notifier.close()
    assert recorder.at(logging.ERROR) == ["handling a notification's snooze failed"]
