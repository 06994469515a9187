"""The desktop a test runs against, started for real: Xvfb, a private D-Bus bus, dunst,
dbus-monitor, trayer and an SNI host.

Each ``start_*`` function starts one process with Popen, waits on a condition (never a
fixed sleep) until it is ready, and stops it by its own pid when start-up fails half way.
Stopping after that is the caller's job (``stop_process`` or the handle's ``stop``);
the fixtures in conftest.py do it in teardown.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from Xlib import display as xdisplay

from helpers.waiting import wait_for

START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0
TOOL_TIMEOUT = 10.0

NOTIFICATIONS = "org.freedesktop.Notifications"
SNI_WATCHER = "org.kde.StatusNotifierWatcher"

# Variables that would let a test reach the real desktop or bus, or a real tmux.
_LEAKY = ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "TMUX", "TMUX_PANE", "WINDOWID")


def base_env(**extra: str) -> dict[str, str]:
    """This process's environment without any way to the real desktop, plus ``extra``.

    NO_AT_BRIDGE=1 keeps GTK from starting an accessibility bus of its own.
    """
    env = {key: value for key, value in os.environ.items() if key not in _LEAKY}
    env["NO_AT_BRIDGE"] = "1"
    env.update(extra)
    return env


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """Stop one process by its own pid: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _log_tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-2000:]
    except OSError:
        return ""


def _read_line(fd: int, proc: subprocess.Popen[Any], log: Path, what: str) -> str:
    """Read up to a newline from ``fd``, however many writes it arrives in."""
    deadline = time.monotonic() + START_TIMEOUT
    data = b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RuntimeError(f"{what} printed no line within {START_TIMEOUT:.0f} s")
        readable, _, _ = select.select([fd], [], [], min(remaining, 0.5))
        if not readable:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}: {_log_tail(log)}")
            continue
        chunk = os.read(fd, 256)
        if not chunk:
            raise RuntimeError(f"{what} closed its output: {_log_tail(log)}")
        data += chunk
    return data.decode().strip()


def _popen(
    argv: list[str], env: Mapping[str, str], log: Path, **kwargs: Any
) -> subprocess.Popen[Any]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            argv, env=dict(env), stdin=subprocess.DEVNULL, stderr=sink, **kwargs
        )


def start_xvfb(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start Xvfb on a free display; returns the process and ":N"."""
    read_end, write_end = os.pipe()
    try:
        proc = _popen(
            [
                "Xvfb",
                # Without it Xvfb resets when its last client leaves, and a quick
                # reconnect is refused.
                "-noreset",
                # No screen saver: the display lives for the whole run, and after 10
                # minutes without input (between the tests that give it some) the server
                # blanked it under a full-screen override-redirect window, which the icon
                # tests then took for an open menu over a black tray. The idle time that
                # MIT-SCREEN-SAVER reports counts on regardless.
                "-s",
                "0",
                "-displayfd",
                str(write_end),
                "-screen",
                "0",
                "1024x768x24",
                "-nolisten",
                "tcp",
            ],
            base_env(),
            log,
            stdout=subprocess.DEVNULL,
            pass_fds=(write_end,),
        )
        os.close(write_end)
        write_end = -1
        try:
            # Xvfb writes the number and the newline separately; stopping at the first
            # write makes it die with "Cannot write display number".
            number = _read_line(read_end, proc, log, "Xvfb")
        except BaseException:
            stop_process(proc)
            raise
    finally:
        os.close(read_end)
        if write_end != -1:
            os.close(write_end)
    return proc, f":{number}"


_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={directory}</listen>
  <auth>EXTERNAL</auth>{servicedir}
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def start_bus(
    directory: Path, services: Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Start a private session bus; returns the process and its address.

    By default its config has no <servicedir>, so nothing is ever auto-started on it:
    every service on it is a process a test started itself. With ``services``, the bus
    starts the services described there on demand (D-Bus activation), in ``env``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "session.conf"
    servicedir = "" if services is None else f"\n  <servicedir>{services}</servicedir>"
    config.write_text(_BUS_CONFIG.format(directory=directory, servicedir=servicedir))
    log = directory / "dbus-daemon.log"
    proc = _popen(
        ["dbus-daemon", "--nofork", "--print-address=1", f"--config-file={config}"],
        base_env() if env is None else dict(env),
        log,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        address = _read_line(proc.stdout.fileno(), proc, log, "dbus-daemon")
    except BaseException:
        stop_process(proc)
        raise
    return proc, address


def _bus_says_true(env: Mapping[str, str], destination: str, path: str, *call: str) -> bool:
    """Whether a method call on env's session bus answered the boolean true (dbus-send)."""
    done = subprocess.run(
        ["dbus-send", "--print-reply", f"--dest={destination}", path, *call],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT,
        check=False,
    )
    return "boolean true" in done.stdout


def name_has_owner(env: Mapping[str, str], name: str) -> bool:
    """Whether ``name`` is owned on the bus of env's DBUS_SESSION_BUS_ADDRESS."""
    return _bus_says_true(
        env,
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus.NameHasOwner",
        f"string:{name}",
    )


def _wait_for_name(
    env: Mapping[str, str], name: str, proc: subprocess.Popen[Any], log: Path
) -> None:
    def owned() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"the owner of {name} exited: {_log_tail(log)}")
        return name_has_owner(env, name)

    wait_for(owned, START_TIMEOUT, 0.1, f"{name} on the bus")


