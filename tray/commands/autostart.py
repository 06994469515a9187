"""``tray autostart enable|disable|status``: start the tray icon when the user logs in.

pip and pipx put no desktop files where desktops look, so the entry is written at run
time, naming the real path of this tray: a login session's PATH often lacks
``~/.local/bin``. The same functions build the static files in ``packaging/``
(with plain ``tray``), so their content is written down once.

- Linux: an XDG autostart entry (the default), or a systemd user unit (``--systemd``).
- macOS: a LaunchAgent.
"""

from __future__ import annotations

import argparse
import os
import plistlib
import shlex
import stat
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tray.base.exit_codes import USAGE_ERROR
from tray.base.safe_text import clean_text
from tray.commands.autostart_files import (
    APP_ID,
    DESKTOP_FILE,
    LABEL,
    NAME,
    SUMMARY,
    UNIT_NAME,
    AutostartError,
    desktop_entry,
    desktop_exec,
    launch_agent,
    systemd_exec,
    systemd_unit,
    tray_command,
)
from tray.state.atomic_file import replace_file
from tray.state.environment import Environment

COMMAND_TIMEOUT: Final = 20.0


class AutostartUsageError(AutostartError):
    status = USAGE_ERROR


@dataclass(frozen=True)
class RunResult:
    returncode: int
    output: str  # stdout and stderr together


# Runs an outside tool (systemctl, launchctl); injected so tests never need a real one.
Runner = Callable[[Sequence[str]], RunResult]


