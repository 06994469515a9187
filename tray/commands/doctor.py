"""``tray doctor``: checks everything that decides whether the user sees the icon and the pings.

One line per check: ``ok``, ``warn`` or ``FAIL``, what was found, and the fix when there is
one. The exit status is 1 when something the main job cannot do without is missing.

The probes live in :mod:`tray.desktop`: anything that can hang or crash on a broken
desktop (importing pystray, connecting to X) runs in a child process with a timeout; the
session bus is asked with a timeout too. Each ``[[hosts]]`` entry gets a line of its
own: one ``tray --version`` over ssh, all hosts at once, each with a timeout.

Every check is one function of :class:`Facts` in :data:`CHECKS`, in the order printed;
a new check is one more function there.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from tray.base.check import Check, Status
from tray.base.safe_text import clean_text
from tray.commands.doctor_agents import agent_checks
from tray.commands.doctor_terminal import check_terminal
from tray.core.config.settings import Config, ConfigError
from tray.core.hosts.ssh_commands import HostConfig
from tray.desktop.bus import NOTIFICATIONS, BusFacts, bus_facts, describe
from tray.desktop.bus_loop import attached
from tray.desktop.probes import BACKEND_PROBE, GTK_FIX, X_PROBE, Probe, has_desktop_services
from tray.desktop.tray_area import app_backend, check_tray_area
from tray.state.app_lock import app_lock_held
from tray.state.config_file import load_config
from tray.state.environment import Environment
from tray.state.store import StateStore

_CAPABILITIES: Final = ("body", "body-markup", "actions")

# What each pystray backend can do, as seen under Xvfb (see the project's desktop notes).
_BACKENDS: Final[dict[str, tuple[Status, str]]] = {
    "appindicator": ("ok", "menu and clicks work"),
    "gtk": (
        "ok",
        "right click opens the menu; left click focuses the most urgent session, or opens the menu",
    ),
    "darwin": ("ok", "menu and clicks work"),
    "win32": ("ok", "menu and clicks work"),
    "xorg": ("warn", "the icon shows, but it has no menu and clicks never arrive"),
    "dummy": ("FAIL", "a stand-in that shows nothing"),
}


def check_display(environ: Mapping[str, str], x_facts: dict[str, Any] | None) -> Check:
    if not has_desktop_services():
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


def backend_in_use(facts: Facts) -> tuple[str | None, str]:
    """The backend the app will use (None: none loads), and who chose it."""
    chosen = facts.environ.get("PYSTRAY_BACKEND")
    if chosen:
        return backend_name(facts.backend), f"PYSTRAY_BACKEND={clean_text(chosen)}"
    wanted = app_backend(facts.environ, facts.x, facts.bus)
    # The probe says whether that backend loads ("gtk": true), beside pystray's own pick.
    if wanted is not None and facts.backend.get(wanted) is True:
        return wanted, "tray's choice for an XEmbed tray without a StatusNotifierItem host"
    return backend_name(facts.backend), "pystray's choice"


def check_backend(
    probe: dict[str, Any], environ: Mapping[str, str], in_use: tuple[str | None, str]
) -> Check:
    name, source = in_use
    chosen = environ.get("PYSTRAY_BACKEND")
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


def check_notifications(bus: BusFacts) -> Check:
    if not has_desktop_services():
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
        return Check("FAIL", "state directory", f"{shown}: {describe(error)}", "set TRAY_STATE_DIR")
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
        return Check("warn", "tray app", f"cannot tell whether it runs ({describe(error)})")
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


# -- answering, focus and away --------------------------------------------------------------


def check_answer(config: Config | ConfigError) -> Check:
    """Whether a permission prompt can be answered from the desktop, and for which apps."""
    if isinstance(config, ConfigError):
        return Check("warn", "answer", "cannot tell: config.toml has an error (see its line)")
    settings = config.answer
    if not settings.enabled:
        return Check(
            "ok",
            "answer",
            "off ([answer] enabled = false): prompts are answered in their terminal only",
        )
    apps = sorted(settings.apps)  # the built-in ones at least: a table only replaces them
    return Check(
        "ok",
        "answer",
        f"on for {_and(apps)} (Approve and Deny on their permission prompts)",
    )


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def check_focus_line(environ: Mapping[str, str]) -> Check:
    """What Focus will use for a session started in this terminal, or what is missing."""
    from tray.desktop.focus import check_focus  # noqa: PLC0415 - only doctor asks this

    found = check_focus(environ)
    return replace(found, found=clean_text(found.found))


def check_away_line(config: Config | ConfigError, environ: Mapping[str, str]) -> Check:
    """How tray tells here that the user is away, and where pings then go (schemes only).

    Without an ``[away]`` table nothing is probed: the idle and lock sources take a bus
    round trip or an X connection each, which doctor need not wait for when they would
    change nothing.
    """
    if isinstance(config, ConfigError):
        return Check("warn", "away", "cannot tell: config.toml has an error (see its line)")
    if config.away is None:
        return Check("ok", "away", "off: pings stay on this desktop (no [away] in config.toml)")
    # Only with an [away] table: the forwarder's module, and Apprise for the URL check.
    from tray.outlets.forward import check_away  # noqa: PLC0415

    if not has_desktop_services():
        return check_away(config.away, environ, detect=lambda _env, _after: None)
    return check_away(config.away, environ)


# -- other machines -----------------------------------------------------------------------


def _host_line(host: HostConfig, environ: Mapping[str, str]) -> Check:
    """:func:`~tray.remote.actions.diagnose_host`: ok, else warn with the fix."""
    from tray.remote.actions import diagnose_host  # noqa: PLC0415  (only with [[hosts]])

    return diagnose_host(host, environ=environ)


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
    futures: list[Future[Check]] = [pool.submit(_host_line, host, environ) for host in config.hosts]
    pool.shutdown(wait=False)
    names = [f"host {host.name}" for host in config.hosts]
    return lambda: [_checked(future, name) for future, name in zip(futures, names, strict=True)]


def _load_config(env: Environment) -> Config | ConfigError:
    try:
        return load_config(env)
    except ConfigError as error:
        return error


@dataclass(frozen=True, slots=True)
class Facts:
    """What the checks look at, gathered once: the probes run side by side."""

    env: Environment
    config: Config | ConfigError
    backend: dict[str, Any]
    x: dict[str, Any] | None
    bus: BusFacts
    terminal: Check
    focus: Check
    away: Check

    @property
    def environ(self) -> Mapping[str, str]:
        return self.env.environ


def gather(env: Environment, config: Config | ConfigError) -> Facts:
    """Every fact the checks need. The bus facts, focus and the away probe share one
    D-Bus loop and its connections, held here for the whole gather."""
    desktop = has_desktop_services()
    with attached(env.environ) if desktop else contextlib.nullcontext():
        return _gather(env, config, desktop)


def _gather(env: Environment, config: Config | ConfigError, desktop: bool) -> Facts:
    environ = env.environ
    backend_probe = Probe(BACKEND_PROBE, environ)
    x_probe = Probe(X_PROBE, environ) if desktop and environ.get("DISPLAY") else None
    # Focus may ask GNOME Terminal over the bus, and away the idle and lock sources:
    # each has timeouts of its own, and runs beside the rest.
    pool = ThreadPoolExecutor(max_workers=2)
    focus = pool.submit(check_focus_line, environ)
    away = pool.submit(check_away_line, config, environ)
    pool.shutdown(wait=False)
    bus = bus_facts(environ) if desktop else BusFacts()
    # Asked while the children run: the terminal's answer takes up to a second.
    terminal = check_terminal(env)
    backend = backend_probe.result()
    x_facts = x_probe.result() if x_probe is not None else None
    return Facts(
        env,
        config,
        backend,
        x_facts,
        bus,
        terminal,
        _checked(focus, "focus"),
        _checked(away, "away"),
    )


def _checked(future: Future[Check], name: str) -> Check:
    """A check run on a thread; one that failed is a line saying so, never a traceback."""
    try:
        return future.result()
    except Exception as error:
        return Check("warn", name, f"cannot tell ({describe(error)})")


CHECKS: Final[tuple[Callable[[Facts], Check], ...]] = (
    lambda facts: check_display(facts.environ, facts.x),
    lambda facts: check_backend(facts.backend, facts.environ, backend_in_use(facts)),
    lambda facts: check_tray_area(facts.x, facts.bus, backend_in_use(facts)[0]),
    lambda facts: check_notifications(facts.bus),
    lambda facts: check_state_dir(facts.env.state_dir()),
    lambda facts: check_app(facts.env.state_dir()),
    lambda facts: facts.terminal,
    lambda facts: check_shell(facts.environ),
    lambda facts: check_answer(facts.config),
    lambda facts: facts.focus,
    lambda facts: facts.away,
)


def diagnose(env: Environment) -> list[Check]:
    config = _load_config(env)
    hosts = _start_host_checks(config, env.environ)
    facts = gather(env, config)
    agents = agent_checks(env, config)
    return [*(check(facts) for check in CHECKS), *agents, *hosts()]


def run_doctor(env: Environment) -> int:
    checks = diagnose(env)
    for check in checks:
        env.stdout.write(check.line() + "\n")
    env.stdout.flush()
    return 1 if any(check.status == "FAIL" for check in checks) else 0


def command(args: object, env: Environment) -> int:
    return run_doctor(env)
