"""A real GNOME Shell 43, headless, for the desktop tests: a Wayland compositor with a
virtual monitor, on private buses and private folders, that a test reads and clicks.

:func:`start_gnome_shell` starts, in order: a private bus standing in for the system bus
(the shell dies without a system bus here, as ``/run/systemd/seats`` exists), the fake
GDM on it (``gdm_standin.py``: without a display manager the shell has no lock screen),
a private session bus that can start only dconf, the shell's notification and screen
saver services and GNOME Terminal's server, then the settings (dconf, written with
gsettings: about 30 ms, dconf's start included) and
``gnome-shell --headless --wayland --no-x11``. Two extensions are on: Ubuntu's
AppIndicator extension, the StatusNotifierItem host users have, and a test-only one
(:data:`UNSAFE_MODE_EXTENSION`) that turns on the shell's unsafe mode, without which
``org.gnome.Shell.Eval`` and the screenshot interface refuse every caller. Eval is how a
test reads the shell's own state, and how it drives a virtual pointer device inside the
compositor, so a click is a real pointer event that the shell handles as a user's.

No Xwayland: mutter refuses to start it unless ``/tmp/.X11-unix`` is world-writable,
which is not so on every machine, and the clients tested here (GTK 3 through PyGObject,
GNOME Terminal) are Wayland clients.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gi

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402

from helpers.bus_clients import client_pids, connect, stop_pids  # noqa: E402
from helpers.desktop_services import (  # noqa: E402
    TOOL_TIMEOUT,
    base_env,
    name_has_owner,
    start_bus,
    stop_process,
)
from helpers.waiting import wait_for  # noqa: E402

# The shell is slower to start than the X tools when other tests load the machine.
SHELL_START_TIMEOUT = 60.0
WAYLAND_DISPLAY = "wayland-0"  # free for sure: the runtime folder is the shell's own
SCREEN = (1280, 800)
APPINDICATOR_EXTENSION = "ubuntu-appindicators@ubuntu.com"
UNSAFE_MODE_EXTENSION = "tray-test-unsafe-mode@tray.test"
GDM_NAME = "org.gnome.DisplayManager"
# What the private session bus may start on demand: dconf (the shell's settings), the
# shell's own gjs services that own org.freedesktop.Notifications and
# org.gnome.ScreenSaver (43's screen saver interface is a proxy to the shell), and
# GNOME Terminal's server. Nothing else.
ACTIVATABLE = (
    "ca.desrt.dconf",
    "org.gnome.Shell.Notifications",
    "org.gnome.ScreenSaver",
    "org.gnome.Terminal",
)
SYSTEM_SERVICE_DIRS = (Path("/usr/local/share/dbus-1/services"), Path("/usr/share/dbus-1/services"))
GDM_STANDIN = Path(__file__).with_name("gdm_standin.py")

_EXTENSION_JS = """// Test only: lets org.gnome.Shell.Eval and the Screenshot interface answer,
// which GNOME Shell 43 allows only in unsafe mode (it has no --unsafe-mode flag).
function init() {}
function enable() { global.context.unsafe_mode = true; }
function disable() { global.context.unsafe_mode = false; }
"""

# Clutter's virtual pointer, made once and kept on the shell's global object.
_POINTER = (
    "(global.__trayTestPointer || (global.__trayTestPointer = imports.gi.Clutter"
    ".get_default_backend().get_default_seat().create_virtual_device("
    "imports.gi.Clutter.InputDeviceType.POINTER_DEVICE)))"
)

# Leaves the desktop as a user finds it after logging in: the overview the shell opens
# at start closed, and no notification (as root, the shell greets with "Logged in as a
# privileged user"). _updateState shows what is queued next: destroying a source alone
# leaves the queue waiting for the next notification.
_CLEAR_NOTIFICATIONS = (
    "Main.messageTray.getSources().forEach(source => source.destroy());"
    " Main.messageTray._updateState(); true"
)
_DESKTOP_IDLE = (
    "!Main.overview.visible && !Main.overview.animationInProgress"
    " && Main.messageTray._banner === null && Main.messageTray._notificationQueue.length === 0"
)
# A banner as the test reads it; button positions are the stage's, which is the screen's.
_BANNER = """(() => {
    const banner = Main.messageTray._banner;
    if (!banner) return null;
    const box = banner._buttonBox;
    return {
        // Only once the banner has slid into place are its buttons where they stay.
        shown: Main.messageTray._notificationState === imports.ui.messageTray.State.SHOWN,
        title: banner.notification.title,
        body: banner.notification.bannerBodyText,
        buttons: (box ? box.get_children() : []).map(button => {
            const [x, y] = button.get_transformed_position();
            const [width, height] = button.get_transformed_size();
            return {label: button.label, x, y, width, height, mapped: button.mapped};
        }),
    };
})()"""


class GnomeShellEvalError(RuntimeError):
    """org.gnome.Shell.Eval said the code failed (or unsafe mode is off)."""


@dataclass
class GnomeShell:
    """A running GNOME Shell and what it runs on.

    ``env`` is the environment for a client of this desktop (a fresh copy each time);
    ``directory`` holds the logs: shell.log, buses' and the stand-in's.
    """

    proc: subprocess.Popen[bytes]
    directory: Path
    session_address: str
    system_address: str
    _env: dict[str, str]
    _connection: Any  # Gio.DBusConnection to the session bus, for Eval and screenshots
    _others: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return dict(self._env)

    @property
    def log(self) -> str:
        try:
            return (self.directory / "shell.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _call(
        self, path: str, interface: str, method: str, args: Any, *, reply: str, timeout: float
    ) -> Any:
        result = self._connection.call_sync(
            "org.gnome.Shell",
            path,
            interface,
            method,
            args,
            GLib.VariantType(reply),
            Gio.DBusCallFlags.NO_AUTO_START,
            int(timeout * 1000),
            None,
        )
        return result.unpack()

    def eval(self, js: str, timeout: float = TOOL_TIMEOUT) -> Any:
        """Run ``js`` in the shell (legacy ``imports`` and ``Main``, ``global`` in scope)
        and return its last value, JSON-decoded (None for undefined). Raises
        GnomeShellEvalError with the shell's message when it throws."""
        success, value = self._call(
            "/org/gnome/Shell",
            "org.gnome.Shell",
            "Eval",
            GLib.Variant("(s)", (js,)),
            reply="(bs)",
            timeout=timeout,
        )
        if not success:
            raise GnomeShellEvalError(f"Eval failed ({value or 'unsafe mode is off?'}): {js}")
        return None if value == "" else json.loads(value)

    def wait_eval(self, js: str, what: str, timeout: float = 20.0) -> Any:
        """Wait until ``js`` gives something truthy, and return that. A try that throws
        is one that is not there yet (an actor the shell is building again, say); the
        deadline says the last try's error, if it threw."""
        thrown: list[GnomeShellEvalError] = []

        def attempt() -> Any:
            thrown.clear()
            try:
                return self.eval(js)
            except GnomeShellEvalError as error:
                thrown.append(error)
                return None

        try:
            return wait_for(attempt, timeout, 0.05, what)
        except AssertionError as timed_out:
            if thrown:
                raise AssertionError(f"{timed_out}; the last try: {thrown[0]}") from None
            raise

    def move_pointer(self, x: float, y: float) -> None:
        """Move the virtual pointer to (x, y) on the screen, and wait until the shell
        has handled the motion."""
        # Whole pixels: the shell reports the pointer's position in whole pixels.
        at_x, at_y = round(x), round(y)
        self.eval(
            f"{_POINTER}.notify_absolute_motion(imports.gi.Clutter.CURRENT_TIME, {at_x}, {at_y})"
        )
        self.wait_eval(
            f"const [x, y] = global.get_pointer(); x === {at_x} && y === {at_y}",
            f"the pointer at {at_x}, {at_y}",
        )

    def click(self, x: float, y: float, button: int = 1) -> None:
        """A real click: the pointer moves to (x, y), then presses and releases
        ``button`` (1 primary, 2 middle, 3 secondary)."""
        self.move_pointer(x, y)
        self.eval(
            "const Clutter = imports.gi.Clutter;"
            f" const pointer = {_POINTER};"
            f" pointer.notify_button(Clutter.CURRENT_TIME, {int(button)},"
            " Clutter.ButtonState.PRESSED);"
            f" pointer.notify_button(Clutter.CURRENT_TIME, {int(button)},"
            " Clutter.ButtonState.RELEASED); true"
        )

    def click_actor(self, js_actor: str) -> None:
        """Click the middle of the actor that ``js_actor`` evaluates to, once it is shown."""
        x, y, width, height = self.wait_eval(
            f"(() => {{ const actor = {js_actor};"
            " if (!actor || !actor.mapped) return null;"
            " const [x, y] = actor.get_transformed_position();"
            " const [w, h] = actor.get_transformed_size();"
            # NaN until the actor has been laid out.
            " return [x, y, w, h].every(Number.isFinite) ? [x, y, w, h] : null; })()",
            f"{js_actor} to be shown",
        )
        self.click(x + width / 2, y + height / 2)

    def screenshot(self, path: Path) -> Path:
        """Write the whole screen to ``path`` as a PNG, through the shell's own
        org.gnome.Shell.Screenshot."""
        success, written = self._call(
            "/org/gnome/Shell/Screenshot",
            "org.gnome.Shell.Screenshot",
            "Screenshot",
            GLib.Variant("(bbs)", (False, False, str(path))),
            reply="(bs)",
            timeout=TOOL_TIMEOUT,
        )
        if not success:
            raise RuntimeError(f"the shell took no screenshot to {path}")
        return Path(written)

    def banner(self) -> dict[str, Any] | None:
        """The notification banner shown now: ``title``, ``body`` (the text the program
        sent), ``shown`` (its slide-in is over) and ``buttons`` (each ``label``, ``x``,
        ``y``, ``width``, ``height`` (None until laid out), ``mapped``), or None while
        none is shown."""
        shown: dict[str, Any] | None = self.eval(_BANNER)
        return shown

    def clear_notifications(self) -> None:
        """Close every notification and banner (the shell is shared by the whole run),
        and wait until none is shown or queued."""
        self.eval(_CLEAR_NOTIFICATIONS)
        self.wait_eval(_DESKTOP_IDLE, "no banner and the overview closed")

    def close_menus(self) -> None:
        """Close the top bar's open menu, if any: left open, it would take the next
        test's clicks."""
        self.eval("const menu = Main.panel.menuManager.activeMenu; if (menu) menu.close(); true")

    def status_area(self) -> list[str]:
        """The keys of the top bar's items (``Main.panel.statusArea``); the AppIndicator
        extension's are ``appindicator-...``."""
        keys: list[str] = self.eval("Object.keys(Main.panel.statusArea)")
        return keys

    def gsettings(self, *args: str) -> str:
        """Run ``gsettings ARGS`` on this desktop's dconf; its output."""
        done = subprocess.run(
            ["gsettings", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT,
            check=True,
        )
        return done.stdout

    def stop(self) -> None:
        """Stop everything by pid: what the buses started or let in (dconf, the
        notification service, a terminal server), the shell, the fake GDM, the buses."""
        self._connection.close_sync(None)
        _stop_desktop(self.proc, self._others, [self.session_address, self.system_address])


def _write_extension(data_home: Path) -> None:
    folder = data_home / "gnome-shell" / "extensions" / UNSAFE_MODE_EXTENSION
    folder.mkdir(parents=True)
    metadata = {
        "uuid": UNSAFE_MODE_EXTENSION,
        "name": "tray tests: unsafe mode",
        "description": "Test only: lets org.gnome.Shell.Eval answer.",
        "shell-version": ["43"],
        # Kept on while the screen is locked, so a test can still read the shell then.
        "session-modes": ["user", "unlock-dialog"],
    }
    (folder / "metadata.json").write_text(json.dumps(metadata))
    (folder / "extension.js").write_text(_EXTENSION_JS)


def _write_service_files(services: Path) -> None:
    """The system's own service files, for only the names in ACTIVATABLE."""
    services.mkdir()
    for name in ACTIVATABLE:
        for folder in SYSTEM_SERVICE_DIRS:
            found = folder / f"{name}.service"
            if found.is_file():
                (services / found.name).write_text(found.read_text())
                break
        else:
            raise RuntimeError(f"no D-Bus service file for {name} in {SYSTEM_SERVICE_DIRS}")


def _log_tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-3000:]
    except FileNotFoundError:
        return ""


