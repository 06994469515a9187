"""A real `tray run` serves its answer socket: `tray answer` types the keys, or refuses.

The program stands in for an agent: it reports a permission prompt (app=claude-code)
with OSC 7501, puts its tty in raw mode as agents do, and logs every read it gets, in
hex, one line a read. The answer goes through the real CLI, ``tray answer SESSION
approve --since T``, as a script's would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.launcher_terminal import TIMEOUT, Job, launcher_argv, run_piped, sessions
from helpers.processes import ask_as_nobody
from helpers.tray_cli import tray_argv
from helpers.waiting import wait_for

from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.protocol.report import Report, encode_sequence
from tray.protocol.state import State
from tray.state.store import StateStore

# argv: the log of reads, the report to send (hex), "stream" to keep writing output.
PROGRAM = r"""
import os, select, sys, time, tty
log = open(sys.argv[1], "a", buffering=1)
stream = sys.argv[3] == "stream"
tty.setraw(0)
os.write(1, bytes.fromhex(sys.argv[2]) + b"PROMPT\r\n")
n = 0
while True:
    ready, _, _ = select.select([0], [], [], 0.001 if stream else None)
    if ready:
        data = os.read(0, 1024)
        log.write(data.hex() + "\n")
        os.write(1, b"GOT " + data.hex().encode() + b"\r\n")
        if data == b"q":
            break
    elif stream:
        n += 1
        os.write(1, b"line %d " % n + b"x" * 200 + b"\r\n")
"""


def _report(msg: str | None = None) -> bytes:
    return encode_sequence(Report(State.BLOCKED, "", "permission", None, "claude-code", None, msg))


def _start(
    job_runner: Callable[..., Job], tmp_path: Path, msg: str | None = None, stream: bool = False
) -> tuple[Job, Path]:
    reads = tmp_path / "reads"
    reads.touch()
    program = [sys.executable, "-c", PROGRAM, str(reads), _report(msg).hex()]
    job = job_runner(launcher_argv([*program, "stream" if stream else "still"]))
    return job, reads


def _prompt(job: Job, state_dir: Path) -> tuple[Session, Record, float]:
    """The session, its blocked record and that record's ``since``."""

    def blocked() -> tuple[Session, Record, float] | None:
        for session in sessions(state_dir):
            for record in session.records:
                if record.state == "blocked" and record.kind == "permission" and record.since:
                    return session, record, record.since
        return None

    return job.wait(blocked, "the permission prompt in the state file")


def _reads(path: Path) -> list[str]:
    return path.read_text().split()


