"""The pieces of [away] together: real X11 idle time under Xvfb decides, and the real
Apprise posts to a loopback JSON server. Which pings go: blocked and error ones (and
their reminders) while away; none while present; done not by default."""

from __future__ import annotations

import logging
import random
import subprocess

from helpers.desktop_services import TOOL_TIMEOUT, base_env
from helpers.receiver import Receiver
from helpers.waiting import wait_for

from tray.core.away.tracker import AwayState
from tray.core.config.away import parse_away
from tray.desktop.idle import PresenceMonitor
from tray.outlets.forward import AwayForwarding, Forwarder


def _move_mouse(display: str) -> None:
    x, y = random.randrange(50, 900), random.randrange(50, 700)
    subprocess.run(
        ["xdotool", "mousemove", str(x), str(y)],
        env=base_env(DISPLAY=display),
        timeout=TOOL_TIMEOUT,
        check=True,
    )


def test_pings_follow_the_user_only_while_away(
    xvfb_display: str, session_bus: str, receiver: Receiver
) -> None:
    log = logging.getLogger("tray.test.forward_away")
    settings = parse_away({"after": "2s", "forward": [f"json://127.0.0.1:{receiver.port}/p"]})
    forwarder = Forwarder(settings.forward, log)
    routing = AwayForwarding(settings, forwarder)
    states: list[AwayState] = []

    def changed(state: AwayState) -> None:
        states.append(state)
        routing.set_away(state)

    env = base_env(
        DISPLAY=xvfb_display,
        DBUS_SESSION_BUS_ADDRESS=session_bus,
        DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/system_bus_socket",
    )
    _move_mouse(xvfb_display)
    watch = PresenceMonitor(settings.after, changed, env)
    watch.start()
    try:
        assert watch.wait_ready()
        # At the desk: nothing goes out.
        assert not routing.ping("build (laptop)", "Allow edit? [y/n]", "blocked")
        wait_for(lambda: routing.away.away, 15.0, what="away after 2 s idle")
        assert routing.ping("build (laptop)", "Allow edit? [y/n]", "blocked")
        assert routing.ping("tests (ci-box)", "exit 2", "error")
        assert not routing.ping("docs (laptop)", "done after 3 min", "done")
        # A reminder is the same ping again, and goes too.
        assert routing.ping("build (laptop)", "still waiting: Allow edit? [y/n]", "blocked")
        wait_for(lambda: len(receiver.requests) == 3, what="three forwarded pings")
        _move_mouse(xvfb_display)
        wait_for(lambda: not routing.away.away, 10.0, what="back at the desk")
        assert not routing.ping("tests (ci-box)", "exit 2", "error")
        # The forwarder sends in order: a wrong request would come before this one.
        forwarder.send("barrier", "last")
        wait_for(lambda: len(receiver.requests) == 4, what="the barrier's request")
    finally:
        watch.stop()
        routing.stop()
    assert [(r.body["title"], r.body["message"]) for r in receiver.requests] == [
        ("build (laptop)", "Allow edit? [y/n]"),
        ("tests (ci-box)", "exit 2"),
        ("build (laptop)", "still waiting: Allow edit? [y/n]"),
        ("barrier", "last"),
    ]
    assert [state.away for state in states] == [True, False]
