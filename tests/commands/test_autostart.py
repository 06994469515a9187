"""``tray autostart``: the files it writes, their quoting, and enable/status/disable round trips.

The platform, the tray command and the systemctl/launchctl runner are injected; the
runners are small models of a user manager and of launchd that record every argv.
"""

from __future__ import annotations

import configparser
import io
import os
import plistlib
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import gi
import pytest

from tray.commands.autostart import (
    LABEL,
    UNIT_NAME,
    RunResult,
    autostart,
    desktop_entry,
    desktop_exec,
    launch_agent,
    run_command,
    systemd_exec,
    systemd_unit,
    tray_command,
)
from tray.state.environment import Environment

gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib  # noqa: E402
from helpers.files import umask  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parents[2]
UID = 501
TRAY = ["/opt/tray/bin/tray"]


@dataclass
class Home:
    home: Path
    config: Path
    env: Environment
    out: io.StringIO
    err: io.StringIO

    @property
    def desktop(self) -> Path:
        return self.config / "autostart" / "tray.desktop"

    @property
    def unit(self) -> Path:
        return self.config / "systemd" / "user" / UNIT_NAME

    @property
    def agent(self) -> Path:
        return self.home / "Library" / "LaunchAgents" / f"{LABEL}.plist"

    def take(self) -> tuple[str, str]:
        """What was printed since the last take: stdout and stderr."""
        printed = (self.out.getvalue(), self.err.getvalue())
        for stream in (self.out, self.err):
            stream.seek(0)
            stream.truncate()
        return printed


@pytest.fixture
def home(tmp_path: Path) -> Home:
    out, err = io.StringIO(), io.StringIO()
    environ = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env = Environment(environ=environ, stdout=out, stderr=err)
    return Home(tmp_path / "home", tmp_path / "config", env, out, err)


@dataclass
class FakeUserManager:
    """A systemd user manager as far as tray uses one: it knows unit files only after a
    daemon-reload, and enables only units it knows."""

    unit_dir: Path
    calls: list[list[str]] = field(default_factory=list)
    known: bool = False
    enabled: bool = False
    active: bool = False

    def __call__(self, argv: Sequence[str]) -> RunResult:
        self.calls.append(list(argv))
        assert list(argv[:2]) == ["systemctl", "--user"]
        verb, args = argv[2], list(argv[3:])
        if verb == "show-environment":
            return RunResult(0, "HOME=/home/me\n")
        if verb == "daemon-reload":
            self.known = (self.unit_dir / UNIT_NAME).exists()
            if not self.known:
                self.enabled = self.active = False
            return RunResult(0, "")
        assert args[-1] == UNIT_NAME
        if verb == "is-enabled":
            if not self.known:
                return RunResult(1, f"Failed to get unit file state for {UNIT_NAME}: not found\n")
            return RunResult(0, "enabled\n") if self.enabled else RunResult(1, "disabled\n")
        if verb == "enable":
            if not self.known:
                return RunResult(1, f"Failed to enable unit: Unit file {UNIT_NAME} does not exist.")
            self.enabled = True
            self.active = self.active or "--now" in args
            return RunResult(0, "Created symlink ...\n")
        if verb == "disable":
            self.enabled = False
            self.active = self.active and "--now" not in args
            return RunResult(0, "Removed ...\n")
        raise AssertionError(f"unexpected systemctl call {argv}")


@dataclass
class FakeNoUserManager:
    """systemctl on a machine without a user manager, or without systemctl at all."""

    returncode: int = 1
    output: str = "Failed to connect to bus: No medium found\n"
    calls: list[list[str]] = field(default_factory=list)

    def __call__(self, argv: Sequence[str]) -> RunResult:
        self.calls.append(list(argv))
        return RunResult(self.returncode, self.output)


