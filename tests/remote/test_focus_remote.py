"""Focus on another machine: the tmux facts in the stream, their checks, and a real
``tmux select-window ; select-pane`` over a real sshd on loopback.

The remote session comes from a real ``tray run`` in a real tmux window, with the
remote's own state directory, so the pane and socket are what a launcher records.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.host_sessions import make_session
from helpers.sshd import Remote, client_environ, run_tmux
from helpers.waiting import wait_for
from hypothesis import given
from hypothesis import strategies as st

from tray.core.hosts.remote_sessions import (
    REMOTE_PANE_KEY,
    REMOTE_SOCKET_KEY,
    parse_document,
    remote_tmux,
)
from tray.core.hosts.ssh_commands import HostConfig, focus_argv
from tray.core.view.overview import build_row
from tray.core.worker.marks import AppMemory
from tray.desktop.focus import focus_session
from tray.remote.actions import fetch_state, focus_remote
from tray.remote.stream import stream_document, tmux_facts

DEVBOX = HostConfig("devbox", "me@devbox", ("-p", "2222"))
SOCKET = "/tmp/tmux-1000/default"


def test_the_stream_sends_the_pane_and_the_socket_of_tmux() -> None:
    terminal = {"TMUX": f"{SOCKET},4242,0", "TMUX_PANE": "%3", "WINDOWID": "77"}
    session = dataclasses.replace(make_session("1-a"), terminal=terminal)
    (entry,) = stream_document([session])["sessions"]
    assert entry["tmux"] == {"pane": "%3", "socket": SOCKET}
    assert "terminal" not in entry
    # A socket path with commas is cut at the last two, as tmux writes TMUX.
    assert tmux_facts({"TMUX": "/tmp/a,b/s,1,2", "TMUX_PANE": "%1"}) == {
        "pane": "%1",
        "socket": "/tmp/a,b/s",
    }
    assert tmux_facts({"TMUX_PANE": "%1"}) is None
    assert tmux_facts({"WINDOWID": "77"}) is None


def _parsed(tmux: object) -> Any:
    document = stream_document([make_session("1-a")])
    document["sessions"][0]["tmux"] = tmux
    (session,) = parse_document("devbox", document, 0.0).sessions
    return session


def test_valid_tmux_facts_are_kept_under_keys_of_their_own() -> None:
    session = _parsed({"pane": "%3", "socket": SOCKET})
    assert dict(session.terminal) == {REMOTE_PANE_KEY: "%3", REMOTE_SOCKET_KEY: SOCKET}
    assert remote_tmux(session) == ("%3", SOCKET)
    assert build_row(session, AppMemory(), {}, 0.0).focusable
    assert not build_row(session, AppMemory(), {}, 0.0, stale=True).focusable
    # The local focus code never takes them for a pane on this machine.
    result = focus_session(session.terminal, env={"PATH": "/nonexistent"})
    assert not result.ok
    assert "no tmux pane" in result.message


@pytest.mark.parametrize(
    "tmux",
    [
        None,
        "x",
        {"pane": "%3"},
        {"socket": SOCKET},
        {"pane": "3", "socket": SOCKET},
        {"pane": "%3;reboot", "socket": SOCKET},
        {"pane": "%3 ", "socket": SOCKET},
        {"pane": "%1234567890", "socket": SOCKET},
        {"pane": "%3", "socket": "tmp/relative"},
        {"pane": "%3", "socket": "/tmp/a b"},
        {"pane": "%3", "socket": "/tmp/$(reboot)"},
        {"pane": "%3", "socket": "/tmp/a;b"},
        {"pane": "%3", "socket": "/tmp/a\nb"},
        {"pane": "%3", "socket": "/tmp/\u00e9"},
        {"pane": "%3", "socket": "/" + "a" * 1024},
        {"pane": 3, "socket": SOCKET},
    ],
)
def test_anything_else_is_dropped_and_leaves_no_focus(tmux: object) -> None:
    session = _parsed(tmux)
    assert dict(session.terminal) == {}
    assert remote_tmux(session) is None
    assert not build_row(session, AppMemory(), {}, 0.0).focusable


# Half the examples are panes and sockets of the right shape, so that the branch which
# keeps them runs as often as the one which drops them; the other half are any text,
# or the right shape with one hostile character put in.
_PANES = st.builds(lambda digits: "%" + digits, st.text("0123456789", min_size=1, max_size=9))
_SOCKETS = st.builds(
    lambda rest: "/" + rest,
    st.text("abcxyzABC019_./-", min_size=1, max_size=60),
)


def _spoiled(words: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda word, at, bad: word[:at] + bad + word[at:],
        words,
        st.integers(0, 60),
        st.sampled_from([" ", ";", "$", "`", "\n", "\x1b", "'", "\u00e9", "\\", "*"]),
    )


@given(
    st.one_of(_PANES, _spoiled(_PANES), st.text(max_size=30)),
    st.one_of(_SOCKETS, _spoiled(_SOCKETS), st.text(max_size=60)),
)
def test_what_is_kept_is_only_plain_words_for_the_remote_shell(pane: str, socket: str) -> None:
    facts = remote_tmux(_parsed({"pane": pane, "socket": socket}))
    plain_pane = pane[:1] == "%" and pane[1:].isdigit() and pane[1:].isascii() and len(pane) <= 10
    plain_socket = (
        socket[:1] == "/"
        and 2 <= len(socket) <= 1024
        and all(c.isascii() and (c.isalnum() or c in "_./-") for c in socket)
    )
    if plain_pane and plain_socket:
        assert facts == (pane, socket)
    else:
        assert facts is None


def test_the_command_line_is_an_argv_with_an_escaped_separator() -> None:
    argv = focus_argv(DEVBOX, "%3", SOCKET)
    assert argv[0] == "ssh"
    assert argv[-3:] == [
        "--",
        "me@devbox",
        f"tmux -S {SOCKET} select-window -t %3 \\; select-pane -t %3",
    ]
    assert "BatchMode=yes" in argv
    assert argv[argv.index("--") - 2 : argv.index("--")] == ["-p", "2222"]
    for pane, socket in [("%3;x", SOCKET), ("%3", "relative"), ("%3", "/a b")]:
        with pytest.raises(ValueError, match="not a tmux"):
            focus_argv(DEVBOX, pane, socket)
    with pytest.raises(ValueError, match="must not start with '-'"):
        focus_argv(HostConfig("x", "-oProxyCommand=x"), "%3", SOCKET)


# Over real ssh.


def test_focus_selects_the_remote_sessions_tmux_window_over_ssh(
    host: HostConfig, remote: Remote, tmux_socket: Path, tmp_path: Path
) -> None:
    child = tmp_path / "agent.py"
    child.write_text(
        "import sys\n"
        "sys.stdout.write('\\x1b]7501;state=blocked:kind=permission:app=claude-code\\x07')\n"
        "sys.stdout.flush()\n"
        "input()\n"
    )
    tray = f"{remote.tray} run --name agent -- {sys.executable} {child}"
    run_tmux(tmux_socket, "new-window", "-t", "work:1", "-c", str(tmp_path), tray)
    pane = run_tmux(tmux_socket, "display", "-p", "-t", "work:1", "#{pane_id}")
    run_tmux(tmux_socket, "select-window", "-t", "work:0")
    try:

        def agent() -> Any:
            state = fetch_state(host, environ=client_environ())
            return next((s for s in state.sessions if s.state == "blocked"), None)

        session = wait_for(agent, what="the remote agent to block")
        assert remote_tmux(session) == (pane, str(tmux_socket))

        ok, message = focus_remote(host, pane, str(tmux_socket), environ=client_environ())
        assert ok, message
        assert message == f"selected tmux pane {pane} on devbox"
        assert run_tmux(tmux_socket, "display", "-p", "#{window_index}") == "1"

        ok, message = focus_remote(host, "%999", str(tmux_socket), environ=client_environ())
        assert not ok
        assert "%999" in message
    finally:
        run_tmux(tmux_socket, "send-keys", "-t", "work:1", "Enter")
