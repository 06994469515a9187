"""``tray doctor`` as a user runs it, against real desktops that lack one thing at a time.

Each test runs ``python -m tray doctor`` in a subprocess with a controlled environment.
Tests that need a desktop missing a part start their own Xvfb and bus (services.py), so
the shared session fixtures are never stopped under other tests. The terminal check runs
on a real pty, with a small fake terminal on the master side.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers.answer_keys import SHIPPED_KEYS
from helpers.desktop_services import (
    base_env,
    start_bus,
    start_dunst,
    start_sni_host,
    start_trayer,
    start_xvfb,
    stop_process,
)

from tray.commands.doctor import gather
from tray.desktop.tray_area import TrayAreaLook, backend_for_tray
from tray.state.config_file import load_config
from tray.state.environment import Environment

# The queries doctor writes to the terminal come before its lines on a pty.
_CONTROL_SEQUENCE = re.compile(r"\x1b\][^\x07]*\x07|\x1b\[[?0-9;]*[A-Za-z]")
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0
QUERY = b"\x1b]7501;?\x07\x1b[c"
DA1_QUERY = b"\x1b[c"
DA1_REPLY = b"\x1b[?62;22c"


def tray_env(base: Mapping[str, str], tmp: Path, **extra: str) -> dict[str, str]:
    """``base`` with tray's state, config and home in ``tmp``, and tray importable."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in base.items() if k not in ("PYSTRAY_BACKEND", "TRAY_SESSION_ID")}
    env.update(
        HOME=str(home),
        TRAY_STATE_DIR=str(tmp / "state"),
        XDG_CONFIG_HOME=str(tmp / "config"),
        XDG_RUNTIME_DIR=str(tmp / "runtime"),
        PYTHONPATH=str(ROOT),
    )
    env.update(extra)
    return env


def run_doctor(env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "tray", "doctor"],
        env=dict(env),
        cwd=env["HOME"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    return result


def checks(output: str) -> dict[str, tuple[str, str]]:
    """{check name: (status, the rest of its line)} from doctor's output."""
    found: dict[str, tuple[str, str]] = {}
    for line in _CONTROL_SEQUENCE.sub("", output).replace("\r", "").splitlines():
        status, _, rest = line.partition(" ")
        name, sep, text = rest.strip().partition(": ")
        assert status in ("ok", "warn", "FAIL") and sep, f"not a check line: {line!r}"
        assert name not in found, f"{name} reported twice"
        found[name] = (status, text)
    # One line per agent tray knows follows: tests/commands/test_doctor_agents.py.
    assert {name for name in found if not name.startswith("agent ")} == {
        "display",
        "tray backend",
        "tray host",
        "notification server",
        "state directory",
        "tray app",
        "terminal",
        "shell",
        "answer",
        "focus",
        "away",
    }, output
    return found


@dataclass
class Desktop:
    """A desktop of this test's own: Xvfb, a bus and whichever services it asked for."""

    env: dict[str, str]
    display: str


@pytest.fixture
def own_desktop(tmp_path: Path) -> Iterator[Callable[..., Desktop]]:
    """Starts a fresh Xvfb and bus, plus the named services; stops all after the test."""
    procs: list[subprocess.Popen[bytes]] = []
    stoppers: list[Callable[[], None]] = []

    def start(*services: str, activatable: Path | None = None) -> Desktop:
        """``activatable``: a directory of D-Bus service files the bus may start."""
        xvfb, display = start_xvfb(tmp_path / "xvfb.log")
        procs.append(xvfb)
        bus, address = start_bus(tmp_path / "bus", activatable, base_env(DISPLAY=display))
        procs.append(bus)
        env = base_env(DISPLAY=display, DBUS_SESSION_BUS_ADDRESS=address)
        for service in services:
            if service == "dunst":
                stoppers.append(start_dunst(env, tmp_path / "dunst").stop)
            elif service == "trayer":
                procs.append(start_trayer(env, tmp_path / "trayer.log"))
            elif service == "sni":
                procs.append(start_sni_host(env, tmp_path / "sni.log"))
            else:
                raise ValueError(service)
        return Desktop(env, display)

    try:
        yield start
    finally:
        for stop in reversed(stoppers):
            stop()
        for proc in reversed(procs):
            stop_process(proc)


# --- a whole desktop -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "status", "named"),
    [(None, "ok", ("appindicator",)), ("gtk", "ok", ("gtk",)), ("xorg", "warn", ("xorg",))],
)
@pytest.mark.usefixtures("dunst", "trayer", "sni_host")
def test_everything_present(
    desktop_env: dict[str, str],
    tmp_path: Path,
    backend: str | None,
    status: str,
    named: tuple[str, ...],
) -> None:
    extra = {"PYSTRAY_BACKEND": backend} if backend else {}
    result = run_doctor(tray_env(desktop_env, tmp_path, **extra))
    found = checks(result.stdout)

    # Warnings alone (the xorg backend, no app running) do not fail.
    assert result.returncode == 0, result.stdout
    assert found["display"] == ("ok", f"X11 {desktop_env['DISPLAY']}")
    backend_status, backend_text = found["tray backend"]
    assert backend_status == status, backend_text
    assert backend_text.split(" ")[0] in named
    if backend == "xorg":
        assert "no menu" in backend_text
        assert "pip install 'tray[gtk]'" in backend_text
        assert "gir1.2-ayatanaappindicator3-0.1" in backend_text
    else:
        assert "fix:" not in backend_text
    host_status, host_text = found["tray host"]
    assert host_status == "ok"
    assert "org.kde.StatusNotifierWatcher" in host_text
    assert "XEmbed tray (_NET_SYSTEM_TRAY_S0" in host_text
    server_status, server_text = found["notification server"]
    assert server_status == "ok"
    assert server_text.startswith("dunst 1.9")
    assert "body-markup" in server_text and "actions" in server_text
    assert found["state directory"][0] == "ok"
    assert found["tray app"][0] == "warn"
    assert "not running" in found["tray app"][1]
    assert found["terminal"] == ("ok", "not a terminal: skipped")


