"""A real `tray app` with `[away]` set: real X11 idle under Xvfb says whether the user
is at the desk (no input for `after` is away; `xdotool mousemove` brings them back),
dunst shows every ping, and the real Apprise posts the forwarded ones to a loopback
JSON server. Sessions are state files written as a live launcher would.

What is checked: blocked and error pings go to the phone while away, with this
machine's name and the session's in the title and the program's message, unescaped,
as the body; done does not (the default states); a prompt that pinged while the user
was there goes with its next reminder; nothing goes while present, nor on coming back;
and the secret in the URL is in neither app.log nor the app's output.

Then the same end to end from a real `tray run` on a pty (the program writes an OSC 7501
report), to json:// and ntfy:// URLs; and a forward server that accepts and never
answers: one warning for the whole outage, and dunst still gets the next ping at once.
"""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.desktop_apps import TIMEOUT, RunningApp, start_app_process
from helpers.desktop_services import TOOL_TIMEOUT, BusMonitor, Dunst, base_env, stop_process
from helpers.drained_pty import DrainedPty
from helpers.receiver import Receiver
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for

from tray.base.safe_text import clean_text
from tray.protocol.records import Record
from tray.protocol.report import Report, encode_sequence
from tray.protocol.state import State
from tray.state.store import StateStore

SECRET = "S3cr3tT0ken"  # noqa: S105 - made up, hunted for in the output
HOST = clean_text(socket.gethostname())


class Desk:
    """Someone at the desk: moves the mouse every few tenths of a second while here."""

    def __init__(self, display: str) -> None:
        self._display = display
        self._here = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _move(self) -> None:
        x, y = random.randrange(50, 900), random.randrange(50, 700)
        subprocess.run(
            ["xdotool", "mousemove", str(x), str(y)],
            env=base_env(DISPLAY=self._display),
            timeout=TOOL_TIMEOUT,
            check=True,
        )

    def _run(self) -> None:
        while not self._done.wait(0.3):
            if self._here.is_set():
                self._move()

    def arrive(self) -> None:
        self._move()
        self._here.set()
        if not self._thread.is_alive():
            self._thread.start()

    def leave(self) -> None:
        self._here.clear()

    def stop(self) -> None:
        self._done.set()


def _state(state: str, msg: str, now: float) -> tuple[Record, ...]:
    return (Record("", State(state), None, None, "agent", None, msg, now),)


def _forwarded(receiver: Receiver) -> list[tuple[str, str]]:
    return [(str(r.body.get("title")), str(r.body.get("message"))) for r in receiver.requests]


