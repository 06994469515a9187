"""``tray run`` starts every agent: it proxies the pty on ptyprocess, and imports neither the
app nor other commands' libraries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers.tray_home import TIMEOUT, Tray

# The tray app, its adapters and their libraries: seconds of start-up, and a display or
# D-Bus to boot. tray.remote is for [[hosts]], which `tray run` never talks to (its
# config entries are parsed in tray.core).
APP_MODULES = (
    "tray.app",
    "tray.desktop",
    "tray.outlets",
    "tray.remote",
    "PIL",
    "pystray",
    "desktop_notifier",
    "watchdog",
    "dbus_fast",
    "apprise",
)
# What other commands need: their modules (`tray run` has none there: cli.py hands it
# to the launcher), the parser `tray run` does without, and the app's event loop.
OTHER_MODULES = ("tray.commands", "argparse", "asyncio")
# What any run must have imported, so that an empty or misread report fails.
LAUNCHER_MODULES = {"tray.cli", "tray.launcher.run", "tray.launcher.spawn", "tray.state.store"}

CONSOLE_SCRIPT = "import sys\nfrom tray.cli import entry\nsys.exit(entry())"


def _imported(importtime: str) -> set[str]:
    """The modules ``-X importtime`` reported, from its lines ``import time: us | us | name``."""
    names = set()
    for line in importtime.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def _within(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == root or name.startswith(root + ".") for root in roots)


def _banned(imported: set[str]) -> list[str]:
    return sorted(name for name in imported if _within(name, APP_MODULES + OTHER_MODULES))


def _tray_run_imports(tray_home: Tray, environ: dict[str, str]) -> set[str]:
    """What ``tray run -- true`` imported, beyond doubt that it ran."""
    result = subprocess.run(
        # The console script's own lines, as the installed `tray` runs them.
        [sys.executable, "-X", "importtime", "-c", CONSOLE_SCRIPT, "run", "--", "true"],
        env=environ,
        cwd=tray_home.home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    imported = _imported(result.stderr)
    # The launcher really ran, and the report was read right.
    assert imported >= LAUNCHER_MODULES, sorted(LAUNCHER_MODULES - imported)
    return imported


def test_the_ban_lists_name_what_the_app_and_other_commands_import() -> None:
    # The names above are the real ones: the app's start and the other commands import
    # them, so a misspelt or renamed one would not pass unnoticed below. pystray and
    # apprise come later still, once the icon shows and a forward is sent.
    probe = "import tray.app.start, tray.commands.status, tray.outlets.forward, tray.remote"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", probe],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    imported = _imported(result.stderr)
    # watchdog is the app's only off Linux (tray/state/watchdog_observer.py).
    for root in APP_MODULES + OTHER_MODULES:
        if root not in ("pystray", "apprise", "watchdog"):
            assert root in imported, root


@pytest.mark.parametrize("config_home", [True, False], ids=["xdg-config-home", "default-config"])
def test_tray_run_proxies_on_ptyprocess_and_imports_no_app(
    tray_home: Tray, config_home: bool
) -> None:
    environ = dict(tray_home.environ)
    if not config_home:
        environ.pop("XDG_CONFIG_HOME")  # then ~/.config, in the test's own home
    imported = _tray_run_imports(tray_home, environ)
    assert {"ptyprocess", "ptyprocess.ptyprocess"} <= imported
    assert _banned(imported) == []


def test_tray_run_reads_other_sessions_without_the_app(tray_home: Tray) -> None:
    # With other sessions in the directory, the launcher reads them to prune the ended
    # ones: that path too stays off the app.
    _tray_run_imports(tray_home, dict(tray_home.environ))
    assert list(tray_home.state_dir.glob("*.json")) != []  # the first run's session
    again = _tray_run_imports(tray_home, dict(tray_home.environ))
    assert _banned(again) == []


@pytest.mark.parametrize("named_by", ["TRAY_STATE_DIR", "XDG_RUNTIME_DIR"])
def test_platformdirs_stays_out_when_the_state_directory_is_named(
    tray_home: Tray, named_by: str
) -> None:
    # platformdirs costs milliseconds, and is asked only when nothing names the directory.
    environ = dict(tray_home.environ)
    environ.pop("XDG_RUNTIME_DIR" if named_by == "TRAY_STATE_DIR" else "TRAY_STATE_DIR")
    imported = _tray_run_imports(tray_home, environ)
    assert "platformdirs" not in imported


def test_platformdirs_is_asked_when_nothing_names_the_state_directory() -> None:
    # The guard above means something: without either variable, it is imported. Only the
    # path is asked for, so nothing is made in the real runtime directory.
    probe = (
        "import sys\n"
        "from tray.state.environment import Environment\n"
        "Environment(environ={}).state_dir()\n"
        "print('platformdirs' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    assert result.stdout == "True\n"


@pytest.mark.parametrize(
    "config",
    [
        '[sessions]\nkeep_ended = "1h"\n',
        '[[hosts]]\nname = "devbox"\ndestination = "devbox.example"\n',
    ],
    ids=["sessions", "hosts"],
)
def test_tray_run_reads_a_config_file_without_the_app(tray_home: Tray, config: str) -> None:
    tray_home.write_config(config)
    imported = _tray_run_imports(tray_home, dict(tray_home.environ))
    assert "tomllib" in imported  # the file was read
    assert _banned(imported) == []


# What `tray run` loads only for a config file that asks for it: the TOML parser for any
# file, and the parsers of the tables it never uses itself for [away] and [[hosts]].
ONLY_FOR_A_CONFIG_FILE = ("tomllib", "tray.core.config.away", "tray.core.config.hosts")


def test_without_a_config_file_tray_run_loads_no_config_parser(tray_home: Tray) -> None:
    imported = _tray_run_imports(tray_home, dict(tray_home.environ))
    assert "tray.core.config.settings" in imported  # the defaults, and the gate's settings
    assert [name for name in ONLY_FOR_A_CONFIG_FILE if name in imported] == []


def test_a_config_file_with_away_and_hosts_is_parsed_whole(tray_home: Tray) -> None:
    # The guard above means something: with those tables they are loaded, and checked.
    tray_home.write_config(
        '[away]\nafter = "5m"\n\n[[hosts]]\nname = "build"\ndestination = "build.example"\n'
    )
    imported = _tray_run_imports(tray_home, dict(tray_home.environ))
    assert [name for name in ONLY_FOR_A_CONFIG_FILE if name not in imported] == []


# What the command line costs a command that argparse reads, and the hooks' form does
# without: an agent waits for its hook at each event.
PARSER_MODULES = ("argparse", "tray.command_table")


@pytest.mark.parametrize(
    ("args", "read_by_argparse", "code"),
    [
        (("emit", "--hook", "gemini", "Notification"), False, 0),  # a hook never fails
        (("emit", "--hook", "gemini", "Notification", "--msg", "x"), True, 2),  # usage error
        (("emit", "working", "--app", "make"), True, 1),
    ],
    ids=["hook-form", "hook-with-more", "plain-form"],
)
def test_the_hooks_form_of_emit_is_read_without_argparse(
    tray_home: Tray, tmp_path: Path, args: tuple[str, ...], read_by_argparse: bool, code: int
) -> None:
    not_a_terminal = tmp_path / "not-a-terminal"
    not_a_terminal.touch()
    result = tray_home.run_argv(
        [sys.executable, "-X", "importtime", "-c", CONSOLE_SCRIPT, *args],
        {"TRAY_TTY": str(not_a_terminal)},
    )
    imported = _imported(result.stderr)
    assert "tray.cli" in imported  # the report was read right
    assert [name in imported for name in PARSER_MODULES] == [read_by_argparse] * 2
    # Each says why in one line: no terminal to write to, or the usage error.
    lines = [line for line in result.stderr.splitlines() if not line.startswith("import time")]
    assert len(lines) == 1, lines
    assert lines[0].startswith("tray emit")
    assert result.returncode == code
    assert not_a_terminal.read_bytes() == b""