@dataclass
class FakeLaunchd:
    """launchctl's bootstrap, bootout and print for one user's GUI domain."""

    calls: list[list[str]] = field(default_factory=list)
    loaded: dict[str, list[str]] = field(default_factory=dict)  # label -> ProgramArguments

    def __call__(self, argv: Sequence[str]) -> RunResult:
        self.calls.append(list(argv))
        assert argv[0] == "launchctl"
        verb = argv[1]
        if verb == "print":
            domain, _, label = argv[2].rpartition("/")
            assert domain == f"gui/{UID}"
            if label in self.loaded:
                return RunResult(0, f"{domain}/{label} = {{ ... }}\n")
            return RunResult(113, f'Could not find service "{label}" in domain for user gui: {UID}')
        if verb == "bootstrap":
            assert argv[2] == f"gui/{UID}"
            document = plistlib.loads(Path(argv[3]).read_bytes())
            if document["Label"] in self.loaded:
                return RunResult(5, "Bootstrap failed: 5: Input/output error\n")
            self.loaded[document["Label"]] = document["ProgramArguments"]
            return RunResult(0, "")
        if verb == "bootout":
            domain, _, label = argv[2].rpartition("/")
            assert domain == f"gui/{UID}"
            if self.loaded.pop(label, None) is None:
                return RunResult(3, "Boot-out failed: 3: No such process\n")
            return RunResult(0, "")
        raise AssertionError(f"unexpected launchctl call {argv}")


def run(
    home: Home,
    action: str,
    *,
    runner: FakeUserManager | FakeNoUserManager | FakeLaunchd | None = None,
    systemd: bool = False,
    platform: str = "linux",
    argv: Sequence[str] = TRAY,
) -> int:
    def no_tools(command: Sequence[str]) -> RunResult:
        raise AssertionError(f"no outside tool expected, got {command}")

    return autostart(
        action,
        systemd,
        home.env,
        platform=platform,
        argv=argv,
        runner=runner or no_tools,
        uid=UID,
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """A umask that would give other modes than 0644, to show the files do not depend on it."""
    with umask(0o077):
        yield


# How to start this tray.


def test_console_script_is_named_by_its_absolute_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "my apps" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "tray"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert tray_command(str(script), "/usr/bin/python3", None) == [str(script)]
    # Found on PATH when the shell passed the bare name.
    assert tray_command("tray", "/usr/bin/python3", f"/nowhere:{bin_dir}") == [str(script)]
    # A relative path becomes absolute, so the login session need not share our cwd.
    relative = os.path.relpath(script)
    assert tray_command(relative, "/usr/bin/python3", None) == [str(script)]
    # pipx's link is kept, not resolved to the venv it points into.
    link = tmp_path / "tray"
    link.symlink_to(script)
    assert tray_command(str(link), "/usr/bin/python3", None) == [str(link)]


def test_python_m_tray_when_not_run_as_the_console_script(tmp_path: Path) -> None:
    main = str(PROJECT_ROOT / "tray" / "__main__.py")
    assert tray_command(main, "/usr/bin/python3", None) == ["/usr/bin/python3", "-m", "tray"]
    # A "tray" that is not an executable file is not the console script.
    (tmp_path / "tray").write_text("not executable")
    python = ["/usr/bin/python3", "-m", "tray"]
    assert tray_command(str(tmp_path / "tray"), "/usr/bin/python3", None) == python
    assert tray_command("tray", "/usr/bin/python3", str(tmp_path)) == python


# Quoting.


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/usr/bin/tray", "app"], "/usr/bin/tray app"),
        (["/opt/my apps/tray", "app"], '"/opt/my apps/tray" app'),
        (["/opt/it's/tray", "app"], '"/opt/it\'s/tray" app'),
        (['/opt/say "hi"/tray'], '"/opt/say \\\\"hi\\\\"/tray"'),
        (["/opt/$HOME/tray"], '"/opt/\\\\$HOME/tray"'),
        (["/opt/back\\slash/tray"], '"/opt/back\\\\\\\\slash/tray"'),
        (["/opt/100%/tray"], "/opt/100%%/tray"),
        (["/opt/caf\u00e9/tray", ""], '/opt/caf\u00e9/tray ""'),
    ],
)
def test_desktop_exec_quoting(argv: list[str], expected: str) -> None:
    assert desktop_exec(argv) == expected


