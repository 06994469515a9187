"""A host that hangs holds up nothing else: while a remote focus and a remote answer
wait on it, a local blocked report still reaches the notifier in its usual time.

The app is real (its worker, watcher, host link and refresh) with one ``[[hosts]]``
entry, a real sshd on loopback in front of a second state directory. What hangs there
is real too: the host's tmux server, stopped with SIGSTOP, so the focus's ssh waits on
`tmux select-window`; and the remote session's launcher, whose answer socket listens
but is not read yet, so the answer sent over the link waits for its reply. The notifier
is test_app_slow_calls' recorder. Once the local ping is in, both go on, and the focus
and the answer finish over ssh as they would have.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers.fake_notifier import FakeNotifier
from helpers.fake_tray_icon import FakeTrayIcon
from helpers.sessions import blocked, live_session
from helpers.sshd import Remote, client_environ, hosts_toml
from helpers.waiting import wait_for
from remote.test_answer_remote import SESSION_ID, remote_launcher
from remote.test_answer_remote import blocked as remote_prompt

from app.test_app_slow_calls import (
    app_on,
    logged,
    ping_comes_in_time,
    stopped_tmux,
)
from tray.core.answers.gate import SETTLE
from tray.core.answers.target import AnswerTarget
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.worker.user_actions import Focus, answer_to
from tray.state.store import StateStore

ASKS = f"host:devbox/{SESSION_ID}"
IN_TMUX = "host:devbox/1-in-tmux"


def shows(host: FakeTrayIcon, *session_ids: str) -> bool:
    if not host.applied:
        return False
    shown = {row.session_id for row in host.applied[-1].rows}
    return all(session_id in shown for session_id in session_ids)


def test_a_local_ping_comes_in_time_while_a_remote_focus_and_answer_wait(
    remote: Remote, host: HostConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")  # menus built without a display
    since = time.time() - SETTLE - 1  # settled: the launcher types as soon as it reads
    launcher = remote_launcher(remote, [remote_prompt(since)])  # listening, not yet read
    state = tmp_path / "local-state"
    store = StateStore(state)
    store.ensure()
    notifier = FakeNotifier()
    icon = FakeTrayIcon()
    config = hosts_toml(host) + "\n[notify]\nsettle = 0\n"
    with (
        logged("test-app-slow-host") as (log, lines),
        stopped_tmux(tmp_path) as tmux,
    ):
        remote.write(live_session("1-in-tmux", (), time.time(), tmux.terminal()))
        app = app_on(
            state, tmp_path / "config", config, notifier, log, host=icon, environ=client_environ()
        )
        app.start()
        try:
            wait_for(lambda: shows(icon, ASKS, IN_TMUX), what="the host's sessions")
            # A click on Focus, then on Approve: each now waits on the host.
            app.post(Focus(IN_TMUX))
            target = AnswerTarget(ASKS, "", since)
            app.post(answer_to(target, "approve"))
            wait_for(tmux.clients_waiting, what="tmux on the host to be asked")
            wait_for(launcher.knocked, what="the host's launcher to be asked")

            ping_comes_in_time(
                notifier,
                lambda: store.write(
                    live_session("3-new", blocked("approve rm", time.time()), time.time())
                ),
                "3-new",
            )
            # Both were still waiting when it came.
            assert launcher.typed == [] and notifier.withdrawn == []
            assert tmux.clients_waiting()

            tmux.go_on()
            launcher.thread.start()
            wait_for(lambda: notifier.withdrawn == [target], what="the answer to settle")
            wait_for(lambda: tmux.window() == "1", what="the focus to select the pane")
        finally:
            app.stop()
            launcher.stop.set()
            if launcher.thread.is_alive():
                launcher.thread.join(5)
            launcher.socket.close()
    assert launcher.typed == [b"1"]
    assert not [line for line in lines.lines if "cannot focus" in line or "failed" in line]