def start_gnome_shell(directory: Path) -> GnomeShell:
    """Start the whole desktop in ``directory`` (keep its path short: bus sockets live
    under it); returns once the shell has finished starting up, with the overview closed
    and no notification shown."""
    runtime = directory / "run"
    runtime.mkdir(mode=0o700, parents=True)
    runtime.chmod(0o700)  # whatever the umask
    homes = {
        "HOME": directory / "home",
        "XDG_CONFIG_HOME": directory / "config",
        "XDG_DATA_HOME": directory / "data",
        "XDG_CACHE_HOME": directory / "cache",
    }
    for folder in homes.values():
        folder.mkdir()
    _write_extension(homes["XDG_DATA_HOME"])
    _write_service_files(directory / "services")
    desktop = {
        **{key: str(value) for key, value in homes.items()},
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_SESSION_TYPE": "wayland",
        "XDG_CURRENT_DESKTOP": "GNOME",
    }
    # No session of the real machine's logind: this desktop has none.
    plain = {
        key: value
        for key, value in base_env(**desktop).items()
        if key not in ("XDG_SESSION_ID", "XDG_SEAT", "XDG_VTNR", "DBUS_SYSTEM_BUS_ADDRESS")
    }
    started: list[subprocess.Popen[bytes]] = []
    shell: subprocess.Popen[bytes] | None = None
    connection: Any = None
    addresses: list[str] = []
    try:
        system, system_address = start_bus(runtime / "system-bus", env=plain)
        started.append(system)
        addresses.append(system_address)
        plain["DBUS_SYSTEM_BUS_ADDRESS"] = system_address
        standin = _start_gdm_standin(plain, system_address, directory)
        started.append(standin)
        # What the session bus starts on demand is a client of the desktop: it gets the
        # Wayland display the shell is about to open.
        bus_env = {**plain, "WAYLAND_DISPLAY": WAYLAND_DISPLAY}
        session, session_address = start_bus(
            runtime / "session-bus", directory / "services", env=bus_env
        )
        started.append(session)
        addresses.append(session_address)
        env = {**bus_env, "DBUS_SESSION_BUS_ADDRESS": session_address}
        _settings(env)
        with (directory / "shell.log").open("ab") as sink:
            shell = subprocess.Popen(
                [
                    "gnome-shell",
                    "--headless",
                    "--wayland",
                    "--no-x11",
                    "--wayland-display",
                    WAYLAND_DISPLAY,
                    "--virtual-monitor",
                    f"{SCREEN[0]}x{SCREEN[1]}",
                ],
                env={key: value for key, value in env.items() if key != "WAYLAND_DISPLAY"},
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=sink,
            )
        connection = connect(session_address)
        handle = GnomeShell(
            shell, directory, session_address, system_address, env, connection, started
        )
        _wait_started(handle)
        handle.eval("Main.overview.hide(); true")
        handle.clear_notifications()
    except BaseException:
        if connection is not None:
            connection.close_sync(None)
        _stop_desktop(shell, started, addresses)
        raise
    return handle