TRICKY_ARGS = ["app", "100%", 'a"b', "$HOME", "back\\slash", "", "\u00e9 \u00fc", "x;y", "it's"]


def tricky_program(tmp_path: Path) -> Path:
    """An executable whose path needs quoting: spaces, a dollar sign, non-ASCII."""
    directory = tmp_path / "my apps $HOME" / "caf\u00e9"
    directory.mkdir(parents=True)
    program = directory / "tray"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    return program


def test_desktop_entry_round_trips_through_glib_and_validates(tmp_path: Path) -> None:
    argv = [str(tricky_program(tmp_path)), *TRICKY_ARGS]
    path = tmp_path / "tray.desktop"
    path.write_text(desktop_entry(argv), encoding="utf-8")
    # GLib parses Exec as launchers do; it also checks that the program exists.
    info = Gio.DesktopAppInfo.new_from_filename(str(path))
    commandline = info.get_commandline()
    # Field codes expand before word splitting; "%%" is the only one written.
    ok, parsed = GLib.shell_parse_argv(commandline.replace("%%", "%"))
    assert ok and parsed == argv
    result = subprocess.run(
        ["desktop-file-validate", str(path)], capture_output=True, text=True, check=False
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/usr/bin/tray", "app"], "/usr/bin/tray app"),
        (["/opt/my apps/tray", "app"], '"/opt/my apps/tray" app'),
        (["/opt/$x/tray", "$HOME", "${X}"], '"/opt/$x/tray" "$$HOME" "$${X}"'),
        (["/opt/a%b/tray", "100%"], "/opt/a%%b/tray 100%%"),
        (["/usr/bin/tray", 'a"b', "c\\d", "", "x;"], '/usr/bin/tray "a\\"b" "c\\\\d" "" "x;"'),
    ],
)
def test_systemd_exec_quoting(argv: list[str], expected: str) -> None:
    assert systemd_exec(argv) == expected


def test_generated_unit_passes_systemd_analyze(tmp_path: Path) -> None:
    program = tricky_program(tmp_path)
    unit = tmp_path / "units" / UNIT_NAME
    unit.parent.mkdir()
    unit.write_text(systemd_unit([str(program), *TRICKY_ARGS]), encoding="utf-8")
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(unit, encoding="utf-8")
    assert parser["Service"]["ExecStart"].startswith(f'"{program}" app 100%% ')
    assert parser["Service"]["Restart"] == "on-failure"
    assert parser["Install"]["WantedBy"] == "graphical-session.target"
    # It resolves the program, so a wrongly quoted path fails here.
    assert shutil.which("systemd-analyze"), "needs systemd-analyze (make test installs systemd)"
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_control_characters_are_refused(home: Home) -> None:
    assert run(home, "enable", argv=["/opt/bad\npath/tray"]) == 1
    out, err = home.take()
    assert out == ""
    assert err.startswith("tray autostart: cannot write a command with a control character")
    assert err.count("\n") == 1
    assert not home.desktop.exists()


# Round trips.


