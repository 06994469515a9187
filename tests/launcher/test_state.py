"""What the launcher records in its state file."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from helpers.launcher_terminal import (
    Job,
    Terminal,
    launcher_argv,
    only_session,
    pid_gone,
    read_write_log,
    run_piped,
    sessions,
)
from helpers.waiting import wait_for

from tray.core.session.model import Session
from tray.launcher.recorder import INPUT_WRITE_INTERVAL, WRITE_INTERVAL

MSG = "approve Bash: touch notes.txt"

# Reports a turn like Claude Code, waiting for Enter between steps.
REPORTER = f"""
import base64, os, sys
def report(body):
    os.write(1, b"\\x1b]7501;" + body + b"\\x07")
report(b"state=working:app=demo")
print("step1", flush=True)
sys.stdin.readline()
msg = base64.b64encode({MSG!r}.encode()).decode().encode()
report(b"state=blocked:kind=permission:msg=" + msg)
print("step2", flush=True)
sys.stdin.readline()
report(b"state=done")
"""


def _session_where(
    state_dir: Path, test: Callable[[Session], bool]
) -> Callable[[], Session | None]:
    def probe() -> Session | None:
        session = only_session(state_dir)
        return session if session is not None and test(session) else None

    return probe


def test_reports_go_into_the_state_file(
    job_runner: Callable[..., Job], state_dir: Path, terminal: Terminal
) -> None:
    job = job_runner(launcher_argv([sys.executable, "-c", REPORTER]))
    job.expect(b"step1")
    working = job.wait(
        _session_where(state_dir, lambda s: s.state == "working" and s.source == "program"),
        "working from the program",
    )
    assert working.alive
    assert working.exit_code is None
    assert [(r.id, r.state, r.app) for r in working.records] == [("", "working", "demo")]

    terminal.type(b"\r")
    job.expect(b"step2")
    blocked = job.wait(_session_where(state_dir, lambda s: s.state == "blocked"), "blocked")
    (record,) = blocked.records
    assert (record.kind, record.msg, record.app) == ("permission", MSG, None)

    terminal.type(b"\r")
    assert job.exit_code() == 0
    final = only_session(state_dir)
    assert final is not None
    assert (final.alive, final.exit_code, final.state, final.source) == (
        False,
        0,
        "done",
        "program",
    )
    # The report bytes were passed through untouched.
    assert b"\x1b]7501;state=working:app=demo\x07" in terminal.output


# Records, then a shell prompt mark, then more records and a full reset (RIS).
LIFETIME = r"""
import os, sys
def out(data):
    os.write(1, data)
out(b"\x1b]7501;state=working:id=a\x07\x1b]7501;state=done:id=b\x07")
out(b"\x1b]133;A\x07step1\n")
sys.stdin.readline()
out(b"\x1b]7501;state=error:id=c\x07\x1bc")
out(b"step2\n")
sys.stdin.readline()
"""


def test_prompt_marks_and_resets_reach_the_record_table(
    job_runner: Callable[..., Job], state_dir: Path, terminal: Terminal
) -> None:
    job = job_runner(launcher_argv([sys.executable, "-c", LIFETIME]))
    job.expect(b"step1")
    after_prompt = job.wait(
        _session_where(state_dir, lambda s: [r.id for r in s.records] == ["b"]),
        "only the done record after the prompt",
    )
    assert after_prompt.state == "done"
    terminal.type(b"\r")
    job.expect(b"step2")
    after_reset = job.wait(
        _session_where(state_dir, lambda s: s.source == "program" and not s.records and s.alive),
        "no records after the reset",
    )
    assert after_reset.state is None
    terminal.type(b"\r")
    assert job.exit_code() == 0
    assert b"\x1bc" in terminal.output  # the reset itself went on to the terminal


def test_session_facts(job_runner: Callable[..., Job], state_dir: Path, terminal: Terminal) -> None:
    job = job_runner(launcher_argv(["sh", "-c", 'echo "id=$TRAY_SESSION_ID dir=$TRAY_STATE_DIR"']))
    assert job.exit_code() == 0
    session = only_session(state_dir)
    assert session is not None
    assert f"id={session.id} dir={state_dir}\r\n".encode() in terminal.output
    assert session.name == "sh"
    assert not session.name_given
    assert session.command[0] == "sh"
    assert session.pid == job.pid
    assert session.child_pid is not None and session.child_pid != job.pid
    assert session.terminal["tty"] == terminal.path
    assert session.terminal["TERM"] == "xterm-256color"
    assert session.pid_start is not None
    assert os.stat(state_dir).st_mode & 0o777 == 0o700
    assert os.stat(state_dir / f"{session.id}.json").st_mode & 0o777 == 0o600
    log = state_dir / "launcher.log"
    assert os.stat(log).st_mode & 0o777 == 0o600
    lines = [line for line in log.read_text().splitlines() if f" {session.id} " in line]
    assert any("started" in line for line in lines)
    assert any("ended status=0" in line for line in lines)


def test_a_plain_command_is_working_then_done_or_error(
    job_runner: Callable[..., Job], state_dir: Path, terminal: Terminal
) -> None:
    job = job_runner(launcher_argv(["sh", "-c", "echo ready; read answer; exit $answer"]))
    job.expect(b"ready")
    running = job.wait(_session_where(state_dir, lambda s: s.child_pid is not None), "child pid")
    assert (running.state, running.source, running.alive) == ("working", "launcher", True)
    terminal.type(b"3\r")
    assert job.exit_code() == 3
    ended = only_session(state_dir)
    assert ended is not None
    assert (ended.state, ended.exit_code, ended.alive) == ("error", 3, False)


def test_exit_zero_is_done(tray_env: dict[str, str], tmp_path: Path, state_dir: Path) -> None:
    result = run_piped(["true"], tray_env, tmp_path)
    assert result.returncode == 0
    ended = only_session(state_dir)
    assert ended is not None
    assert (ended.state, ended.exit_code, ended.alive, ended.source) == (
        "done",
        0,
        False,
        "launcher",
    )


def test_a_killed_launcher_leaves_no_working_session(
    job_runner: Callable[..., Job], state_dir: Path
) -> None:
    job = job_runner(launcher_argv([sys.executable, "-c", REPORTER]))
    job.expect(b"step1")
    session = job.wait(
        _session_where(state_dir, lambda s: s.state == "working" and s.source == "program"),
        "working",
    )
    assert session.alive and session.child_pid is not None
    os.kill(job.pid, signal.SIGKILL)
    assert job.exit_code() == -signal.SIGKILL
    after = only_session(state_dir)
    assert after is not None
    assert not after.alive
    assert after.state not in ("working", "blocked")
    # With the launcher gone the pty is hung up, and the command goes with it.
    wait_for(lambda: pid_gone(session.child_pid or 0), what="the command to end")


# 10,000 progress reports in 50 bursts, over half a second at least.
FLOOD = """
import os, time
for burst in range(50):
    reports = b"".join(
        b"\\x1b]7501;state=working:progress=%d\\x07" % (i % 101) for i in range(200)
    )
    view = memoryview(reports)
    while view:
        view = view[os.write(1, view):]
    time.sleep(0.01)
