"""HostLink and the one-shot commands against a real sshd on loopback."""

from __future__ import annotations

import getpass
import itertools
import json
import os
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.host_sessions import make_session
from helpers.processes import children_of, process_name
from helpers.sshd import Remote, Sshd, client_environ, host_config, keygen
from helpers.sshd_fixtures import Recorder, blocked_ids
from helpers.waiting import wait_for

from tray.core.hosts.remote_sessions import HostStatus, RemoteState, mark_stale
from tray.core.hosts.ssh_commands import HostConfig, parse_hosts
from tray.core.hosts.ssh_failures import Failure
from tray.remote.actions import RemoteError, diagnose_host, dismiss_remote, fetch_state
from tray.remote.link import HostLink, HostLinks, LinkTimings
from tray.remote.stream import stream_document

FAST = LinkTimings(first_retry=0.2, max_retry=0.4)


def ssh_children() -> list[int]:
    return [pid for pid in children_of(os.getpid()) if process_name(pid) == "ssh"]


def wait_for_retries(link: HostLink, count: int) -> None:
    """Wait until ``count`` more attempts have failed: each leaves a status of its own
    (the same words, a new failure), which only the link's ``status`` shows."""
    seen = [link.status]

    def failed_again() -> bool:
        if link.status is not seen[-1]:
            seen.append(link.status)
        return len(seen) > count

    wait_for(failed_again, what=f"{count} more failed attempts")


@contextmanager
def linked(host: HostConfig, recorder: Recorder, timings: LinkTimings = FAST) -> Iterator[HostLink]:
    link = HostLink(
        host, recorder.on_state, recorder.on_status, timings=timings, environ=client_environ()
    )
    link.start()
    try:
        yield link
    finally:
        link.stop()


