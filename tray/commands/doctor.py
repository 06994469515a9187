"""``tray doctor``: checks everything that decides whether the user sees the icon and the pings.

One line per check: ``ok``, ``warn`` or ``FAIL``, what was found, and the fix when there is
one. The exit status is 1 when something the main job cannot do without is missing.

Anything that can hang or crash on a broken desktop (importing pystray, connecting to X)
runs in a child process with a timeout; the session bus is asked with a timeout too.
Each ``[[hosts]]`` entry gets a line of its own: one ``tray --version`` over ssh, all
hosts at once, each with a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import select
import stat
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from tray.app.instance import app_lock_held
from tray.config import Config, ConfigError, load_config
from tray.environment import Environment
from tray.launcher.terminal import RawMode
from tray.remote.hosts import HostConfig
from tray.store import StateStore
from tray.text import clean_text

Status = Literal["ok", "warn", "FAIL"]

PROBE_TIMEOUT: Final = 10.0
BUS_TIMEOUT: Final = 5.0
TERMINAL_TIMEOUT: Final = 1.0

NOTIFICATIONS: Final = "org.freedesktop.Notifications"
NOTIFICATIONS_PATH: Final = "/org/freedesktop/Notifications"
SNI_WATCHER: Final = "org.kde.StatusNotifierWatcher"
_CAPABILITIES: Final = ("body", "body-markup", "actions")

GTK_FIX: Final = (
    "pip install 'tray[gtk]' (PyGObject) and the system package "
    "gir1.2-ayatanaappindicator3-0.1 (AppIndicator)"
)

# What each pystray backend can do, as seen under Xvfb (see the project's desktop notes).
_BACKENDS: Final[dict[str, tuple[Status, str]]] = {
    "appindicator": ("ok", "menu and clicks work"),
    "gtk": ("ok", "right click opens the menu, left click runs its default item"),
    "darwin": ("ok", "menu and clicks work"),
    "win32": ("ok", "menu and clicks work"),
    "xorg": ("warn", "the icon shows, but it has no menu and clicks never arrive"),
    "dummy": ("FAIL", "a stand-in that shows nothing"),
}
_XEMBED_ONLY: Final = frozenset({"xorg", "gtk"})

# Run with ``python -c`` in a child process: pystray picks its backend while importing, and
# importing can raise an Xlib error or hang on a broken display.
_BACKEND_PROBE: Final = """
import json, sys
try:
    import pystray
except BaseException as error:
    kind = type(error)
    print(json.dumps({"error": "%s.%s: %s" % (kind.__module__, kind.__name__, error)}))
else:
    name = "unknown"
    for candidate in ("appindicator", "gtk", "xorg", "darwin", "win32", "dummy"):
        module = sys.modules.get("pystray._" + candidate)
        if module is not None and getattr(module, "Icon", None) is pystray.Icon:
            name = candidate
            break
    print(json.dumps({"backend": name}))
"""

_X_PROBE: Final = """
import json
try:
    from Xlib import display
    connection = display.Display()
    screen = connection.get_default_screen()
    selection = "_NET_SYSTEM_TRAY_S%d" % screen
    owner = connection.get_selection_owner(connection.intern_atom(selection))
    owner = owner if isinstance(owner, int) else owner.id
    connection.close()
    print(json.dumps({"selection": selection, "owner": owner}))
except BaseException as error:
    print(json.dumps({"error": "%s: %s" % (type(error).__name__, error)}))
