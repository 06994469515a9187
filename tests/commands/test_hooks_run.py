"""The hooks ``tray hooks install`` writes really report: Copilot's hook command through
bash, the opencode plugin in node, and both agents' own hooks under the real ``tray
run``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_standins import COMMAND
from helpers.agent_terminal import PlayedTerminal
from helpers.agents import PROMPT, played
from helpers.copilot_opencode_aider import COPILOT, OPENCODE, copilot_home, opencode_home
from helpers.hook_homes import Home, drain, make_home, raw_terminal, read, rules
from helpers.model_standins import FakeChatCompletions
from helpers.tray_cli import tray_argv
from helpers.tray_home import TIMEOUT

from tray.protocol.records import Record
from tray.protocol.report import Report, parse_body
from tray.protocol.state import State
from tray.state.store import StateStore

THIS_TRAY = [sys.executable, "-m", "tray"]


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return make_home(tmp_path)


@pytest.fixture
def terminal() -> Iterator[tuple[int, str]]:
    with raw_terminal() as opened:
        yield opened


def hook_environ(home: Home, tty_name: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        **home.environ,
        "TRAY_TTY": tty_name,
    }


def reports_in(written: bytes) -> list[Report | None]:
    bodies = [part for part in written.split(b"\x07") if part]
    assert all(body.startswith(b"\x1b]7501;") for body in bodies), written
    assert all(body.endswith(b":via=hook") for body in bodies), written
    return [parse_body(body.removeprefix(b"\x1b]7501;")) for body in bodies]


# Copilot CLI: each hook is a bash command, its payload the JSON Copilot writes to stdin.

# As measured on Copilot CLI 1.0.102 (/work/tools/hooks-findings.md).
COPILOT_PAYLOADS: dict[str, dict[str, Any]] = {
    "notification:permission_prompt": {
        "sessionId": "5d0c",
        "timestamp": 1764770000000,
        "cwd": "/tmp/work",
        "message": f"Run command: {COMMAND}",
        "title": "Permission needed",
        "hook_event_name": "Notification",
        "notification_type": "permission_prompt",
    },
    "errorOccurred": {
        "sessionId": "5d0c",
        "errorContext": "model_call",
        "recoverable": True,
        "error": {"message": '{"message":"fake model failure"}', "name": "Error"},
    },
}


def run_copilot_hook(hook: dict[str, Any], payload: object, environ: dict[str, str]) -> None:
    result = subprocess.run(
        ["bash", "-c", hook["bash"]],
        input=json.dumps(payload).encode(),
        env=environ,
        capture_output=True,
        timeout=TIMEOUT,
        start_new_session=True,
        check=False,
    )
    # Copilot parses a hook's stdout: tray's prints nothing there, and never fails.
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_the_installed_copilot_hooks_report_with_the_shipped_rules(
    home: Home, terminal: tuple[int, str]
) -> None:
    master, name = terminal
    (home.config / "tray" / "agents" / "copilot.toml").unlink()  # the shipped rules, then
    assert home.hooks("install", "copilot", argv=THIS_TRAY) == 0
    table = read(home.home / ".copilot" / "hooks" / "tray.json")["hooks"]
    assert "permissionRequest" not in table
    assert "preToolUse" not in table
    assert not any(":" in key for key in table)  # Copilot would ignore such a key
    (asked,) = [hook for hook in table["notification"] if hook["matcher"] == "permission_prompt"]
    (failed,) = table["errorOccurred"]
    environ = hook_environ(home, name)
    run_copilot_hook(asked, COPILOT_PAYLOADS["notification:permission_prompt"], environ)
    run_copilot_hook(failed, COPILOT_PAYLOADS["errorOccurred"], environ)
    blocked, error = reports_in(drain(master))
    assert blocked == Report(
        State.BLOCKED, kind="permission", app="copilot", msg=f"Run command: {COMMAND}"
    )
    assert error is not None
    assert (error.state, error.app) == ("error", "copilot")
    assert error.msg is not None
    assert "fake model failure" in error.msg


# opencode: the plugin, run by node as opencode's runtime would.

SESSION, SUBAGENT = "ses_main", "ses_child"


def event(kind: str, session: str = SESSION, **properties: Any) -> dict[str, Any]:
    return {"id": f"evt_{kind}", "type": kind, "properties": {"sessionID": session, **properties}}


def busy(session: str = SESSION) -> dict[str, Any]:
    return event("session.status", session, status={"type": "busy"})


def idle(session: str = SESSION) -> list[dict[str, Any]]:
    """The end of a turn as opencode 1.18.33 sends it."""
    return [
        event("session.status", session, status={"type": "idle"}),
        event("session.idle", session),
    ]


def asked(command: str, session: str = SESSION) -> dict[str, Any]:
    return event(
        "permission.asked",
        session,
        id="per_1",
        permission="bash",
        patterns=[command],
        metadata={"command": command},
        always=[command.split(maxsplit=1)[0] + " *"],
        tool={"messageID": "msg_1", "callID": "call_1"},
    )


ERROR = event(
    "session.error",
    error={"name": "APIError", "data": {"message": "fake model failure", "statusCode": 400}},
)
OPENCODE_RULES = rules(
    "Opencode",
    ("session.status:busy", "working"),
    (
        "permission.asked",
        "blocked",
        "opencode asks: {properties.permission} {properties.metadata.command}",
    ),
    ("permission.replied", "working"),
    ("session.idle", "done"),
    ("session.error", "error", "opencode: {properties.error.data.message}"),
)


def run_plugin(home: Home, tty_name: str, events: list[dict[str, Any]]) -> None:
    """tray's installed plugin, given ``events`` one after the other, as opencode does."""
    node = shutil.which("node")
    assert node is not None, "node runs the plugin as opencode's runtime would"
    plugin = home.config / "opencode" / "plugins" / "tray.js"
    driver = home.root / "driver.mjs"
    driver.write_text(
        f"import {{ TrayHooks }} from {json.dumps(plugin.as_uri())};\n"
        "const hooks = await TrayHooks({});\n"
        f"for (const event of {json.dumps(events)}) await hooks.event({{ event }});\n"
    )
    result = subprocess.run(
        [node, str(driver)],
        env=hook_environ(home, tty_name),
        capture_output=True,
        timeout=TIMEOUT,
        start_new_session=True,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_the_opencode_plugin_reports_the_rules_events_in_order(
    home: Home, terminal: tuple[int, str]
) -> None:
    master, name = terminal
    home.rules("opencode", OPENCODE_RULES)
    assert home.hooks("install", "opencode", argv=THIS_TRAY) == 0
    subagent = {"id": SUBAGENT, "parentID": SESSION, "title": "a subagent"}
    events = [
        event("session.created", info={"id": SESSION, "title": "the user's"}),
        busy(),
        event("session.status", status={"type": "retry", "attempt": 1, "message": "x"}),
        asked(COMMAND),
        event("permission.replied", requestID="per_1", reply="once"),
        event("session.created", SUBAGENT, info=subagent),
        busy(SUBAGENT),
        asked("ls", SUBAGENT),  # a dialog the user sees: passed on
        *idle(SUBAGENT),  # not the end of the user's turn
        ERROR,
        *idle(),
        event("session.idle"),  # it comes twice after an error
        busy(),  # the user's next prompt
        *idle(),
    ]
    run_plugin(home, name, events)
    assert reports_in(drain(master)) == [
        Report(State.WORKING, app="opencode"),
        Report(
            State.BLOCKED, kind="permission", app="opencode", msg=f"opencode asks: bash {COMMAND}"
        ),
        Report(State.WORKING, app="opencode"),
        Report(State.BLOCKED, kind="permission", app="opencode", msg="opencode asks: bash ls"),
        Report(State.ERROR, app="opencode", msg="opencode: fake model failure"),
        Report(State.WORKING, app="opencode"),
        Report(State.DONE, app="opencode"),
    ]


def test_the_plugin_passes_the_whole_event(home: Home, terminal: tuple[int, str]) -> None:
    master, name = terminal
    home.rules(
        "opencode",
        rules("Opencode", ("session.idle", "done", "{type} {id} {properties.sessionID}")),
    )
    assert home.hooks("install", "opencode", argv=THIS_TRAY) == 0
    # Only the names the rules give: a plain session.status is not session.status:busy.
    run_plugin(home, name, [busy(), *idle()])
    assert reports_in(drain(master)) == [
        Report(State.DONE, app="opencode", msg=f"session.idle evt_session.idle {SESSION}")
    ]


# Live: the real agents under the real `tray run`, after `tray hooks install AGENT`.


def _blocked_record(state_dir: Path) -> Record | None:
    sessions, _ = StateStore(state_dir).read_all(time.time())
    for session in sessions:
        for record in session.records:
            if record.state == "blocked" and record.kind == "permission":
                return record
    return None


def _root_state(state_dir: Path) -> str | None:
    sessions, _ = StateStore(state_dir).read_all(time.time())
    return sessions[0].state if len(sessions) == 1 else None


def _install(app: str, environ: dict[str, str]) -> str:
    """`tray hooks install APP` as the user runs it, with the shipped rules: its output."""
    installed = subprocess.run(
        tray_argv("hooks", "install", app),
        env=environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (installed.returncode, installed.stderr) == (0, "")
    return installed.stdout


# Each agent's home and the command line that has it ask to run COMMAND.
LIVE: dict[str, tuple[Callable[[Path, str], tuple[dict[str, str], Path]], list[str]]] = {
    "copilot": (copilot_home, [str(COPILOT), "--interactive", PROMPT]),
    "opencode": (opencode_home, [str(OPENCODE), "--prompt", PROMPT]),
}


@contextmanager
def _hook_reported(
    tmp_path: Path, app: str, added: str, says: Callable[[str], bool]
) -> Iterator[tuple[PlayedTerminal, Path, Path]]:
    """APP under `tray run` after `tray hooks install APP` (which must say it ``added``
    that event), once a permission prompt whose message ``says`` likes is in the state
    file and nothing has run: the terminal, the work directory and the state directory."""
    state_dir = tmp_path / "state"
    start_home, agent = LIVE[app]
    with FakeChatCompletions() as fake:
        environ, work = start_home(tmp_path, fake.url)
        said = _install(app, environ)
        assert f"added   {added}" in said
        terminal, _ = played(agent, environ, work, state_dir)
        try:
            terminal.wait_for(
                f"{app}'s hook report in the state file",
                lambda: (
                    (record := _blocked_record(state_dir)) is not None
                    and record.msg is not None
                    and says(record.msg)
                ),
                timeout=120,
            )
            record = _blocked_record(state_dir)
            assert record is not None
            assert record.app == app
            assert not (work / "approved-file").exists()
            yield terminal, work, state_dir
        finally:
            terminal.close()


@pytest.mark.agents
def test_copilot_s_permission_hook_reaches_the_state_file(tmp_path: Path) -> None:
    # The screen rule says "blocked" too, with a message of its own; the hook's message
    # is the command, and outranks it.
    says = lambda msg: msg == f"Run command: {COMMAND}"  # noqa: E731
    with _hook_reported(tmp_path, "copilot", "notification:permission_prompt", says):
        pass


@pytest.mark.agents
def test_opencode_s_plugin_reaches_the_state_file(tmp_path: Path) -> None:
    says = lambda msg: COMMAND in msg  # noqa: E731
    reported = _hook_reported(tmp_path, "opencode", "permission.asked", says)
    with reported as (terminal, work, state_dir):
        # Enter takes "Allow once" (opencode.toml); typed once the dialog is drawn.
        terminal.wait_for("the dialog", lambda: b"Permission required" in bytes(terminal.output))
        terminal.write(b"\r")
        terminal.wait_for("approved-file", (work / "approved-file").exists)
        # The plugin's session.idle: the end of the turn, which the screen cannot tell.
        terminal.wait_for("the turn's end", lambda: _root_state(state_dir) == "done", 60)