def _stop_desktop(
    shell: subprocess.Popen[bytes] | None,
    started: list[subprocess.Popen[bytes]],
    addresses: list[str],
) -> None:
    """Stop, by pid, what the buses at ``addresses`` started or let in (dconf, the
    notification service, a terminal server), then the shell, then ``started`` (the
    fake GDM and the buses) in reverse order."""
    ours = {os.getpid(), *(proc.pid for proc in started)}
    if shell is not None:
        ours.add(shell.pid)
    strays = [pid for address in addresses for pid in client_pids(address, ours)]
    stop_pids(strays)
    if shell is not None:
        stop_process(shell)
    for proc in reversed(started):
        stop_process(proc)


def _start_gdm_standin(
    env: dict[str, str], system_address: str, directory: Path
) -> subprocess.Popen[bytes]:
    log = directory / "gdm-standin.log"
    with log.open("ab") as sink:
        proc = subprocess.Popen(
            [sys.executable, str(GDM_STANDIN), system_address],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
        )
    system_env = {**env, "DBUS_SESSION_BUS_ADDRESS": system_address}

    def owned() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"the fake GDM exited with {proc.returncode}: {_log_tail(log)}")
        return name_has_owner(system_env, GDM_NAME)

    try:
        wait_for(owned, SHELL_START_TIMEOUT, 0.05, f"the fake GDM to own {GDM_NAME}")
    except BaseException:
        stop_process(proc)
        raise
    return proc


