"""``tray status`` with ``[[hosts]]``, as a user runs it, against a real sshd on loopback:
this machine's sessions, the host's, ``--host NAME``, ``--local``, a lost host, and a
config that tray refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers.host_sessions import make_session
from helpers.sshd import Remote, Sshd, client_environ, host_config, hosts_toml

from tray.core.hosts.ssh_commands import HostConfig
from tray.state.store import StateStore

TIMEOUT = 60.0


def tray(tmp_path: Path, config: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config" / "tray").mkdir(parents=True, exist_ok=True)
    (tmp_path / "config" / "tray" / "config.toml").write_text(config, encoding="utf-8")
    env = {k: v for k, v in client_environ().items() if k != "TRAY_SESSION_ID"}
    env.update(TRAY_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    done = subprocess.run(
        [sys.executable, "-m", "tray", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def ids(done: subprocess.CompletedProcess[str]) -> list[str]:
    document: dict[str, Any] = json.loads(done.stdout)
    return [session["id"] for session in document["sessions"]]


def test_status_lists_both_machines_and_each_on_request(
    host: HostConfig, remote: Remote, tmp_path: Path
) -> None:
    local = StateStore(tmp_path / "state")
    local.ensure()
    local.write(make_session("1-here", "working", name="here"))
    remote.write(make_session("2-there", name="there"))
    config = hosts_toml(host)

    both = tray(tmp_path, config, "status", "--json")
    assert both.returncode == 0, both.stderr
    assert sorted(ids(both)) == ["1-here", "host:devbox/2-there"]
    there = next(s for s in json.loads(both.stdout)["sessions"] if s["id"] != "1-here")
    assert there["name"] == "devbox \u00b7 there"
    assert there["state"] == "blocked"

    only_host = tray(tmp_path, config, "status", "--json", "--host", "devbox")
    assert only_host.returncode == 0, only_host.stderr
    assert ids(only_host) == ["host:devbox/2-there"]

    only_local = tray(tmp_path, config, "status", "--json", "--local")
    assert only_local.returncode == 0, only_local.stderr
    assert ids(only_local) == ["1-here"]

    table = tray(tmp_path, config, "status", "--host", "devbox")
    assert table.returncode == 0, table.stderr
    assert "devbox \u00b7 there" in table.stdout
    assert "1-here" not in table.stdout

    unknown = tray(tmp_path, config, "status", "--host", "nope")
    assert unknown.returncode == 2
    assert "no [[hosts]] entry named 'nope'" in unknown.stderr


def test_a_lost_host_is_one_line_and_the_rest_still_shows(
    sshd: Sshd, remote: Remote, tmp_path: Path
) -> None:
    host = host_config(sshd, remote)
    StateStore(tmp_path / "state").ensure()
    StateStore(tmp_path / "state").write(make_session("1-here", "working", name="here"))
    sshd.stop()
    done = tray(tmp_path, hosts_toml(host), "status", "--json")
    assert done.returncode == 1
    assert ids(done) == ["1-here"]
    (line,) = done.stderr.splitlines()
    assert line.startswith("tray status: devbox: connection refused by ")


def test_a_destination_that_ssh_would_read_as_an_option_is_refused(tmp_path: Path) -> None:
    config = '[[hosts]]\nname = "devbox"\ndestination = "-oProxyCommand=touch /tmp/owned"\n'
    for args in (("status",), ("status", "--json", "--host", "devbox"), ("app",)):
        done = tray(tmp_path, config, *args)
        assert done.returncode == 2, (args, done.stderr)
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"tray {args[0]}: ")
        assert "hosts[0].destination: must not start with '-'" in line
        assert done.stdout == ""
