"""A ping from another host follows the user too: the real `tray app` with one
``[[hosts]]`` entry (a real sshd on loopback) and ``[away]``, on the real desktop of
tests/desktop, where nobody touches the Xvfb, so the user is away after ``after``. The
host's prompt reaches the loopback JSON server through the real Apprise, titled with
the host's name (as its notification is) and no other machine's."""

from __future__ import annotations

from helpers.desktop_apps import TIMEOUT, StartApp
from helpers.desktop_services import BusMonitor
from helpers.host_sessions import make_session
from helpers.receiver import Receiver
from helpers.sshd import Remote, hosts_toml
from helpers.waiting import wait_for

from tray.core.hosts.ssh_commands import HostConfig


def test_a_remote_prompt_is_forwarded_while_the_user_is_away(
    start_app: StartApp,
    bus_monitor: BusMonitor,
    remote: Remote,
    host: HostConfig,
    receiver: Receiver,
) -> None:
    away = f'[away]\nafter = "2s"\nforward = ["json://127.0.0.1:{receiver.port}/"]\n'
    app = start_app(
        hosts_toml(host) + "\n[notify]\nsettle = 0\n" + away,
        DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/system_bus",
    )
    wait_for(lambda: "INFO devbox: connected" in app.log, TIMEOUT, what="the link")
    wait_for(lambda: "away (since" in app.log, TIMEOUT, what="the app to see nobody")

    remote.write(make_session("1-a", msg="approve Bash: git push"))
    (call,) = bus_monitor.wait_for_notify(1, TIMEOUT)
    assert call.summary == "devbox \u00b7 api needs approval"
    wait_for(lambda: receiver.requests, TIMEOUT, what="the forwarded ping")
    (request,) = receiver.requests
    assert request.body["title"] == "devbox \u00b7 api needs approval"
    assert request.body["message"] == "approve Bash: git push"
