"""``tray status``: the contract's JSON, the table, liveness, corrupt files and aging out."""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
import unicodedata
from collections.abc import Callable
from typing import Any

from helpers.tray_home import Tray

from tray.core.session.model import Session
from tray.protocol.records import Record

SESSION_KEYS = [
    "id", "name", "command", "cwd", "pid", "child_pid", "started_at", "updated_at",
    "alive", "exit_code", "state", "source", "records",
    # Additive fields, after the contract's.
    "focus", "focus_since", "state_since", "terminal_progress", "attention",
]  # fmt: skip
RECORD_KEYS = [
    "id", "state", "kind", "progress", "app", "title", "msg", "updated_at", "since", "answers",
]  # fmt: skip
ADDITIVE_DEFAULTS: dict[str, object] = {
    "focus": "unknown",
    "focus_since": None,
    "state_since": None,
    "terminal_progress": None,
    "attention": [],
}

MakeSession = Callable[..., Session]
MakeRecord = Callable[..., Record]


def test_empty_state_dir(tray_home: Tray) -> None:
    assert tray_home.status_json() == {"version": 1, "sessions": []}
    result = tray_home.run("status")
    assert (result.returncode, result.stdout, result.stderr) == (0, "no sessions\n", "")
    assert not tray_home.state_dir.exists()  # reading never creates it


def test_json_is_the_contract_shape(
    tray_home: Tray, session: MakeSession, record: MakeRecord
) -> None:
    now = time.time()
    tray_home.write_session(
        session(
            "s-blocked",
            now - 12.5,
            name="claude",
            command=("claude", "--permission-mode", "default"),
            cwd="/home/me/project",
            child_pid=4243,
            updated_at=now - 1.25,
            source="program",
            records=(
                record(
                    "",
                    "blocked",
                    now - 1.25,
                    kind="permission",
                    app="claude-code",
                    msg="approve Bash: touch notes.txt",
                ),
                record("task/1", "working", now - 3.0, progress=40, title="tests"),
            ),
        )
    )
    document = tray_home.status_json()
    assert list(document) == ["version", "sessions"]
    assert document["version"] == 1
    (listed,) = document["sessions"]
    assert list(listed) == SESSION_KEYS
    assert listed == {
        "id": "s-blocked",
        "name": "claude",
        "command": ["claude", "--permission-mode", "default"],
        "cwd": "/home/me/project",
        "pid": os.getpid(),
        "child_pid": 4243,
        "started_at": now - 12.5,
        "updated_at": now - 1.25,
        "alive": True,
        "exit_code": None,
        "state": "blocked",
        "source": "program",
        "records": [
            {
                "id": "",
                "state": "blocked",
                "kind": "permission",
                "progress": None,
                "app": "claude-code",
                "title": None,
                "msg": "approve Bash: touch notes.txt",
                "updated_at": now - 1.25,
                "since": None,
                "answers": [],
            },
            {
                "id": "task/1",
                "state": "working",
                "kind": None,
                "progress": 40,
                "app": None,
                "title": "tests",
                "msg": None,
                "updated_at": now - 3.0,
                "since": None,
                "answers": [],
            },
        ],
        **ADDITIVE_DEFAULTS,
    }
    for item in listed["records"]:
        assert list(item) == RECORD_KEYS
    assert isinstance(listed["started_at"], float)


def test_json_types_for_an_ended_launcher_session(tray_home: Tray, session: MakeSession) -> None:
    now = time.time()
    tray_home.write_session(session("s1", now - 5, alive=False, exit_code=3, updated_at=now))
    (listed,) = tray_home.status_json()["sessions"]
    assert (listed["alive"], listed["exit_code"], listed["state"], listed["source"]) == (
        False,
        3,
        "error",
        "launcher",
    )
    assert listed["child_pid"] is None
    assert listed["records"] == []


def test_sessions_oldest_first_and_records_by_id(
    tray_home: Tray, session: MakeSession, record: MakeRecord
) -> None:
    now = time.time()
    for session_id, age in (("a", 10), ("b", 30), ("c", 20)):
        tray_home.write_session(session(session_id, now - age))
    # Written by hand, out of order, as another tool might.
    path = tray_home.write_session(session("d", now - 40))
    document = json.loads(path.read_text())
    document["source"] = "program"
    document["records"] = [
        {"id": i, "state": "done", "kind": None, "progress": None, "app": None,
         "title": None, "msg": None, "updated_at": now}
        for i in ("z", "", "b/c", "b")
    ]  # fmt: skip
    path.write_text(json.dumps(document))
    listed = tray_home.status_json()["sessions"]
    assert [s["id"] for s in listed] == ["d", "b", "c", "a"]
    assert [r["id"] for r in listed[0]["records"]] == ["", "b", "b/c", "z"]


