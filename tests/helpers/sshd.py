"""A real OpenSSH server on loopback, and a "remote" tray beside it, for tests and benchmarks.

The server has its own host key, its own authorized key and its own port, and runs as
the current user; the remote is a second state directory on this machine, reached
through ssh like any other host.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tray
from helpers.processes import children_of, process_name
from helpers.tray_cli import tray_argv
from helpers.waiting import wait_for
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.session.model import Session
from tray.protocol.records import Record
from tray.state.store import StateStore, process_start_token

SSHD = "/usr/sbin/sshd"
PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent
START_TIMEOUT = 15.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tray-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )


def processes_with_environ(needle: bytes) -> list[int]:
    """Processes whose environment holds ``needle``: a remote stream of one test."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


@dataclass
class Sshd:
    """One sshd on a fixed port; :meth:`kill` drops it with every connection it holds."""

    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.host_key = self.root / "host_ed25519"
        self.user_key = self.root / "user_ed25519"
        self.known_hosts = self.root / "known_hosts"
        self.log = self.root / "sshd.log"
        keygen(self.host_key)
        keygen(self.user_key)
        (self.root / "authorized_keys").write_text(
            (self.root / "user_ed25519.pub").read_text(encoding="utf-8"), encoding="utf-8"
        )
        public = (self.root / "host_ed25519.pub").read_text(encoding="utf-8").split()
        self.known_hosts.write_text(
            f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n", encoding="utf-8"
        )
        self.config = self.root / "sshd_config"
        self.config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
                    "PidFile none",
                    "StrictModes no",
                    "PermitRootLogin prohibit-password",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "UseDNS no",
                    "PrintMotd no",
                    "PrintLastLog no",
                    "MaxStartups 100",
                    "MaxSessions 100",
                    "LogLevel INFO",
                    "",
                ]
            ),
            encoding="utf-8",
        )
        if os.geteuid() == 0:
            # Privilege separation needs it; Debian's service makes it at boot.
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        proc = self.proc

        def greets() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log.read_text(errors='replace')}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1) as probe,
            ):
                return probe.recv(4).startswith(b"SSH-")
            return False

        wait_for(greets, START_TIMEOUT, interval=0.05, what=f"sshd to listen on {self.port}")

    def kill(self) -> None:
        """sshd and every connection it holds, at once, as a crash or a reboot would."""
        if self.proc is None:
            return
        doomed = [self.proc.pid, *children_of(self.proc.pid)]
        for pid in doomed:
            if pid == self.proc.pid or process_name(pid) == "sshd":
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        """The server and everything below it, for the end of a test."""
        if self.proc is None:
            return
        doomed = [self.proc.pid, *children_of(self.proc.pid)]
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def connections(self) -> int:
        """Live per-connection sshd processes: each login has a privileged one."""
        if self.proc is None or self.proc.poll() is not None:
            return 0
        return sum(1 for pid in children_of(self.proc.pid) if process_name(pid) == "sshd") // 2

    def client_options(self, key: Path | None = None, known_hosts: Path | None = None) -> list[str]:
        return [
            "-F",
            "/dev/null",
            "-p",
            str(self.port),
            "-i",
            str(key or self.user_key),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "IdentityAgent=none",
            "-o",
            f"UserKnownHostsFile={known_hosts or self.known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "LogLevel=ERROR",
        ]


@dataclass
class Remote:
    """A tray "on another machine": its own state and config directories, and a
    ``tray`` wrapper that runs the real ``tray`` with them."""

    root: Path

    def __post_init__(self) -> None:
        self.state_dir = self.root / "state"
        self.config_home = self.root / "config"
        self.state_dir.mkdir(parents=True, mode=0o700)
        self.config_home.mkdir(parents=True)
        self.store = StateStore(self.state_dir)
        self.tray = self.root / "tray"
        self.tray.write_text(
            "\n".join(
                [
                    "#!/bin/sh",
                    f"export TRAY_STATE_DIR={shlex.quote(str(self.state_dir))}",
                    f"export XDG_CONFIG_HOME={shlex.quote(str(self.config_home))}",
                    "export PYTHONDONTWRITEBYTECODE=1",
                    f'exec {shlex.join(tray_argv())} "$@"',
                    "",
                ]
            ),
            encoding="utf-8",
        )
        self.tray.chmod(0o755)

    @property
    def marker(self) -> bytes:
        """In the environment of every process this remote runs."""
        return f"TRAY_STATE_DIR={self.state_dir}".encode()

    def write(self, session: Session) -> None:
        self.store.write(session)

    def running_streams(self) -> list[int]:
        return [
            pid
            for pid in processes_with_environ(self.marker)
            if b"\0--format\0jsonl" in _cmdline(pid)
        ]


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def host_config(
    sshd: Sshd,
    remote: Remote,
    *,
    name: str = "devbox",
    remote_command: str | None = None,
    key: Path | None = None,
    known_hosts: Path | None = None,
) -> HostConfig:
    return HostConfig(
        name=name,
        destination=f"{getpass.getuser()}@127.0.0.1",
        ssh_options=tuple(sshd.client_options(key, known_hosts)),
        remote_command=remote_command or shlex.quote(str(remote.tray)),
    )


def hosts_toml(*hosts: HostConfig) -> str:
    """``[[hosts]]`` tables for config.toml; JSON strings are TOML basic strings."""
    tables = []
    for host in hosts:
        tables.append(
            "\n".join(
                [
                    "[[hosts]]",
                    f"name = {json.dumps(host.name)}",
                    f"destination = {json.dumps(host.destination)}",
                    f"ssh_options = {json.dumps(list(host.ssh_options))}",
                    f"remote_command = {json.dumps(host.remote_command)}",
                    "",
                ]
            )
        )
    return "\n".join(tables)


def client_environ() -> dict[str, str]:
    """This user's environment without an agent: only the test's key is offered."""
    return {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "SSH_AGENT_PID")}


def make_session(
    session_id: str,
    state: str = "blocked",
    *,
    msg: str | None = "approve Bash: touch notes.txt",
    name: str = "api",
    alive: bool = True,
    now: float | None = None,
) -> Session:
    """A session whose launcher is this process, so it counts as running."""
    moment = time.time() if now is None else now
    records: tuple[Record, ...] = ()
    if state != "launcher":
        records = (
            Record(
                id="",
                state=state,
                kind="permission" if state == "blocked" else None,
                progress=None,
                app="claude-code",
                title=None,
                msg=msg,
                updated_at=moment,
            ),
        )
    return Session(
        id=session_id,
        name=name,
        command=("claude",),
        cwd="/home/me/api",
        pid=os.getpid() if alive else 2**22 + 7,
        child_pid=None,
        started_at=moment - 10,
        updated_at=moment,
        alive=alive,
        exit_code=None if alive else 0,
        source="program" if records else "launcher",
        records=records,
        pid_start=process_start_token(os.getpid()) if alive else None,
        name_given=True,
    )


@contextlib.contextmanager
def running_sshd(root: Path) -> Iterator[Sshd]:
    server = Sshd(root)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def run_tmux(socket: Path, *args: str) -> str:
    """One command to the tmux server at ``socket``, as the ssh client's user runs it."""
    done = subprocess.run(
        ["tmux", "-S", str(socket), *args],
        env={**client_environ(), "TERM": "xterm"},
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return done.stdout.strip()