def _settings(env: dict[str, str]) -> None:
    """The shell's settings, in dconf before it starts: the two extensions on, the
    welcome tour taken (it would open a dialog over everything), and the screen never
    blanked for idleness: the shell lives for the whole run, and a quiet stretch of other
    tests longer than GNOME's 5 minutes would blank (and lock) it under a later test.
    ``Lock()`` still locks."""
    extensions = GLib.Variant("as", [APPINDICATOR_EXTENSION, UNSAFE_MODE_EXTENSION]).print_(False)
    for schema, key, value in (
        ("org.gnome.shell", "enabled-extensions", extensions),
        ("org.gnome.shell", "welcome-dialog-last-shown-version", "'999'"),
        ("org.gnome.desktop.session", "idle-delay", "uint32 0"),
    ):
        subprocess.run(
            ["gsettings", "set", schema, key, value],
            env=env,
            capture_output=True,
            timeout=TOOL_TIMEOUT,
            check=True,
        )


def _wait_started(shell: GnomeShell) -> None:
    log = shell.directory / "shell.log"

    def started() -> bool:
        if shell.proc.poll() is not None:
            raise RuntimeError(f"gnome-shell exited with {shell.proc.returncode}: {_log_tail(log)}")
        try:
            return shell.eval("Main.layoutManager._startingUp") is False
        except (GLib.Error, GnomeShellEvalError):
            # Not on the bus yet, or the unsafe-mode extension not enabled yet.
            return False

    wait_for(started, SHELL_START_TIMEOUT, 0.1, "gnome-shell to finish starting up")
