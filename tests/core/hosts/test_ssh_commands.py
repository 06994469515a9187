"""``[[hosts]]`` validation and the ssh command lines: pure."""

from __future__ import annotations

import shlex
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.core.config.parsing import ConfigError
from tray.core.hosts.ssh_commands import (
    REMOTE_ID_PATTERN,
    HostConfig,
    dismiss_argv,
    parse_hosts,
    ssh_argv,
    stream_argv,
    valid_remote_id,
    version_argv,
)

CONTRACT_EXAMPLE = """
[[hosts]]
name = "devbox"
destination = "me@devbox"
ssh_options = ["-p", "2222"]
remote_command = "tray"
"""


def test_the_contract_example_parses() -> None:
    hosts = parse_hosts(tomllib.loads(CONTRACT_EXAMPLE)["hosts"])
    assert hosts == (HostConfig("devbox", "me@devbox", ("-p", "2222"), "tray"),)


def test_optional_keys_default() -> None:
    (host,) = parse_hosts([{"name": "lab", "destination": "lab.example.org"}])
    assert host == HostConfig("lab", "lab.example.org", (), "tray")


def test_an_empty_list_is_no_hosts() -> None:
    assert parse_hosts([]) == ()


def test_remote_command_is_trimmed() -> None:
    (host,) = parse_hosts([{"name": "a", "destination": "b", "remote_command": " ~/x/tray "}])
    assert host.remote_command == "~/x/tray"


@pytest.mark.parametrize(
    ("value", "key", "words"),
    [
        ({"hosts": 1}, "hosts", "array of tables"),
        ([1], "hosts[0]", "expected a table"),
        ([{"destination": "x"}], "hosts[0].name", "missing"),
        ([{"name": "x"}], "hosts[0].destination", "missing"),
        ([{"name": "x", "destination": "y", "port": 22}], "hosts[0].port", "unknown key"),
        ([{"name": "", "destination": "y"}], "hosts[0].name", "letters, digits"),
        ([{"name": "dev box", "destination": "y"}], "hosts[0].name", "letters, digits"),
        ([{"name": "a/b", "destination": "y"}], "hosts[0].name", "letters, digits"),
        ([{"name": "host:x", "destination": "y"}], "hosts[0].name", "letters, digits"),
        ([{"name": "-x", "destination": "y"}], "hosts[0].name", "letters, digits"),
        ([{"name": "x" * 41, "destination": "y"}], "hosts[0].name", "letters, digits"),
        ([{"name": 3, "destination": "y"}], "hosts[0].name", "got 3"),
        ([{"name": "x", "destination": ""}], "hosts[0].destination", "empty"),
        ([{"name": "x", "destination": 5}], "hosts[0].destination", "expected a string"),
        ([{"name": "x", "destination": "-oProxyCommand=sh"}], "hosts[0].destination", "'-'"),
        ([{"name": "x", "destination": "me@dev box"}], "hosts[0].destination", "spaces"),
        ([{"name": "x", "destination": "me@dev\nbox"}], "hosts[0].destination", "control"),
        ([{"name": "x", "destination": "d" * 256}], "hosts[0].destination", "longer"),
        (
            [{"name": "x", "destination": "y", "ssh_options": "-p 22"}],
            "hosts[0].ssh_options",
            "list",
        ),
        ([{"name": "x", "destination": "y", "ssh_options": [22]}], "hosts[0].ssh_options", "list"),
        (
            [{"name": "x", "destination": "y", "ssh_options": ["-p", "2\n2"]}],
            "hosts[0].ssh_options[1]",
            "line breaks",
        ),
        (
            [{"name": "x", "destination": "y", "ssh_options": ["--", "evil"]}],
            "hosts[0].ssh_options",
            '"--"',
        ),
        (
            [{"name": "x", "destination": "y", "ssh_options": ["-v"] * 65}],
            "hosts[0].ssh_options",
            "more than",
        ),
        (
            [{"name": "x", "destination": "y", "remote_command": ""}],
            "hosts[0].remote_command",
            "expected",
        ),
        (
            [{"name": "x", "destination": "y", "remote_command": " "}],
            "hosts[0].remote_command",
            "expected",
        ),
        (
            [{"name": "x", "destination": "y", "remote_command": 1}],
            "hosts[0].remote_command",
            "expected",
        ),
        (
            [{"name": "x", "destination": "y", "remote_command": "tray\nrm -rf ~"}],
            "hosts[0].remote_command",
            "one line",
        ),
        (
            [{"name": "a", "destination": "y"}, {"name": "A", "destination": "z"}],
            "hosts[1].name",
            "already the name of hosts[0]",
        ),
    ],
)
def test_bad_entries_name_their_key(value: object, key: str, words: str) -> None:
    if isinstance(value, dict):
        value = value["hosts"]
    with pytest.raises(ConfigError) as caught:
        parse_hosts(value)
    assert caught.value.key == key
    assert words in caught.value.problem
    message = str(caught.value)
    assert message.startswith(f"{key}: ")
    assert "\n" not in message
    assert isinstance(caught.value, ValueError)


