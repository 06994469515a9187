"""Version, help, usage errors, and ``python -m tray`` being the console script."""

from __future__ import annotations

import gc
import io
import os
import sys
from pathlib import Path

import pytest
from helpers.tray_home import Tray

import tray
from tray.cli import build_parser, main, parse_run_args
from tray.command_table import COMMANDS
from tray.state.environment import Environment

# What the ``tray`` console script (``tray = tray.cli:entry``) runs.
CONSOLE_SCRIPT = "import sys; from tray.cli import entry; sys.argv[0] = 'tray'; entry()"


def test_version(tray_home: Tray) -> None:
    result = tray_home.run("--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, "tray 0.1.0\n", "")
    assert tray.__version__ == "0.1.0"


@pytest.mark.parametrize("command", ["run", "status", "dismiss", "emit", "answer", "app"])
def test_help_per_command(tray_home: Tray, command: str) -> None:
    result = tray_home.run(command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: tray {command}")
    assert result.stderr == ""


@pytest.mark.parametrize("command", [entry.name for entry in COMMANDS if entry.name != "run"])
def test_a_command_named_on_the_line_gets_its_own_parser_alone_and_the_same_one(
    command: str,
) -> None:
    # The other commands' parsers are not built for it (`tray emit` runs in loops and
    # hooks), and what it parses and says is what the whole parser's would be.
    parser, parsers = build_parser(command)
    assert list(parsers) == [command]
    _, every = build_parser()
    assert parsers[command].format_help() == every[command].format_help()
    assert parser.format_usage() == build_parser()[0].format_usage()


def test_top_level_help_lists_every_command(tray_home: Tray) -> None:
    result = tray_home.run("--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: tray ")
    for command in ("run", "status", "dismiss", "emit", "answer", "app"):
        assert f"    {command} " in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("frob",),
        ("--bogus",),
        ("run",),
        ("run", "--"),
        ("run", "--name"),
        ("run", "--name", "x"),
        ("run", "--name=", "ls"),
        ("run", "-t", "ssh"),
        ("status", "--jsn"),
        ("status", "extra"),
        ("app", "extra"),
        ("answer",),
        ("answer", "4242-abc"),
        ("answer", "4242-abc", "maybe"),
        ("answer", "4242-abc", "approve", "extra"),
        ("answer", "4242-abc", "approve", "--record"),
        ("answer", "4242-abc", "approve", "--since", "soon"),
        ("answer", "4242-abc", "approve", "--since", "nan"),
        ("answer", "../etc", "approve"),
        ("answer", "4242-abc", "approve", "--host", "nowhere"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tray_home: Tray, args: tuple[str, ...]) -> None:
    result = tray_home.run(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("tray")
    assert "--help" in line


def test_an_unknown_command_lists_only_the_public_ones(tray_home: Tray) -> None:
    result = tray_home.run("bogus")
    assert (result.returncode, result.stdout) == (2, "")
    (line,) = result.stderr.splitlines()
    assert "invalid choice: 'bogus'" in line  # the words an older tray is known by over ssh
    listed = line.partition("(choose from ")[2].partition(")")[0]
    shown = [entry.name for entry in COMMANDS if entry.help is not None]
    assert listed == f"{', '.join(shown[:-1])} or {shown[-1]}"
    assert "_finished" not in line


def test_the_hidden_command_still_runs(tray_home: Tray) -> None:
    # The shell hooks call it; hiding it from the choices must not turn it away.
    result = tray_home.run(
        "_finished", "--cmdline", "make test", "--status", "0", "--duration", "40"
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    (session,) = tray_home.state_dir.glob("*.json")
    assert '"make test"' in session.read_text()


def test_python_m_tray_is_the_console_script(tray_home: Tray) -> None:
    for args in (["--version"], ["--help"], ["emit", "--help"], ["status", "--json"], ["frob"]):
        module = tray_home.run(*args)
        script = tray_home.run_argv([sys.executable, "-c", CONSOLE_SCRIPT, *args])
        assert (module.returncode, module.stdout, module.stderr) == (
            script.returncode,
            script.stdout,
            script.stderr,
        )


@pytest.mark.parametrize(
    ("argv", "name", "command"),
    [
        (["ssh", "-t", "host"], None, ["ssh", "-t", "host"]),
        (["--name", "db", "ssh", "-t", "host"], "db", ["ssh", "-t", "host"]),
        (["--name=db", "--", "-weird", "--name", "x"], "db", ["-weird", "--name", "x"]),
        (["--", "--"], None, ["--"]),
        (["-", "x"], None, ["-", "x"]),
        (["--name", "a", "--name", "b", "ls"], "b", ["ls"]),
        (["claude", "--", "--permission-mode"], None, ["claude", "--", "--permission-mode"]),
    ],
)
def test_run_options_end_at_the_command(
    argv: list[str], name: str | None, command: list[str]
) -> None:
    assert parse_run_args(argv) == (name, command)


@pytest.mark.parametrize("argv", [["no-such-command-for-tray"], ["true"]], ids=["fails", "runs"])
def test_run_leaves_garbage_collection_on_for_the_caller(tmp_path: Path, argv: list[str]) -> None:
    # `tray run` turns collection off while it starts; main() called by a longer-lived
    # program must get it back however the run ended.
    stdin = os.open(os.devnull, os.O_RDONLY)
    stdout = os.open(os.devnull, os.O_WRONLY)
    try:
        env = Environment(
            environ={"TRAY_STATE_DIR": str(tmp_path / "state"), "PATH": os.environ["PATH"]},
            stdin_fd=stdin,
            stdout_fd=stdout,
            stderr=io.StringIO(),
        )
        assert gc.isenabled()
        status = main(["run", "--", *argv], env)
    finally:
        os.close(stdin)
        os.close(stdout)
    assert status == (127 if argv[0].startswith("no-such") else 0)
    assert gc.isenabled()
