"""Answering from the phone (``[away] answer``) against a real `tray app`, real launchers
under `tray run`, real Claude Code, dunst, and FakeNtfy (a loopback ntfy) in the
middle. Nobody touches the Xvfb, so after 2 s the app sees the user away (X11 idle).

The test plays the phone: it reads what the app published to the user's topic, and
taps a button by performing its ntfy ``http`` action exactly as the action states (its
method, URL, headers and body) with urllib; the reply lands on the reply topic, which
the app follows. What each test checks is in its name; every test also checks that
neither the app's output (stdout and stderr), app.log, launcher.log nor a state file
holds the topic, the reply topic, the access token or any token of a button.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from helpers.agent_standins import FakeAnthropic
from helpers.agents import start_claude
from helpers.desktop_apps import TIMEOUT, RunningApp, start_app_process
from helpers.desktop_services import BusMonitor, Dunst, stop_process
from helpers.ntfy_standin import FakeNtfy
from helpers.phone import (
    APP_ARGV,
    PromptProgram,
    answer_config,
    button,
    flip_one_byte,
    new_topic,
    no_secrets,
    prompts,
    tap,
    token_fields,
    tokens,
    told,
    wait_prompt,
    wait_told,
)
from helpers.phone_flood import Flood
from helpers.sessions import blocked, live_session
from helpers.waiting import wait_for

from app.test_app_answer_agents import AGENT_TIMEOUT, Pumped, claude_session, state_of
from tray.base.safe_text import clean_text
from tray.core.answers.gate import CHANGED, TYPED
from tray.core.answers.phone_tokens import Grant, reply_topic, sign
from tray.core.session.labels import session_label
from tray.state.phone_key import KEY_NAME
from tray.state.store import StateStore

HOST = clean_text(socket.gethostname())
ACCESS_TOKEN = "tk_ph0ne0test0access0token0x9"  # noqa: S105 - made up, hunted for in the output
PROMPT = "approve Bash: touch x"


@dataclass
class Phone:
    """The app, its ntfy server and the user's topic, as one test has them."""

    app: RunningApp
    ntfy: FakeNtfy
    topic: str
    output: Path
    secrets: list[str]

    @property
    def replies(self) -> str:
        return reply_topic(self.topic)

    def log_lines(self, text: str) -> list[str]:
        return [line for line in self.app.log.splitlines() if text in line]

    def hidden(self) -> list[str]:
        """Every secret of the test: the topics, the access token, each button's token."""
        return [self.topic, self.replies, *self.secrets, *tokens(self.ntfy, self.topic)]


@contextmanager
def phone_app(
    desktop_env: dict[str, str],
    tmp_path: Path,
    ntfy: FakeNtfy,
    *,
    token: str | None = None,
    settle: float = 0.2,
) -> Iterator[Phone]:
    """A real `tray app` answering from ``ntfy`` (whose URL is set, listening or not);
    yields once the app sees the user away. Afterwards: no traceback and no secret."""
    topic = new_topic()
    url = f"{ntfy.url}/{topic}"  # set once started, and kept while stopped
    # No logind: the X11 idle time alone says whether the user is away.
    env = {**desktop_env, "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus"}
    output = tmp_path / "app.output"  # its stdout and stderr
    config = answer_config(url, token, settle)
    app = start_app_process(env, tmp_path, config, APP_ARGV, stderr=output)
    phone = Phone(app, ntfy, topic, output, [token] if token else [])
    try:
        wait_for(lambda: "away (since" in app.log, TIMEOUT, what="the app to see us away")
        yield phone
    finally:
        stop_process(app.proc)
    for text in (app.log, output.read_text(errors="replace")):
        assert "Traceback" not in text, text
    no_secrets(app, output, phone.hidden())


@pytest.fixture
def ntfy() -> Iterator[FakeNtfy]:
    with FakeNtfy() as fake:
        yield fake


@pytest.fixture
def program() -> Iterator[list[PromptProgram]]:
    started: list[PromptProgram] = []
    yield started
    for run in started:
        run.close()


def check_buttons(phone: Phone, message: dict[str, object], name: str, msg: str) -> None:
    """The ping names the session, with Approve and Deny: each a POST of a token to a
    topic on the same server that is not the user's topic."""
    assert message["title"] == f"{HOST} · {name} needs approval"
    assert message["message"] == msg
    actions = message["actions"]
    assert isinstance(actions, list)
    assert [a["label"] for a in actions] == ["Approve", "Deny"]
    for action in actions:
        assert (action["action"], action["method"], action["clear"]) == ("http", "POST", True)
        url = urlsplit(action["url"])
        assert f"{url.scheme}://{url.netloc}" == phone.ntfy.url
        assert url.path.strip("/") not in ("", phone.topic)
        assert url.path == f"/{phone.replies}"
        assert str(action["body"]).startswith("t1.")
        if phone.ntfy.token:
            assert action["headers"] == {"Authorization": f"Bearer {phone.ntfy.token}"}
        else:
            assert "headers" not in action


