"""A long command typed at the prompt becomes a finished session; nothing else does.

The config's threshold is 0.2 s here. The shells load the code from a tray that writes
down each call, so a test can tell that no process was started for a short command.
"""

from __future__ import annotations

import re

import pytest
from helpers.processes import children_of, process_age, process_name
from helpers.shells import Home, Shell, require
from helpers.waiting import wait_for

from shell.test_wrap import export, tty_of
from tray.core.session.model import Session

FAILING = "sh -c 'sleep 0.5; exit 3'"


@pytest.fixture(autouse=True)
def long_commands(home: Home) -> None:
    """The threshold of 0.2 s, written before any shell loads tray's code."""
    home.count_long_commands()


def finished(home: Home, count: int = 1) -> list[Session]:
    def ended() -> list[Session] | None:
        found = [s for s in home.sessions() if s.attention and s.child_pid is None]
        return found if len(found) >= count else None

    return wait_for(ended, what=f"{count} finished command(s)")


def test_a_long_command_is_recorded_as_a_finished_session(shell: Shell, home: Home) -> None:
    shell.load(str(home.logging_tray))
    shell.run("sleep 0.5")
    [session] = finished(home)
    assert session.name == "sleep"
    assert session.command == ("sleep", "0.5")
    assert session.cwd == str(home.root / "work")
    assert (session.alive, session.exit_code, session.state) == (False, 0, "done")
    assert session.source == "launcher"
    assert session.terminal["tty"].startswith("/dev/")
    assert session.updated_at - session.started_at >= 0.5
    [attention] = session.attention
    assert (attention.seq, attention.source, attention.title) == (1, "command", "sleep 0.5")
    assert attention.exit_code == 0
    assert attention.duration is not None and attention.duration >= 0.5
    assert attention.at == session.updated_at


def test_a_failing_long_command_is_an_error_with_its_status(shell: Shell, home: Home) -> None:
    shell.load()
    shell.run(FAILING)
    [session] = finished(home)
    assert (session.exit_code, session.state) == (3, "error")
    assert session.attention[0].title == FAILING
    assert session.attention[0].exit_code == 3
    assert session.command == ("sh", "-c", "sleep 0.5; exit 3")


def test_the_terminal_is_recorded(kind: str, home: Home) -> None:
    with Shell(
        kind, home, extra_env={"TMUX": "/tmp/tmux-1/default,1,0", "TMUX_PANE": "%9"}
    ) as shell:
        shell.load()
        shell.run("sleep 0.5")
        [session] = finished(home)
    assert session.terminal["TMUX_PANE"] == "%9"
    assert session.terminal["TMUX"] == "/tmp/tmux-1/default,1,0"


def test_short_commands_start_no_process(shell: Shell, home: Home) -> None:
    shell.load(str(home.logging_tray))
    for line in ("true", "echo short", "cd .", "false"):
        shell.run(line)
    shell.run("sleep 0.5")
    finished(home)
    assert [call[1] for call in home.finished_calls()] == ["--cmdline=sleep 0.5"]
    [session] = home.sessions()
    assert session.name == "sleep"


def test_the_status_the_user_sees_is_the_commands(shell: Shell) -> None:
    shell.load()
    status = "$status" if shell.kind == "fish" else "$?"
    shell.run("false")
    assert "status=1;" in shell.run(f"printf 'status=%s;\\n' {status}")
    shell.run(FAILING)
    assert "status=3;" in shell.run(f"printf 'status=%s;\\n' {status}")


def test_ignored_commands_are_not_reported(shell: Shell, home: Home) -> None:
    home.configure('[notify]\ndone_after = "0.2s"\n[shell]\nignore = ["sleep"]\n')
    shell.load(str(home.logging_tray))
    shell.run("sleep 0.5")
    shell.run("FOO=1 /bin/sleep 0.5")
    shell.run(FAILING)
    [session] = finished(home)
    assert session.name == "sh"
    assert len(home.finished_calls()) == 1


def test_a_wrapped_agent_is_not_reported_a_second_time(shell: Shell, home: Home) -> None:
    shell.load(str(home.logging_tray))
    agent = shell.agent("claude --sleep 0.5")
    shell.run(FAILING)
    finished(home)
    assert [call[1] for call in home.finished_calls()] == [f"--cmdline={FAILING}"]
    assert {s.id for s in home.sessions() if s.child_pid is not None} == {agent["session"]}


