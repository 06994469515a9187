"""Answer latency: from the action to the keys in the program's input.

A real ``tray run`` on an outer pty runs a program that stands in for Claude Code: it
reports a permission prompt (``app=claude-code``, OSC 7501) with its tty raw, and notes
the monotonic time at which its read returns the answer's key. The bench notes the
monotonic time just before it calls the client (CLOCK_MONOTONIC is one clock for every
process on the machine, so the two compare). Each sample is a fresh prompt: the program
turns working and then blocked again after every key.

The gate holds an answer until its prompt is :data:`tray.core.answers.gate.SETTLE` old (Codex
takes keys late), so the clock starts only once that settle has passed: the figure is
the channel's own cost, not the hold.

- Here: :func:`tray.state.answer_channel.send_answer` on the session's socket.
- Over loopback ssh, the app's way: :func:`tray.app.answer_dispatch.deliver_answer` for the session
  as the host's open link (:class:`tray.remote.link.HostLink`) hands it over, which sends
  the request on that link; to a ``tray run`` whose state directory is the "remote" of
  tests/remote/sshd.py behind a real sshd. A sample that fell back to a one-shot ssh
  fails the bench.
- Over loopback ssh, one-shot: :func:`tray.remote.actions.answer_remote` (a fresh
  ``ssh HOST tray answer ...``: the app's way when the link is down), beside a bare
  ``ssh HOST true`` for each.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(Path(__file__).resolve().parent)]

from harness import _spawn_on_pty, bench_env  # noqa: E402
from helpers.sshd import SSHD, Remote, Sshd, client_environ, host_config  # noqa: E402
from helpers.waiting import wait_for  # noqa: E402

from tray.app.answer_dispatch import AnswerRoutes, deliver_answer  # noqa: E402
from tray.core.answers.gate import SETTLE  # noqa: E402
from tray.core.answers.target import AnswerTarget  # noqa: E402
from tray.core.hosts.remote_sessions import namespaced_id  # noqa: E402
from tray.core.hosts.ssh_commands import HostConfig, ssh_argv  # noqa: E402
from tray.protocol.report import Report, encode_sequence  # noqa: E402
from tray.protocol.state import State  # noqa: E402
from tray.remote.actions import answer_remote  # noqa: E402
from tray.remote.link import HostLink  # noqa: E402
from tray.state.answer_channel import send_answer, socket_path  # noqa: E402
from tray.state.store import StateStore  # noqa: E402

LOCAL_TARGET = 0.05
REMOTE_TARGET = 0.3
SAMPLES = 20
# Past the settle, so the gate never holds the timed answer: the launcher's wall clock
# and this one are the same clock, the margin covers only the poll below.
MARGIN = 0.02
TIMEOUT = 20.0

# argv: the log, the working report, then each prompt's blocked report (hex), each with
# words of its own (the app pings a session's same words once per dedup_window). One
# line per read: its index, its monotonic time, what it read (hex).
PROGRAM = r"""
import os, sys, time, tty
log, working = open(sys.argv[1], "a", buffering=1), bytes.fromhex(sys.argv[2])
tty.setraw(0)
for index, blocked in enumerate(bytes.fromhex(arg) for arg in sys.argv[3:]):
    os.write(1, working)
    time.sleep(0.05)
    os.write(1, blocked + b"PROMPT %d\r\n" % index)
    data = os.read(0, 64)
    read_at = time.monotonic()
    log.write(f"{index} {read_at!r} {data.hex()}\n")
