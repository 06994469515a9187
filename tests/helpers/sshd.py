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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tray
from helpers.processes import children_of, process_name
from helpers.tray_cli import tray_argv
from helpers.waiting import wait_for
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.session.model import Session
from tray.state.store import StateStore

SSHD = "/usr/sbin/sshd"
PROJECT_ROOT = Path(tray.__file__).resolve().parent.parent
START_TIMEOUT = 15.0
START_ATTEMPTS = 5
# What sshd logs when another process holds its port.
PORT_TAKEN = "Address already in use"


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
    """One sshd on a port of its own; :meth:`kill` drops it with every connection it holds."""

    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    started: bool = False

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
        self.config = self.root / "sshd_config"
        self._configure()
        if os.geteuid() == 0:
            # Privilege separation needs it; Debian's service makes it at boot.
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)

    def _configure(self) -> None:
        """The config and the client's known_hosts, for ``self.port``."""
        public = (self.root / "host_ed25519.pub").read_text(encoding="utf-8").split()
        self.known_hosts.write_text(
            f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n", encoding="utf-8"
        )
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
                    # Each login runs the user's shell start-up, which on a machine with
                    # pyenv rehashes its shims under a lock file; a login ended mid-rehash
                    # leaves that lock behind, and every later login then waits its 60 s.
                    # Our logins need no rehash: give it up at once instead of waiting.
                    "SetEnv PYENV_REHASH_TIMEOUT=0",
                    "",
                ]
            ),
            encoding="utf-8",
        )

    def start(self) -> None:
        """Start sshd and return once it listens on ``self.port``.

        sshd cannot bind port 0 and say which port it got, so the port is one that was
        free when chosen, and another process (a test on another worker) may take it
        first. Only sshd's own log can tell which happened, so it is read rather than the
        port probed (a probe could meet another worker's sshd): it says it listens, or
        that it could not bind, and then the first start tries a new port. A restart keeps
        its port, which the test's clients already know.
        """
        attempts = 1 if self.started else START_ATTEMPTS
        for _ in range(attempts):
            if self._start_once():
                self.started = True
                return
            self.port = free_port()
            self._configure()
        raise RuntimeError(f"sshd found no free port in {attempts} tries: {self._log_text()}")

    def _log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def _start_once(self) -> bool:
        """True once sshd listens; False when its port was taken (and it has exited)."""
        assert self.proc is None or self.proc.poll() is not None
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        proc = self.proc
        listening = f"Server listening on 127.0.0.1 port {self.port}."

        def outcome() -> str | None:
            with open(self.log, "rb") as log:
                log.seek(offset)
                said = log.read().decode(errors="replace")
            if listening in said:
                return "listening"
            if proc.poll() is not None:
                return "taken" if PORT_TAKEN in said else f"exited: {said}"
            return None

        found = wait_for(outcome, START_TIMEOUT, interval=0.05, what=f"sshd on {self.port}")
        if found.startswith("exited"):
            raise RuntimeError(f"sshd {found}")
        return found == "listening"

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
