"""``tray doctor``'s line per ``[[hosts]]`` entry, as a user runs it, against a real sshd
on loopback: one host with a tray behind it, one without."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from helpers.sshd import Remote, Sshd, client_environ, host_config, hosts_toml

from tray.core.hosts.ssh_commands import HostConfig

TIMEOUT = 60.0
_LINE = re.compile(r"(ok|warn|FAIL) +([^:]+): (.*)")


def run_doctor(tmp_path: Path, config: str) -> tuple[int, dict[str, tuple[str, str]]]:
    (tmp_path / "config" / "tray").mkdir(parents=True, exist_ok=True)
    (tmp_path / "config" / "tray" / "config.toml").write_text(config, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    leaky = ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "TRAY_SESSION_ID")
    env = {k: v for k, v in client_environ().items() if k not in leaky}
    env.update(
        HOME=str(home),
        TRAY_STATE_DIR=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "tray", "doctor"],
        env=env,
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    found: dict[str, tuple[str, str]] = {}
    for line in done.stdout.splitlines():
        match = _LINE.fullmatch(line)
        assert match is not None, f"not a check line: {line!r}"
        found[match.group(2)] = (match.group(1), match.group(3))
    return done.returncode, found


def test_one_line_per_host_ok_or_warn_with_the_fix(
    sshd: Sshd, remote: Remote, host: HostConfig, tmp_path: Path
) -> None:
    missing = host_config(sshd, remote, name="bare", remote_command="tray-not-installed-here")
    _, found = run_doctor(tmp_path, hosts_toml(host, missing))

    status, text = found["host devbox"]
    assert status == "ok"
    assert re.fullmatch(r"tray \S+ on \S+@127\.0\.0\.1", text), text

    status, text = found["host bare"]
    assert status == "warn"
    assert text.startswith("tray-not-installed-here: command not found on bare; fix: ")
    assert "pipx install tray" in text
    assert 'remote_command = "~/.local/bin/tray"' in text
    # Each host is one line, after the desktop's checks.
    assert list(found)[-2:] == ["host devbox", "host bare"]


def test_a_host_that_cannot_be_reached_is_a_warning_that_says_why(
    sshd: Sshd, remote: Remote, tmp_path: Path
) -> None:
    host = host_config(sshd, remote)
    sshd.stop()
    _, found = run_doctor(tmp_path, hosts_toml(host))
    status, text = found["host devbox"]
    assert status == "warn"
    assert "connection refused" in text
    assert "fix: check that sshd runs on the host" in text


def test_a_broken_config_is_one_failed_line_not_a_crash(tmp_path: Path) -> None:
    code, found = run_doctor(tmp_path, '[[hosts]]\nname = "x"\ndestination = "-oProxyCommand=x"\n')
    status, text = found["config"]
    assert status == "FAIL"
    assert "must not start with '-'" in text
    assert code == 1