# 1. End to end, with real Claude Code.


def claude_under_tray(phone: Phone, tmp_path: Path, model_url: str) -> tuple[Pumped, Path]:
    (tmp_path / "agent").mkdir()
    terminal, work = start_claude(tmp_path / "agent", model_url, phone.app.state_dir)
    return Pumped(terminal), work


def claudes_prompt_on_the_phone(phone: Phone, dunst: Dunst) -> tuple[dict[str, object], str]:
    """The prompt, published with its buttons and shown by dunst; the session's name."""
    message = wait_prompt(phone.ntfy, phone.topic, 1, AGENT_TIMEOUT)
    session = claude_session(phone.app.state_dir)
    assert session is not None and state_of(phone.app.state_dir) == "blocked"
    name = session_label(session)
    check_buttons(phone, message, name, str(message["message"]))
    assert "touch approved-file" in str(message["message"])
    wait_for(lambda: dunst.count() == 1, TIMEOUT, what="dunst to show the prompt")
    return message, name


def withdrawn(dunst: Dunst, monitor: BusMonitor) -> bool:
    return dunst.count() == 0 and "member=CloseNotification" in monitor.text()


@pytest.mark.agents
def test_approve_on_the_phone_runs_claudes_tool_and_withdraws_the_notification(
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
) -> None:
    dunst.close_all()
    with (
        FakeNtfy(token=ACCESS_TOKEN) as ntfy,
        phone_app(desktop_env, tmp_path, ntfy, token=ACCESS_TOKEN, settle=0.5) as phone,
        FakeAnthropic(1) as fake,
    ):
        pumped, work = claude_under_tray(phone, tmp_path, fake.url)
        try:
            message, name = claudes_prompt_on_the_phone(phone, dunst)
            assert not (work / "approved-file").exists()
            assert tap(button(message, "Approve")) == 200
            wait_for((work / "approved-file").exists, AGENT_TIMEOUT, what="approved-file")
            wait_for(lambda: withdrawn(dunst, bus_monitor), TIMEOUT, what="the withdrawal")
            wait_told(ntfy, phone.topic, f"{name}: approved")
            wait_for(
                lambda: state_of(phone.app.state_dir) == "done",
                AGENT_TIMEOUT,
                what="the turn's end",
            )
            session = claude_session(phone.app.state_dir)
            assert session is not None and session.answered is not None
            assert session.answered.answer == "approve"
            assert told(ntfy, phone.topic) == [f"{name}: approved"]
            assert len(prompts(ntfy, phone.topic)) == 1
        finally:
            pumped.stop()


@pytest.mark.agents
def test_deny_on_the_phone_refuses_claudes_tool_and_claude_waits_for_the_user(  # noqa: PLR0917 - fixtures
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
    ntfy: FakeNtfy,
) -> None:
    dunst.close_all()
    with (
        phone_app(desktop_env, tmp_path, ntfy, settle=0.5) as phone,
        FakeAnthropic(1) as fake,
    ):
        pumped, work = claude_under_tray(phone, tmp_path, fake.url)
        try:
            message, name = claudes_prompt_on_the_phone(phone, dunst)
            assert tap(button(message, "Deny")) == 200
            wait_told(ntfy, phone.topic, f"{name}: denied", timeout=AGENT_TIMEOUT)
            wait_for(lambda: withdrawn(dunst, bus_monitor), TIMEOUT, what="the withdrawal")
            wait_for(
                lambda: "should Claude do" in pumped.terminal.screen_text(),
                AGENT_TIMEOUT,
                what="Claude to ask what to do instead",
            )
            session = claude_session(phone.app.state_dir)
            assert session is not None and session.answered is not None
            assert session.answered.answer == "deny"
            assert state_of(phone.app.state_dir) != "blocked"
            assert not (work / "approved-file").exists()
            # A second tap of either button answers nothing more.
            assert tap(button(message, "Approve")) == 200
            wait_for(
                lambda: phone.log_lines("that prompt was answered already"),
                TIMEOUT,
                what="the replayed tap refused",
            )
            assert not (work / "approved-file").exists()
            assert told(ntfy, phone.topic) == [f"{name}: denied"]
        finally:
            pumped.stop()


# 2. The guard, with a small program under a real `tray run`.


def start_program(
    phone: Phone, programs: list[PromptProgram], tmp_path: Path, messages: list[str]
) -> PromptProgram:
    programs.append(PromptProgram(phone.app, "api", messages, tmp_path))
    return programs[-1]