"""


def _program(log: Path, count: int) -> list[str]:
    working = encode_sequence(Report(State.WORKING, app="claude-code")).hex()
    prompts = [
        encode_sequence(
            Report(State.BLOCKED, kind="permission", app="claude-code", msg=f"approve Bash: ls {n}")
        ).hex()
        for n in range(count)
    ]
    return [sys.executable, "-c", PROGRAM, str(log), working, *prompts]


def _wait(predicate: Callable[[], object], what: str, timeout: float = TIMEOUT) -> object:
    # A short interval: the figures are milliseconds.
    return wait_for(predicate, timeout, interval=0.005, what=what)


def _prompt(state_dir: Path, after: float) -> tuple[str, str, float] | None:
    """The session id, record id and since of a blocked prompt newer than ``after``."""
    sessions, _ = StateStore(state_dir).read_all(time.time())
    for session in sessions:
        for record in session.records:
            if record.state == "blocked" and record.since is not None and record.since > after:
                return session.id, record.id, record.since
    return None


def _reads(log: Path) -> dict[int, tuple[float, str]]:
    found = {}
    for line in log.read_text().splitlines():
        index, at, data = line.split()
        found[int(index)] = (float(at), data)
    return found


def _read_of(log: Path, index: int) -> tuple[float, str] | None:
    return _reads(log).get(index)


def _drain(master: int) -> None:
    """Plays the terminal's reading side, so the launcher never waits on its output."""
    try:
        while os.read(master, 1 << 16):
            pass
    except OSError:
        pass


# answer(session id, record id, since) -> (ok, why)
Answer = Callable[[str, str, float], tuple[bool, str]]


def _measure(  # noqa: PLR0917
    argv_prefix: list[str],
    env: dict[str, str],
    state_dir: Path,
    answer: Answer,
    samples: int,
    meanwhile: Callable[[int], None] | None = None,
) -> list[float]:
    """One launcher, ``samples`` + 1 prompts (the first a warm-up, not counted).
    ``meanwhile`` runs while each prompt settles, before its answer is timed."""
    log = Path(tempfile.mkstemp(prefix="tray-answer-bench-")[1])
    count = samples + 1
    pid, master = _spawn_on_pty([*argv_prefix, *_program(log, count)], env)
    reader = threading.Thread(target=_drain, args=(master,), daemon=True)
    reader.start()
    latencies = []
    try:
        last = 0.0
        for index in range(count):
            found = _wait(partial(_prompt, state_dir, last), f"prompt {index}")
            assert isinstance(found, tuple)
            session_id, record_id, since = found
            last = since
            if meanwhile is not None:
                meanwhile(index)
            # The settle has passed: the gate types at once, or refuses.
            delay = since + SETTLE + MARGIN - time.time()
            if delay > 0:
                time.sleep(delay)
            started = time.monotonic()
            ok, why = answer(session_id, record_id, since)
            if not ok:
                raise RuntimeError(f"answer {index} refused: {why}")
            read = _wait(partial(_read_of, log, index), f"the key of answer {index}")
            assert isinstance(read, tuple)
            read_at, data = read
            if data != "31":
                raise RuntimeError(f"answer {index} typed {data!r}, not 1")
            if index:
                latencies.append(read_at - started)
        _, status = os.waitpid(pid, 0)
        pid = 0
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"tray run exited {os.waitstatus_to_exitcode(status)}")
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(master)
        reader.join(5)
        log.unlink()
    return latencies


def measure_local(samples: int = SAMPLES) -> list[float]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        state_dir = root / "state"
        env = bench_env(state_dir)
        env["XDG_CONFIG_HOME"] = str(root / "config")

        def answer(session_id: str, record_id: str, since: float) -> tuple[bool, str]:
            return send_answer(socket_path(state_dir, session_id), "approve", record_id, since)

        argv = [sys.executable, "-m", "tray", "run", "--"]
        return _measure(argv, env, state_dir, answer, samples)


def _ssh_true(host: HostConfig, environ: dict[str, str], into: list[float]) -> None:
    """One ``ssh HOST true`` with the options every answer uses, timed: the floor that
    any answer over a fresh ssh connection pays on this machine (handshake, login and
    the user's shell start-up on the host)."""
    argv = ssh_argv(
        HostConfig(host.name, host.destination, host.ssh_options, remote_command="true"), ()
    )
    started = time.monotonic()
    done = subprocess.run(
        argv,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"ssh true failed: {done.stderr.decode(errors='replace')}")
    into.append(time.monotonic() - started)


class _CountingLink:
    """The link as the app's Where sees it, counting the answers it could not carry."""

    def __init__(self, link: HostLink) -> None:
        self.link = link
        self.fell_back = 0

    def answer(
        self, session_id: str, answer: str, record: str | None, since: float | None
    ) -> tuple[bool, str] | None:
        result = self.link.answer(session_id, answer, record, since)
        if result is None:
            self.fell_back += 1
        return result