def run_command(argv: Sequence[str]) -> RunResult:
    """Run a tool with an argument list and a timeout; a missing tool is status 127."""
    try:
        result = subprocess.run(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        return RunResult(127, f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return RunResult(124, f"{argv[0]}: no answer within {COMMAND_TIMEOUT:.0f} seconds")
    except OSError as error:
        return RunResult(126, f"{argv[0]}: {error.strerror or error}")
    return RunResult(result.returncode, result.stdout)


# Where the files go.


def _home(env: Environment) -> Path:
    home = env.environ.get("HOME", "")
    if not os.path.isabs(home):
        raise AutostartError("HOME is not set to an absolute path")
    return Path(home)


def config_home(env: Environment) -> Path:
    """``XDG_CONFIG_HOME``, else ``~/.config``; the spec says to ignore a relative one."""
    explicit = env.environ.get("XDG_CONFIG_HOME", "")
    if os.path.isabs(explicit):
        return Path(explicit)
    return _home(env) / ".config"


@dataclass(frozen=True)
class Entry:
    kind: str  # "xdg", "systemd" or "launchagent"
    title: str
    path: Path
    content: bytes  # what this tray writes

    def command_in(self, data: bytes) -> str | None:
        """The command a file of this kind starts, as written, or None."""
        if self.kind == "launchagent":
            try:
                document = plistlib.loads(data)
            except Exception:  # plistlib raises many types on bad input
                return None
            arguments = document.get("ProgramArguments") if isinstance(document, dict) else None
            if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
                return None
            return shlex.join(arguments)
        key = "Exec=" if self.kind == "xdg" else "ExecStart="
        for line in data.decode("utf-8", "replace").splitlines():
            if line.startswith(key):
                return line.removeprefix(key)
        return None


def entries(platform: str, env: Environment, argv: Sequence[str]) -> dict[str, Entry]:
    """The kinds of autostart this platform has, the default first."""
    if platform.startswith("linux"):
        config = config_home(env)
        return {
            "xdg": Entry(
                "xdg",
                "XDG autostart entry",
                config / "autostart" / DESKTOP_FILE,
                desktop_entry(argv).encode("utf-8"),
            ),
            "systemd": Entry(
                "systemd",
                "systemd user unit",
                config / "systemd" / "user" / UNIT_NAME,
                systemd_unit(argv).encode("utf-8"),
            ),
        }
    if platform == "darwin":
        return {
            "launchagent": Entry(
                "launchagent",
                "LaunchAgent",
                _home(env) / "Library" / "LaunchAgents" / f"{LABEL}.plist",
                launch_agent(argv),
            )
        }
    raise AutostartError(f"autostart is not supported on {platform}")


def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> bool:
    """Make ``path`` hold ``data``; False when it already did. Readers never see half a file."""
    try:
        if path.read_bytes() == data and stat.S_IMODE(path.stat().st_mode) == mode:
            return False
    except (FileNotFoundError, NotADirectoryError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, data, mode)
    return True


# The command.


@dataclass
class Autostart:
    env: Environment
    platform: str
    argv: list[str]  # the command that starts the tray app
    runner: Runner
    uid: int

    def __post_init__(self) -> None:
        self.entries = entries(self.platform, self.env, self.argv)

    def say(self, line: str) -> None:
        self.env.stdout.write(line + "\n")

    # systemctl and launchctl

    def systemctl(self, *args: str) -> RunResult:
        return self.runner(["systemctl", "--user", *args])

    def user_manager(self) -> RunResult:
        """Whether a systemd user manager answers; its answer explains why not."""
        return self.systemctl("show-environment")

    def launchctl_loaded(self) -> bool | None:
        """Whether launchd has the agent loaded; None without a usable launchctl."""
        result = self.runner(["launchctl", "print", f"gui/{self.uid}/{LABEL}"])
        if result.returncode in (124, 126, 127):
            return None
        return result.returncode == 0

    # actions

    def run(self, action: str, use_systemd: bool) -> int:
        if action == "enable":
            return self.enable(self.chosen(use_systemd))
        if action == "disable":
            return self.disable()
        return self.status()

    def chosen(self, use_systemd: bool) -> Entry:
        if use_systemd:
            if "systemd" not in self.entries:
                raise AutostartUsageError("--systemd is for Linux; macOS uses a LaunchAgent")
            return self.entries["systemd"]
        return next(iter(self.entries.values()))

    def enable(self, entry: Entry) -> int:
        existed = entry.path.exists()
        changed = write_atomically(entry.path, entry.content)
        # Both kinds at once would start two icons at every login.
        for other in self.entries.values():
            if other is not entry and _present(other.path):
                self.deactivate(other)
                other.path.unlink(missing_ok=True)
                self.say(f"removed the {other.title} {other.path}: the {entry.title} replaces it")
        verb = "updated" if existed and changed else "enabled"
        command = entry.command_in(entry.content)
        if entry.kind == "systemd":
            return self.enable_systemd(entry, changed, verb, command)
        if entry.kind == "launchagent":
            return self.enable_launchd(entry, changed, verb, command)
        if not changed:
            self.say(f"already enabled: {entry.path} starts {command}")
        else:
            self.say(f"{verb}: {entry.path} starts {command} when you log in")
        return 0

    def enable_systemd(self, entry: Entry, changed: bool, verb: str, command: str | None) -> int:
        manager = self.user_manager()
        if manager.returncode != 0:
            self.say(f"{'wrote' if changed else 'already written'}: {entry.path} starts {command}")
            self.say(
                f"no systemd user manager answered ({_first_line(manager.output)}); "
                "once one runs, start tray with it: "
                f"systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}"
            )
            return 0
        if changed:
            reload = self.systemctl("daemon-reload")
            if reload.returncode != 0:
                return self.fail("systemctl --user daemon-reload", reload)
        enabled = self.systemctl("is-enabled", UNIT_NAME)
        if not changed and enabled.returncode == 0:
            self.say(f"already enabled: {entry.path} starts {command}")
            return 0
        started = self.systemctl("enable", "--now", UNIT_NAME)
        if started.returncode != 0:
            return self.fail(f"systemctl --user enable --now {UNIT_NAME}", started)
        self.say(f"{verb}: {entry.path} starts {command} with your graphical session")
        return 0

    def enable_launchd(self, entry: Entry, changed: bool, verb: str, command: str | None) -> int:
        loaded = self.launchctl_loaded()
        if loaded is None:
            self.say(f"{verb}: {entry.path} starts {command}; launchd loads it at your next login")
            return 0
        if loaded and not changed:
            self.say(f"already enabled: {entry.path} starts {command}")
            return 0
        if loaded:
            self.runner(["launchctl", "bootout", f"gui/{self.uid}/{LABEL}"])
        booted = self.runner(["launchctl", "bootstrap", f"gui/{self.uid}", str(entry.path)])
        if booted.returncode != 0:
            return self.fail(f"launchctl bootstrap gui/{self.uid}", booted)
        self.say(f"{verb}: {entry.path} starts {command} when you log in")
        return 0

    def deactivate(self, entry: Entry) -> None:
        """Stop the service manager using a file that is about to go."""
        if entry.kind == "systemd" and self.user_manager().returncode == 0:
            self.systemctl("disable", "--now", UNIT_NAME)
        if entry.kind == "launchagent" and self.launchctl_loaded():
            self.runner(["launchctl", "bootout", f"gui/{self.uid}/{LABEL}"])

    def disable(self) -> int:
        removed = False
        for entry in self.entries.values():
            if not _present(entry.path):
                continue
            self.deactivate(entry)
            entry.path.unlink(missing_ok=True)
            if entry.kind == "systemd" and self.user_manager().returncode == 0:
                self.systemctl("daemon-reload")
            self.say(f"disabled: removed {entry.path}")
            removed = True
        if not removed:
            paths = " or ".join(str(entry.path) for entry in self.entries.values())
            self.say(f"not enabled: there is no {paths}")
        return 0

    def status(self) -> int:
        """0 when an entry starts this tray and 1 when none does, as ``systemctl is-enabled``."""
        enabled = False
        for entry in self.entries.values():
            line, starts_this = self.describe(entry)
            self.say(line)
            enabled = enabled or starts_this
        return 0 if enabled else 1

    def describe(self, entry: Entry) -> tuple[str, bool]:
        """One line about ``entry``, and whether it starts this tray."""
        try:
            data = entry.path.read_bytes()
        except FileNotFoundError:
            return f"{entry.title}: not installed ({entry.path})", False
        installed = entry.command_in(data)
        expected = entry.command_in(entry.content)
        if installed is None:
            line = f"{entry.title}: {entry.path} is installed but names no command"
        elif installed == expected:
            line = f"{entry.title}: {entry.path} starts this tray ({expected})"
        else:
            option = " --systemd" if entry.kind == "systemd" else ""
            line = (
                f"{entry.title}: {entry.path} starts {clean_text(installed)}, not this tray "
                f"({expected}); 'tray autostart enable{option}' updates it"
            )
        if entry.kind == "systemd":
            manager = self.user_manager()
            if manager.returncode == 0:
                answer = self.systemctl("is-enabled", UNIT_NAME)
                line += f"; systemd says {_first_line(answer.output) or 'nothing'}"
            else:
                line += "; no systemd user manager answered"
        if entry.kind == "launchagent":
            loaded = self.launchctl_loaded()
            if loaded is not None:
                line += "; loaded in launchd" if loaded else "; not loaded in launchd"
        return line, installed == expected

    def fail(self, what: str, result: RunResult) -> int:
        self.env.stderr.write(
            f"tray autostart: {what} failed (status {result.returncode}): "
            f"{_first_line(result.output) or 'no message'}\n"
        )
        return 1


def _present(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return clean_text(line)
    return ""


def autostart(
    action: str,
    use_systemd: bool,
    env: Environment,
    *,
    platform: str,
    argv: Sequence[str],
    runner: Runner,
    uid: int,
) -> int:
    """Everything injected: the platform, the tray command, the tool runner and the uid."""
    try:
        manager = Autostart(env, platform, [*argv, "app"], runner, uid)
        return manager.run(action, use_systemd)
    except AutostartError as error:
        env.stderr.write(f"tray autostart: {error}\n")
        return error.status


def run_autostart(action: str, use_systemd: bool, env: Environment) -> int:
    """``tray autostart`` for this process: its platform, its own path, real tools."""
    try:
        argv = tray_command(sys.argv[0], sys.executable, env.environ.get("PATH"))
    except AutostartError as error:
        env.stderr.write(f"tray autostart: {error}\n")
        return 1
    return autostart(
        action,
        use_systemd,
        env,
        platform=sys.platform,
        argv=argv,
        runner=run_command,
        uid=os.getuid(),
    )


def command(args: argparse.Namespace, env: Environment) -> int:
    return run_autostart(args.action, args.systemd, env)


__all__ = [
    "APP_ID",
    "DESKTOP_FILE",
    "LABEL",
    "NAME",
    "SUMMARY",
    "UNIT_NAME",
    "Autostart",
    "AutostartError",
    "AutostartUsageError",
    "RunResult",
    "autostart",
    "command",
    "desktop_entry",
    "desktop_exec",
    "launch_agent",
    "run_autostart",
    "run_command",
    "systemd_exec",
    "systemd_unit",
    "tray_command",
]