# --- the app's own look for a tray host ---------------------------------------------------


def _children() -> set[int]:
    """This process's child pids, from /proc."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(OSError):
            found |= {int(pid) for pid in (task / "children").read_text().split()}
    return found


def test_the_app_finds_a_tray_host_that_comes_later_without_a_child_process(
    own_desktop: Callable[..., Desktop], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    desktop = own_desktop()
    look = TrayAreaLook(desktop.env)
    started: list[object] = []
    real_popen = subprocess.Popen

    def recording_popen(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return real_popen(*args, **kwargs)

    try:
        before = _children()
        with monkeypatch.context() as patch:
            patch.setattr(subprocess, "Popen", recording_popen)
            missing = look.check("xorg")
            again = look.check("xorg")
        assert started == []  # no probe child, as doctor would start
        assert _children() == before
        assert missing == again
        assert missing.status == "FAIL"
        assert missing.found.startswith("none: no org.kde.StatusNotifierWatcher")
        assert "no XEmbed tray" in missing.found
        # The same look, on the connections it kept, sees each host once it is there.
        sni = start_sni_host(desktop.env, tmp_path / "sni.log")
        try:
            found = look.check("appindicator")
            assert found.status == "ok", found.line()
            assert found.found == "StatusNotifierItem host (org.kde.StatusNotifierWatcher)"
            only_sni = look.check("xorg")
            assert only_sni.status == "FAIL"
            assert "which the xorg backend cannot use" in only_sni.found
            trayer = start_trayer(desktop.env, tmp_path / "trayer.log")
            try:
                both = look.check("xorg")
                assert both.status == "ok", both.line()
                assert "XEmbed tray (_NET_SYSTEM_TRAY_S0 owned by window 0x" in both.found
            finally:
                stop_process(trayer)
        finally:
            stop_process(sni)
        assert _children() - before == set()
    finally:
        look.close()


def test_the_app_asks_for_gtk_only_where_an_xembed_tray_is_alone(
    own_desktop: Callable[..., Desktop], tmp_path: Path
) -> None:
    desktop = own_desktop()
    look = TrayAreaLook(desktop.env)
    try:
        assert look.backend() is None  # no tray at all: pystray's choice
        trayer = start_trayer(desktop.env, tmp_path / "trayer.log")
        try:
            assert look.backend() == "gtk"
            # The user's own choice is never overridden.
            assert backend_for_tray({**desktop.env, "PYSTRAY_BACKEND": "xorg"}) is None
            sni = start_sni_host(desktop.env, tmp_path / "sni.log")
            try:
                assert look.backend() is None  # a StatusNotifierItem host: appindicator
            finally:
                stop_process(sni)
        finally:
            stop_process(trayer)
        assert look.backend() is None
    finally:
        look.close()


def test_doctor_names_the_backend_the_app_picks_for_an_xembed_tray_alone(
    own_desktop: Callable[..., Desktop], tmp_path: Path
) -> None:
    desktop = own_desktop("dunst", "trayer")
    found = checks(run_doctor(tray_env(desktop.env, tmp_path)).stdout)
    status, text = found["tray backend"]
    assert status == "ok"
    assert text == (
        "gtk (tray's choice for an XEmbed tray without a StatusNotifierItem host): "
        "right click opens the menu; left click focuses the most urgent session, "
        "or opens the menu"
    )
    assert found["tray host"][0] == "ok"


def test_the_apps_look_without_a_display_or_bus(tmp_path: Path) -> None:
    look = TrayAreaLook({})
    try:
        check = look.check(None)
    finally:
        look.close()
    assert check.status == "FAIL"
    assert "DBUS_SESSION_BUS_ADDRESS is not set" in check.found
    assert "(no X display to look on)" in check.found


# --- one part missing at a time ------------------------------------------------------------


def test_no_tray_host(own_desktop: Callable[..., Desktop], tmp_path: Path) -> None:
    desktop = own_desktop("dunst")
    result = run_doctor(tray_env(desktop.env, tmp_path))
    found = checks(result.stdout)

    assert result.returncode == 1, result.stdout
    status, text = found["tray host"]
    assert status == "FAIL"
    assert text.startswith("none: no org.kde.StatusNotifierWatcher on the session bus")
    assert "no XEmbed tray" in text
    assert "fix: run a panel with a system tray" in text
    assert found["display"] == ("ok", f"X11 {desktop.display}")
    assert found["notification server"][0] == "ok"


def test_no_notification_server(own_desktop: Callable[..., Desktop], tmp_path: Path) -> None:
    desktop = own_desktop("trayer")
    result = run_doctor(tray_env(desktop.env, tmp_path))
    found = checks(result.stdout)

    assert result.returncode == 1, result.stdout
    status, text = found["notification server"]
    assert status == "FAIL"
    assert text.startswith("none: nothing owns org.freedesktop.Notifications")
    assert "fix: start one in your session" in text
    assert found["tray host"][0] == "ok"
    assert "XEmbed tray" in found["tray host"][1]


def test_a_notification_server_the_bus_can_start_is_enough(
    own_desktop: Callable[..., Desktop], tmp_path: Path
) -> None:
    services = tmp_path / "services"
    services.mkdir()
    (services / "org.freedesktop.Notifications.service").write_text(
        "[D-BUS Service]\nName=org.freedesktop.Notifications\nExec=/usr/bin/dunst\n"
    )
    desktop = own_desktop("trayer", activatable=services)
    result = run_doctor(tray_env(desktop.env, tmp_path))
    found = checks(result.stdout)
    assert found["notification server"] == (
        "ok",
        "not running; the session bus starts one on the first notification",
    )
    assert result.returncode == 0, result.stdout


def test_xorg_backend_cannot_use_a_status_notifier_host(
    own_desktop: Callable[..., Desktop], tmp_path: Path
) -> None:
    desktop = own_desktop("dunst", "sni")
    result = run_doctor(tray_env(desktop.env, tmp_path, PYSTRAY_BACKEND="xorg"))
    found = checks(result.stdout)

    assert result.returncode == 1, result.stdout
    status, text = found["tray host"]
    assert status == "FAIL"
    assert "which the xorg backend cannot use" in text
    assert "gir1.2-ayatanaappindicator3-0.1" in text


def test_no_display(tmp_path: Path) -> None:
    result = run_doctor(tray_env(base_env(), tmp_path))
    found = checks(result.stdout)

    assert result.returncode == 1, result.stdout
    status, text = found["display"]
    assert status == "FAIL"
    assert text.startswith("none: neither DISPLAY nor WAYLAND_DISPLAY is set")
    assert "fix:" in text
    assert found["tray backend"][0] == "FAIL"
    assert found["tray host"][0] == "FAIL"
    assert found["state directory"][0] == "ok"


def test_unusable_state_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    result = run_doctor(tray_env(base_env(), tmp_path, TRAY_STATE_DIR=str(blocker)))
    status, text = checks(result.stdout)["state directory"]

    assert result.returncode == 1
    assert status == "FAIL"
    assert text.startswith(f"{blocker} is not a directory")


def test_state_dir_open_to_others_is_a_warning(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    os.chmod(state, 0o755)  # noqa: S103 - what the test is about
    result = run_doctor(tray_env(base_env(), tmp_path))
    status, text = checks(result.stdout)["state directory"]

    assert status == "warn"
    assert "mode 0755" in text and "fix: chmod 700" in text
    assert os.stat(state).st_mode & 0o777 == 0o755  # the doctor only looks


# --- the terminal check on a real pty ------------------------------------------------------


def _take_terminal() -> None:
    # Runs in the child after setsid: make stdin, the pty slave, its controlling terminal.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@dataclass(frozen=True)
class PtyResult:
    returncode: int
    output: str
    queries: int


def run_on_pty(
    argv: list[str],
    env: Mapping[str, str],
    respond: Callable[[bytes], bytes],
    timeout: float = TIMEOUT,
) -> tuple[PtyResult, list[object], list[object]]:
    """Run ``argv`` with a pty as its terminal; ``respond(all output so far)`` gives the
    bytes to type next (b"" for none). Returns the result and the slave's termios before
    and after the run."""
    master, slave = os.openpty()
    before = termios.tcgetattr(slave)
    try:
        proc = subprocess.Popen(
            argv,
            env=dict(env),
            cwd=env["HOME"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=_take_terminal,  # noqa: PLW1509 - the child only makes an ioctl
        )
        output = b""
        deadline = time.monotonic() + timeout
        try:
            while True:
                readable, _, _ = select.select([master], [], [], 0.05)
                if readable:
                    with contextlib.suppress(OSError):
                        output += os.read(master, 4096)
                    typed = respond(output)
                    if typed:
                        os.write(master, typed)
                elif proc.poll() is not None:
                    break
                assert time.monotonic() < deadline, f"still running: {output!r}"
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(TIMEOUT)
        after = termios.tcgetattr(slave)
    finally:
        os.close(slave)
        os.close(master)
    text = output.decode("utf-8", "replace")
    assert "Traceback" not in text, text
    return PtyResult(proc.returncode, text, output.count(QUERY)), before, after


def _fake_terminal(answer: bytes) -> Callable[[bytes], bytes]:
    """Answers each device attributes query (which follows a support query) once."""
    answered = 0

    def respond(output: bytes) -> bytes:
        nonlocal answered
        if output.count(DA1_QUERY) > answered:
            answered += 1
            return answer
        return b""

    return respond


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (b"\x1b]7501;?\x07" + DA1_REPLY, ("ok", "answers OSC 7501 itself")),
        (b"\x1b]7501;?\x1b\\" + DA1_REPLY, ("ok", "answers OSC 7501 itself")),
        (DA1_REPLY, ("warn", "does not answer (use tray run); fix: start agents as")),
        (DA1_REPLY + b"\x1b]7501;?\x07", ("warn", "does not answer (use tray run); fix: start")),
        (b"", ("warn", "does not answer (use tray run); no reply at all within 1 s")),
    ],
    ids=["answers-bel", "answers-st", "da1-only", "da1-first", "silent"],
)
def test_terminal_answer(tmp_path: Path, answer: bytes, expected: tuple[str, str]) -> None:
    env = tray_env(base_env(), tmp_path)
    result, before, after = run_on_pty(
        [sys.executable, "-m", "tray", "doctor"], env, _fake_terminal(answer)
    )

    assert result.queries == 1, result.output
    status, text = checks(result.output)["terminal"]
    assert status == expected[0]
    assert text.startswith(expected[1])
    assert after == before  # raw mode undone


def test_terminal_under_tray_run_is_answered_by_the_launcher(tmp_path: Path) -> None:
    # The launcher answers the query itself; the fake terminal outside only says DA1.
    env = tray_env(base_env(), tmp_path)
    argv = [sys.executable, "-m", "tray", "run", "--", sys.executable, "-m", "tray", "doctor"]
    result, _, _ = run_on_pty(argv, env, _fake_terminal(DA1_REPLY))

    status, text = checks(result.output)["terminal"]
    assert (status, text) == ("ok", "answers OSC 7501 (this shell runs under tray run)")


# --- answering, focus and away --------------------------------------------------------------


def _with_config(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config" / "tray" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_answer_says_whether_it_is_on_and_for_which_apps(tmp_path: Path) -> None:
    env = tray_env(base_env(), tmp_path)
    found = checks(run_doctor(env).stdout)
    *rest, last = sorted(SHIPPED_KEYS)
    assert "claude-code" in rest
    assert found["answer"] == (
        "ok",
        f"on for {', '.join(rest)} and {last} (Approve and Deny on their permission prompts)",
    )
    _with_config(tmp_path, '[answer.apps.pi]\napprove = "y"\ndeny = "n"\n')
    assert "opencode, pi, qwen-code and tray-demo" in checks(run_doctor(env).stdout)["answer"][1]
    _with_config(tmp_path, "[answer]\nenabled = false\n")
    status, text = checks(run_doctor(env).stdout)["answer"]
    assert (status, text.split(":")[0]) == ("ok", "off ([answer] enabled = false)")


@pytest.mark.parametrize(
    ("terminal", "expected"),
    [
        ({"TMUX": "/tmp/tmux-1000/default,1,0", "TMUX_PANE": "%1"}, ("ok", "tmux pane %1")),
        ({"WINDOWID": "4194307", "DISPLAY": ":99"}, ("ok", "X11 window 4194307")),
        ({"KITTY_WINDOW_ID": "3"}, ("warn", "kitty: remote control is off")),
        ({}, ("warn", "no tmux pane, terminal tab or window recorded")),
    ],
    ids=["tmux", "x11-window", "kitty-off", "nothing"],
)
def test_focus_says_what_it_will_use_here(
    tmp_path: Path, terminal: dict[str, str], expected: tuple[str, str]
) -> None:
    status, text = checks(run_doctor(tray_env(base_env(), tmp_path, **terminal)).stdout)["focus"]
    assert status == expected[0], text
    assert text.startswith(expected[1]), text
    if "KITTY_WINDOW_ID" in terminal:
        assert "allow_remote_control yes" in text


def test_away_without_a_table_probes_nothing(tmp_path: Path) -> None:
    found = checks(run_doctor(tray_env(base_env(), tmp_path)).stdout)
    assert found["away"] == ("ok", "off: pings stay on this desktop (no [away] in config.toml)")
    # Nothing of the idle watch or the forwarder is loaded for it: no bus, no X, no waiting.
    code = (
        "import sys\n"
        "from tray.commands.doctor import check_away_line\n"
        "from tray.core.config.settings import Config\n"
        "check = check_away_line(Config(), {'DISPLAY': ':1', 'DBUS_SESSION_BUS_ADDRESS': 'x'})\n"
        "assert check.status == 'ok', check\n"
        "loaded = {'tray.desktop.idle', 'tray.outlets.forward', 'apprise'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT, cwd=ROOT)


def test_away_names_its_source_and_only_the_schemes(
    own_desktop: Callable[..., Desktop], tmp_path: Path
) -> None:
    desktop = own_desktop()
    _with_config(
        tmp_path,
        '[away]\nafter = "2m"\n'
        'forward = ["json://127.0.0.1:9/SECRET-PATH", "ntfys://SECRET-USER:SECRET-PASS@ntfy.sh/t"]\n',
    )
    # No system bus here: logind cannot answer, so X11's idle time is what tells.
    env = tray_env(desktop.env, tmp_path, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent")
    result = run_doctor(env)
    assert "SECRET" not in result.stdout + result.stderr
    assert checks(result.stdout)["away"] == (
        "ok",
        "after 2 min without input or a locked screen (tells by X11 idle time "
        "(MIT-SCREEN-SAVER)), blocked and error pings also go to json://, ntfys://",
    )


def test_away_without_a_source_or_with_a_url_apprise_refuses(tmp_path: Path) -> None:
    env = tray_env(base_env(), tmp_path, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent")
    _with_config(tmp_path, '[away]\nforward = ["json://127.0.0.1:9/SECRET"]\n')
    result = run_doctor(env)
    status, text = checks(result.stdout)["away"]
    assert status == "warn"
    assert text.startswith("nothing here tells whether you are away, so nothing is forwarded")
    _with_config(tmp_path, '[away]\nforward = ["nosuchservice://SECRET@host"]\n')
    result = run_doctor(env)
    assert result.returncode == 1
    assert checks(result.stdout)["away"] == (
        "FAIL",
        "away.forward[0]: Apprise does not accept this nosuchservice:// URL; "
        "fix: see the Apprise wiki for the URL form of that service",
    )
    assert "SECRET" not in result.stdout + result.stderr


def test_the_gather_holds_one_bus_loop_for_the_bus_focus_and_away(
    own_desktop: Callable[..., Desktop], tmp_path: Path
) -> None:
    """The bus facts, focus and the away probe (its idle and lock sources) each speak
    D-Bus: one loop, held for the whole gather, serves them all, where each attaching on
    its own would start (and close) loops of its own."""
    desktop = own_desktop("dunst")
    _with_config(tmp_path, '[away]\nafter = "2m"\nforward = ["json://127.0.0.1:9/x"]\n')
    env = Environment(
        environ=tray_env(desktop.env, tmp_path, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent"),
        stdin_fd=-1,
    )
    started: list[str] = []

    def note_start(_frame: Any, _event: str, _arg: Any) -> None:
        # Called as each new thread begins, which is then left untraced.
        started.append(threading.current_thread().name)
        sys.settrace(None)

    threading.settrace(note_start)
    try:
        facts = gather(env, load_config(env))
    finally:
        threading.settrace(None)
    assert facts.bus.server is not None and facts.bus.server[0] == "dunst", facts.bus
    assert facts.away.status == "ok", facts.away
    assert started.count("tray-bus") == 1, started
