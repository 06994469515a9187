"""A real `tray run` reads an agent's title, notifications, screen and bell through its
rules file, keeps the state they give in the session's file, and answers that prompt.

The agent is a small program whose name a rules file in the user's config directory
knows (``demo-agent``): that is also how a user adds an agent without a release. It
writes the output of each stage when it reads ``>`` (typed by the test), and logs every
read in hex, so the keys `tray answer` types can be checked.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.launcher_terminal import TIMEOUT, Job, launcher_argv, only_session, sessions
from helpers.tray_cli import tray_argv

from tray.core.session.model import Session
from tray.protocol.report import Report, encode_sequence
from tray.protocol.state import State

RULES = """
name = "Demo agent"
commands = ["demo-agent"]
checked = "1"
[[titles]]
match = '^Working'
state = "working"
[[titles]]
match = '^Ready'
state = "done"
[[titles]]
match = '^Approve\\?'
state = "blocked"
kind = "permission"
msg = "demo-agent: {title}"
[[notifications]]
body = '^Permission needed: (.*)'
state = "blocked"
kind = "permission"
msg = "{body}"
[[screen]]
match = 'Run it\\? \\[y/n\\]'
state = "blocked"
kind = "permission"
msg = "Run it?"
[answer]
checked = "1"
approve = "y"
deny = "n"
[doctor]
sees = "its title"
"""

PROGRAM = r"""
import os, sys, tty
log = open(sys.argv[1], "a", buffering=1)
stages = [bytes.fromhex(s) for s in sys.argv[2:]]
tty.setraw(0)
os.write(1, stages.pop(0))
while True:
    data = os.read(0, 1024)
    log.write(data.hex() + "\n")
    if data == b"q":
        break
    if data == b">" and stages:
        os.write(1, stages.pop(0))
