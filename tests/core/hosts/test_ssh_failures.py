"""ssh's stderr and exit status into one reason and one fix: pure, on what ssh really prints."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.base.safe_text import cells, clean_text
from tray.core.hosts.ssh_commands import HostConfig
from tray.core.hosts.ssh_failures import Failure, classify, short_line

HOST = HostConfig("devbox", "me@devbox", ("-p", "2222"), "tray")
CHANGED_KEY = """\
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @
@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@
IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!
Someone could be eavesdropping on you right now (man-in-the-middle attack)!
Host key for [127.0.0.1]:2222 has changed and you have requested strict checking.
Host key verification failed.
"""


@pytest.mark.parametrize(
    ("stderr", "code", "kind", "fix_words"),
    [
        ("me@devbox: Permission denied (publickey).\n", 255, "auth", "ssh-add"),
        ("me@devbox: Permission denied (publickey,password).\n", 255, "auth", "ssh-add"),
        ("Received disconnect: Too many authentication failures\n", 255, "auth", "ssh-add"),
        ("Host key verification failed.\n", 255, "host-key", "ssh me@devbox"),
        (
            "No ED25519 host key is known for devbox and you have requested strict checking.\n"
            "Host key verification failed.\n",
            255,
            "host-key",
            "accept",
        ),
        (CHANGED_KEY, 255, "host-key-changed", "ssh-keygen -R"),
        (
            "ssh: Could not resolve hostname devbox: Name or service not known\n",
            255,
            "resolve",
            "destination",
        ),
        (
            "ssh: Could not resolve hostname devbox: Temporary failure in name resolution\n",
            255,
            "resolve",
            "network",
        ),
        ("ssh: connect to host devbox port 2222: Connection refused\n", 255, "refused", "-p"),
        ("ssh: connect to host devbox port 22: No route to host\n", 255, "no-route", "network"),
        ("ssh: connect to host devbox port 22: Network is unreachable\n", 255, "no-route", "VPN"),
        ("ssh: connect to host devbox port 22: Connection timed out\n", 255, "timeout", "up"),
        ("Connection timed out during banner exchange\n", 255, "timeout", "up"),
        ("Connection to devbox closed by remote host.\n", 255, "lost", None),
        ("client_loop: send disconnect: Broken pipe\n", 255, "lost", None),
        ("Timeout, server devbox not responding.\n", 255, "lost", None),
        ("kex_exchange_identification: read: Connection reset by peer\n", 255, "lost", None),
        ("bash: line 1: tray: command not found\n", 127, "no-tray", "~/.local/bin/tray"),
        ("bash: /home/me/.local/bin/tray: No such file or directory\n", 127, "no-tray", "pipx"),
        ("zsh:1: command not found: tray\n", 127, "no-tray", "remote_command"),
        ("", 127, "no-tray", "install tray there"),
        ("bash: line 1: /opt/tray: Permission denied\n", 126, "not-executable", "executable"),
        (
            "tray status: argument --format: invalid choice: 'jsonl' (choose from 'table', "
            "'json', 'waybar', 'tmux') (see 'tray status --help')\n",
            2,
            "old-tray",
            "upgrade",
        ),
        ("tray status: unrecognized arguments: --watch\n", 2, "old-tray", "upgrade"),
    ],
)
def test_what_ssh_prints_becomes_a_reason_and_a_fix(
    stderr: str, code: int, kind: str, fix_words: str | None
) -> None:
    failure = classify(HOST, stderr, code)
    assert failure.kind == kind
    assert "\n" not in failure.reason
    if fix_words is None:
        assert failure.fix is None
    else:
        assert failure.fix is not None
        assert fix_words in failure.fix
        assert "\n" not in failure.fix
        assert failure.line() == f"{failure.reason}; fix: {failure.fix}"


def test_noise_from_the_remote_profile_does_not_hide_the_error() -> None:
    stderr = "Welcome to devbox!\nbash: warning: setlocale: LC_ALL: cannot change locale\n"
    stderr += "bash: line 1: tray: command not found\n"
    assert classify(HOST, stderr, 127).kind == "no-tray"


def test_the_no_tray_reason_names_the_command_and_the_host() -> None:
    host = HostConfig("devbox", "me@devbox", (), "~/bin/tray")
    failure = classify(host, "", 127)
    assert failure.reason == "~/bin/tray: command not found on devbox"


def test_an_unknown_error_is_its_last_line() -> None:
    failure = classify(HOST, "something\n\ntray status: cannot read /run/x: gone\n\n", 1)
    assert failure == Failure("other", "tray status: cannot read /run/x: gone")


def test_silence_says_the_status() -> None:
    assert classify(HOST, "", 3).reason == "ssh exited with status 3 and said nothing"
    assert classify(HOST, "", None).reason == "ssh stopped"


def test_a_remote_exit_of_255_is_read_as_ssh_s_own() -> None:
    # 255 is what ssh uses; "command not found" then means nothing on its own.
    assert classify(HOST, "ssh: connect to host x port 1: Connection refused", 255).kind == (
        "refused"
    )


@given(st.text(max_size=500), st.none() | st.integers(-64, 300))
def test_anything_becomes_one_short_line(stderr: str, code: int | None) -> None:
    failure = classify(HOST, stderr, code)
    assert failure.reason
    assert "\n" not in failure.line()
    assert len(failure.reason) <= 200
    assert clean_text(failure.line()) == failure.line()


@given(st.text(max_size=2000), st.integers(2, 300))
def test_short_lines_are_bounded_in_characters_and_cells(text: str, limit: int) -> None:
    line = short_line(text, limit)
    assert len(line) <= limit
    assert cells(line) <= limit
    assert "\n" not in line


def test_a_line_of_combining_marks_is_still_short() -> None:
    zalgo = "a" + "\u0300" * 10000
    assert len(short_line(zalgo)) <= 160
    assert len(classify(HOST, zalgo, 1).reason) <= 160