def _tray_answer(
    job: Job, environ: dict[str, str], *words: str
) -> subprocess.CompletedProcess[str]:
    """The real CLI, while the test goes on playing the terminal (the launcher must
    never wait for it to read output)."""
    done: list[subprocess.CompletedProcess[str]] = []
    client = threading.Thread(
        target=lambda: done.append(
            subprocess.run(
                tray_argv("answer", *words),
                env=environ,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
        )
    )
    client.start()
    job.wait(lambda: not client.is_alive(), "tray answer to return")
    client.join()
    return done[0]


def _end(job: Job) -> None:
    job.terminal.type(b"q")
    assert job.exit_code() == 0


@pytest.mark.parametrize(("answer", "keys"), [("approve", "31"), ("deny", "1b")])
def test_tray_answer_types_exactly_the_keys(
    *,
    job_runner: Callable[..., Job],
    tray_env: dict[str, str],
    tmp_path: Path,
    state_dir: Path,
    answer: str,
    keys: str,
) -> None:
    job, reads = _start(job_runner, tmp_path)
    session, _record, since = _prompt(job, state_dir)
    assert (state_dir / f"{session.id}.answer").is_socket()
    result = _tray_answer(job, tray_env, session.id, answer, "--since", repr(since))
    assert (result.returncode, result.stderr) == (0, "")
    job.wait(lambda: _reads(reads), "the keys to reach the program")
    assert _reads(reads) == [keys]
    # Written at once: the app reads the state that follows as the answer's.
    written = job.wait(
        lambda: next((s.answered for s in sessions(state_dir) if s.answered), None),
        "the answer in the state file",
    )
    assert (written.record, written.since, written.answer) == ("", since, answer)
    # Once: the same prompt is not answered twice.
    again = _tray_answer(job, tray_env, session.id, answer, "--since", repr(since))
    assert again.returncode == 1
    _end(job)
    assert _reads(reads) == [keys, "71"]
    # Closed and unlinked before the last write.
    assert not (state_dir / f"{session.id}.answer").exists()


def test_a_stale_since_is_refused_and_nothing_is_typed(
    job_runner: Callable[..., Job], tray_env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    job, reads = _start(job_runner, tmp_path)
    session, _record, since = _prompt(job, state_dir)
    result = _tray_answer(job, tray_env, session.id, "approve", "--since", repr(since - 5))
    assert result.returncode == 1
    assert "the prompt has changed; not answered" in result.stderr
    # The user's next key is the first thing the program reads.
    job.terminal.type(b"z")
    job.wait(lambda: _reads(reads), "the user's key")
    assert _reads(reads) == ["7a"]
    _end(job)


def test_a_key_typed_after_the_prompt_wins(
    job_runner: Callable[..., Job], tray_env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    job, reads = _start(job_runner, tmp_path)
    session, _record, since = _prompt(job, state_dir)
    job.terminal.type(b"x")
    job.wait(lambda: _reads(reads), "the user's key")
    result = _tray_answer(job, tray_env, session.id, "approve", "--since", repr(since))
    assert result.returncode == 1
    assert "you typed into the session since it appeared" in result.stderr
    job.terminal.type(b"z")
    job.wait(lambda: len(_reads(reads)) == 2, "the user's second key")
    assert _reads(reads) == ["78", "7a"]
    _end(job)


def test_a_hostile_msg_never_changes_the_keys(
    job_runner: Callable[..., Job], tray_env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    msg = 'approve with "2" (always allow) then Enter; keys=2; deny=4 rm -rf ~'
    job, reads = _start(job_runner, tmp_path, msg=msg)
    session, record, since = _prompt(job, state_dir)
    assert record.msg == msg
    result = _tray_answer(job, tray_env, session.id, "approve", "--since", repr(since))
    assert result.returncode == 0, result.stderr
    job.wait(lambda: _reads(reads), "the keys")
    assert _reads(reads) == ["31"]
    _end(job)


def _flood(path: Path, stop: threading.Event, seen: list[str]) -> None:
    """Connections as fast as they come: garbage, silence, oversized lines, answers to
    another prompt. None of them may type anything."""
    payloads = [
        b"\x00\xff garbage\n",
        b"",
        b"{" * 2000,
        b'{"answer": "approve", "since": 1.0}\n',
        b'{"answer": "approve", "keys": "2"}\n',
        None,  # connects and says nothing
    ]
    n = 0
    held: list[socket.socket] = []
    while not stop.is_set():
        payload = payloads[n % len(payloads)]
        n += 1
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(0.2)
        try:
            client.connect(str(path))
            if payload is None:
                held.append(client)
                if len(held) > 20:
                    held.pop(0).close()
                continue
            with contextlib.suppress(OSError):
                client.sendall(payload)
                seen.append(client.recv(4096).decode(errors="replace"))
        except OSError:
            pass
        client.close()
    for client in held:
        client.close()


def test_a_flood_of_connections_never_stalls_the_byte_loop(
    job_runner: Callable[..., Job], tray_env: dict[str, str], tmp_path: Path, state_dir: Path
) -> None:
    job, reads = _start(job_runner, tmp_path, stream=True)
    session, _record, since = _prompt(job, state_dir)
    path = state_dir / f"{session.id}.answer"
    stop = threading.Event()
    replies: list[str] = []
    flooders = [threading.Thread(target=_flood, args=(path, stop, replies)) for _ in range(4)]
    for flooder in flooders:
        flooder.start()
    longest_gap = 0.0
    try:
        last, last_size = time.monotonic(), len(job.terminal.output)
        end = last + 3.0
        typed_at = None
        while time.monotonic() < end:
            job.pump()
            now = time.monotonic()
            if len(job.terminal.output) != last_size:
                longest_gap = max(longest_gap, now - last)
                last, last_size = now, len(job.terminal.output)
            if typed_at is None and now > end - 2.0:
                job.terminal.type(b"k")
                typed_at = now
        echoed = job.wait(lambda: _reads(reads), "the user's key through the flood")
    finally:
        stop.set()
        for flooder in flooders:
            flooder.join(10)
    assert echoed == ["6b"]
    assert len(replies) > 20, "the flood never got through"
    assert not any('"ok": true' in reply for reply in replies)
    assert longest_gap < 1.0, f"output stalled for {longest_gap:.2f} s"
    # The user's key came after the prompt, so even a real answer is refused now: the
    # flood left the launcher answering as before.
    result = _tray_answer(job, tray_env, session.id, "approve", "--since", repr(since))
    assert result.returncode == 1
    assert "you typed" in result.stderr
    _end(job)
    assert _reads(reads) == ["6b", "71"]


def test_another_uid_is_refused(job_runner: Callable[..., Job], tmp_path: Path) -> None:
    assert os.getuid() == 0, "needs root to become nobody"
    # A state directory nobody may walk into once opened up, to show that the peer's
    # uid is checked behind the modes: first as the launcher made it, then opened.
    state = Path(tempfile.mkdtemp(prefix="tray-ans-"))
    try:
        reads = tmp_path / "reads"
        reads.touch()
        program = [sys.executable, "-c", PROGRAM, str(reads), _report().hex(), "still"]
        job = job_runner(["/usr/bin/env", f"TRAY_STATE_DIR={state}", *launcher_argv(program)])
        job.wait(lambda: list(state.glob("*.answer")), "the answer socket")
        path = next(state.glob("*.answer"))
        job.wait(lambda: _prompt_in(state), "the prompt")
        assert ask_as_nobody(str(path), b'{"answer": "approve"}\n') == "EACCES"
        state.chmod(0o711)
        path.chmod(0o666)
        seen: list[str] = []
        asker = threading.Thread(
            target=lambda: seen.append(ask_as_nobody(str(path), b'{"answer": "approve"}\n'))
        )
        asker.start()
        job.wait(lambda: not asker.is_alive(), "nobody's request")
        assert seen == ['{"ok": false, "reason": "refused: another user"}\n']
        _end(job)
        assert _reads(reads) == ["71"]
    finally:
        shutil.rmtree(state, ignore_errors=True)


def _prompt_in(state: Path) -> bool:
    return any(
        record.state == "blocked" for session in sessions(state) for record in session.records
    )


def test_a_socket_path_too_long_is_one_log_line_and_the_run_goes_on(
    tray_env: dict[str, str], tmp_path: Path
) -> None:
    # A Unix socket's path holds at most 107 bytes; the state directory's own does not.
    state = tmp_path / ("d" * 100)
    environ = {**tray_env, "TRAY_STATE_DIR": str(state)}
    result = run_piped(["sh", "-c", "echo ran"], environ, tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"ran\n", b"")
    log = (state / "launcher.log").read_text()
    assert log.count("no answer socket, answering off") == 1
    assert not list(state.glob("*.answer"))


@pytest.mark.parametrize("how", ["prune", "dismiss", "dismiss_ended", "orphan"])
def test_a_dead_launchers_socket_goes_with_its_session(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path, how: str
) -> None:
    job, _reads_path = _start(job_runner, tmp_path)
    session, _, _ = _prompt(job, state_dir)
    socket_file = state_dir / f"{session.id}.answer"
    assert socket_file.is_socket()
    os.kill(job.pid, 9)  # no close, no unlink: the socket is left behind
    job.terminal.wait_for_shell()
    wait_for(lambda: not any(s.alive for s in sessions(state_dir)), what="the end")
    assert socket_file.is_socket()
    store = StateStore(state_dir)
    if how == "prune":
        assert store.prune(time.time() + 10**6, 0) == 1
    elif how == "dismiss":
        store.dismiss(session.id)
    elif how == "dismiss_ended":
        assert store.dismiss_ended() == [session.id]
    else:
        # Its file went some other way (by hand, an older tray): the next prune finds
        # the socket of a launcher that no longer runs.
        (state_dir / f"{session.id}.json").unlink()
        store.prune(time.time(), 10**6)
    assert not socket_file.exists()
    assert not (state_dir / f"{session.id}.json").exists()


def test_a_live_launchers_socket_is_never_pruned(
    job_runner: Callable[..., Job], tmp_path: Path, state_dir: Path
) -> None:
    job, _reads_path = _start(job_runner, tmp_path)
    session, _, _ = _prompt(job, state_dir)
    StateStore(state_dir).prune(time.time() + 10**6, 0)
    assert (state_dir / f"{session.id}.answer").is_socket()
    _end(job)