def test_xdg_round_trip(home: Home, loose_umask: None) -> None:
    assert run(home, "status") == 1
    assert home.take() == (
        f"XDG autostart entry: not installed ({home.desktop})\n"
        f"systemd user unit: not installed ({home.unit})\n",
        "",
    )
    assert run(home, "enable") == 0
    assert home.take() == (
        f"enabled: {home.desktop} starts /opt/tray/bin/tray app when you log in\n",
        "",
    )
    assert home.desktop.read_text() == desktop_entry([*TRAY, "app"])
    assert mode(home.desktop) == 0o644
    before = home.desktop.stat()

    assert run(home, "enable") == 0
    assert home.take()[0] == f"already enabled: {home.desktop} starts /opt/tray/bin/tray app\n"
    after = home.desktop.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(os.listdir(home.desktop.parent)) == ["tray.desktop"]  # no temp files left

    assert run(home, "status") == 0
    assert home.take()[0] == (
        f"XDG autostart entry: {home.desktop} starts this tray (/opt/tray/bin/tray app)\n"
        f"systemd user unit: not installed ({home.unit})\n"
    )
    assert run(home, "disable") == 0
    assert home.take()[0] == f"disabled: removed {home.desktop}\n"
    assert not home.desktop.exists()
    assert run(home, "disable") == 0
    assert home.take()[0] == f"not enabled: there is no {home.desktop} or {home.unit}\n"
    assert run(home, "status") == 1
    assert home.take()[0].startswith(f"XDG autostart entry: not installed ({home.desktop})\n")


def test_status_tells_when_the_entry_runs_another_tray(home: Home) -> None:
    assert run(home, "enable", argv=["/old/venv/bin/tray"]) == 0
    home.take()
    assert run(home, "status") == 1
    assert home.take()[0].splitlines()[0] == (
        f"XDG autostart entry: {home.desktop} starts /old/venv/bin/tray app, not this tray "
        "(/opt/tray/bin/tray app); 'tray autostart enable' updates it"
    )
    assert run(home, "enable") == 0
    assert home.take()[0] == (
        f"updated: {home.desktop} starts /opt/tray/bin/tray app when you log in\n"
    )
    assert home.desktop.read_text() == desktop_entry([*TRAY, "app"])


def test_systemd_round_trip(home: Home, loose_umask: None) -> None:
    manager = FakeUserManager(home.unit.parent)
    assert run(home, "enable", systemd=True, runner=manager) == 0
    assert home.take() == (
        f"enabled: {home.unit} starts /opt/tray/bin/tray app with your graphical session\n",
        "",
    )
    assert manager.calls == [
        ["systemctl", "--user", "show-environment"],
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "is-enabled", UNIT_NAME],
        ["systemctl", "--user", "enable", "--now", UNIT_NAME],
    ]
    assert (manager.enabled, manager.active) == (True, True)
    assert home.unit.read_text() == systemd_unit([*TRAY, "app"])
    assert mode(home.unit) == 0o644

    manager.calls.clear()
    assert run(home, "enable", systemd=True, runner=manager) == 0
    assert home.take()[0] == f"already enabled: {home.unit} starts /opt/tray/bin/tray app\n"
    assert ["systemctl", "--user", "enable", "--now", UNIT_NAME] not in manager.calls

    assert run(home, "status", runner=manager) == 0
    assert home.take()[0] == (
        f"XDG autostart entry: not installed ({home.desktop})\n"
        f"systemd user unit: {home.unit} starts this tray (/opt/tray/bin/tray app); "
        "systemd says enabled\n"
    )
    manager.calls.clear()
    assert run(home, "disable", runner=manager) == 0
    assert home.take()[0] == f"disabled: removed {home.unit}\n"
    assert ["systemctl", "--user", "disable", "--now", UNIT_NAME] in manager.calls
    assert manager.calls[-1] == ["systemctl", "--user", "daemon-reload"]
    assert (manager.known, manager.enabled, manager.active) == (False, False, False)
    assert not home.unit.exists()
    assert run(home, "status", runner=manager) == 1
    assert home.take()[0].splitlines()[1] == f"systemd user unit: not installed ({home.unit})"


