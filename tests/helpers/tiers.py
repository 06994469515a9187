"""The two tiers of the suite: `make check` runs what needs nothing but Python, `make test`
runs everything.

A test is marked by what it needs, wherever its file sits, so that it keeps its marker when
it moves and a new test is sorted without anyone remembering to:
- by the fixtures it uses: the private X server or bus make it ``desktop``, the private
  sshd ``sshd``, a job shell on a pty or `python -m tray` in a home ``process``;
- by what its module can reach: a test module that imports, itself or through the
  helpers and tray modules it imports (lazy imports included), a module that starts
  processes or opens sockets (``REACHING``: subprocess, ptyprocess, socket, D-Bus, a
  toolkit...) is ``process``;
- by its own word, for what neither shows: ``@pytest.mark.process``, or ``pytestmark``.

``--tier=check`` keeps only the tests with none of those markers, and watches them: a
test in that tier that starts a process or opens a connection fails, naming what it
started, instead of slipping into the fast tier (a Python audit hook sees every fork,
exec, spawn, ``subprocess.Popen``, socket bind and connect, from any thread).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator
from typing import Any

import pytest

from helpers.reach import reaches

MARKERS = {
    "desktop": "needs Xvfb, D-Bus, a tray host, dunst or a desktop (helpers/desktop_services.py)",
    "sshd": "needs the private sshd on loopback (helpers/sshd.py)",
    "agents": "needs the real agents from npm and PyPI, in .agents (make agents)",
    "process": "starts a process, a pty or a socket (not in `make check`)",
}

# The fixtures that start such a thing. item.fixturenames is the whole closure of what a
# test uses, so a fixture built on one of these (desktop_env, dunst, start_app, host) needs
# no name here; one that starts its own needs one.
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
    "process": frozenset(
        {
            "tray_home",  # `python -m tray` in subprocesses (helpers/tray_cli.py)
            "terminal",  # a job shell on a pty (helpers/launcher_terminal.py)
            "shell",  # bash, zsh or fish on a pty (helpers/shells.py)
        }
    ),
}

TIERS = ("check", "all")
FAST_TIER = "check"

# What the fast tier may not do. Python raises these audit events (sys.audit) whatever
# module or library does the deed.
FORBIDDEN_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.exec",
        "os.spawn",
        "os.system",
        "socket.bind",
        "socket.connect",
    }
)


class StartedSomethingError(Exception):
    """A test of the fast tier started a process or opened a socket."""


class _Guard:
    """Records what the running test starts, while it is armed. One hook for the run:
    an audit hook cannot be removed once added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.armed = False
        self.seen: list[str] = []

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.armed or event not in FORBIDDEN_EVENTS:
            return
        what = f"{event}{args[:2]!r}"
        with self._lock:
            self.seen.append(what)
        raise StartedSomethingError(what)

    def arm(self) -> None:
        with self._lock:
            self.seen.clear()
            self.armed = True

    def disarm(self) -> list[str]:
        with self._lock:
            self.armed = False
            return list(self.seen)


_GUARD = _Guard()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        choices=TIERS,
        default="all",
        help="check: only the tests that need no process, display, bus or network, watched",
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")
    if config.getoption("tier") == FAST_TIER:
        sys.addaudithook(_GUARD.hook)


def needs(item: pytest.Item) -> set[str]:
    """The markers that keep ``item`` out of the fast tier."""
    used = set(getattr(item, "fixturenames", ()))
    for marker, fixtures in MARKING_FIXTURES.items():
        if used & fixtures:
            item.add_marker(marker)
    if reaches(item.path) is not None:
        item.add_marker("process")
    return {mark.name for mark in item.iter_markers() if mark.name in MARKERS}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    fast = config.getoption("tier") == FAST_TIER
    for item in items:
        (dropped if needs(item) and fast else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`make test`'s ``--dist loadgroup``: each desktop's tests on one worker."""
    if config.getvalue("dist") != "loadgroup":
        return None
    # Imported here: only a run with workers has xdist to hand.
    from helpers.worker_groups import GroupedScheduling  # noqa: PLC0415

    return GroupedScheduling(config, log)


def _watched(item: pytest.Item) -> bool:
    return bool(item.config.getoption("tier") == FAST_TIER)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _watch(item, "its set-up"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _watch(item, "it"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _watch(item, "its tear-down"))


def _watch(item: pytest.Item, phase: str) -> Generator[None, None, None]:
    if not _watched(item):
        return (yield)
    _GUARD.arm()
    try:
        result = yield
    finally:
        seen = _GUARD.disarm()
    if seen:
        pytest.fail(
            f"in `make check`, but {phase} started {seen[0]}: use a fixture that marks it, "
            "or mark it @pytest.mark.process (helpers/tiers.py)",
            pytrace=False,
        )
    return result