def _over_link(
    host: HostConfig, remote: Remote, environ: dict[str, str], samples: int
) -> list[float]:
    """The app's path: deliver_answer, the session from the link's own state, the open link."""
    link = HostLink(host, lambda _h, _s: None, lambda _h, _s: None, environ=environ)
    counting = _CountingLink(link)
    where = AnswerRoutes(
        remote.root / "app-state", {host.name: host}.get, environ, lambda _n: counting
    )

    def linked_session() -> object:
        state = link.state
        running = [s for s in state.sessions if s.running] if state is not None else []
        return link.status.state == "connected" and running

    def answer(session_id: str, record_id: str, since: float) -> tuple[bool, str]:
        app_id = namespaced_id(host.name, session_id)
        state = link.state
        session = next((s for s in state.sessions if s.id == app_id), None) if state else None
        outcome = deliver_answer(
            session, AnswerTarget(app_id, record_id, since), "approve", where, stale=False
        )
        if counting.fell_back:
            return False, "the answer did not go over the open link"
        return outcome.ok, outcome.line

    link.start()
    try:

        def meanwhile(_index: int) -> None:
            # The app has the session before it can be answered: waited for off the clock.
            _wait(linked_session, "the link to show the session")

        argv = [str(remote.tray), "run", "--"]
        env = bench_env(remote.state_dir)
        return _measure(argv, env, remote.state_dir, answer, samples, meanwhile)
    finally:
        link.stop()


def measure_remote(samples: int = SAMPLES) -> tuple[list[float], list[float], list[float]]:
    """The answers' latencies over the open link, over a one-shot ssh, and those of a
    bare ``ssh HOST true`` beside each one-shot."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        server = Sshd(root / "sshd")
        server.start()
        try:
            remote = Remote(root / "remote")
            host = host_config(server, remote)
            environ = client_environ()
            linked = _over_link(host, remote, environ, samples)
            # The remote's own wrapper names its state and config directories.
            env = bench_env(remote.state_dir)
            floor: list[float] = []

            def answer(session_id: str, record_id: str, since: float) -> tuple[bool, str]:
                return answer_remote(host, session_id, "approve", record_id, since, environ=environ)

            argv = [str(remote.tray), "run", "--"]
            latencies = _measure(
                argv,
                env,
                remote.state_dir,
                answer,
                samples,
                lambda _index: _ssh_true(host, environ, floor),
            )
            return linked, latencies, floor[1:]
        finally:
            server.stop()


def _line(latencies: list[float], target: float) -> str:
    median = statistics.median(latencies)
    verdict = "meets" if median < target else "MISSES"
    return (
        f"  median of {len(latencies)}: {median * 1000:.1f} ms "
        f"(min {min(latencies) * 1000:.1f}, max {max(latencies) * 1000:.1f}); "
        f"target < {target * 1000:.0f} ms: {verdict}"
    )


def report(samples: int = SAMPLES) -> None:
    settle = f"timed from after the {SETTLE:g} s settle, a fresh prompt each"
    print(f"Answer: send_answer to the key in the program's input ({settle})")
    try:
        print(_line(measure_local(samples), LOCAL_TARGET))
    except (RuntimeError, OSError) as error:
        print(f"  failed: {' '.join(str(error).split())[:300]}")
    print("Answer: the same over loopback ssh; first the app's way, over the open link")
    if shutil.which(SSHD) is None or shutil.which("ssh") is None:
        print("  skipped: needs openssh-server and openssh-client")
        return
    try:
        linked, latencies, floor = measure_remote(samples)
        print(_line(linked, REMOTE_TARGET))
        print("  then with answer_remote, a fresh ssh per answer (the way when the link is down)")
        print(_line(latencies, REMOTE_TARGET))
        print(
            f"  beside each, a bare ssh to the host running true: median"
            f" {statistics.median(floor) * 1000:.1f} ms (no target: the floor of a fresh"
            " connection here)"
        )
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        print(f"  failed: {' '.join(str(error).split())[:300]}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    report()
