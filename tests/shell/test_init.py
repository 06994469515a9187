"""`tray init bash|zsh|fish`: the printed code, which tray it names, and bad input."""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.shells import Home, Shell, require
from helpers.waiting import wait_for

from tray.core.config.settings import ShellConfig
from tray.shell.init import SHELLS, fish_quote, init_code, run_init, tray_program
from tray.state.environment import Environment

TRAY = Path(sys.executable).parent / "tray"
SYNTAX_CHECK = {"bash": ["bash", "-n"], "zsh": ["zsh", "-n"], "fish": ["fish", "--no-execute"]}


def tray(
    home: Home, *args: str, program: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(program or [str(TRAY)]), *args],
        env=home.environ,
        cwd=home.root,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("kind", SHELLS)
@pytest.mark.parametrize("how", ["console-script", "python-m"])
def test_the_printed_code_passes_the_shells_syntax_check(kind: str, how: str, home: Home) -> None:
    require(kind)
    home.configure(
        '[shell]\nwrap = ["claude", "c++", "my.tool", "cursor-agent"]\nignore = ["g++", "vi"]\n'
    )
    program = [sys.executable, "-m", "tray"] if how == "python-m" else None
    result = tray(home, "init", kind, program=program)
    assert (result.returncode, result.stderr) == (0, "")
    script = home.root / f"init.{kind}"
    script.write_text(result.stdout)
    check = subprocess.run(
        [*SYNTAX_CHECK[kind], str(script)], capture_output=True, text=True, check=False
    )
    assert (check.returncode, check.stderr) == (0, "")


@pytest.mark.parametrize("args", [["init"], ["init", "tcsh"], ["init", ""], ["init", "bash", "x"]])
def test_a_missing_or_unknown_shell_is_a_one_line_error(args: list[str], home: Home) -> None:
    result = tray(home, *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("tray init: ")


def test_run_init_names_the_shells_it_knows() -> None:
    for shell in (None, "tcsh", "Bash"):
        err = io.StringIO()
        out = io.StringIO()
        assert run_init(shell, Environment(environ={}, stdout=out, stderr=err)) == 2
        assert out.getvalue() == ""
        assert "(bash, zsh or fish)" in err.getvalue()


def test_a_broken_config_keeps_the_defaults_with_a_warning(home: Home) -> None:
    home.configure('[shell]\nwrap = "claude"\n')
    result = tray(home, "init", "bash")
    assert result.returncode == 0
    assert "shell.wrap" in result.stderr
    assert "using the defaults" in result.stderr
    assert "__tray_define claude codex" in result.stdout


@pytest.mark.parametrize("kind", SHELLS)
def test_the_printed_code_embeds_the_threshold(kind: str) -> None:
    code = init_code(kind, ["/opt/tray"], ShellConfig(), 45.5)
    expected = {
        "bash": "__tray_threshold=45500000\n",
        "zsh": "__tray_threshold=45.5\n",
        "fish": "__tray_threshold_ms 45500\n",
    }
    assert expected[kind] in code
    assert "longer\n# than 45.5s" in code


def test_tray_program_by_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    python = "/venv/bin/python"
    assert tray_program("/opt/bin/tray", python) == ["/opt/bin/tray"]
    assert tray_program("bin/tray", python) == [str(tmp_path / "bin" / "tray")]
    assert tray_program("/src/tray/__main__.py", python) == [python, "-m", "tray"]
    assert tray_program("tray", python) == ["tray"]
    assert tray_program("", python) == ["tray"]


def test_tray_program_keeps_symlinks(tmp_path: Path) -> None:
    # A venv's python is a symlink to the system's: resolving it would lose the venv.
    (tmp_path / "real").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    link = str(tmp_path / "link")
    assert tray_program(link, "/usr/bin/python3") == [link]
    assert tray_program("/x/tray/__main__.py", link) == [link, "-m", "tray"]


def test_fish_quote() -> None:
    assert fish_quote("plain") == "'plain'"
    assert fish_quote("it's a \\ path") == "'it\\'s a \\\\ path'"


FAKE_PATH_TRAY = "import sys; print('<<wrong tray>>'); sys.exit(99)"


@pytest.mark.parametrize("how", ["odd-path", "python-m"])
def test_the_tray_that_printed_the_code_is_the_one_it_runs(kind: str, how: str, home: Home) -> None:
    # A different tray first on PATH must not be the one the wrappers run.
    home.add_script(home.bin / "tray", FAKE_PATH_TRAY)
    if how == "odd-path":
        odd = home.root / "it's a dir" / "tray"
        odd.parent.mkdir()
        shutil.copy(home.logging_tray, odd)
        program = fish_quote(str(odd)) if kind == "fish" else shlex.quote(str(odd))
    else:
        program = f"{sys.executable} -m tray"
    with Shell(kind, home) as shell:
        shell.load(program)
        output = shell.run("claude 'a b'")
    assert "<<wrong tray>>" not in output
    [session] = wait_for(home.sessions, what="the session")
    assert session.command == ("claude", "a b")
    if how == "odd-path":
        calls = [json.loads(line) for line in home.log.read_text().splitlines()]
        assert ["run", "--", "claude", "a b"] in calls


def test_python_m_tray_prints_its_interpreter(home: Home) -> None:
    result = tray(home, "init", "bash", program=[sys.executable, "-m", "tray"])
    assert f"__tray_program=({shlex.quote(os.path.abspath(sys.executable))} -m tray)" in (
        result.stdout
    )