def refused(phone: Phone, why: str, count: int = 1) -> None:
    """Wait for the ``count``-th log line saying a reply typed nothing, and why."""
    line = f"phone: a reply typed nothing ({why})"
    wait_for(lambda: len(phone.log_lines(line)) >= count, TIMEOUT, what=f"the log: {why}")
    assert len(phone.log_lines(line)) == count


def test_forged_expired_replayed_and_stale_replies_type_nothing(  # noqa: PLR0917 - fixtures
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    ntfy: FakeNtfy,
    program: list[PromptProgram],
) -> None:
    dunst.close_all()
    messages = [PROMPT, "approve Bash: touch y", "approve Bash: touch z"]
    forged: list[str] = []
    with phone_app(desktop_env, tmp_path, ntfy) as phone:
        run = start_program(phone, program, tmp_path, messages)
        session, since = run.wait_prompt()
        first = wait_prompt(ntfy, phone.topic, 1)
        check_buttons(phone, first, "api", PROMPT)
        approve = button(first, "Approve")
        token = str(approve["body"])
        fields = token_fields(token)
        assert fields["h"] == HOST and fields["s"] == session.id and fields["t"] == since
        assert fields["a"] == "approve"

        # One byte changed, in the payload and in the signature.
        for where in (10, len(token) - 5):
            forged.append(flip_one_byte(token, where))
            assert tap(approve, forged[-1]) == 200
        refused(phone, "bad signature", 2)
        # Signed with the app's own key, for this very prompt, but expired a minute ago.
        key = (phone.app.state_dir / KEY_NAME).read_bytes()
        grant = Grant(HOST, session.id, "", since, "approve", time.time() - 60)
        forged.append(sign(key, grant))
        assert tap(approve, forged[-1]) == 200
        refused(phone, "expired")
        assert run.reads() == []

        # The real tap types once; the same tap again, or the other button, nothing.
        assert tap(approve) == 200
        wait_told(ntfy, phone.topic, "api: approved")
        wait_for(lambda: run.reads() == ["31"], TIMEOUT, what="the program to read the keys")
        assert tap(approve) == 200
        assert tap(button(first, "Deny")) == 200
        refused(phone, "that prompt was answered already", 2)

        # A new prompt; then another: the middle one's Approve is for a prompt gone.
        since = run.reprompt(since)
        second = wait_prompt(ntfy, phone.topic, 2)
        check_buttons(phone, second, "api", messages[1])
        run.reprompt(since)
        wait_prompt(ntfy, phone.topic, 3)
        assert tap(button(second, "Approve")) == 200
        changed = f"api: {CHANGED}; not answered"
        wait_told(ntfy, phone.topic, changed)
        assert len(phone.log_lines(changed)) == 1
        assert run.reads() == ["31"]
        assert told(ntfy, phone.topic) == ["api: approved", changed]
    phone.secrets += forged
    no_secrets(phone.app, phone.output, phone.hidden())


def test_a_key_typed_into_the_prompt_wins_over_the_phone(  # noqa: PLR0917 - fixtures
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    ntfy: FakeNtfy,
    program: list[PromptProgram],
) -> None:
    dunst.close_all()
    with phone_app(desktop_env, tmp_path, ntfy) as phone:
        run = start_program(phone, program, tmp_path, [PROMPT])
        run.wait_prompt()
        message = wait_prompt(ntfy, phone.topic, 1)
        run.type(b"x")
        wait_for(run.reads, TIMEOUT, what="the user's key to reach the program")
        assert tap(button(message, "Approve")) == 200
        line = f"api: {TYPED}; not answered"
        wait_told(ntfy, phone.topic, line)
        assert len(phone.log_lines(line)) == 1
        assert run.reads() == ["78"]
        assert told(ntfy, phone.topic) == [line]


def test_a_flood_of_junk_replies_neither_stalls_the_app_nor_types(  # noqa: PLR0917 - fixtures
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
    ntfy: FakeNtfy,
    program: list[PromptProgram],
) -> None:
    dunst.close_all()
    with phone_app(desktop_env, tmp_path, ntfy) as phone:
        run = start_program(phone, program, tmp_path, [PROMPT])
        run.wait_prompt()
        message = wait_prompt(ntfy, phone.topic, 1)
        bus_monitor.wait_for_notify(1, TIMEOUT)
        token = str(button(message, "Approve")["body"])
        flood = Flood(ntfy, phone.replies, token, least=500, seed=7501).start()
        try:
            refusals = "phone: a reply typed nothing"
            wait_for(lambda: len(phone.log_lines(refusals)) >= 100, TIMEOUT, what="the flood")
            # In the thick of it, a local prompt pings as soon as ever.
            local_prompt_pings(phone, bus_monitor, "local", 2)
            assert flood.running()
        finally:
            flood.stop()
        assert flood.sent >= 500
        wait_for(
            lambda: len(phone.log_lines(refusals)) == flood.taken,
            60.0,
            what="every junk reply turned down",
        )
        assert run.reads() == []
        # Still answering: the real tap types, once.
        assert tap(button(message, "Approve")) == 200
        wait_told(ntfy, phone.topic, "api: approved")
        wait_for(lambda: run.reads() == ["31"], TIMEOUT, what="the program to read the keys")
        assert told(ntfy, phone.topic) == ["api: approved"]
        assert len(phone.log_lines(refusals)) == flood.taken