def test_pings_reach_the_phone_only_while_the_user_is_away(  # noqa: PLR0917 - fixtures
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
    receiver: Receiver,
    xvfb_display: str,
) -> None:
    dunst.close_all()
    url = f"json://tray:{SECRET}@127.0.0.1:{receiver.port}/hook/{SECRET}"
    config = (
        '[notify]\nsettle = 0.2\nremind = 3\nburst = 50\ndone_after = "0s"\n'
        f'[away]\nafter = "2s"\nforward = ["{url}"]\n'
    )
    env = {**desktop_env, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus"}
    store = StateStore(tmp_path / "state")
    store.ensure()
    desk = Desk(xvfb_display)
    desk.arrive()
    stderr = tmp_path / "app.stderr"
    app: RunningApp | None = None
    try:
        app = start_app_process(env, tmp_path, config, stderr=stderr)
        running = app
        wait_for(lambda: "away: after 2 s" in running.log, TIMEOUT, what="[away] to start")

        # At the desk: the prompt pings on the desktop and nothing goes to the phone.
        now = time.time()
        store.write(live_session("present", blocked("Allow edit <a> & b?", now), now))
        bus_monitor.wait_for_notify(1, TIMEOUT)

        # Away: the prompt that pinged while present goes with its next reminder.
        desk.leave()
        wait_for(lambda: "away (since" in running.log, TIMEOUT, what="the app to see us leave")
        assert "by X11 idle time" in running.log
        assert "away: tells by X11 idle time" in running.log
        wait_for(
            lambda: any("present" in title for title, _ in _forwarded(receiver)),
            TIMEOUT,
            what="the present prompt's reminder",
        )
        # The app forwards in order: had the first ping gone too, it would be first here.
        title, body = _forwarded(receiver)[0]
        assert title == f"{HOST} · present needs approval"
        assert body.startswith("Allow edit <a> & b? (still waiting, ")

        now = time.time()
        store.write(live_session("build", blocked("Run rm -rf <tmp> & co?", now), now))
        store.write(live_session("tests", _state("error", "exit 2: 3 failed", now), now))
        store.write(live_session("docs", _state("done", "wrote 3 pages", now), now))
        summaries = ["build needs approval", "tests failed", "docs finished"]

        def shown() -> set[str]:
            return {call.summary for call in bus_monitor.notify_calls()}

        def shown_count(name: str) -> int:
            summary = f"{name} needs approval"
            return sum(call.summary == summary for call in bus_monitor.notify_calls())

        wait_for(lambda: set(summaries) <= shown(), TIMEOUT, what="the desktop pings")
        wait_for(
            lambda: (
                {f"{HOST} · build needs approval", f"{HOST} · tests failed"}
                <= {title for title, _ in _forwarded(receiver)}
            ),
            TIMEOUT,
            what="the blocked and error pings forwarded",
        )
        forwarded = _forwarded(receiver)
        assert (f"{HOST} · build needs approval", "Run rm -rf <tmp> & co?") in forwarded
        assert (f"{HOST} · tests failed", "exit 2: 3 failed") in forwarded
        # dunst got the escaped text; the phone the plain one.
        build_call = next(c for c in bus_monitor.notify_calls() if c.summary == summaries[0])
        assert build_call.body == "Run rm -rf &lt;tmp&gt; &amp; co?"
        # A reminder while away goes too.
        wait_for(
            lambda: any(
                t == f"{HOST} · build needs approval" and "still waiting" in b
                for t, b in _forwarded(receiver)
            ),
            TIMEOUT,
            what="the build prompt's reminder",
        )

        # Back at the desk: nothing more goes, neither reminders nor new pings.
        desk.arrive()
        wait_for(lambda: "INFO back" in running.log, TIMEOUT, what="the app to see us back")
        # A request queued just before coming back is no fault. The app logs each forward
        # it queues on the worker's thread, the one that logs "back": every one queued
        # while away is logged before it, so once the receiver has that many, the queue
        # is empty and every later request was queued while present.
        queued = running.log.partition(" INFO back\n")[0].count("away: forwarding a ")
        assert queued > 0
        wait_for(
            lambda: len(receiver.requests) >= queued,
            TIMEOUT,
            what="the forwards queued while away to land",
        )
        count = len(receiver.requests)
        assert count == queued
        reminded = {name: shown_count(name) for name in ("build", "present")}
        now = time.time()
        store.write(live_session("later", blocked("Allow push?", now), now))
        wait_for(lambda: "later needs approval" in shown(), TIMEOUT, what="the later ping")
        wait_for(
            lambda: all(shown_count(name) > n for name, n in reminded.items()),
            TIMEOUT,
            what="the next reminders of build and present on the desktop",
        )
        # The barrier: with every session gone (so no reminder can go), away again, and
        # a new prompt that is forwarded. The app forwards in order, so a request queued
        # while present would come before the new prompt's.
        for name in ("present", "build", "tests", "docs", "later"):
            assert store.remove(name)
        desk.leave()
        wait_for(lambda: running.log.count("away (since") == 2, TIMEOUT, what="us to leave again")
        now = time.time()
        store.write(live_session("marker", blocked("marker", now), now))
        wait_for(lambda: len(receiver.requests) > count, TIMEOUT, what="the marker forwarded")
        assert _forwarded(receiver)[count:] == [(f"{HOST} · marker needs approval", "marker")]
        assert all("docs" not in title for title, _ in _forwarded(receiver))
        # Nothing was queued while present: only the marker's forward since "back".
        assert running.log.partition(" INFO back\n")[2].count("away: forwarding a ") == 1
    finally:
        desk.stop()
        if app is not None:
            stop_process(app.proc)
    log = app.log
    assert "Traceback" not in log, log
    output = stderr.read_text(errors="replace")
    for text in (log, output):
        assert SECRET not in text
        assert "127.0.0.1:" not in text
    assert all(
        SECRET not in path.read_text(errors="replace") for path in store.directory.glob("*.json")
    )


# The program under `tray run`: writes the report it is given (hex), then waits for its
# terminal to go (its input ends, or the read fails when the pty is hung up).
PROGRAM = "import os, sys\nos.write(1, bytes.fromhex(sys.argv[1]))\nsys.stdin.buffer.read()\n"
PROMPT = "approve Bash: touch x"
AWAY_CONFIG = '[notify]\nsettle = 0.2\nremind = "0"\nburst = 50\n[away]\nafter = "2s"\n'


class TrayRun(DrainedPty):
    """`tray run --name NAME -- python3 -c PROGRAM` on a real pty, as a terminal holds it."""

    def __init__(self, app: RunningApp, name: str, report: Report) -> None:
        program = (sys.executable, "-c", PROGRAM, encode_sequence(report).hex())
        super().__init__(
            [sys.executable, "-m", "tray", "run", "--name", name, "--", *program], app.env
        )


def _blocked_report(msg: str) -> Report:
    return Report(State.BLOCKED, kind="permission", app="claude-code", msg=msg)


@pytest.fixture
def tray_runs() -> Iterator[list[TrayRun]]:
    started: list[TrayRun] = []
    yield started
    for run in started:
        run.close()


def _no_secret_anywhere(app: RunningApp, stderr: Path, secret: str) -> None:
    log = app.log
    assert "Traceback" not in log, log
    for text in (log, stderr.read_text(errors="replace")):
        assert secret not in text
        assert "127.0.0.1:" not in text
    for path in app.state_dir.glob("*.json"):
        assert secret not in path.read_text(errors="replace")


def test_a_blocked_tray_run_reaches_json_while_away_and_not_while_present(  # noqa: PLR0917
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
    receiver: Receiver,
    xvfb_display: str,
    tray_runs: list[TrayRun],
) -> None:
    dunst.close_all()
    url = f"json://tray:{SECRET}@127.0.0.1:{receiver.port}/hook/{SECRET}"
    # Away after 3 s without input; the desk moves the mouse every 0.3 s while here.
    config = AWAY_CONFIG.replace('after = "2s"', 'after = "3s"') + f'forward = ["{url}"]\n'
    env = {**desktop_env, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus"}
    desk = Desk(xvfb_display)
    desk.arrive()
    stderr = tmp_path / "app.stderr"
    app: RunningApp | None = None
    try:
        app = start_app_process(env, tmp_path, config, stderr=stderr)
        running = app
        wait_for(lambda: "away: after 3 s" in running.log, TIMEOUT, what="[away] to start")

        def shown() -> list[tuple[str, str]]:
            return [(call.summary, call.body) for call in bus_monitor.notify_calls()]

        # At the desk: the prompt pings on the desktop only.
        tray_runs.append(TrayRun(app, "desk", _blocked_report("approve Bash: ls")))
        wait_for(
            lambda: ("desk needs approval", "approve Bash: ls") in shown(),
            TIMEOUT,
            what="the present ping on the desktop",
        )
        # Away: a new prompt goes to the phone too.
        desk.leave()
        wait_for(lambda: "away (since" in running.log, TIMEOUT, what="the app to see us leave")
        tray_runs.append(TrayRun(app, "api", _blocked_report(PROMPT)))
        wait_for(lambda: receiver.requests, TIMEOUT, what="the forwarded request")
        wait_for(
            lambda: ("api needs approval", PROMPT) in shown(),
            TIMEOUT,
            what="the away ping on the desktop",
        )
        # One forwarder sends in order: a wrong send of the present ping, queued before
        # the away one, would have arrived first.
        assert _forwarded(receiver) == [(f"{HOST} · api needs approval", PROMPT)]
        assert receiver.requests[0].path == f"/hook/{SECRET}"
    finally:
        desk.stop()
        if app is not None:
            stop_process(app.proc)
    _no_secret_anywhere(app, stderr, SECRET)


def test_a_blocked_tray_run_reaches_ntfy_while_away(  # noqa: PLR0917 - fixtures
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
    receiver: Receiver,
    tray_runs: list[TrayRun],
) -> None:
    dunst.close_all()
    url = f"ntfy://127.0.0.1:{receiver.port}/tray-pings?token={SECRET}"
    config = AWAY_CONFIG + f'forward = ["{url}"]\n'
    env = {**desktop_env, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus"}
    stderr = tmp_path / "app.stderr"
    app: RunningApp | None = None
    try:
        app = start_app_process(env, tmp_path, config, stderr=stderr)
        running = app
        # Nobody touches this display: away once 2 s have passed without input.
        wait_for(lambda: "away (since" in running.log, TIMEOUT, what="the app to see us away")
        tray_runs.append(TrayRun(app, "api", _blocked_report(PROMPT)))
        wait_for(lambda: receiver.requests, TIMEOUT, what="the ntfy request")
        bus_monitor.wait_for_notify(1, TIMEOUT)
    finally:
        if app is not None:
            stop_process(app.proc)
    (request,) = receiver.requests
    # ntfy's JSON publishing: a POST to the server's root naming the topic.
    assert request.path == "/"
    assert request.body["topic"] == "tray-pings"
    assert request.body["title"] == f"{HOST} · api needs approval"
    assert request.body["message"] == PROMPT
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    _no_secret_anywhere(app, stderr, SECRET)


class FakeSilentServer:
    """A loopback server that accepts every connection and never answers: a forward
    server that hangs. Counts the connections (each is one send attempt)."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.socket.getsockname()[1])
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def silent() -> Iterator[FakeSilentServer]:
    server = FakeSilentServer()
    yield server
    server.close()


def test_a_hanging_forward_server_warns_once_and_the_desktop_still_pings_at_once(  # noqa: PLR0917
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
    silent: FakeSilentServer,
) -> None:
    dunst.close_all()
    url = f"json://tray:{SECRET}@127.0.0.1:{silent.port}/hook/{SECRET}"
    config = AWAY_CONFIG + f'forward = ["{url}"]\n'
    env = {**desktop_env, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus"}
    store = StateStore(tmp_path / "state")
    store.ensure()
    stderr = tmp_path / "app.stderr"
    app: RunningApp | None = None

    def warnings() -> list[str]:
        lines = running.log.splitlines()
        return [line for line in lines if "WARNING" in line and "forward" in line]

    try:
        app = start_app_process(env, tmp_path, config, stderr=stderr)
        running = app
        wait_for(lambda: "away (since" in running.log, TIMEOUT, what="the app to see us away")
        now = time.time()
        store.write(live_session("first", blocked("Allow deploy?", now), now))
        bus_monitor.wait_for_notify(1, TIMEOUT)
        wait_for(lambda: silent.accepted, TIMEOUT, what="the forwarder's first send")

        # The send hangs (for its 10 s timeout); the next ping shows on the desktop at once.
        now = time.time()
        store.write(live_session("second", blocked("Allow push?", now), now))
        calls = bus_monitor.wait_for_notify(2, TIMEOUT)
        assert calls[-1].summary == "second needs approval"
        assert warnings() == []  # the first send was still hanging then
        assert len(silent.accepted) == 1

        # The timeout: one warning, then a retry after the backoff, which hangs too.
        wait_for(warnings, TIMEOUT, what="the outage's warning")
        now = time.time()
        store.write(live_session("third", blocked("Allow merge?", now), now))
        bus_monitor.wait_for_notify(3, TIMEOUT)
        # The third attempt comes only after the second one's timeout and a longer
        # backoff (10 s + 10 s): by then two sends have failed, and three pings waited.
        wait_for(lambda: len(silent.accepted) >= 3, 45.0, what="the third send attempt")
        (warning,) = warnings()
        assert "forwarding to json:// (away.forward[0]) failed" in warning
        # Backed off: not one attempt per ping, nor a storm.
        assert len(silent.accepted) == 3
        # Still responsive after the failures.
        now = time.time()
        store.write(live_session("fourth", blocked("Allow tag?", now), now))
        calls = bus_monitor.wait_for_notify(4, TIMEOUT)
        assert calls[-1].summary == "fourth needs approval"
    finally:
        if app is not None:
            stop_process(app.proc)
    assert len(warnings()) == 1
    _no_secret_anywhere(app, stderr, SECRET)
