"""A real KDE Plasma 5.27 for the tests, headless: kwin_wayland on a virtual output (with
Xwayland), kactivitymanagerd, kded5 and plasmashell, on private session and system buses,
with a private runtime directory and home.

:func:`start_plasma` starts them in the order Plasma needs, waiting after each on what it
owns on the bus (never a fixed sleep), and returns a :class:`Plasma` handle: ``env`` for
clients of that desktop, D-Bus calls through ``gdbus``, KWin scripts with their results,
and screenshots. ``stop`` ends every process it started, by pid. The README's
Development section says what the Plasma tests drive and how.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import itertools
import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from helpers.desktop_services import base_env, name_has_owner, start_bus, stop_process
from helpers.processes import children_of
from helpers.waiting import wait_for

START_TIMEOUT = 60.0  # patient: two cores, and other tests running beside
CALL_TIMEOUT = 20.0
WIDTH, HEIGHT = 1280, 800
SOCKET = "wayland-plasma"

KWIN = "org.kde.KWin"
SNI_WATCHER = "org.kde.StatusNotifierWatcher"
NOTIFICATIONS = "org.freedesktop.Notifications"
ACTIVITY_MANAGER = "org.kde.ActivityManager"
SCREENSAVER = "org.freedesktop.ScreenSaver"

# The mark a KWin script's result line carries in kwin's log: "js: <mark><n> <json>".
_SCRIPT_MARK = "TRAY-TEST-RESULT-"
_script_numbers = itertools.count()


def _kactivitymanagerd() -> str:
    found = sorted(glob.glob("/usr/lib/*/libexec/kactivitymanagerd"))
    if not found:
        raise RuntimeError("kactivitymanagerd not found (package kactivitymanagerd)")
    return found[0]


def _log_tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-3000:]
    except OSError:
        return ""


@dataclass
class Plasma:
    """A running Plasma session and what a test needs to reach it.

    ``env``: for any client of this desktop, shared (copy it before changing it). It
    has WAYLAND_DISPLAY, XDG_RUNTIME_DIR, DBUS_SESSION_BUS_ADDRESS,
    DBUS_SYSTEM_BUS_ADDRESS, DISPLAY (Xwayland), XDG_CURRENT_DESKTOP=KDE,
    KDE_FULL_SESSION=true, KDE_SESSION_VERSION=5, XDG_SESSION_TYPE=wayland,
    QT_QPA_PLATFORM=wayland, NO_AT_BRIDGE=1, KDE_DEBUG=1 and a private HOME,
    XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_CACHE_HOME and XDG_STATE_HOME.
    """

    env: dict[str, str]
    directory: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # Set by :meth:`lock`: the screen stays locked (unlocking needs a password), so the
    # fixture starts a new Plasma for the next test that asks.
    locked: bool = False

    @property
    def kwin_log(self) -> Path:
        return self.directory / "kwin.log"

    def log(self, name: str) -> str:
        """The end of what one of the processes wrote ("kwin", "kactivitymanagerd",
        "kded5", "plasmashell", "session-bus", "system-bus")."""
        if name.endswith("-bus"):
            return _log_tail(self.directory / name / "dbus-daemon.log")
        return _log_tail(self.directory / f"{name}.log")

    def check_alive(self) -> None:
        """Fail, with its log, when one of the desktop's processes has ended."""
        for name, proc in self.processes.items():
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited with {proc.returncode}: {self.log(name)}")

    # -- D-Bus -------------------------------------------------------------------------

    def gdbus(self, *args: str, timeout: float = CALL_TIMEOUT) -> str:
        """``gdbus call --session ARGS`` on this desktop's bus; its output, in GVariant
        text. An error reply fails the test, with gdbus's message."""
        done = subprocess.run(
            ["gdbus", "call", "--session", "--timeout", str(int(timeout)), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout + 5,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"gdbus call {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout.strip()

    def call(self, destination: str, path: str, method: str, *args: str) -> str:
        """Call ``method`` (interface.Member) with ``args`` in gdbus's GVariant text."""
        # "--" so that an argument like -1 is not taken for an option.
        return self.gdbus(
            "--dest", destination, "--object-path", path, "--method", method, "--", *args
        )

    def get_property(self, destination: str, path: str, interface: str, name: str) -> str:
        """A property's value as gdbus prints it, the ``(<...>,)`` wrapping taken off."""
        text = self.call(destination, path, "org.freedesktop.DBus.Properties.Get", interface, name)
        if text.startswith("(<") and text.endswith(">,)"):
            return text[2:-3]
        return text

    def has_name(self, name: str) -> bool:
        return name_has_owner(self.env, name)

    def registered_items(self) -> list[str]:
        """The StatusNotifierItems kded5's watcher lists ("SERVICE/PATH" or "SERVICE")."""
        text = self.get_property(
            SNI_WATCHER, "/StatusNotifierWatcher", SNI_WATCHER, "RegisteredStatusNotifierItems"
        )
        if text.startswith("@as "):  # an empty array prints its type
            text = text[4:]
        items = json.loads(text.replace("'", '"'))
        assert isinstance(items, list), text
        return [str(item) for item in items]

    # -- KWin scripting ------------------------------------------------------------------

    def kwin_script(self, body: str, timeout: float = CALL_TIMEOUT) -> Any:
        """Run ``body``, the body of a JavaScript function in KWin's scripting API
        (``workspace``, ``callDBus``, ...), and return what it returns, through JSON.

        The script is loaded through org.kde.kwin.Scripting, started, its result read
        from the line it prints into kwin's log, and unloaded again."""
        number = next(_script_numbers)
        mark = f"{_SCRIPT_MARK}{os.getpid()}-{number}"
        script = self.directory / "scripts" / f"script-{number}.js"
        script.parent.mkdir(exist_ok=True)
        script.write_text(
            f"print({json.dumps(mark)} + ' ' + JSON.stringify((function () {{\n{body}\n}})()));\n"
        )
        name = f"tray-test-{number}"
        self.call(KWIN, "/Scripting", "org.kde.kwin.Scripting.loadScript", str(script), name)
        try:
            self.call(KWIN, "/Scripting", "org.kde.kwin.Scripting.start")
            prefix = f"js: {mark} "

            def printed() -> str | None:
                self.check_alive()
                for line in _log_tail_lines(self.kwin_log):
                    if line.startswith(prefix):
                        return line[len(prefix) :]
                return None

            text = wait_for(printed, timeout, 0.05, f"KWin script {name}'s result")
        finally:
            self.call(KWIN, "/Scripting", "org.kde.kwin.Scripting.unloadScript", name)
        return None if text == "undefined" else json.loads(text)

    def windows(self) -> list[dict[str, Any]]:
        """Every window KWin manages: resourceClass, caption, pid, x, y, width, height,
        dock, active (the focused one), minimized."""
        found = self.kwin_script(
            "return workspace.clientList().map(function (w) { return {"
            " resourceClass: String(w.resourceClass), caption: String(w.caption),"
            " pid: w.pid, x: w.x, y: w.y, width: w.width, height: w.height,"
            " dock: w.dock, active: w === workspace.activeClient,"
            " minimized: w.minimized }; });"
        )
        assert isinstance(found, list), found
        return found

    def lock(self) -> None:
        """Lock the screen through org.freedesktop.ScreenSaver.Lock (KWin's locker).

        For good: this Plasma is then marked ``locked``, and the ``plasma`` fixture
        gives the next test a new one."""
        self.locked = True
        self.call(SCREENSAVER, "/ScreenSaver", f"{SCREENSAVER}.Lock")

    # -- pixels --------------------------------------------------------------------------

    def screenshot(self) -> Image.Image:
        """The whole screen as KWin composites it (org.kde.KWin.ScreenShot2), RGB.

        Times out while the screen is locked."""
        return asyncio.run(_capture_area(self.env["DBUS_SESSION_BUS_ADDRESS"]))

    # -- the end -------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every process started, newest first, and any they left behind."""
        leftovers: list[int] = []
        for proc in self.processes.values():
            if proc.poll() is None:
                leftovers.extend(children_of(proc.pid))
        for proc in reversed(list(self.processes.values())):
            stop_process(proc)
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


def _log_tail_lines(log: Path) -> list[str]:
    try:
        return log.read_text(errors="replace").splitlines()
    except OSError:
        return []


async def _capture_area(address: str) -> Image.Image:
    from dbus_fast import Message, MessageType, Variant  # noqa: PLC0415 - Linux only
    from dbus_fast.aio import MessageBus  # noqa: PLC0415

    bus = await MessageBus(bus_address=address, negotiate_unix_fd=True).connect()
    read_end, write_end = os.pipe()
    chunks: list[bytes] = []

    def drain() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            while chunk := pipe.read(1 << 16):
                chunks.append(chunk)

    reader = threading.Thread(target=drain, name="screenshot-pipe", daemon=True)
    reader.start()
    try:
        reply = await asyncio.wait_for(
            bus.call(
                Message(
                    destination=KWIN,
                    path="/org/kde/KWin/ScreenShot2",
                    interface="org.kde.KWin.ScreenShot2",
                    member="CaptureArea",
                    signature="iiuua{sv}h",
                    body=[0, 0, WIDTH, HEIGHT, {"native-resolution": Variant("b", True)}, 0],
                    unix_fds=[write_end],
                )
            ),
            CALL_TIMEOUT,
        )
    finally:
        os.close(write_end)
        bus.disconnect()
    assert reply is not None
    if reply.message_type is MessageType.ERROR:
        raise AssertionError(f"screenshot refused: {reply.error_name}: {reply.body}")
    reader.join(CALL_TIMEOUT)
    info = {key: value.value for key, value in reply.body[0].items()}
    width, height, stride = int(info["width"]), int(info["height"]), int(info["stride"])
    data = b"".join(chunks)
    assert len(data) >= stride * height, (len(data), info)
    # QImage's 32-bit formats are native-endian 0xAARRGGBB words: B, G, R, A in memory.
    image = Image.frombuffer("RGBA", (width, height), data, "raw", "BGRA", stride, 1)
    return image.convert("RGB")


def _plasma_env(directory: Path, session: str, system: str) -> dict[str, str]:
    runtime = directory / "runtime"
    runtime.mkdir(mode=0o700)
    home = directory / "home"
    paths = {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_STATE_HOME": home / ".local" / "state",
    }
    for path in paths.values():
        path.mkdir(parents=True, exist_ok=True)
    # Plasma lives for the whole run, and KWin's locker would lock it after 5 minutes
    # without input (its default), under whichever later test comes then; Lock() still
    # locks.
    (paths["XDG_CONFIG_HOME"] / "kscreenlockerrc").write_text(
        "[Daemon]\nAutolock=false\nLockOnResume=false\nTimeout=0\n"
    )
    env = base_env(
        DBUS_SESSION_BUS_ADDRESS=session,
        DBUS_SYSTEM_BUS_ADDRESS=system,
        XDG_RUNTIME_DIR=str(runtime),
        XDG_CURRENT_DESKTOP="KDE",
        XDG_SESSION_DESKTOP="KDE",
        XDG_SESSION_TYPE="wayland",
        KDE_FULL_SESSION="true",
        KDE_SESSION_VERSION="5",
        # No crash dialog (drkonqi) over the desktop: a crash is an exit the fixture sees.
        KDE_DEBUG="1",
        **{name: str(path) for name, path in paths.items()},
    )
    for name in ("QT_QPA_PLATFORM", "GDK_BACKEND", "XDG_SESSION_ID", "QT_LOGGING_RULES"):
        env.pop(name, None)
    return env


def _spawn(
    plasma: Plasma, name: str, argv: list[str], env: dict[str, str]
) -> subprocess.Popen[bytes]:
    with (plasma.directory / f"{name}.log").open("ab") as sink:
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT
        )
    plasma.processes[name] = proc
    return proc


def _wait_names(plasma: Plasma, names: tuple[str, ...], timeout: float) -> None:
    def owned() -> bool:
        plasma.check_alive()
        return all(plasma.has_name(name) for name in names)

    wait_for(owned, timeout, 0.1, " and ".join(names) + " on the bus")


def start_plasma(directory: Path, timeout: float = START_TIMEOUT) -> Plasma:
    """Start Plasma in ``directory`` (logs as NAME.log there); returns once it is ready:
    KWin, kded5's StatusNotifierWatcher and plasmashell's notification server own their
    names, plasmashell's system tray has registered as a StatusNotifierHost and KWin
    shows plasmashell's panel (a dock window)."""
    directory.mkdir(parents=True, exist_ok=True)
    session_bus, session = start_bus(directory / "session-bus")
    plasma = Plasma({}, directory, {"session-bus": session_bus})
    try:
        system_bus, system = start_bus(directory / "system-bus")
        plasma.processes["system-bus"] = system_bus
        env = _plasma_env(directory, session, system)
        plasma.env = env
        # The packaged binary carries cap_sys_resource, which this kind of machine
        # refuses to exec; a copy without the file capability runs the same code.
        kwin = directory / "kwin_wayland"
        shutil.copyfile("/usr/bin/kwin_wayland", kwin)
        kwin.chmod(0o755)
        display_file = directory / "xwayland-display"
        kwin_env = {
            **env,
            # KWin's own switches for its restricted interfaces (screenshots, and
            # Wayland ones such as org_kde_kwin_fake_input): this private compositor
            # serves only the test's own clients.
            "KWIN_SCREENSHOT_NO_PERMISSION_CHECKS": "1",
            "KWIN_WAYLAND_NO_PERMISSION_CHECKS": "1",
        }
        _spawn(
            plasma,
            "kwin",
            [
                str(kwin), "--virtual", "--width", str(WIDTH), "--height", str(HEIGHT),
                "--xwayland", "--socket", SOCKET,
                # An application KWin starts once Xwayland is set up gets its DISPLAY:
                # the one way to learn which X display this KWin chose.
                f"sh -c 'printenv DISPLAY > {display_file}'",
            ],
            kwin_env,
        )  # fmt: skip
        socket = Path(env["XDG_RUNTIME_DIR"]) / SOCKET

        def kwin_ready() -> bool:
            plasma.check_alive()
            return socket.exists() and display_file.exists() and plasma.has_name(KWIN)

        wait_for(kwin_ready, timeout, 0.1, "kwin_wayland's socket, Xwayland and org.kde.KWin")
        display = wait_for(lambda: display_file.read_text().strip(), timeout, what="DISPLAY")
        env.update(WAYLAND_DISPLAY=SOCKET, QT_QPA_PLATFORM="wayland", DISPLAY=display)
        # plasmashell refuses to load without the activity manager, and a private bus
        # does not start it.
        _spawn(plasma, "kactivitymanagerd", [_kactivitymanagerd()], env)
        _spawn(plasma, "kded5", ["kded5"], env)
        _wait_names(plasma, (ACTIVITY_MANAGER, SNI_WATCHER), timeout)
        _spawn(plasma, "plasmashell", ["plasmashell", "--no-respawn"], env)
        _wait_names(plasma, (NOTIFICATIONS,), timeout)

        def tray_host() -> bool:
            plasma.check_alive()
            text = plasma.get_property(
                SNI_WATCHER, "/StatusNotifierWatcher", SNI_WATCHER, "IsStatusNotifierHostRegistered"
            )
            return text == "true"

        wait_for(tray_host, timeout, 0.1, "plasmashell's tray to register its host")
        # The panel is a window of its own, shown a moment after the tray applet loads.
        wait_for(
            lambda: any(window["dock"] for window in plasma.windows()),
            timeout,
            0.1,
            "plasmashell's panel on the screen",
        )
    except BaseException:
        plasma.stop()
        raise
    return plasma