def test_the_key_prefix_is_the_callers() -> None:
    with pytest.raises(ConfigError, match=r"^remote\.hosts\[0\]\.name"):
        parse_hosts([{"destination": "x"}], key="remote.hosts")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), st.lists, max_leaves=8))
def test_any_value_parses_or_fails_with_one_clear_line(value: object) -> None:
    try:
        parse_hosts(value)
    except ConfigError as error:
        assert "\n" not in str(error)
        assert str(error).startswith("hosts")


@given(
    st.dictionaries(
        st.sampled_from(["name", "destination", "ssh_options", "remote_command", "other"]),
        st.none() | st.text(max_size=30) | st.lists(st.text(max_size=10), max_size=3),
    )
)
def test_any_table_parses_or_fails_naming_its_key(table: dict[str, object]) -> None:
    try:
        (host,) = parse_hosts([table])
    except ConfigError as error:
        assert error.key.startswith("hosts[0]")
        assert "\n" not in str(error)
        return
    assert not host.destination.startswith("-")
    assert "--" not in host.ssh_options


# Command lines.

HOST = HostConfig("devbox", "me@devbox", ("-p", "2222"), "~/.local/bin/tray")


def test_the_stream_command_line() -> None:
    assert stream_argv(HOST) == [
        "ssh",
        "-T",
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=10",
        "-o",
        "ClearAllForwardings=yes",
        "-o",
        "ControlMaster=no",
        "-o",
        "ServerAliveInterval=15",
        "-p",
        "2222",
        "--",
        "me@devbox",
        "~/.local/bin/tray status --watch --format jsonl",
    ]


def test_the_version_command_line_has_no_keepalive() -> None:
    argv = version_argv(HOST)
    assert argv[-1] == "~/.local/bin/tray --version"
    assert "ServerAliveInterval=15" not in argv
    assert argv[argv.index("--") + 1] == "me@devbox"


def test_a_destination_starting_with_a_dash_never_reaches_ssh() -> None:
    with pytest.raises(ValueError, match="'-'"):
        ssh_argv(HostConfig("x", "-oProxyCommand=touch /tmp/pwned"), ["--version"])


def test_dismiss_puts_only_checked_ids_on_the_line() -> None:
    assert dismiss_argv(HOST, ["4242-a1b2c3", "7-ff"])[-1] == (
        "~/.local/bin/tray dismiss 4242-a1b2c3 7-ff"
    )
    for bad in ["", "-rf", ".hidden", "a b", "a;rm", "$(x)", "a/b", "`x`", "x" * 201, "é"]:
        with pytest.raises(ValueError, match="not a session id"):
            dismiss_argv(HOST, ["4242-a1b2c3", bad])
    with pytest.raises(ValueError):
        dismiss_argv(HOST, [])


@given(
    st.one_of(
        st.from_regex(REMOTE_ID_PATTERN, fullmatch=True),
        st.text(max_size=60),
        st.builds(lambda a, b: a + b, st.from_regex(REMOTE_ID_PATTERN, fullmatch=True), st.text()),
    )
)
def test_a_valid_remote_id_needs_no_quoting_in_any_shell(session_id: str) -> None:
    if valid_remote_id(session_id):
        # Judged by the standard library's own idea of a word that needs no quotes, and by
        # what would make one an option, a hidden path or a glob in sh, bash, zsh or fish.
        assert shlex.quote(session_id) == session_id
        assert session_id[0] not in "-.~"
        assert not set(session_id) & set("*?[]{}%~=@+:,")