@pytest.mark.parametrize(
    "manager",
    [FakeNoUserManager(), FakeNoUserManager(127, "systemctl: command not found")],
    ids=["no-user-manager", "no-systemctl"],
)
def test_systemd_without_a_user_manager_writes_and_says_what_to_run(
    home: Home, manager: FakeNoUserManager
) -> None:
    manager.calls.clear()
    assert run(home, "enable", systemd=True, runner=manager) == 0
    out, err = home.take()
    assert err == ""
    assert out.splitlines() == [
        f"wrote: {home.unit} starts /opt/tray/bin/tray app",
        f"no systemd user manager answered ({manager.output.strip()}); once one runs, start "
        "tray with it: systemctl --user daemon-reload && systemctl --user enable --now "
        "tray.service",
    ]
    assert manager.calls == [["systemctl", "--user", "show-environment"]]
    assert home.unit.read_text() == systemd_unit([*TRAY, "app"])
    assert run(home, "enable", systemd=True, runner=manager) == 0
    assert home.take()[0].startswith(f"already written: {home.unit}")
    assert run(home, "status", runner=manager) == 0
    assert home.take()[0].splitlines()[1].endswith("; no systemd user manager answered")
    assert run(home, "disable", runner=manager) == 0
    assert home.take()[0] == f"disabled: removed {home.unit}\n"
    assert not home.unit.exists()


def test_a_failing_systemctl_is_reported(home: Home) -> None:
    manager = FakeUserManager(home.unit.parent)

    def refusing(argv: Sequence[str]) -> RunResult:
        if argv[2] == "enable":
            return RunResult(1, "Failed to enable unit: Access denied\n")
        return manager(argv)

    status = autostart(
        "enable", True, home.env, platform="linux", argv=TRAY, runner=refusing, uid=UID
    )
    assert status == 1
    out, err = home.take()
    assert out == ""
    assert err == (
        "tray autostart: systemctl --user enable --now tray.service failed (status 1): "
        "Failed to enable unit: Access denied\n"
    )


def test_one_kind_replaces_the_other(home: Home) -> None:
    manager = FakeUserManager(home.unit.parent)
    assert run(home, "enable", runner=manager) == 0
    assert run(home, "enable", systemd=True, runner=manager) == 0
    assert not home.desktop.exists() and home.unit.exists()
    assert home.take()[0].splitlines()[1] == (
        f"removed the XDG autostart entry {home.desktop}: the systemd user unit replaces it"
    )
    assert manager.enabled
    assert run(home, "enable", runner=manager) == 0
    assert home.desktop.exists() and not home.unit.exists()
    # The unit was stopped and disabled before its file went.
    assert (manager.enabled, manager.active) == (False, False)
    assert home.take()[0].splitlines()[0] == (
        f"removed the systemd user unit {home.unit}: the XDG autostart entry replaces it"
    )


def test_launch_agent_round_trip(home: Home, loose_umask: None) -> None:
    launchd = FakeLaunchd()
    assert run(home, "enable", platform="darwin", runner=launchd) == 0
    assert home.take() == (
        f"enabled: {home.agent} starts /opt/tray/bin/tray app when you log in\n",
        "",
    )
    assert launchd.loaded == {LABEL: [*TRAY, "app"]}
    assert launchd.calls[-1] == ["launchctl", "bootstrap", f"gui/{UID}", str(home.agent)]
    assert home.agent.read_bytes() == launch_agent([*TRAY, "app"])
    assert mode(home.agent) == 0o644

    calls = len(launchd.calls)
    assert run(home, "enable", platform="darwin", runner=launchd) == 0
    assert home.take()[0] == f"already enabled: {home.agent} starts /opt/tray/bin/tray app\n"
    assert len(launchd.calls) == calls + 1  # only asked whether it is loaded

    assert run(home, "status", platform="darwin", runner=launchd) == 0
    assert home.take()[0] == (
        f"LaunchAgent: {home.agent} starts this tray (/opt/tray/bin/tray app); loaded in launchd\n"
    )
    # A new path: the old agent is booted out before the new one is bootstrapped.
    assert run(home, "enable", platform="darwin", runner=launchd, argv=["/new/tray"]) == 0
    assert home.take()[0] == f"updated: {home.agent} starts /new/tray app when you log in\n"
    assert launchd.loaded == {LABEL: ["/new/tray", "app"]}

    assert run(home, "disable", platform="darwin", runner=launchd) == 0
    assert home.take()[0] == f"disabled: removed {home.agent}\n"
    assert launchd.loaded == {}
    assert not home.agent.exists()
    assert run(home, "status", platform="darwin", runner=launchd) == 1
    assert home.take()[0] == f"LaunchAgent: not installed ({home.agent})\n"