def test_dead_launcher_is_not_alive_and_never_working_or_blocked(
    tray_home: Tray, session: MakeSession, record: MakeRecord, dead_launcher: tuple[int, str]
) -> None:
    pid, token = dead_launcher
    now = time.time()
    tray_home.write_session(
        session(
            "crashed",
            now - 60,
            pid=pid,
            pid_start=token,
            source="program",
            records=(record("", "blocked", now, kind="question"), record("x", "working", now)),
        )
    )
    tray_home.write_session(session("plain", now - 30, pid=pid, pid_start=token))
    crashed, plain = tray_home.status_json()["sessions"]
    assert (crashed["alive"], crashed["records"]) == (False, [])
    assert crashed["state"] not in ("working", "blocked")
    assert (plain["alive"], plain["state"]) == (False, "error")


def test_reused_pid_is_dead(tray_home: Tray, session: MakeSession, record: MakeRecord) -> None:
    now = time.time()
    # Our own, live pid, but a start time that is not ours: another process had it.
    tray_home.write_session(
        session("reused", now, pid_start="1", records=(record("", "working", now),))
    )
    tray_home.write_session(session("mine", now + 1))
    reused, mine = tray_home.status_json()["sessions"]
    assert (reused["alive"], reused["state"]) == (False, "error")
    assert (mine["alive"], mine["state"]) == (True, "working")


def test_corrupt_files_warn_and_json_stays_valid(tray_home: Tray, session: MakeSession) -> None:
    tray_home.write_session(session("good", time.time()))
    (tray_home.state_dir / "half.json").write_text('{"version": 1, "id": "half", "na')
    (tray_home.state_dir / "future.json").write_text('{"version": 7}')
    result = tray_home.run("status", "--json")
    assert result.returncode == 0
    assert [s["id"] for s in json.loads(result.stdout)["sessions"]] == ["good"]
    warnings = result.stderr.splitlines()
    assert len(warnings) == 2
    assert all(line.startswith("tray status: skipping ") for line in warnings)
    assert any("half.json" in line for line in warnings)
    assert any("future.json" in line and "version" in line for line in warnings)
    table = tray_home.run("status")
    assert table.returncode == 0
    assert "good" in table.stdout
    assert len(table.stderr.splitlines()) == 2


def test_table_shows_state_kind_age_and_message(
    tray_home: Tray, session: MakeSession, record: MakeRecord
) -> None:
    now = time.time()
    tray_home.write_session(
        session(
            "s-blocked",
            now - 3600,
            name="claude",
            source="program",
            records=(
                record("", "working", now - 30, msg="thinking"),
                record(
                    "sub",
                    "blocked",
                    now - 190,
                    kind="permission",
                    progress=75,
                    msg="approve Bash: ls",
                ),
            ),
        )
    )
    tray_home.write_session(session("s-run", now - 7200 - 5, name="build"))
    tray_home.write_session(
        session("s-done", now - 10, name="tests", alive=False, exit_code=0, updated_at=now - 600)
    )
    result = tray_home.run("status", extra_env={"COLUMNS": "200"})
    assert result.returncode == 0
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["ID", "NAME", "STATE", "AGE", "MSG"]
    columns = [header.index(title) for title in ("ID", "NAME", "STATE", "AGE", "MSG")]

    def cells(line: str) -> list[str]:
        bounds = [*columns, len(line)]
        return [line[a:b].strip() for a, b in itertools.pairwise(bounds)]

    assert [cells(row) for row in rows] == [
        ["s-run", "build", "working", "2h", ""],
        ["s-blocked", "claude", "blocked (permission, 75%)", "3m", "approve Bash: ls"],
        ["s-done", "tests", "done", "10m", "exited with status 0"],
    ]


def test_table_is_cut_to_the_terminal_width(
    tray_home: Tray, session: MakeSession, record: MakeRecord
) -> None:
    now = time.time()
    message = "安全な作業を続けています " * 20
    tray_home.write_session(
        session("s1", now, source="program", records=(record("", "working", now, msg=message),))
    )
    result = tray_home.run("status", extra_env={"COLUMNS": "40"})
    lines = result.stdout.splitlines()
    widths = [
        sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line) for line in lines
    ]
    assert max(widths) <= 40
    assert lines[1].endswith("…")
    whole = tray_home.run("status")  # a pipe and no COLUMNS: whole lines
    assert message.strip() in whole.stdout


def test_table_never_prints_terminal_controls(
    tray_home: Tray, session: MakeSession, record: MakeRecord
) -> None:
    now = time.time()
    tray_home.write_session(
        session(
            "s1",
            now,
            name="evil\x1b]0;owned\x07\u202ename",
            source="program",
            records=(record("", "working", now, msg="fine\x9b31m"),),
        )
    )
    result = tray_home.run("status")
    assert "\x1b" not in result.stdout
    assert "\x07" not in result.stdout
    assert "\x9b" not in result.stdout
    assert "\u202e" not in result.stdout
    assert "evil]0;ownedname" in result.stdout