"""

# The 7501 answer (BEL or ST terminated) and the DA1 answer, ESC [ ? Ps ; ... c.
_OSC_ANSWER: Final = re.compile(rb"\x1b\]7501;\?(?:\x07|\x1b\\)")
_DA1_ANSWER: Final = re.compile(rb"\x1b\[\?[0-9;]*c")
TERMINAL_QUERY: Final = b"\x1b]7501;?\x07\x1b[c"


@dataclass(frozen=True, slots=True)
class Check:
    status: Status
    name: str
    found: str
    fix: str | None = None

    def line(self) -> str:
        text = f"{self.status:<4} {self.name}: {self.found}"
        return f"{text}; fix: {self.fix}" if self.fix else text


# -- probes in child processes ------------------------------------------------------------


class _Probe:
    """A ``python -c`` child that prints one JSON object; started now, read later."""

    def __init__(self, code: str, environ: Mapping[str, str]) -> None:
        self._started = time.monotonic()
        self._error: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", code],
                env=dict(environ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                start_new_session=True,  # never a reader on the user's terminal
            )
        except OSError as error:
            self._error = f"cannot run {sys.executable}: {error.strerror or error}"

    def result(self) -> dict[str, Any]:
        if self._proc is None:
            return {"error": self._error}
        remaining = max(0.0, PROBE_TIMEOUT - (time.monotonic() - self._started))
        try:
            out, err = self._proc.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate()
            return {"error": f"no answer within {PROBE_TIMEOUT:.0f} s (hung)", "hung": True}
        lines = out.strip().splitlines()
        if lines:
            with contextlib.suppress(ValueError):
                document = json.loads(lines[-1])
                if isinstance(document, dict):
                    return document
        last = (err.strip().splitlines() or [f"exit status {self._proc.returncode}"])[-1]
        return {"error": last}


# -- the session bus ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BusFacts:
    error: str | None = None  # the bus itself cannot be reached
    watcher: bool = False
    server: tuple[str, str, str, str] | None = None  # name, vendor, version, spec version
    capabilities: tuple[str, ...] | None = None
    server_error: str | None = None
    activatable: bool = False


def bus_facts(environ: Mapping[str, str]) -> BusFacts:
    address = environ.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        return BusFacts(error="DBUS_SESSION_BUS_ADDRESS is not set")
    try:
        return asyncio.run(asyncio.wait_for(_ask_bus(address), BUS_TIMEOUT))
    except TimeoutError:
        return BusFacts(error=f"the session bus did not answer within {BUS_TIMEOUT:.0f} s")
    except Exception as error:  # any failure to connect means the same to the user
        return BusFacts(error=_describe(error))


async def _ask_bus(address: str) -> BusFacts:
    from dbus_fast.aio import MessageBus  # noqa: PLC0415  (Linux only)

    bus = await MessageBus(bus_address=address).connect()
    try:
        watcher = bool((await _call(bus, "NameHasOwner", "s", [SNI_WATCHER]))[0])
        try:
            owner = str((await _call(bus, "GetNameOwner", "s", [NOTIFICATIONS]))[0])
        except _CallError:
            names = (await _call(bus, "ListActivatableNames", "", []))[0]
            return BusFacts(watcher=watcher, activatable=NOTIFICATIONS in names)
        try:
            info = await _call(bus, "GetServerInformation", "", [], owner)
            capabilities = (await _call(bus, "GetCapabilities", "", [], owner))[0]
        except _CallError as error:
            return BusFacts(watcher=watcher, server_error=str(error))
        name, vendor, version, spec = (clean_text(str(part)) for part in [*info, "", "", ""][:4])
        return BusFacts(
            watcher=watcher,
            server=(name, vendor, version, spec),
            capabilities=tuple(clean_text(str(name)) for name in capabilities),
        )
    finally:
        bus.disconnect()


class _CallError(Exception):
    """A D-Bus call answered with an error."""


async def _call(
    bus: Any, member: str, signature: str, body: list[Any], destination: str | None = None
) -> list[Any]:
    from dbus_fast import Message, MessageType  # noqa: PLC0415  (Linux only)

    if destination is None:
        message = Message(
            destination="org.freedesktop.DBus",
            path="/org/freedesktop/DBus",
            interface="org.freedesktop.DBus",
            member=member,
            signature=signature,
            body=body,
        )
    else:
        message = Message(
            destination=destination,
            path=NOTIFICATIONS_PATH,
            interface=NOTIFICATIONS,
            member=member,
        )
    reply = await bus.call(message)
    if reply.message_type is MessageType.ERROR:
        detail = reply.body[0] if reply.body else ""
        raise _CallError(clean_text(f"{reply.error_name}: {detail}"))
    return list(reply.body)


# -- the checks ---------------------------------------------------------------------------


def _describe(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return clean_text(error.strerror)
    return clean_text(str(error) or type(error).__name__)


def _has_desktop_services() -> bool:
    """Whether icons and notifications go through X11/Wayland and D-Bus here."""
    return sys.platform not in ("darwin", "win32")


def check_display(environ: Mapping[str, str], x_facts: dict[str, Any] | None) -> Check:
    if not _has_desktop_services():
        return Check("ok", "display", f"not needed on {sys.platform}")
    x_name = environ.get("DISPLAY", "")
    wayland = environ.get("WAYLAND_DISPLAY", "")
    if x_name and x_facts is not None and "error" not in x_facts:
        extra = f", Wayland {clean_text(wayland)}" if wayland else ""
        return Check("ok", "display", f"X11 {clean_text(x_name)}{extra}")
    if x_name and x_facts is not None:
        return Check(
            "FAIL",
            "display",
            f"DISPLAY={clean_text(x_name)} but no X server answers ({x_facts['error']})",
            "run tray from your desktop session, or set DISPLAY (and XAUTHORITY) to its values",
        )
    if wayland:
        return Check("ok", "display", f"Wayland {clean_text(wayland)} (no X11)")
    return Check(
        "FAIL",
        "display",
        "none: neither DISPLAY nor WAYLAND_DISPLAY is set",
        "run tray from your desktop session, or export DISPLAY (e.g. DISPLAY=:0)",
    )


def backend_name(probe: dict[str, Any]) -> str | None:
    name = probe.get("backend")
    return name if isinstance(name, str) else None


def check_backend(probe: dict[str, Any], environ: Mapping[str, str]) -> Check:
    chosen = environ.get("PYSTRAY_BACKEND")
    source = f"PYSTRAY_BACKEND={clean_text(chosen)}" if chosen else "pystray's choice"
    name = backend_name(probe)
    fix: str | None
    if name is None:
        error = clean_text(str(probe.get("error")))
        if probe.get("hung"):
            fix = "check DISPLAY and the session bus; importing pystray takes a second or two"
        elif error.startswith("Xlib."):
            fix = "make the display work first"
        elif chosen:
            fix = "unset PYSTRAY_BACKEND, or set it to appindicator, gtk or xorg"
        else:
            fix = GTK_FIX
        return Check("FAIL", "tray backend", f"pystray cannot load ({error})", fix)
    status, ability = _BACKENDS.get(name, ("warn", "not known to tray"))
    fix = None
    if name == "xorg":
        fix = f"for a menu and clicks, {GTK_FIX}"
    elif name == "dummy":
        fix = "unset PYSTRAY_BACKEND"
    return Check(status, "tray backend", f"{name} ({source}): {ability}", fix)


def check_tray_host(x_facts: dict[str, Any] | None, bus: BusFacts, backend: str | None) -> Check:
    if not _has_desktop_services():
        return Check("ok", "tray host", f"the system's own on {sys.platform}")
    owner = x_facts.get("owner") if x_facts is not None else None
    xembed = isinstance(owner, int) and owner != 0
    hosts = []
    if bus.watcher:
        hosts.append(f"StatusNotifierItem host ({SNI_WATCHER})")
    if xembed and x_facts is not None:
        hosts.append(f"XEmbed tray ({x_facts['selection']} owned by window {owner:#x})")
    if not hosts:
        if bus.error:
            sni = f"cannot ask the session bus for a {SNI_WATCHER} ({bus.error})"
        else:
            sni = f"no {SNI_WATCHER} on the session bus"
        xembed_part = "no XEmbed tray"
        if x_facts is None or "error" in x_facts:
            xembed_part += " (no X display to look on)"
        found = f"none: {sni}, and {xembed_part}"
        return Check(
            "FAIL",
            "tray host",
            found,
            "run a panel with a system tray (your desktop's panel, or trayer); on GNOME, "
            "enable the AppIndicator extension",
        )
    if backend in _XEMBED_ONLY and not xembed:
        return Check(
            "FAIL",
            "tray host",
            f"only a {hosts[0]}, which the {backend} backend cannot use",
            f"{GTK_FIX}: AppIndicator speaks StatusNotifierItem",
        )
    return Check("ok", "tray host", " and ".join(hosts))


def find_tray_host(environ: Mapping[str, str], backend: str | None) -> Check:
    """The tray host check on its own, for the app to warn at start when there is none."""
    x_probe = _Probe(_X_PROBE, environ) if environ.get("DISPLAY") else None
    bus = bus_facts(environ) if _has_desktop_services() else BusFacts()
    return check_tray_host(x_probe.result() if x_probe is not None else None, bus, backend)


def check_notifications(bus: BusFacts) -> Check:
    if not _has_desktop_services():
        return Check("ok", "notification server", f"the system's own on {sys.platform}")
    if bus.error is not None:
        return Check(
            "FAIL",
            "notification server",
            f"cannot reach the D-Bus session bus ({bus.error})",
            "run tray from your desktop session, or start one with dbus-run-session",
        )
    if bus.server is None and bus.server_error is None:
        if bus.activatable:
            return Check(
                "ok",
                "notification server",
                "not running; the session bus starts one on the first notification",
            )
        found = f"none: nothing owns {NOTIFICATIONS} on the session bus"
        return Check(
            "FAIL",
            "notification server",
            found,
            "start one in your session (dunst, mako, notification-daemon, or your desktop's)",
        )
    if bus.server is None:
        return Check(
            "FAIL",
            "notification server",
            f"{NOTIFICATIONS} is owned but does not answer ({bus.server_error})",
            "restart the notification server",
        )
    name, _vendor, version, _spec = bus.server
    capabilities = bus.capabilities or ()
    # The ones that change what tray does; the rest are only counted.
    shown = [c for c in _CAPABILITIES if c in capabilities]
    others = len(set(capabilities) - set(_CAPABILITIES))
    listed = ", ".join(shown) or "none that tray uses"
    found = f"{name} {version}: {listed}" + (f" (+{others} more)" if others else "")
    if "actions" not in capabilities:
        return Check(
            "warn",
            "notification server",
            f"{found}: no actions, so clicking a notification cannot focus its session",
        )
    return Check("ok", "notification server", found)


def check_state_dir(directory: Path) -> Check:
    shown = clean_text(str(directory))
    try:
        info = os.stat(directory)
    except FileNotFoundError:
        return _check_creatable(directory)
    except OSError as error:
        return Check(
            "FAIL", "state directory", f"{shown}: {_describe(error)}", "set TRAY_STATE_DIR"
        )
    if not stat.S_ISDIR(info.st_mode):
        return Check(
            "FAIL",
            "state directory",
            f"{shown} is not a directory",
            "remove it, or set TRAY_STATE_DIR to a directory of your own",
        )
    if info.st_uid != os.geteuid():
        return Check(
            "FAIL",
            "state directory",
            f"{shown} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()})",
            "remove it, or set TRAY_STATE_DIR to a directory of your own",
        )
    if not os.access(directory, os.R_OK | os.W_OK | os.X_OK):
        return Check("FAIL", "state directory", f"{shown} is not writable", f"chmod 700 {shown}")
    sessions, problems = StateStore(directory).read_all(time.time())
    mode = stat.S_IMODE(info.st_mode)
    found = f"{shown} (mode {mode:04o}, yours, {len(sessions)} session(s))"
    if mode != 0o700:
        return Check(
            "warn",
            "state directory",
            f"{found}: others can look in; tray makes it 0700 when it next writes",
            f"chmod 700 {shown}",
        )
    if problems:
        return Check(
            "warn",
            "state directory",
            f"{found}, {len(problems)} unreadable file(s), e.g. {problems[0].path.name}",
            "tray dismiss the broken sessions, or delete the files",
        )
    return Check("ok", "state directory", found)


def _check_creatable(directory: Path) -> Check:
    shown = clean_text(str(directory))
    parent = directory.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
        return Check("ok", "state directory", f"{shown} (created with mode 0700 on first use)")
    return Check(
        "FAIL",
        "state directory",
        f"{shown} does not exist and cannot be created ({clean_text(str(parent))} is not writable)",
        "set TRAY_STATE_DIR to a directory of your own",
    )


def check_app(directory: Path) -> Check:
    try:
        running = app_lock_held(directory)
    except OSError as error:
        return Check("warn", "tray app", f"cannot tell whether it runs ({_describe(error)})")
    if running:
        return Check("ok", "tray app", "running")
    return Check(
        "warn",
        "tray app",
        "not running, so nothing is shown",
        "start `tray app` (in your desktop's autostart), or try `tray demo`",
    )


_INIT_LINES: Final = {
    "bash": ('eval "$(tray init bash)"', "~/.bashrc"),
    "zsh": ('eval "$(tray init zsh)"', "~/.zshrc"),
    "fish": ("tray init fish | source", "~/.config/fish/config.fish"),
}


def check_shell(environ: Mapping[str, str]) -> Check:
    """Whether agents typed in this shell start under `tray run` by themselves."""
    loaded = environ.get("TRAY_SHELL_INIT", "")
    if loaded in _INIT_LINES:
        return Check("ok", "shell", f"tray init {loaded} is loaded: wrapped agents run under tray")
    shell = os.path.basename(environ.get("SHELL", ""))
    if shell in _INIT_LINES:
        line, rc_file = _INIT_LINES[shell]
        fix = f"add {line} to {rc_file}, or start agents as `tray run -- CMD`"
    else:
        fix = "tray init knows bash, zsh and fish; elsewhere start agents as `tray run -- CMD`"
    return Check("warn", "shell", "tray init is not loaded in this shell", fix)


def check_terminal(env: Environment) -> Check:
    """Whether this terminal answers the OSC 7501 support query, as a program would ask."""
    if not (os.isatty(env.stdin_fd) and os.isatty(env.stdout_fd)):
        return Check("ok", "terminal", "not a terminal: skipped")
    try:
        fd = os.open(env.tty_path, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        return Check("ok", "terminal", f"no controlling terminal ({_describe(error)}): skipped")
    try:
        reply = _ask_terminal(fd)
    except (OSError, termios.error) as error:
        return Check("warn", "terminal", f"cannot ask it ({_describe(error)})")
    finally:
        os.close(fd)
    answer = _OSC_ANSWER.search(reply)
    da1 = _DA1_ANSWER.search(reply)
    # Whichever answer comes first decides, as protocol.md tells programs to do.
    if answer is not None and (da1 is None or answer.start() < da1.start()):
        if env.environ.get("TRAY_SESSION_ID"):
            return Check("ok", "terminal", "answers OSC 7501 (this shell runs under tray run)")
        return Check("ok", "terminal", "answers OSC 7501 itself")
    found = "does not answer (use tray run)"
    if da1 is None:
        found = f"does not answer (use tray run); no reply at all within {TERMINAL_TIMEOUT:.0f} s"
    return Check("warn", "terminal", found, "start agents as `tray run -- CMD`")


def _ask_terminal(fd: int) -> bytes:
    reply = b""
    with RawMode(fd):
        try:
            view = memoryview(TERMINAL_QUERY)
            while view:
                view = view[os.write(fd, view) :]
            deadline = time.monotonic() + TERMINAL_TIMEOUT
            while _DA1_ANSWER.search(reply) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                readable, _, _ = select.select([fd], [], [], remaining)
                if not readable:
                    break
                chunk = os.read(fd, 1024)
                if not chunk:
                    break
                reply += chunk
        finally:
            # A late or out-of-order answer must not end up typed into the user's shell.
            with contextlib.suppress(OSError, termios.error):
                termios.tcflush(fd, termios.TCIFLUSH)
    return reply


# -- other machines -----------------------------------------------------------------------


def check_host(host: HostConfig, environ: Mapping[str, str]) -> Check:
    """Whether ``host`` answers over ssh with a tray: ok, else warn with the fix."""
    from tray.remote.link import diagnose_host  # noqa: PLC0415  (only with [[hosts]])

    result = diagnose_host(host, environ=environ)
    return Check("ok" if result.ok else "warn", f"host {host.name}", result.found, result.fix)


def _start_host_checks(
    config: Config | ConfigError, environ: Mapping[str, str]
) -> Callable[[], list[Check]]:
    """Every host's check, started now on threads of their own; the returned function
    waits for them. ssh can take seconds per host: they run while the rest is probed."""
    if isinstance(config, ConfigError):
        failed = Check("FAIL", "config", clean_text(str(config)), "fix config.toml")
        return lambda: [failed]
    if not config.hosts:
        return list
    pool = ThreadPoolExecutor(max_workers=min(8, len(config.hosts)))
    futures: list[Future[Check]] = [pool.submit(check_host, host, environ) for host in config.hosts]
    pool.shutdown(wait=False)
    return lambda: [future.result() for future in futures]


def _load_config(env: Environment) -> Config | ConfigError:
    try:
        return load_config(env)
    except ConfigError as error:
        return error


def diagnose(env: Environment) -> list[Check]:
    environ = env.environ
    desktop = _has_desktop_services()
    hosts = _start_host_checks(_load_config(env), environ)
    backend_probe = _Probe(_BACKEND_PROBE, environ)
    x_probe = _Probe(_X_PROBE, environ) if desktop and environ.get("DISPLAY") else None
    bus = bus_facts(environ) if desktop else BusFacts()
    terminal = check_terminal(env)
    backend = backend_probe.result()
    x_facts = x_probe.result() if x_probe is not None else None
    state_dir = env.state_dir()
    return [
        check_display(environ, x_facts),
        check_backend(backend, environ),
        check_tray_host(x_facts, bus, backend_name(backend)),
        check_notifications(bus),
        check_state_dir(state_dir),
        check_app(state_dir),
        terminal,
        check_shell(environ),
        *hosts(),
    ]


def run_doctor(env: Environment) -> int:
    checks = diagnose(env)
    for check in checks:
        env.stdout.write(check.line() + "\n")
    env.stdout.flush()
    return 1 if any(check.status == "FAIL" for check in checks) else 0