"""


def title(text: str) -> bytes:
    return b"\x1b]0;" + text.encode() + b"\x07"


@pytest.fixture
def tray_env(tray_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The launcher's environment, with the demo agent's rules and program."""
    agents = tmp_path / "config" / "tray" / "agents"
    agents.mkdir(parents=True)
    (agents / "demo-agent.toml").write_text(RULES)
    (agents / "broken.toml").write_text("name = \n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "demo-agent"
    program.write_text(f"#!{sys.executable}\n{PROGRAM}")
    program.chmod(0o755)
    tray_env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    tray_env["PATH"] = f"{bin_dir}:{tray_env.get('PATH', '/usr/bin:/bin')}"
    return tray_env


def _start(job_runner: Callable[..., Job], tmp_path: Path, *stages: bytes) -> tuple[Job, Path]:
    """The demo agent, with its first stage out once the launcher reads it by its rules
    (a moment after the start, as the launcher's log says)."""
    reads = tmp_path / "reads"
    reads.touch()
    argv = ["demo-agent", str(reads), *(s.hex() for s in (b"", *stages))]
    job = job_runner(launcher_argv(argv))
    log = Path(job.terminal.environ["TRAY_STATE_DIR"]) / "launcher.log"
    job.wait(
        lambda: log.exists() and "agent demo-agent: reading" in log.read_text(),
        "the launcher to read the agent's rules",
    )
    _next(job)
    return job, reads


def _root(state_dir: Path) -> tuple[Session, str, str | None, str | None] | None:
    session = only_session(state_dir)
    if session is None or not session.records:
        return None
    root = session.records[0]
    return session, root.state, root.kind, root.msg


def _wait_state(job: Job, state_dir: Path, state: str) -> Session:
    def reached() -> Session | None:
        found = _root(state_dir)
        return found[0] if found is not None and found[1] == state else None

    return job.wait(reached, f"the session's root record to be {state}")


def _next(job: Job) -> None:
    job.terminal.type(b">")


def test_the_title_gives_the_state_and_tray_answer_types_the_rules_keys(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path, tray_env: dict[str, str]
) -> None:
    job, reads = _start(
        job_runner,
        tmp_path,
        title("Ready"),
        title("Working on it"),
        title("Approve? touch x"),
        title("Working on it"),
        title("Ready"),
    )
    found = job.wait(lambda: _root(state_dir), "the idle record")
    assert found[1:] == ("idle", None, None)  # ready before any work: not a finished turn
    assert found[0].records[0].app == "demo-agent"
    _next(job)
    _wait_state(job, state_dir, "working")
    _next(job)
    blocked = _wait_state(job, state_dir, "blocked")
    record = blocked.records[0]
    assert (record.kind, record.app, record.msg) == (
        "permission",
        "demo-agent",
        "demo-agent: Approve? touch x",
    )
    done = subprocess.run(
        [*tray_argv(), "answer", blocked.id, "approve", "--since", repr(record.since)],
        env=tray_env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    job.wait(lambda: "79" in reads.read_text().split(), "the approve key typed")
    _next(job)
    _wait_state(job, state_dir, "working")
    _next(job)
    _wait_state(job, state_dir, "done")
    job.terminal.type(b"q")
    assert job.exit_code() == 0
    # A broken user file is left out, and said in the launcher's log; the run went on.
    log = (state_dir / "launcher.log").read_text()
    assert "broken.toml" in log


def test_a_notification_a_rule_takes_is_the_state_and_no_request_for_attention(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path
) -> None:
    job, _ = _start(
        job_runner,
        tmp_path,
        title("Working"),
        b"\x1b]777;notify;Demo;Permission needed: run touch x\x1b\\"
        b"\x1b]777;notify;Demo;Build finished\x1b\\",
    )
    _wait_state(job, state_dir, "working")
    _next(job)
    session = _wait_state(job, state_dir, "blocked")
    assert session.records[0].msg == "Permission needed: run touch x"
    # The other notification, which no rule takes, stays a request for attention.
    assert [(a.source, a.body) for a in session.attention] == [("osc777", "Build finished")]
    # A key of the user's answers a prompt seen only in a notification.
    job.terminal.type(b" ")
    _wait_state(job, state_dir, "working")
    job.terminal.type(b"q")
    assert job.exit_code() == 0


def test_a_prompt_on_the_screen_lasts_until_the_users_key(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path
) -> None:
    job, _ = _start(job_runner, tmp_path, title("Working"), b"\x1b[1mRun it?\x1b[0m \x1b[2C[y/n] ")
    _wait_state(job, state_dir, "working")
    _next(job)
    session = _wait_state(job, state_dir, "blocked")
    assert (session.records[0].kind, session.records[0].msg) == ("permission", "Run it?")
    job.terminal.type(b"y")
    _wait_state(job, state_dir, "working")
    job.terminal.type(b"q")
    assert job.exit_code() == 0


def test_once_the_program_reports_for_itself_its_rules_stop(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path
) -> None:
    report = encode_sequence(Report(State.WORKING, app="demo-agent", msg="own words"))
    later = encode_sequence(Report(State.WORKING, "later"))
    job, _ = _start(job_runner, tmp_path, report, title("Approve? x") + later)
    found = job.wait(lambda: _root(state_dir), "the reported record")
    assert found[1:] == ("working", None, "own words")
    _next(job)
    # The title came between the program's own reports: the file that holds the later
    # report holds whatever the title did, and the title did nothing.
    session = job.wait(
        lambda: next((s for s in sessions(state_dir) if len(s.records) == 2), None),
        "the later report",
    )
    assert [(r.id, r.state, r.msg) for r in session.records] == [
        ("", "working", "own words"),
        ("later", "working", None),
    ]
    job.terminal.type(b"q")
    assert job.exit_code() == 0


def test_a_hooks_report_outranks_the_title_and_the_programs_own_outranks_the_hook(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path
) -> None:
    hook = encode_sequence(Report(State.BLOCKED, kind="permission", app="demo-agent", msg="hook"))
    hook = hook[:-1] + b":via=hook" + hook[-1:]
    own = encode_sequence(Report(State.WORKING, app="demo-agent", msg="own"))
    job, _ = _start(job_runner, tmp_path, title("Working"), hook + title("Ready"), own + hook)
    _wait_state(job, state_dir, "working")
    _next(job)
    # The hook said blocked; the title after it no longer counts.
    session = _wait_state(job, state_dir, "blocked")
    assert session.records[0].msg == "hook"
    _next(job)
    # The program's own report wins, and the hook's after it is dropped.
    session = _wait_state(job, state_dir, "working")
    assert session.records[0].msg == "own"
    job.terminal.type(b"q")
    assert job.exit_code() == 0


def test_where_hooks_do_not_outrank_the_rules_the_title_still_counts(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path
) -> None:
    """Gemini CLI's and Qwen Code's way: the hook gives the prompt its words, the title
    the rest of the turn, and the program's own report still outranks both."""
    rules = tmp_path / "config" / "tray" / "agents" / "demo-agent.toml"
    rules.write_text(
        RULES.replace('checked = "1"\n', 'checked = "1"\nhooks_outrank_rules = false\n', 1)
    )
    hook = encode_sequence(Report(State.BLOCKED, kind="permission", app="demo-agent", msg="hook"))
    hook = hook[:-1] + b":via=hook" + hook[-1:]
    own = encode_sequence(Report(State.WORKING, app="demo-agent", msg="own"))
    job, _ = _start(
        job_runner,
        tmp_path,
        title("Working"),
        hook + title("Approve? x"),
        title("Ready"),
        own,
    )
    _wait_state(job, state_dir, "working")
    _next(job)
    # The title says blocked too, but with fewer words: the hook's stay.
    session = _wait_state(job, state_dir, "blocked")
    assert session.records[0].msg == "hook"
    _next(job)
    _wait_state(job, state_dir, "done")  # the title after the hook still counts
    _next(job)
    session = _wait_state(job, state_dir, "working")
    assert session.records[0].msg == "own"
    job.terminal.type(b"q")
    assert job.exit_code() == 0