def fake_remote(tmp_path: Path, body: str) -> str:
    """A remote command running ``body`` in Python, with frames at hand as ``frame``."""
    script = tmp_path / "fake_remote.py"
    # Only the light frames module: a fake that starts slowly would look dead.
    script.write_text(
        "import json, os, sys, threading, time\n"
        "from tray.remote.frames import encode_frame\n"
        "out = sys.stdout.buffer\n"
        "def frame(kind, payload):\n"
        "    out.write(encode_frame(kind, payload)); out.flush()\n"
        "def until_stdin_ends():\n"
        "    while os.read(0, 4096):\n"
        "        pass\n" + body,
        encoding="utf-8",
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def test_a_blocked_remote_session_reaches_the_app(
    host: HostConfig, remote: Remote, recorder: Recorder
) -> None:
    remote.write(make_session("4242-a1b2c3", "working"))
    with linked(host, recorder) as link:
        state = recorder.wait_state(lambda s: len(s.sessions) == 1)
        assert state.initial
        assert state.host == "devbox"
        assert state.sessions[0].id == "host:devbox/4242-a1b2c3"
        assert state.sessions[0].state == "working"
        remote.write(make_session("4242-a1b2c3", "blocked", msg="approve rm"))
        state = recorder.wait_state(lambda s: bool(blocked_ids(s)))
        (session,) = state.sessions
        assert not state.initial
        assert session.records[0].msg == "approve rm"
        assert state.labelled()[0].name == "devbox \u00b7 api"
        assert link.state == state
        assert recorder.status_names() == ["connecting", "connected"]
        assert link.status.state == "connected"
        assert all(host_name == "devbox" for host_name, _, _ in recorder.states)


def test_stop_ends_everything_promptly_and_leaves_no_process(
    host: HostConfig, remote: Remote, recorder: Recorder
) -> None:
    with linked(host, recorder) as link:
        recorder.wait_state(lambda s: True)
        assert len(ssh_children()) == 1
        wait_for(remote.running_streams, what="the remote stream")
        link.stop()
        assert ssh_children() == []
        count = recorder.state_count()
        statuses = recorder.status_names()
    # The remote end follows: its stdin reached end of file when the ssh went. stop()
    # joined the link's thread, so no callback can come after it: the counts are final.
    wait_for(lambda: not remote.running_streams(), what="the remote stream to end")
    assert recorder.state_count() == count
    assert recorder.status_names() == statuses


def test_losing_the_host_is_one_status_change_and_coming_back_is_another(
    sshd: Sshd, host: HostConfig, remote: Remote, recorder: Recorder
) -> None:
    remote.write(make_session("1-a", "working"))
    with linked(host, recorder) as link:
        recorder.wait_state(lambda s: len(s.sessions) == 1)
        wait_for(remote.running_streams, what="the remote stream")
        sshd.kill()
        wait_for(lambda: "unreachable" in recorder.status_names(), what="unreachable")
        # Several retries fail meanwhile; none of them is news.
        wait_for_retries(link, 3)
        assert recorder.status_names() == ["connecting", "connected", "unreachable"]
        status = link.status
        assert status.failure is not None
        assert status.failure.kind == "refused"
        assert status.line().startswith("unreachable since ")
        assert ", retrying: connection refused" in status.line()
        assert status.last_seen is not None
        # The last known sessions are kept, and say how old they are.
        assert link.state is not None
        (stale,) = mark_stale(link.state, status.last_seen)
        assert stale.id == "host:devbox/1-a"
        assert stale.alive
        assert "(last seen " in stale.name
        assert stale.name.startswith("devbox \u00b7 ")
        # Killing sshd took the remote stream with it.
        wait_for(lambda: not remote.running_streams(), what="the remote stream to end")
        remote.write(make_session("2-b", "blocked"))
        sshd.start()
        state = recorder.wait_state(lambda s: "host:devbox/2-b" in blocked_ids(s))
        assert {s.id for s in state.sessions} == {"host:devbox/1-a", "host:devbox/2-b"}
        wait_for(lambda: recorder.status_names()[-1] == "connected", what="connected")
        assert recorder.status_names() == ["connecting", "connected", "unreachable", "connected"]


@pytest.mark.sshd  # starts an sshd of its own, later, without the fixture
def test_a_host_down_from_the_start_is_one_status_change(
    tmp_path: Path, remote: Remote, recorder: Recorder
) -> None:
    server = Sshd(tmp_path / "down")  # configured, never started: nothing listens
    host = host_config(server, remote)
    with linked(host, recorder) as link:
        wait_for(lambda: "unreachable" in recorder.status_names(), what="unreachable")
        wait_for_retries(link, 3)  # none of them is news
        assert recorder.status_names() == ["connecting", "unreachable"]
        assert link.status.failure is not None
        assert link.status.failure.kind == "refused"
        assert link.status.last_seen is None
        assert recorder.state_count() == 0
        server.start()
        try:
            recorder.wait_state(lambda s: True)
            wait_for(lambda: recorder.status_names()[-1] == "connected", what="connected")
        finally:
            link.stop()
            server.stop()


def test_a_destination_starting_with_a_dash_is_refused(tmp_path: Path) -> None:
    planted = tmp_path / "pwned"
    with pytest.raises(ValueError, match=r"hosts\[0\]\.destination: must not start with '-'"):
        parse_hosts([{"name": "x", "destination": f"-oProxyCommand=touch {planted}"}])
    host = HostConfig("x", f"-oProxyCommand=touch {planted}")
    recorder = Recorder()
    with pytest.raises(ValueError, match="'-'"):
        HostLink(host, recorder.on_state, recorder.on_status)
    with pytest.raises(ValueError, match="'-'"):
        diagnose_host(host)
    with pytest.raises(ValueError, match="'-'"):
        fetch_state(host)
    assert not planted.exists()
    assert ssh_children() == []


def test_doctor_says_tray_runs_there(host: HostConfig) -> None:
    check = diagnose_host(host, environ=client_environ())
    assert check.ok
    assert check.line() == f"ok   host {host.name}: tray 0.1.0 on {host.destination}"


def test_doctor_on_a_remote_without_tray_gives_the_fix(
    sshd: Sshd, remote: Remote, recorder: Recorder
) -> None:
    host = host_config(sshd, remote, remote_command="/nonexistent/bin/tray")
    check = diagnose_host(host, environ=client_environ())
    ok, line = check.ok, check.line()
    assert not ok
    assert line.startswith(
        "warn host devbox: /nonexistent/bin/tray: command not found on devbox; fix: "
    )
    assert 'remote_command = "~/.local/bin/tray"' in line
    assert "pipx install tray" in line
    with linked(host, recorder) as link:
        wait_for(lambda: "unreachable" in recorder.status_names(), what="unreachable")
        assert link.status.failure is not None
        assert link.status.failure.kind == "no-tray"
    with pytest.raises(RemoteError) as caught:
        fetch_state(host, environ=client_environ())
    assert caught.value.failure.kind == "no-tray"


def test_a_key_the_host_does_not_know_says_ssh_add(
    sshd: Sshd, remote: Remote, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger"
    keygen(stranger)
    check = diagnose_host(host_config(sshd, remote, key=stranger), environ=client_environ())
    assert not check.ok
    assert "Permission denied" in check.found
    assert check.fix is not None and "ssh-add" in check.fix


def test_a_changed_host_key_says_how_to_clear_it(
    sshd: Sshd, remote: Remote, tmp_path: Path
) -> None:
    other = tmp_path / "other_host"
    keygen(other)
    public = (tmp_path / "other_host.pub").read_text().split()
    known = tmp_path / "wrong_known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {public[0]} {public[1]}\n")
    check = diagnose_host(host_config(sshd, remote, known_hosts=known), environ=client_environ())
    assert not check.ok
    assert check.found == f"the host key of {getpass.getuser()}@127.0.0.1 has changed"
    assert check.fix is not None and "ssh-keygen -R" in check.fix


def test_an_unknown_host_key_says_to_connect_once(
    sshd: Sshd, remote: Remote, tmp_path: Path
) -> None:
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    check = diagnose_host(host_config(sshd, remote, known_hosts=empty), environ=client_environ())
    assert not check.ok
    assert "could not be verified" in check.found
    assert check.fix is not None and "connect once" in check.fix


def test_noise_around_the_frames_is_skipped(sshd: Sshd, remote: Remote, recorder: Recorder) -> None:
    remote.write(make_session("1-a"))
    noisy = (
        "printf 'Welcome to devbox!\\n\\nLast login: never\\n'; "
        "printf '\\036TRAY1 state {not json\\n'; "
        "printf '\\036TRAY1 state [1,2]\\n'; "
        "printf 'a profile without a newline'; "
        f"exec {shlex.quote(str(remote.tray))}"
    )
    host = host_config(sshd, remote, remote_command=noisy)
    with linked(host, recorder):
        state = recorder.wait_state(lambda s: bool(blocked_ids(s)))
        assert blocked_ids(state) == {"host:devbox/1-a"}
        assert recorder.status_names() == ["connecting", "connected"]


def test_documents_reach_the_app_at_most_ten_a_second_and_the_last_one_wins(
    sshd: Sshd, remote: Remote, recorder: Recorder, tmp_path: Path
) -> None:
    # The last document, unlike the others, has a session: the one to win.
    last = stream_document([make_session("1-a")])
    flood = fake_remote(
        tmp_path,
        "for n in range(2000):\n"
        "    frame('state', {'version': 1, 'sessions': [], 'n': n})\n"
        f"frame('state', json.loads({json.dumps(last)!r}))\n"
        "until_stdin_ends()\n",
    )
    with linked(host_config(sshd, remote, remote_command=flood), recorder):
        recorder.wait_state(lambda s: bool(s.sessions))
        with recorder.arrived:
            times = [moment for _, _, moment in recorder.states]
            latest = recorder.states[-1][1]
        assert [s.id for s in latest.sessions] == ["host:devbox/1-a"]
        assert 1 <= len(times) <= (times[-1] - times[0]) / 0.1 + 2
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert all(gap >= 0.09 for gap in gaps)


def test_an_overlong_line_is_dropped_and_the_link_goes_on(
    sshd: Sshd, remote: Remote, recorder: Recorder, tmp_path: Path
) -> None:
    session = make_session("1-a")
    overlong = fake_remote(
        tmp_path,
        "out.write(b'\\x1eTRAY1 state {' + b'x' * (3 << 20) + b'}\\n'); out.flush()\n"
        f"frame('state', json.loads({json.dumps(stream_document([session]))!r}))\n"
        "until_stdin_ends()\n",
    )
    with linked(host_config(sshd, remote, remote_command=overlong), recorder):
        state = recorder.wait_state(lambda s: bool(blocked_ids(s)))
        assert blocked_ids(state) == {"host:devbox/1-a"}
        assert recorder.status_names() == ["connecting", "connected"]


def test_a_silent_link_is_dropped_and_made_again(
    sshd: Sshd, remote: Remote, recorder: Recorder, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    silent = fake_remote(
        tmp_path,
        f"open({str(runs)!r}, 'a').write('run\\n')\n"
        "frame('state', {'version': 1, 'sessions': []})\n"
        "until_stdin_ends()\n",
    )
    timings = replace(FAST, dead_after=3.0)
    with linked(host_config(sshd, remote, remote_command=silent), recorder, timings):
        wait_for(lambda: recorder.state_count() >= 2, what="a second connection")
        assert len(runs.read_text().splitlines()) >= 2
        # Each connection delivered, so this is a link kept alive, not a host lost.
        assert "unreachable" not in recorder.status_names()
        assert len(ssh_children()) <= 1


def test_heartbeats_keep_a_quiet_link(
    sshd: Sshd, remote: Remote, recorder: Recorder, tmp_path: Path
) -> None:
    runs, beats = tmp_path / "runs", tmp_path / "beats"
    beating = fake_remote(
        tmp_path,
        f"open({str(runs)!r}, 'a').write('run\\n')\n"
        "frame('state', {'version': 1, 'sessions': []})\n"
        "threading.Thread(target=until_stdin_ends, daemon=True).start()\n"
        f"log = open({str(beats)!r}, 'a', buffering=1)\n"
        "for _ in range(100):\n"
        "    time.sleep(0.1)  # the heartbeat's pace\n"
        "    frame('beat', {'at': time.time()})\n"
        "    log.write('beat\\n')\n",
    )
    timings = replace(FAST, dead_after=2.0)
    with linked(host_config(sshd, remote, remote_command=beating), recorder, timings):
        recorder.wait_state(lambda s: True)
        # Time itself is the test: the link's deadline runs on the real clock, so the
        # beats must outlast it twice over (5 s of them) with no second connection.
        wait_for(
            lambda: beats.exists() and len(beats.read_text().splitlines()) >= 50,
            what="5 s of heartbeats",
        )
        assert runs.read_text().splitlines() == ["run"]
        assert recorder.state_count() == 1


def test_a_remote_of_another_stream_version_is_explained(
    sshd: Sshd, remote: Remote, recorder: Recorder, tmp_path: Path
) -> None:
    newer = fake_remote(tmp_path, "out.write(b'\\x1eTRAY2 state {}\\n'); out.flush()\n")
    with linked(host_config(sshd, remote, remote_command=newer), recorder) as link:
        wait_for(lambda: "unreachable" in recorder.status_names(), what="unreachable")
        assert link.status.failure is not None
        assert link.status.failure.kind == "incompatible"
        assert link.status.failure.fix == "upgrade tray here (pipx upgrade tray)"


def test_several_hosts_at_once(sshd: Sshd, remote: Remote, recorder: Recorder) -> None:
    remote.write(make_session("1-a"))
    hosts = [host_config(sshd, remote, name=name) for name in ("devbox", "lab")]
    links = HostLinks(
        hosts, recorder.on_state, recorder.on_status, timings=FAST, environ=client_environ()
    )
    links.start()
    try:
        for name in ("devbox", "lab"):

            def from_host(state: RemoteState, name: str = name) -> bool:
                return state.host == name and bool(state.sessions)

            recorder.wait_state(from_host)
        lab = links.get("lab")
        assert lab is not None and lab.state is not None
        assert lab.state.sessions[0].id == "host:lab/1-a"
        assert links.get("nowhere") is None
    finally:
        links.stop()
    assert ssh_children() == []


def test_fetch_state_once(host: HostConfig, remote: Remote) -> None:
    remote.write(make_session("1-a"))
    state = fetch_state(host, environ=client_environ())
    assert [s.id for s in state.sessions] == ["host:devbox/1-a"]
    assert ssh_children() == []
    wait_for(lambda: not remote.running_streams(), what="the remote stream to end")


def test_dismiss_on_the_remote(host: HostConfig, remote: Remote) -> None:
    remote.write(make_session("1-ended", "done", alive=False))
    remote.write(make_session("2-running"))
    ok, line = dismiss_remote(host, ["host:devbox/1-ended"], environ=client_environ())
    assert (ok, line) == (True, "dismissed on devbox")
    assert not (remote.state_dir / "1-ended.json").exists()
    ok, line = dismiss_remote(host, ["2-running"], environ=client_environ())
    assert not ok
    assert line == "tray dismiss: 2-running is still running; end it first"
    assert (remote.state_dir / "2-running.json").exists()
    ok, line = dismiss_remote(host, ["host:lab/2-running"], environ=client_environ())
    assert (ok, line) == (False, "host:lab/2-running is not a session of devbox")
    ok, line = dismiss_remote(host, ["2-running; rm -rf ~"], environ=client_environ())
    assert not ok
    assert line.startswith("not a session id")
    assert (remote.state_dir / "2-running.json").exists()


def test_no_ssh_client_is_explained(recorder: Recorder, tmp_path: Path) -> None:
    host = HostConfig("devbox", "me@devbox")
    missing = str(tmp_path / "no-such-ssh")
    check = diagnose_host(host, ssh=missing)
    ok, line = check.ok, check.line()
    assert not ok
    assert line == (
        f"warn host devbox: cannot run {missing}: No such file or directory; "
        "fix: install the OpenSSH client"
    )
    link = HostLink(host, recorder.on_state, recorder.on_status, timings=FAST, ssh=missing)
    link.start()
    try:
        wait_for(lambda: "unreachable" in recorder.status_names(), what="unreachable")
        assert link.status.failure is not None
        assert link.status.failure.kind == "no-ssh"
    finally:
        link.stop()


def test_a_host_that_never_answers_times_out(sshd: Sshd, remote: Remote) -> None:
    host = host_config(sshd, remote, remote_command="sleep 8; true")
    check = diagnose_host(host, timeout=1.0, environ=client_environ())
    ok, line = check.ok, check.line()
    assert not ok
    assert line.startswith(
        f"warn host {host.name}: no answer from {host.destination} within 1 s; fix: "
    )
    assert ssh_children() == []
    with pytest.raises(RemoteError) as caught:
        fetch_state(host, timeout=1.0, environ=client_environ())
    assert caught.value.failure.kind == "timeout"
    assert ssh_children() == []


def test_status_lines() -> None:
    moment = time.mktime((2026, 1, 5, 14, 2, 30, 0, 0, -1))
    failure = Failure("refused", "connection refused by me@devbox", "check sshd")
    assert HostStatus("devbox", "connecting", moment).line() == "connecting"
    assert HostStatus("devbox", "connected", moment).line() == "connected since 14:02"
    assert HostStatus("devbox", "unreachable", moment).line() == (
        "unreachable since 14:02, retrying"
    )
    assert HostStatus("devbox", "unreachable", moment, failure).line() == (
        "unreachable since 14:02, retrying: connection refused by me@devbox"
    )