os.write(1, b"\\x1b]7501;state=done\\x07")
"""


def test_a_flood_of_reports_gives_few_state_writes(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    write_log = tmp_path / "writes.json"
    started = time.monotonic()
    result = subprocess.run(
        launcher_argv([sys.executable, "-c", FLOOD], write_log=write_log),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=tray_env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0
    assert result.stdout.count(b"\x1b]7501;") == 10001
    writes = read_write_log(write_log)
    # The first records the command's pid, the last its end; between them, no two
    # writes are closer than the interval, so the count is bounded by the run time.
    times = [when for when, _ in writes[:-1]]
    assert all(b - a >= WRITE_INTERVAL - 1e-6 for a, b in itertools.pairwise(times))
    assert len(writes) <= 2 + elapsed / WRITE_INTERVAL
    assert len(writes) < 200
    # While the flood lasted, the file kept up with it.
    assert any(doc["state"] == "working" and doc["source"] == "program" for _, doc in writes)
    final = writes[-1][1]
    assert (final["state"], final["alive"], final["exit_code"]) == ("done", False, 0)


def test_typing_alone_is_written_rarely_but_never_lost(
    job_runner: Callable[..., Job], terminal: Terminal, tmp_path: Path, state_dir: Path
) -> None:
    write_log = tmp_path / "writes.json"
    job = job_runner(launcher_argv(["sh", "-c", "echo ready; exec cat"], write_log=write_log))
    job.expect(b"ready")
    last_typed = 0.0
    for i in range(20):
        last_typed = time.time()
        terminal.type(b"k")
        job.wait(lambda: terminal.output.count(b"k") > i, "the echo")  # noqa: B023
    typed = job.wait(
        _session_where(
            state_dir, lambda s: s.last_input_at is not None and s.last_input_at >= last_typed
        ),
        "last_input_at in the file",
    )
    assert typed.state == "working"
    terminal.type(b"\r\x04")
    assert job.exit_code() == 0
    writes = read_write_log(write_log)
    times = [when for when, _ in writes[:-1]]
    # Nothing visible changed while typing: only the keystroke time, at most every 2 s.
    assert len(times) >= 2, writes
    assert all(b - a >= INPUT_WRITE_INTERVAL - 1e-6 for a, b in itertools.pairwise(times)), writes
    final = writes[-1][1]
    assert final["last_input_at"] >= last_typed
    assert final["alive"] is False


def test_an_unusable_state_directory_still_runs_the_command(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    env = {**tray_env, "TRAY_STATE_DIR": str(blocker / "state")}
    result = run_piped(["sh", "-c", "echo ran; exit 5"], env, tmp_path)
    assert result.returncode == 5
    assert result.stdout == b"ran\n"
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("tray: ") and str(blocker / "state") in lines[0]


def test_a_missing_command_leaves_no_session(
    tray_env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    result = run_piped(["tray-no-such-command-7501"], tray_env, tmp_path)
    assert result.returncode == 127
    assert sessions(state_dir) == []