def test_launch_agent_without_launchctl(home: Home) -> None:
    missing = FakeNoUserManager(127, "launchctl: command not found")
    assert run(home, "enable", platform="darwin", runner=missing) == 0
    assert home.take()[0] == (
        f"enabled: {home.agent} starts /opt/tray/bin/tray app; launchd loads it at your "
        "next login\n"
    )
    assert plistlib.loads(home.agent.read_bytes())["ProgramArguments"] == [*TRAY, "app"]


# Paths and bad input.


@pytest.mark.parametrize("config_home", [None, "", "relative/config"])
def test_config_home_falls_back_to_dot_config(home: Home, config_home: str | None) -> None:
    environ = {"HOME": str(home.home)}
    if config_home is not None:
        environ["XDG_CONFIG_HOME"] = config_home
    home.env.environ = environ
    assert run(home, "enable") == 0
    assert (home.home / ".config" / "autostart" / "tray.desktop").is_file()
    assert not home.config.exists()


@dataclass(frozen=True)
class BadSetup:
    platform: str
    environ: dict[str, str]
    systemd: bool
    status: int
    message: str


@pytest.mark.parametrize(
    "setup",
    [
        BadSetup("linux", {}, False, 1, "HOME is not set to an absolute path"),
        BadSetup("darwin", {"HOME": "relative"}, False, 1, "HOME is not set to an absolute path"),
        BadSetup("win32", {"HOME": "/home/me"}, False, 1, "autostart is not supported on win32"),
        BadSetup("darwin", {"HOME": "/home/me"}, True, 2, "--systemd is for Linux; macOS uses"),
    ],
    ids=["no-home", "relative-home", "windows", "systemd-on-macos"],
)
def test_bad_setups_are_one_line_errors(home: Home, setup: BadSetup) -> None:
    home.env.environ = setup.environ
    assert run(home, "enable", platform=setup.platform, systemd=setup.systemd) == setup.status
    out, err = home.take()
    assert out == ""
    assert err.startswith(f"tray autostart: {setup.message}")
    assert err.count("\n") == 1


def test_run_command_runs_real_tools() -> None:
    result = run_command(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert result == RunResult(3, "out\nerr\n")
    assert run_command(["tray-no-such-tool-here"]).returncode == 127


def test_the_real_command_line(tmp_path: Path) -> None:
    """``python -m tray autostart`` on this machine's platform, in a throwaway home."""
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(PROJECT_ROOT),
        "LANG": "C.UTF-8",
    }

    def tray(*args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [sys.executable, "-m", "tray", "autostart", *args],
            env=environ,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert "Traceback" not in result.stderr
        return result

    entry = tmp_path / "config" / "autostart" / "tray.desktop"
    assert tray("enable").returncode == 0
    # Not the console script here, so this interpreter with -m tray.
    assert entry.read_text() == desktop_entry([sys.executable, "-m", "tray", "app"])
    validated = subprocess.run(
        ["desktop-file-validate", str(entry)], capture_output=True, text=True, check=False
    )
    assert (validated.returncode, validated.stdout) == (0, "")
    status = tray("status")
    assert status.returncode == 0
    assert status.stdout.splitlines()[0] == (
        f"XDG autostart entry: {entry} starts this tray ({desktop_exec([sys.executable])} "
        "-m tray app)"
    )
    assert tray("disable").stdout == f"disabled: removed {entry}\n"
    bad = tray("restart")
    assert bad.returncode == 2
    assert bad.stderr.startswith("tray autostart: argument action: invalid choice: 'restart'")