_DUNSTRC = """[global]
    markup = full
    # Top left: trayer sits top right and the SNI bar at the bottom.
    origin = top-left
    offset = 10x10
    # Notifications stay until a test closes them, whatever the idle time.
    idle_threshold = 0
    sticky_history = yes
    history_length = 100
    show_indicators = no
[urgency_low]
    timeout = 0
[urgency_normal]
    timeout = 0
[urgency_critical]
    timeout = 0
"""


@dataclass
class Dunst:
    """A running dunst, and dunstctl pointed at its bus."""

    proc: subprocess.Popen[bytes]
    env: dict[str, str]  # DISPLAY and DBUS_SESSION_BUS_ADDRESS it runs with

    @property
    def address(self) -> str:
        return self.env["DBUS_SESSION_BUS_ADDRESS"]

    def ctl(self, *args: str) -> str:
        done = subprocess.run(
            ["dunstctl", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT,
            check=True,
        )
        return done.stdout

    def count(self, which: str = "displayed") -> int:
        """How many notifications are "displayed", "waiting" or in "history"."""
        return int(self.ctl("count", which).strip())

    def history(self) -> list[dict[str, object]]:
        """Closed notifications, newest first, as {field: value} ("summary", "body",
        "message" (the markup dunst renders), "appname", "id", ...)."""
        document = json.loads(self.ctl("history"))
        return [
            {key: field["data"] for key, field in entry.items()} for entry in document["data"][0]
        ]

    def action(self, position: int = 0) -> None:
        """Invoke the default action of the notification at ``position`` (a click)."""
        self.ctl("action", str(position))

    def close_all(self) -> None:
        """Close every notification, and wait until none is displayed or waiting."""
        self.ctl("close-all")
        wait_for(
            lambda: self.count("displayed") == 0 and self.count("waiting") == 0,
            what="dunst to close everything",
        )

    def stop(self) -> None:
        stop_process(self.proc)


@dataclass
class MenuDunst:
    """A dunst on a bus of its own whose context menu is a stub dmenu: the stub keeps
    what dunst offered and picks one button. The shared dunst's menu command cannot be
    changed, hence a bus of its own."""

    dunst: Dunst
    bus: subprocess.Popen[bytes]
    offered: Path  # what dunst wrote to the menu, one action a line

    @property
    def bus_env(self) -> dict[str, str]:
        return {"DBUS_SESSION_BUS_ADDRESS": self.dunst.address}

    def offered_text(self) -> str:
        try:
            return self.offered.read_text()
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        self.dunst.stop()
        stop_process(self.bus)


def start_menu_dunst(display: str, directory: Path, pick: str) -> MenuDunst:
    """Start a bus and a dunst whose context menu picks the button labelled ``pick``."""
    directory.mkdir(parents=True, exist_ok=True)
    bus, address = start_bus(directory / "bus")
    try:
        env = base_env(DISPLAY=display, DBUS_SESSION_BUS_ADDRESS=address)
        offered = directory / "offered.txt"
        menu = directory / "dmenu"
        menu.write_text(f"#!/bin/sh\ntee {offered} | grep -m 1 -F '{pick}'\n")
        menu.chmod(0o755)
        config = directory / "dunstrc"
        config.write_text(
            f"[global]\n    dmenu = {menu}\n    idle_threshold = 0\n"
            "[urgency_normal]\n    timeout = 0\n[urgency_critical]\n    timeout = 0\n"
        )
        log = directory / "dunst.log"
        proc = _popen(["dunst", "-config", str(config)], env, log, stdout=subprocess.DEVNULL)
        try:
            _wait_for_name(env, NOTIFICATIONS, proc, log)
        except BaseException:
            stop_process(proc)
            raise
    except BaseException:
        stop_process(bus)
        raise
    return MenuDunst(Dunst(proc, env), bus, offered)


def start_dunst(env: Mapping[str, str], directory: Path) -> Dunst:
    """Start dunst with ``env`` (DISPLAY and DBUS_SESSION_BUS_ADDRESS set) and a config of
    its own, so the user's dunstrc is never read; returns once it owns the name."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "dunstrc"
    config.write_text(_DUNSTRC)
    log = directory / "dunst.log"
    proc = _popen(["dunst", "-config", str(config)], env, log, stdout=subprocess.DEVNULL)
    try:
        _wait_for_name(env, NOTIFICATIONS, proc, log)
    except BaseException:
        stop_process(proc)
        raise
    return Dunst(proc, dict(env))


@dataclass(frozen=True)
class NotifyCall:
    """One org.freedesktop.Notifications.Notify call, argument by argument."""

    app_name: str
    replaces_id: int
    icon: str
    summary: str
    body: str
    actions: list[str]
    hints: dict[str, object]
    expire_timeout: int

    @property
    def urgency(self) -> object:
        """The urgency hint: 0 low, 1 normal, 2 critical; None when not sent."""
        return self.hints.get("urgency")


class _IncompleteError(Exception):
    """The monitor has not printed the whole message yet."""


# dbus-monitor prints strings raw, quotes and newlines included. A string ends at a
# quote that closes its line when the next line starts another value (or nothing).
_NEXT_VALUE = (
    r"[ \t]*(?:string |object path |signature |u?int(?:16|32|64) |byte |boolean |double "
    r"|variant |array \[|dict entry\(|\]|\))"
)
_STRING_END = re.compile(r'"(?:\n(?=' + _NEXT_VALUE + r")|\n?\Z)")
_STRING = re.compile(r'\s*(?:string|object path|signature) "')
_NUMBER = re.compile(r"\s*(?:u?int(?:16|32|64)|byte) (-?[0-9]+)")
_DOUBLE = re.compile(r"\s*double (\S+)")
_BOOLEAN = re.compile(r"\s*boolean (true|false)")
_VARIANT = re.compile(r"\s*variant\b")
_ARRAY = re.compile(r"\s*array \[")
_DICT_ENTRY = re.compile(r"\s*dict entry\(")
_HEADER = re.compile(r"^(?:method call|method return|signal|error) .*$", re.MULTILINE)


def _parse_value(text: str, pos: int) -> tuple[object, int]:
    if match := _STRING.match(text, pos):
        end = _STRING_END.search(text, match.end())
        if end is None:
            raise _IncompleteError
        return text[match.end() : end.start()], end.end()
    if match := _NUMBER.match(text, pos):
        return int(match.group(1)), match.end()
    if match := _DOUBLE.match(text, pos):
        return float(match.group(1)), match.end()
    if match := _BOOLEAN.match(text, pos):
        return match.group(1) == "true", match.end()
    if match := _VARIANT.match(text, pos):
        return _parse_value(text, match.end())
    if match := _ARRAY.match(text, pos):
        items, pos = _parse_values(text, match.end(), "]")
        if items and all(isinstance(item, tuple) for item in items):
            return dict(item for item in items if isinstance(item, tuple)), pos
        return items, pos
    if match := _DICT_ENTRY.match(text, pos):
        key_value, pos = _parse_values(text, match.end(), ")")
        return tuple(key_value), pos
    if text[pos:].strip():
        raise ValueError(f"dbus-monitor output not understood at {text[pos : pos + 40]!r}")
    raise _IncompleteError


def _parse_values(text: str, pos: int, closer: str | None) -> tuple[list[object], int]:
    values: list[object] = []
    while True:
        rest = pos
        while rest < len(text) and text[rest].isspace():
            rest += 1
        if rest >= len(text):
            if closer is not None:
                raise _IncompleteError
            return values, rest
        if closer is not None and text.startswith(closer, rest):
            return values, rest + 1
        value, pos = _parse_value(text, pos)
        values.append(value)


def parse_notify_calls(output: str) -> list[NotifyCall]:
    """The complete Notify calls in dbus-monitor's text output, in order."""
    headers = list(_HEADER.finditer(output))
    calls = []
    for index, header in enumerate(headers):
        if not header.group(0).startswith("method call") or "member=Notify" not in header.group(0):
            continue
        end = headers[index + 1].start() if index + 1 < len(headers) else len(output)
        try:
            args, _ = _parse_values(output[header.end() + 1 : end], 0, None)
        except _IncompleteError:
            continue
        if len(args) != 8:
            continue
        app_name, replaces_id, icon, summary, body, actions, hints, timeout = args
        calls.append(
            NotifyCall(
                str(app_name),
                _int(replaces_id),
                str(icon),
                str(summary),
                str(body),
                [str(action) for action in _list(actions)],
                {str(key): value for key, value in _dict(hints).items()},
                _int(timeout),
            )
        )
    return calls


def _int(value: object) -> int:
    assert isinstance(value, int), value
    return value


def _list(value: object) -> list[object]:
    assert isinstance(value, list), value
    return value


def _dict(value: object) -> dict[object, object]:
    # An empty array prints the same whatever its type.
    if value == []:
        return {}
    assert isinstance(value, dict), value
    return value


class BusMonitor:
    """dbus-monitor on the org.freedesktop.Notifications interface, and on what the match
    rules ``also`` name besides, already attached."""

    def __init__(self, env: Mapping[str, str], log: Path, also: Sequence[str] = ()) -> None:
        self._env = dict(env)
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self.proc: subprocess.Popen[str] = _popen(
            ["dbus-monitor", f"interface='{NOTIFICATIONS}'", *also],
            env,
            log,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        assert self.proc.stdout is not None
        self._reader = threading.Thread(
            target=self._read, args=(self.proc.stdout,), name="bus-monitor", daemon=True
        )
        self._reader.start()
        try:
            self._attach()
        except BaseException:
            self.stop()
            raise

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._lock:
                self._lines.append(line)

    def _attach(self) -> None:
        # A probe signal on the watched interface proves the monitor sees the bus. It has
        # no destination and no listener matches its member, so nothing else sees it.
        probe = f"{NOTIFICATIONS}.TrayTestMonitorProbe"

        def seen() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dbus-monitor exited with {self.proc.returncode}")
            subprocess.run(
                ["dbus-send", "--type=signal", "/", probe],
                env=self._env,
                timeout=TOOL_TIMEOUT,
                check=True,
            )
            return "member=TrayTestMonitorProbe" in self.text()

        wait_for(seen, START_TIMEOUT, 0.2, "dbus-monitor to attach")

    def text(self) -> str:
        """Everything the monitor printed so far."""
        with self._lock:
            return "".join(self._lines)

    def notify_calls(self) -> list[NotifyCall]:
        """The complete Notify calls seen so far."""
        return parse_notify_calls(self.text())

    def wait_for_notify(self, count: int = 1, timeout: float = 20.0) -> list[NotifyCall]:
        """Wait until at least ``count`` Notify calls were seen; returns all of them."""
        wait_for(lambda: len(self.notify_calls()) >= count, timeout, what=f"{count} Notify call(s)")
        return self.notify_calls()

    def stop(self) -> None:
        stop_process(self.proc)
        self._reader.join(STOP_TIMEOUT)


def selection_owner(display: str, selection: str) -> int:
    """The window id owning an X selection on ``display``, 0 when none."""
    connection = xdisplay.Display(display)
    try:
        owner = connection.get_selection_owner(connection.intern_atom(selection))
        # python-xlib gives X.NONE as a plain int and an owner as a Window.
        return owner if isinstance(owner, int) else int(owner.id)
    finally:
        connection.close()


def start_trayer(env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start trayer (an XEmbed tray host) on env's DISPLAY, returning once it owns
    _NET_SYSTEM_TRAY_S0. It sits at the top right, 32 px high, on a white background."""
    proc = _popen(
        [
            "trayer",
            "--edge", "top",
            "--align", "right",
            "--widthtype", "request",
            "--height", "32",
            "--transparent", "true",
            "--alpha", "0",
            "--tint", "0xffffff",
        ],
        env,
        log,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        def owned() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"trayer exited with {proc.returncode}: {_log_tail(log)}")
            return bool(selection_owner(env["DISPLAY"], "_NET_SYSTEM_TRAY_S0"))

        wait_for(owned, START_TIMEOUT, 0.1, "trayer to own _NET_SYSTEM_TRAY_S0")
    except BaseException:
        stop_process(proc)
        raise
    return proc


# gtk-sni-tray-standalone --watcher races with itself at start: its host half may ask
# for the watcher before the watcher half has taken its name or exported its object
# ("ServiceUnknown" or "UnknownObject"), and then it ends with "Pattern match failure in
# do expression at app/Main.hs:177". Reproduced here about once in 40 starts with the
# cores busy, and once in a whole make test (a doctor test then saw no watcher). Past
# the host's registration the race is over, so a start counts once the watcher says a
# host is registered, and one that ended before that is tried again.
_SNI_HOST_STARTS = 3


def start_sni_host(env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """Start gtk-sni-tray-standalone with its own StatusNotifierWatcher, as a bar at the
    bottom of env's DISPLAY, returning once its host is registered with the watcher."""
    for _ in range(_SNI_HOST_STARTS):
        proc = _popen(
            ["gtk-sni-tray-standalone", "--watcher", "--bottom"],
            env,
            log,
            stdout=subprocess.DEVNULL,
        )
        try:
            if _wait_for_sni_host(env, proc):
                return proc
        except BaseException:
            stop_process(proc)
            raise
    raise RuntimeError(
        f"gtk-sni-tray-standalone ended at each of {_SNI_HOST_STARTS} starts: {_log_tail(log)}"
    )


def _wait_for_sni_host(env: Mapping[str, str], proc: subprocess.Popen[Any]) -> bool:
    """True once the watcher has a host registered; False when ``proc`` ended first."""

    def settled() -> str | None:
        if proc.poll() is not None:
            return "ended"
        return "registered" if _sni_host_registered(env) else None

    outcome = wait_for(settled, START_TIMEOUT, 0.1, "a StatusNotifierItem host registered")
    return outcome == "registered"


def _sni_host_registered(env: Mapping[str, str]) -> bool:
    return _bus_says_true(
        env,
        SNI_WATCHER,
        "/StatusNotifierWatcher",
        "org.freedesktop.DBus.Properties.Get",
        f"string:{SNI_WATCHER}",
        "string:IsStatusNotifierHostRegistered",
    )
