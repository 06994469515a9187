"""What every test shares: the markers that say which infrastructure a test needs.

A test is marked by the fixtures it uses, wherever its file sits: one that uses the
private X server or bus is ``desktop``, one that uses the private sshd is ``sshd``. So a
test keeps its marker when it moves to another folder, and
``pytest -m "not desktop and not sshd and not agents"`` runs what a bare machine can.
A test that starts such a service without these fixtures says so itself
(``@pytest.mark.desktop``, or ``pytestmark`` for a whole module).
"""

from __future__ import annotations

import signal

import pytest

# The fixtures of the private desktop and of the private sshd, for a test in any folder.
pytest_plugins = [
    "helpers.desktop_fixtures",
    "helpers.gnome_fixtures",
    "helpers.plasma_fixtures",
    "helpers.sshd_fixtures",
]

# A run started under nohup (or by anything else that ignores SIGHUP) would hand that on to
# every command the tests start under `tray run`, as a shell does; the tests of the
# launcher's hangup expect the default disposition that a terminal gives a command.
signal.signal(signal.SIGHUP, signal.SIG_DFL)

MARKERS = {
    "desktop": "needs Xvfb, D-Bus, a tray host, dunst or a desktop (helpers/desktop_services.py)",
    "sshd": "needs the private sshd on loopback (helpers/sshd.py)",
    "agents": "needs the real agents from npm and PyPI, in .agents (make agents)",
}

# The fixtures that start such a service. item.fixturenames is the whole closure of what a
# test uses, so a fixture built on one of these (desktop_env, dunst, start_app, host) needs
# no name here; one that starts its own service does.
MARKING_FIXTURES = {
    "desktop": frozenset(
        {
            "xvfb_display",  # the shared Xvfb, and all that runs on it
            "session_bus",  # the shared private D-Bus
            "focus_desktop",  # an Xvfb, a bus and openbox for one test (desktop_terminals)
            "own_desktop",  # an Xvfb and a bus for one test (test_doctor.py)
            "spec12",  # a bus with a notification server of the test's own
            "buses",  # a session and a stand-in system bus (test_idle.py)
            "gnome_shell",  # a real GNOME Shell, headless, for the session (gnome_fixtures)
            "plasma",  # a real KDE Plasma on Wayland, for the session (plasma_fixtures)
        }
    ),
    "sshd": frozenset({"sshd"}),
}


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for marker, fixtures in MARKING_FIXTURES.items():
            if used & fixtures:
                item.add_marker(marker)
