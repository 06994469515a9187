"""``tray run`` starts every agent: it imports the launcher, not the app or other commands."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import TIMEOUT, Tray

# The tray app and its libraries: seconds of start-up, and a display or D-Bus to boot.
APP_MODULES = (
    "tray.app",
    "PIL",
    "pystray",
    "desktop_notifier",
    "watchdog",
    "dbus_fast",
    "apprise",
)
# What other commands need, and heavy standard modules the launcher does without.
OTHER_MODULES = ("tray.commands", "argparse", "platformdirs", "subprocess", "asyncio", "secrets")
# Milliseconds of every start, which the launcher's own modules are written to avoid:
# dataclasses brings inspect (and ast, dis, tokenize) in; typing is big; tomllib (with
# datetime) is needed only to read a config file; [[hosts]] only when one lists hosts.
SLOW_MODULES = ("dataclasses", "inspect", "typing", "tomllib", "datetime", "tray.remote")
# With a config file, tomllib is read (and imports typing): the rest stays out.
SLOW_WITH_CONFIG = ("dataclasses", "inspect", "tray.remote")
# Loaded only when something needs them: re (with enum, functools and collections) when
# output or a config needs a pattern, json when other sessions' files are read, pathlib
# for the app's Path-returning calls. Together with the Python wrapper of signal (which
# turns numbers into enums) and ptyprocess (with shutil, bz2 and lzma), they were most
# of the start-up: here a bare interpreter starts in about 23 ms, and importing
# ptyprocess alone took 21 ms, re 12 ms, pathlib 20 ms.
ON_DEMAND_MODULES = (
    "re",
    "enum",
    "signal",
    "json",
    "pathlib",
    "fnmatch",
    "urllib",
    "ipaddress",
    "ptyprocess",
    "shutil",
    "contextlib",
    "collections",
    "functools",
)


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


def _tray_run_imports(tray_home: Tray, environ: dict[str, str]) -> set[str]:
    """What ``tray run -- true`` imported, beyond doubt that it ran."""
    result = subprocess.run(
        # -S: the project's venv holds an editable install, whose finder (run by site)
        # imports pathlib and re before any of tray does; a user's plain install has no
        # such finder. The launcher needs nothing from site-packages, and PYTHONPATH
        # finds tray. The console script's own lines, not -m: runpy brings contextlib.
        [sys.executable, "-S", "-X", "importtime", "-c", CONSOLE_SCRIPT, "run", "--", "true"],
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
    assert {"tray.cli", "tray.launcher.run", "tray.launcher.spawn", "tray.state.store"} <= imported
    return imported


@pytest.mark.parametrize("config_home", [True, False], ids=["xdg-config-home", "default-config"])
def test_tray_run_imports_only_the_launcher(tray_home: Tray, config_home: bool) -> None:
    environ = dict(tray_home.environ)
    if not config_home:
        environ.pop("XDG_CONFIG_HOME")  # then ~/.config, in the test's own home
    imported = _tray_run_imports(tray_home, environ)
    assert sorted(name for name in imported if _within(name, APP_MODULES)) == []
    assert sorted(name for name in imported if _within(name, OTHER_MODULES)) == []
    assert sorted(name for name in imported if _within(name, SLOW_MODULES)) == []
    assert sorted(name for name in imported if _within(name, ON_DEMAND_MODULES)) == []


def test_tray_run_reads_other_sessions_without_the_app(tray_home: Tray) -> None:
    # With other sessions in the directory, the launcher reads them to prune the ended
    # ones: json comes in then, and the rest still stays out.
    first = _tray_run_imports(tray_home, dict(tray_home.environ))
    assert "json" not in first
    again = _tray_run_imports(tray_home, dict(tray_home.environ))
    assert "json" in again  # the first run's session was read
    assert sorted(name for name in again if _within(name, APP_MODULES + OTHER_MODULES)) == []
    assert (
        sorted(name for name in again if _within(name, ("pathlib", "ptyprocess", "signal"))) == []
    )


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


def test_tray_run_reads_a_config_file_without_the_slow_modules(tray_home: Tray) -> None:
    tray_home.write_config('[sessions]\nkeep_ended = "1h"\n')
    imported = _tray_run_imports(tray_home, dict(tray_home.environ))
    assert "tomllib" in imported  # the file was read
    assert sorted(name for name in imported if _within(name, SLOW_WITH_CONFIG)) == []