# 3. The server down at start, and dropping mid-way.


def local_prompt_pings(phone: Phone, monitor: BusMonitor, name: str, count: int) -> None:
    """A prompt written now reaches Notify, ntfy or not."""
    now = time.time()
    StateStore(phone.app.state_dir).write(live_session(name, blocked("Allow push?", now), now))
    calls = monitor.wait_for_notify(count, TIMEOUT)
    assert calls[-1].summary == f"{name} needs approval"


def test_the_server_down_at_start_then_up_then_dropping_the_buttons_work_again(  # noqa: PLR0917 - fixtures
    desktop_env: dict[str, str],
    tmp_path: Path,
    dunst: Dunst,
    trayer: object,
    bus_monitor: BusMonitor,
    program: list[PromptProgram],
) -> None:
    dunst.close_all()
    ntfy = FakeNtfy().start()
    ntfy.stop()  # its port taken note of, nothing listening there
    stream_failed = "ntfy: the reply stream from 127.0.0.1 failed"
    publish_failed = "ntfy: publishing to 127.0.0.1 failed"
    try:
        with phone_app(desktop_env, tmp_path, ntfy) as phone:
            wait_for(lambda: phone.log_lines(stream_failed), TIMEOUT, what="the stream's warning")
            local_prompt_pings(phone, bus_monitor, "local", 1)
            # A prompt while the server is down: on the desktop at once, to the phone later.
            run = start_program(phone, program, tmp_path, [PROMPT, "approve Bash: touch y"])
            since = run.wait_prompt()[1]
            bus_monitor.wait_for_notify(2, TIMEOUT)
            wait_for(lambda: phone.log_lines(publish_failed), TIMEOUT, what="the publish warning")
            local_prompt_pings(phone, bus_monitor, "local2", 3)
            assert len(phone.log_lines(stream_failed)) == 1
            assert len(phone.log_lines(publish_failed)) == 1

            ntfy.start()
            first = wait_prompt(ntfy, phone.topic, 1, 60.0)
            wait_for(
                lambda: phone.log_lines("reply stream from 127.0.0.1 is connected again"),
                60.0,
                what="the stream back",
            )
            assert len(phone.log_lines("publishing to 127.0.0.1 works again")) == 1
            assert tap(button(first, "Approve")) == 200
            wait_told(ntfy, phone.topic, "api: approved")
            wait_for(lambda: run.reads() == ["31"], TIMEOUT, what="the program to read the keys")

            # Cut mid-way: the stream comes back by itself, and the next prompt's tap works.
            assert ntfy.drop_streams() == 1
            wait_for(lambda: len(phone.log_lines(stream_failed)) == 2, TIMEOUT, what="the drop")
            wait_for(
                lambda: len(phone.log_lines("reply stream from 127.0.0.1 is connected again")) == 2,
                TIMEOUT,
                what="the stream back after the drop",
            )
            run.reprompt(since)
            second = wait_prompt(ntfy, phone.topic, 2)
            # Stopped and started again between the ping and the tap: the tap may come
            # before the stream is back, which then asks for what it missed.
            ntfy.stop()
            wait_for(lambda: len(phone.log_lines(stream_failed)) == 3, TIMEOUT, what="the stop")
            local_prompt_pings(phone, bus_monitor, "local3", 5)
            ntfy.start()
            assert tap(button(second, "Approve")) == 200
            wait_told(ntfy, phone.topic, "api: approved", 2, 60.0)
            wait_for(
                lambda: run.reads() == ["31", "31"], TIMEOUT, what="the program to read the keys"
            )
            assert told(ntfy, phone.topic) == ["api: approved", "api: approved"]
            # The local prompt's ping, queued while the server was stopped, goes later.
            wait_for(
                lambda: len(phone.log_lines("publishing to 127.0.0.1 works again")) == 2,
                60.0,
                what="publishing back after the stop",
            )
            # One warning an outage: three for the stream (down at start, the drop, the
            # stop), two for publishing (nothing was published during the drop).
            assert len(phone.log_lines(stream_failed)) == 3
            assert len(phone.log_lines(publish_failed)) == 2
            assert phone.log_lines("phone: a reply typed nothing") == []
    finally:
        ntfy.stop()