def test_aged_out_sessions_are_hidden_and_deleted(
    tray_home: Tray, session: MakeSession, dead_launcher: tuple[int, str]
) -> None:
    pid, token = dead_launcher
    tray_home.write_config('[sessions]\nkeep_ended = "1h"\n')
    now = time.time()
    old = tray_home.write_session(
        session("old", now - 9000, alive=False, exit_code=0, updated_at=now - 7200)
    )
    dead = tray_home.write_session(
        session("old-dead", now - 9000, pid=pid, pid_start=token, updated_at=now - 7200)
    )
    recent = tray_home.write_session(
        session("recent", now - 9000, alive=False, exit_code=0, updated_at=now - 1800)
    )
    running = tray_home.write_session(session("running", now - 9000, updated_at=now - 7200))
    assert [s["id"] for s in tray_home.status_json()["sessions"]] == ["recent", "running"]
    assert not old.exists()
    assert not dead.exists()
    assert recent.exists()
    assert running.exists()


def test_default_keep_time_is_a_day(tray_home: Tray, session: MakeSession) -> None:
    now = time.time()
    tray_home.write_session(session("day-old", now, alive=False, updated_at=now - 86400 - 60))
    tray_home.write_session(session("fresh", now, alive=False, updated_at=now - 86400 + 600))
    assert [s["id"] for s in tray_home.status_json()["sessions"]] == ["fresh"]


def test_config_error_names_the_key(tray_home: Tray) -> None:
    tray_home.write_config('[notify]\nsettle = "x"\n')
    result = tray_home.run("status", "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "notify.settle" in line
    assert 'got "x"' in line


def test_unusable_state_dir_is_one_line(tray_home: Tray) -> None:
    tray_home.state_dir.write_text("a file, not a directory")
    for args in (("status",), ("status", "--json")):
        result = tray_home.run(*args)
        assert result.returncode == 1
        (line,) = result.stderr.splitlines()
        assert line == f"tray status: cannot read {tray_home.state_dir}: Not a directory"
    assert json.loads(result.stdout) == {"version": 1, "sessions": []}


def test_closed_pipe_is_quiet(tray_home: Tray, session: MakeSession) -> None:
    now = time.time()
    for n in range(200):
        tray_home.write_session(session(f"s{n:03}", now + n))
    result = tray_home.run_argv(
        ["sh", "-c", f'"{sys.executable}" -m tray status --json | head -c 10 >/dev/null'],
    )
    assert result.returncode == 0
    assert result.stderr == ""


def _state_of(document: dict[str, Any], session_id: str) -> object:
    return next(s["state"] for s in document["sessions"] if s["id"] == session_id)


def test_program_source_without_records_has_no_state(tray_home: Tray, session: MakeSession) -> None:
    tray_home.write_session(session("quiet", time.time(), source="program"))
    assert _state_of(tray_home.status_json(), "quiet") is None
    table = tray_home.run("status", extra_env={"COLUMNS": "100"})
    assert table.stdout.splitlines()[1].split()[:3] == ["quiet", "quiet", "-"]


def _answers(document: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    return {
        (entry["id"], item["id"]): item["answers"]
        for entry in document["sessions"]
        for item in entry["records"]
    }


def test_answers_follow_the_contract_and_the_answer_table(
    tray_home: Tray, session: MakeSession, record: MakeRecord, dead_launcher: tuple[int, str]
) -> None:
    now = time.time()

    def prompt(record_id: str, app: str | None, **fields: Any) -> Record:
        values = {"kind": "permission", "app": app, "since": now - 5, **fields}
        return record(record_id, "blocked", now - 5, **values)

    tray_home.write_session(
        session(
            "s-live",
            now - 20,
            source="program",
            records=(
                prompt("", "claude-code"),
                prompt("codex", "codex"),
                prompt("pi", "pi"),
                prompt("question", "claude-code", kind="question"),
                prompt("unnamed", "claude-code", since=None),
                record("work", "working", now - 5, app="claude-code", since=now - 5),
            ),
        )
    )
    dead_pid, dead_token = dead_launcher
    tray_home.write_session(
        session(
            "s-dead",
            now - 10,
            pid=dead_pid,
            pid_start=dead_token,
            source="program",
            records=(prompt("", "claude-code"),),
        )
    )
    both = ["approve", "deny"]
    answers = _answers(tray_home.status_json())
    # An ended session is answered by no one, whatever its file still says.
    assert {key: value for key, value in answers.items() if key[0] == "s-dead"} in (
        {},
        {("s-dead", ""): []},
    )
    assert {key: value for key, value in answers.items() if key[0] == "s-live"} == {
        ("s-live", ""): both,
        ("s-live", "codex"): both,
        ("s-live", "pi"): [],  # no keys for it
        ("s-live", "question"): [],  # not a permission prompt
        ("s-live", "unnamed"): [],  # a prompt without a since cannot be named
        ("s-live", "work"): [],
    }

    tray_home.write_config('[answer.apps.pi]\napprove = "y"\ndeny = "n"\n')
    assert _answers(tray_home.status_json())[("s-live", "pi")] == both

    tray_home.write_config("[answer]\nenabled = false\n")
    assert set(map(tuple, _answers(tray_home.status_json()).values())) == {()}