def test_tray_commands_are_not_reported(shell: Shell, home: Home) -> None:
    shell.load(str(home.logging_tray))
    shell.run("tray run -- sleep 0.5")
    shell.run(FAILING)
    finished(home)
    assert [call[1] for call in home.finished_calls()] == [f"--cmdline={FAILING}"]


def test_not_reported_inside_the_tray_session_of_this_terminal(shell: Shell, home: Home) -> None:
    shell.load(str(home.logging_tray))
    shell.run(export(shell.kind, "TRAY_SESSION_ID", "outer-1"))
    shell.run(export(shell.kind, "TRAY_TTY", tty_of(shell.kind)))
    shell.run("sleep 0.5")
    # A stale variable (another terminal's session) does not stop reports.
    shell.run(export(shell.kind, "TRAY_TTY", "/dev/pts/999999"))
    shell.run(FAILING)
    [session] = finished(home)
    assert session.name == "sh"
    assert len(home.finished_calls()) == 1


def test_loaded_twice_a_long_command_is_reported_once(shell: Shell, home: Home) -> None:
    shell.load(str(home.logging_tray))
    shell.load(str(home.logging_tray))
    shell.run("sleep 0.5")
    finished(home)
    shell.run(FAILING)
    finished(home, 2)
    assert len(home.finished_calls()) == 2


# bash keeps no command line of its own: the hooks take it from the history.


@pytest.fixture
def bash(home: Home) -> Shell:
    require("bash")
    return Shell("bash", home)


def test_bash_repeated_and_hidden_commands(bash: Shell, home: Home) -> None:
    with bash:
        bash.run("HISTCONTROL=ignoreboth")
        bash.load(str(home.logging_tray))
        bash.run("sleep 0.3")
        finished(home)
        bash.run("sleep 0.3")  # not in the history again: ignoredups
        finished(home, 2)
        bash.run(" sleep 0.4")  # kept out of the history: not named, not reported
        bash.run(FAILING)
        finished(home, 3)
    titles = [call[1] for call in home.finished_calls()]
    assert titles == ["--cmdline=sleep 0.3", "--cmdline=sleep 0.3", f"--cmdline={FAILING}"]


def test_bash_prompt_command_is_kept_and_sees_the_status(bash: Shell) -> None:
    with bash:
        bash.run("__mine() { printf 'mine=%s;\\n' $?; }; PROMPT_COMMAND=__mine")
        bash.load()
        assert "mine=1;" in bash.run("false")
        assert "mine=0;" in bash.run("true")
        listed = bash.run('printf "<%s>\\n" "${PROMPT_COMMAND[@]}"')
        assert re.search(r"<__tray_precmd\r?\n__mine>", listed), listed


def test_bash_prompt_command_array_stays_an_array(bash: Shell) -> None:
    with bash:
        bash.run("__mine() { printf 'mine=%s;\\n' $?; }; PROMPT_COMMAND=(__mine)")
        bash.load()
        assert "mine=1;" in bash.run("false")
        listed = bash.run('printf "<%s>\\n" "${PROMPT_COMMAND[@]}"')
        assert "<__tray_precmd>" in listed
        assert "<__mine>" in listed


def test_bash_with_nounset(bash: Shell, home: Home) -> None:
    with bash:
        bash.run("set -u")
        output = bash.load() + bash.run("true") + bash.run("sleep 0.5") + bash.run("claude x")
        finished(home)
    assert "unbound" not in output


def test_a_command_stopped_with_ctrl_z_is_not_reported(shell: Shell, home: Home) -> None:
    shell.load(str(home.logging_tray))
    start = len(shell.output)
    shell.send("sleep 30\r")
    sleeper = wait_for(
        lambda: next(
            (p for p in children_of(shell.process.pid) if process_name(p) == "sleep"), None
        ),
        what="sleep 30 to run",
    )
    # Only time makes a command long: past the 0.2 s threshold by the command's own age.
    wait_for(lambda: (process_age(sleeper) or 0.0) > 0.5, what="the command to be long")
    shell.send("\x1a")
    shell.wait_prompt(start)
    shell.run(FAILING)
    finished(home)
    assert [call[1] for call in home.finished_calls()] == [f"--cmdline={FAILING}"]
