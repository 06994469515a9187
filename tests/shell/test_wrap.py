"""Wrapped agents in real interactive bash, zsh and fish: under `tray run` only when fit."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from helpers.shells import AGENT_OUTPUT, ARGV, PROMPT_SETUP, Home, Shell
from helpers.waiting import wait_for
from ptyprocess import PtyProcess

# Spaces, both quotes, a glob and an empty word: the same syntax in all three shells.
TRICKY = "claude 'a b' \"it's\" '*.txt' '' 'x\"y' --flag=1"
TRICKY_ARGV = ["a b", "it's", "*.txt", "", 'x"y', "--flag=1"]


def export(kind: str, name: str, value: str) -> str:
    """A line that exports ``name``; ``value`` is shell syntax (quoted or a substitution)."""
    if kind == "fish":
        return f"set -gx {name} {value}"
    return f"export {name}={value}"


def tty_of(kind: str) -> str:
    return "(tty)" if kind == "fish" else '"$(tty)"'


def test_a_wrapped_agent_runs_under_tray_run_with_its_arguments_intact(shell: Shell) -> None:
    shell.load()
    result = shell.agent(TRICKY)
    assert result["argv"] == TRICKY_ARGV
    assert result["session"], "the agent did not run under tray run"
    [session] = shell.home.sessions()
    assert session.id == result["session"]
    assert session.command == ("claude", *TRICKY_ARGV)


def test_the_agents_exit_status_is_the_shells_status(shell: Shell, home: Home) -> None:
    home.add_script(home.bin / "codex", "import sys; sys.exit(7)")
    shell.load()
    status = "$status" if shell.kind == "fish" else "$?"
    assert "status=7;" in shell.run(f"codex; printf 'status=%s;\\n' {status}")


@pytest.mark.parametrize(
    "line",
    ["claude x | cat", "echo | claude x", "claude x > out.txt; cat out.txt"],
    ids=["stdout-piped", "stdin-piped", "stdout-to-file"],
)
def test_not_wrapped_unless_stdin_and_stdout_are_the_terminal(shell: Shell, line: str) -> None:
    shell.load()
    result = shell.agent(line)
    assert result["argv"] == ["x"]
    assert result["session"] is None
    assert shell.home.sessions() == []


def test_not_wrapped_in_a_shell_that_is_not_interactive(kind: str, home: Home) -> None:
    if kind == "fish":
        script = "tray init fish | source; claude 'a b'"
    else:
        script = f"eval \"$(tray init {kind})\"; claude 'a b'"
    argv = [*ARGV[kind][:-1], "-c", script]
    # On a pty, so only the shell being non-interactive keeps the agent unwrapped.
    process = PtyProcess.spawn(argv, env=home.environ, cwd=str(home.root / "work"))
    output = b""
    while True:
        try:
            output += process.read(65536)
        except EOFError:
            break
    process.wait()
    found = AGENT_OUTPUT.findall(output.decode(errors="replace"))
    assert len(found) == 1, output
    assert '"session": null' in found[0]
    assert '"stdout_tty": true' in found[0]
    assert home.sessions() == []


def test_not_wrapped_inside_the_tray_session_of_this_terminal(shell: Shell) -> None:
    shell.load()
    shell.run(export(shell.kind, "TRAY_SESSION_ID", "outer-1"))
    shell.run(export(shell.kind, "TRAY_TTY", tty_of(shell.kind)))
    assert shell.agent("claude x")["session"] == "outer-1"
    assert shell.home.sessions() == []


@pytest.mark.parametrize("stale_tty", ["'/dev/pts/999999'", None], ids=["other-tty", "no-tty"])
def test_a_stale_session_variable_does_not_stop_wrapping(
    shell: Shell, stale_tty: str | None
) -> None:
    # What a tmux pane started from inside a `tray run` inherits.
    shell.load()
    shell.run(export(shell.kind, "TRAY_SESSION_ID", "stale-1"))
    if stale_tty is not None:
        shell.run(export(shell.kind, "TRAY_TTY", stale_tty))
    result = shell.agent("claude x")
    assert result["session"] not in (None, "stale-1")
    assert [s.id for s in shell.home.sessions()] == [result["session"]]


def test_not_wrapped_in_a_shell_running_under_tray_run(shell: Shell) -> None:
    shell.home.count_long_commands()  # so that the `sleep 0.5` below would be reported
    outer_count = shell.count
    shell.send(f"tray run -- {' '.join(ARGV[shell.kind])}\r")
    shell.count = 0
    shell.run(PROMPT_SETUP[shell.kind])
    # The command line echoes "tty=%s;" too: the printed line is the last match.
    exported = re.findall(r"tty=(\S*);", shell.run("printf 'tty=%s;\\n' \"$TRAY_TTY\""))
    assert exported[-1].startswith("/dev/pts/"), "tray run must export TRAY_TTY"
    shell.load()
    [outer] = shell.home.sessions()
    assert shell.agent("claude x")["session"] == outer.id
    shell.run("sleep 0.5")
    shell.count = outer_count
    shell.send("exit\r")
    shell.wait_prompt()
    assert [s.id for s in shell.home.sessions()] == [outer.id]


def test_loading_twice_changes_nothing(shell: Shell) -> None:
    shell.load()
    shell.load()
    counts = {
        "bash": 'printf "%s\\n" "${PROMPT_COMMAND[@]}" "$PS0" | grep -c __tray_',
        "zsh": "print -l $precmd_functions $preexec_functions | grep -c __tray_",
        "fish": "functions --handlers | grep -c __tray_",
    }
    substitution = "({})" if shell.kind == "fish" else '"$({})"'
    hooks = shell.run(f"printf 'hooks=%s;\\n' {substitution.format(counts[shell.kind])}")
    assert f"hooks={1 if shell.kind == 'fish' else 2};" in hooks, hooks
    result = shell.agent(TRICKY)
    assert result["argv"] == TRICKY_ARGV
    assert [s.id for s in shell.home.sessions()] == [result["session"]]


def test_an_alias_of_the_same_name_is_kept_with_one_warning(shell: Shell) -> None:
    if shell.kind == "fish":
        shell.run("alias claude 'echo aliased'")
    else:
        shell.run("alias claude='echo aliased'")
    output = shell.load() + shell.load()
    assert output.count("tray: not wrapping claude: it is an alias") == 1, output
    assert "aliased" in shell.run("claude")
    # The other agents are wrapped all the same.
    assert shell.agent("codex y")["session"]


def test_a_function_of_the_same_name_is_kept(shell: Shell) -> None:
    if shell.kind == "fish":
        shell.run("function claude; echo mine; end")
    else:
        shell.run("function claude { echo mine; }")
    assert "tray: not wrapping claude: it is a function" in shell.load()
    assert "mine" in shell.run("claude")


def test_completion_for_a_wrapped_name_is_still_the_commands(shell: Shell) -> None:
    setups = {
        "bash": "complete -W '--alpha --beta' claude",
        "zsh": (
            "autoload -Uz compinit && compinit -u -D; _tclaude() { compadd -- --alpha --beta };"
            " compdef _tclaude claude"
        ),
        "fish": "complete -c claude -l alpha -l beta",
    }
    shell.run(setups[shell.kind])
    spec = "complete -W '--alpha --beta' claude\r\n"
    if shell.kind == "bash":
        assert spec in shell.run("complete -p claude")
    shell.load()
    if shell.kind == "bash":
        assert spec in shell.run("complete -p claude")
    start = len(shell.output)
    shell.send("claude --al\t")
    shell.expect(re.compile(rb"alpha"))
    shell.send("\r")
    found = AGENT_OUTPUT.findall(shell.wait_prompt(start))
    assert len(found) == 1
    assert '"argv": ["--alpha"]' in found[0]
    assert '"session": null' not in found[0]


def test_a_command_missing_from_path_is_not_found_as_usual(shell: Shell) -> None:
    shell.load()
    output = shell.run("gemini x")
    assert re.search(r"not found|Unknown command", output), output
    assert shell.home.sessions() == []


def test_the_tray_on_path_takes_over_when_the_printing_one_is_gone(
    shell: Shell, home: Home
) -> None:
    gone = home.root / "gone" / "tray"
    gone.parent.mkdir()
    shutil.copy(home.logging_tray, gone)
    shell.load(str(gone))
    os.unlink(gone)
    result = shell.agent("claude 'a b'")
    assert result["argv"] == ["a b"]
    assert result["session"]
    wait_for(home.sessions, what="the session file")


def test_doctor_tells_whether_this_shell_has_the_integration(shell: Shell) -> None:
    doctor = "tray doctor | grep --color=never -a '^[a-zA-Z]* *shell:'"
    before = shell.run(doctor)
    assert "warn shell: tray init is not loaded in this shell" in before
    shell.load()
    after = shell.run(doctor)
    assert f"ok   shell: tray init {shell.kind} is loaded" in after
