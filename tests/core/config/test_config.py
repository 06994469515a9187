"""config.toml into typed settings: defaults, durations, quiet hours, and errors naming the key."""

from __future__ import annotations

import io
import re
import tomllib
from pathlib import Path

import pytest
from helpers.answer_keys import SHIPPED_KEYS, SHIPPED_SETTINGS
from helpers.app_imports import app_libraries_imported
from hypothesis import assume, given
from hypothesis import strategies as st

from tray.core.answers.gate import DEFAULT_SETTINGS, AppKeys
from tray.core.config.durations import parse_duration
from tray.core.config.settings import (
    Config,
    ConfigError,
    PolicySettings,
    SessionsConfig,
    parse_config,
)
from tray.core.policy.mutes import in_quiet_hours
from tray.protocol.state import State
from tray.state.config_file import load_config
from tray.state.environment import Environment


def env_for(config_home: Path) -> Environment:
    return Environment(
        environ={"XDG_CONFIG_HOME": str(config_home)},
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )


def write_config(config_home: Path, text: str | bytes) -> Path:
    path = config_home / "tray" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_gives_the_documented_defaults(tmp_path: Path) -> None:
    config = load_config(env_for(tmp_path))
    assert config.sessions.keep_ended == 24 * 3600
    notify = config.notify
    assert notify.enabled is True
    assert notify.states == {"blocked", "error", "done"}
    assert (notify.settle, notify.dedup_window, notify.burst, notify.burst_window) == (
        1.0,
        30.0,
        3,
        10.0,
    )
    assert (notify.typing_grace, notify.done_after, notify.quiet_hours) == (5.0, 30.0, None)
    assert (notify.when_focused, notify.terminal_notifications, notify.remind) == (
        False,
        True,
        300.0,
    )


def test_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    write_config(tmp_path, "")
    assert load_config(env_for(tmp_path)) == Config(answer=SHIPPED_SETTINGS)


def test_every_key_is_read(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """
        [sessions]
        keep_ended = "2h"

        [notify]
        enabled = false
        states = ["done", "blocked"]
        settle = 0.5
        dedup_window = "1m"
        burst = 5
        burst_window = 20
        typing_grace = "750ms"
        done_after = "1h30m"
        quiet_hours = "22:30-07:00"
        when_focused = true
        terminal_notifications = false
        remind = "10m"
        """,
    )
    assert load_config(env_for(tmp_path)) == Config(
        sessions=SessionsConfig(keep_ended=7200.0),
        notify=PolicySettings(
            enabled=False,
            states=frozenset({State.BLOCKED, State.DONE}),
            settle=0.5,
            dedup_window=60.0,
            burst=5,
            burst_window=20.0,
            typing_grace=0.75,
            done_after=5400.0,
            quiet_hours=(22 * 60 + 30, 7 * 60),
            when_focused=True,
            terminal_notifications=False,
            remind=600.0,
        ),
        answer=SHIPPED_SETTINGS,
    )


def test_config_lives_under_xdg_config_home(tmp_path: Path) -> None:
    write_config(tmp_path / "elsewhere", "[sessions]\nkeep_ended = 5\n")
    assert load_config(env_for(tmp_path)).sessions.keep_ended == 24 * 3600
    assert load_config(env_for(tmp_path / "elsewhere")).sessions.keep_ended == 5


def test_relative_xdg_config_home_is_ignored() -> None:
    directory = Environment(environ={"XDG_CONFIG_HOME": "relative"}).config_dir()
    assert directory.is_absolute()
    assert directory.name == "tray"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        (7, 7.0),
        (2.5, 2.5),
        ("500ms", 0.5),
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("2d", 172800.0),
        ("1.5h", 5400.0),
        ("1h30m", 5400.0),
        ("1m30s250ms", 90.25),
        (" 10s ", 10.0),
        ("12", 12.0),
    ],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value",
    [-1, -0.5, float("inf"), float("nan"), True, "x", "", "5 m", "5mm", "m", "1h-5m", "-5s",
     "5 s", "1e3s", "s5", "5ms5", [], {}],
)  # fmt: skip
def test_bad_durations_are_refused(value: object) -> None:
    with pytest.raises(ValueError, match="seconds >= 0"):
        parse_duration(value)


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["ms", "s", "m", "h", "d"]))
def test_every_unit_scales(amount: int, unit: str) -> None:
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    assert parse_duration(f"{amount}{unit}") == pytest.approx(amount * scale)


@pytest.mark.parametrize(
    ("toml", "key", "shown"),
    [
        ('[notify]\nsettle = "x"', "notify.settle", '"x"'),
        ("[notify]\nsettle = -1", "notify.settle", "-1"),
        ("[notify]\ndedup_window = true", "notify.dedup_window", "true"),
        ('[notify]\nburst_window = "10"x', None, None),
        ('[sessions]\nkeep_ended = "forever"', "sessions.keep_ended", '"forever"'),
        ('[notify]\nenabled = "yes"', "notify.enabled", '"yes"'),
        ("[notify]\nburst = 0", "notify.burst", "0"),
        ("[notify]\nburst = 2.0", "notify.burst", "2.0"),
        ("[notify]\nburst = true", "notify.burst", "true"),
        ('[notify]\nstates = ["done", "idle"]', "notify.states", '["done", "idle"]'),
        ('[notify]\nstates = "done"', "notify.states", '"done"'),
        ('[notify]\nquiet_hours = "22:00"', "notify.quiet_hours", '"22:00"'),
        ('[notify]\nquiet_hours = "24:00-07:00"', "notify.quiet_hours", '"24:00-07:00"'),
        ('[notify]\nquiet_hours = "22:60-07:00"', "notify.quiet_hours", '"22:60-07:00"'),
        ('[notify]\nquiet_hours = "07:00-07:00"', "notify.quiet_hours", '"07:00-07:00"'),
        ("[notify]\nquiet_hours = 22", "notify.quiet_hours", "22"),
        ('[notify]\nwhen_focused = "no"', "notify.when_focused", '"no"'),
        ("[notify]\nwhen_focused = 0", "notify.when_focused", "0"),
        ("[notify]\nterminal_notifications = 1", "notify.terminal_notifications", "1"),
        ('[notify]\nterminal_notifications = "off"', "notify.terminal_notifications", '"off"'),
        ('[notify]\nremind = "soon"', "notify.remind", '"soon"'),
        ("[notify]\nremind = -5", "notify.remind", "-5"),
        ("[notify]\nremind = false", "notify.remind", "false"),
        ("[notify]\nremind_after = 1", "notify.remind_after", None),
        ("[notify]\nsetle = 1", "notify.setle", None),
        ("[sessions]\nkeep = 1", "sessions.keep", None),
        ("[notfy]\nsettle = 1", "notfy", None),
        ("sessions = 3", "sessions", "3"),
        ("version = 1", "version", None),
    ],
)
def test_errors_name_the_key_and_the_value(
    tmp_path: Path, toml: str, key: str | None, shown: str | None
) -> None:
    path = write_config(tmp_path, toml + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(env_for(tmp_path))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    if key is not None:
        assert f": {key}: " in message
    if shown is not None:
        assert message.endswith(f"got {shown}")


def test_unknown_key_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"config\.toml: notify\.setle: unknown key .*settle"):
        parse_config({"notify": {"setle": 1}})


def test_the_documented_error_wording() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"notify": {"settle": "x"}})
    assert str(caught.value).startswith("config.toml: notify.settle: expected a number of seconds")
    assert str(caught.value).endswith('got "x"')


def test_toml_syntax_error_is_one_line_with_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[notify\nsettle = 1\n")
    with pytest.raises(ConfigError) as caught:
        load_config(env_for(tmp_path))
    assert str(caught.value).startswith(f"{path}: ")


def test_non_utf8_file_is_a_config_error(tmp_path: Path) -> None:
    write_config(tmp_path, b'[notify]\nsettle = "\xff"\n')
    with pytest.raises(ConfigError, match=r"UTF-8|utf-8"):
        load_config(env_for(tmp_path))


def test_unreadable_path_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "tray" / "config.toml").mkdir(parents=True)
    with pytest.raises(ConfigError, match=r"config\.toml: Is a directory"):
        load_config(env_for(tmp_path))


def test_states_are_kept_in_canonical_order_without_duplicates() -> None:
    config = parse_config({"notify": {"states": ["done", "error", "done"]}})
    assert config.notify.states == {"error", "done"}
    assert parse_config({"notify": {"states": []}}).notify.states == frozenset()


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [("22:00-07:30", 1320, 450), ("9:05-17:00", 545, 1020), ("00:00 - 23:59", 0, 1439)],
)
def test_quiet_hours_parse(text: str, start: int, end: int) -> None:
    assert parse_config({"notify": {"quiet_hours": text}}).notify.quiet_hours == (start, end)


def test_quiet_hours_within_a_day() -> None:
    hours = (9 * 60, 17 * 60)
    assert [in_quiet_hours(hours, m) for m in (0, 539, 540, 1019, 1020, 1439)] == [
        False,
        False,
        True,
        True,
        False,
        False,
    ]


def test_quiet_hours_wrapping_midnight() -> None:
    hours = (22 * 60, 7 * 60)
    assert [in_quiet_hours(hours, m) for m in (0, 419, 420, 1319, 1320, 1439)] == [
        True,
        True,
        False,
        False,
        True,
        True,
    ]


@given(st.integers(0, 1439), st.integers(0, 1439), st.integers(0, 1439))
def test_quiet_hours_wrap_is_the_complement_of_the_day_window(
    start: int, end: int, minute: int
) -> None:
    assume(start != end)
    forward = in_quiet_hours((start, end), minute)
    backward = in_quiet_hours((end, start), minute)
    assert forward != backward


# [shell]: what `tray init` wraps and which long commands it never reports.


def test_shell_defaults_are_the_contracts() -> None:
    shell = parse_config({}).shell
    assert shell.wrap == (
        "claude",
        "codex",
        "pi",
        "crush",
        "gemini",
        "opencode",
        "aider",
        "goose",
        "amp",
        "cursor-agent",
        "copilot",
    )
    assert shell.ignore == ("vim", "nvim", "less", "man", "ssh", "tmux", "watch", "top", "htop")


def test_shell_lists_replace_the_defaults_in_order_without_repeats() -> None:
    shell = parse_config({"shell": {"wrap": ["codex", "c++", "codex"], "ignore": []}}).shell
    assert shell.wrap == ("codex", "c++")
    assert shell.ignore == ()
    assert parse_config({"shell": {"ignore": ["emacs"]}}).shell.wrap == Config().shell.wrap


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"wrap": "claude"}, "shell.wrap"),
        ({"wrap": ["claude", 1]}, "shell.wrap"),
        ({"wrap": ["my agent"]}, "shell.wrap"),
        ({"wrap": ["-x"]}, "shell.wrap"),
        ({"wrap": ["$(reboot)"]}, "shell.wrap"),
        ({"ignore": [""]}, "shell.ignore"),
        ({"ignore": ["a;b"]}, "shell.ignore"),
        ({"wrapped": ["claude"]}, "shell.wrapped"),
    ],
)
def test_shell_errors_name_the_key(table: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^config\.toml: {key}: "):
        parse_config({"shell": table})


def test_shell_must_be_a_table() -> None:
    with pytest.raises(ConfigError, match=r"shell: expected a table"):
        parse_config({"shell": ["claude"]})


def test_shell_from_the_file(tmp_path: Path) -> None:
    (tmp_path / "tray").mkdir()
    (tmp_path / "tray" / "config.toml").write_text('[shell]\nwrap = ["aider"]\n')
    assert load_config(env_for(tmp_path)).shell.wrap == ("aider",)


@pytest.mark.parametrize(("value", "seconds"), [("0", 0.0), (0, 0.0), ("5m", 300.0), ("90s", 90.0)])
def test_remind_is_a_duration_and_zero_turns_it_off(value: object, seconds: float) -> None:
    assert parse_config({"notify": {"remind": value}}).notify.remind == seconds


def test_the_contract_example_reads_as_the_defaults(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """
        [notify]
        settle = "1s"
        typing_grace = "5s"
        done_after = "30s"       # also the threshold for long shell commands
        burst = 3
        burst_window = "10s"
        when_focused = false     # pop up for a session whose terminal has focus
        terminal_notifications = true   # OSC 9, 777 and 99 become tray notifications
        remind = "5m"            # first reminder for a prompt still waiting; "0" is off
        """,
    )
    assert load_config(env_for(tmp_path)).notify == PolicySettings()


# --- [[hosts]] -------------------------------------------------------------------------------


def test_hosts_are_read_in_order() -> None:
    config = parse_config(
        {
            "hosts": [
                {"name": "devbox", "destination": "me@devbox", "ssh_options": ["-p", "2222"]},
                {"name": "gpu", "destination": "gpu.lan", "remote_command": "~/.local/bin/tray"},
            ]
        }
    )
    assert [(h.name, h.destination, h.ssh_options, h.remote_command) for h in config.hosts] == [
        ("devbox", "me@devbox", ("-p", "2222"), "tray"),
        ("gpu", "gpu.lan", (), "~/.local/bin/tray"),
    ]
    assert parse_config({}).hosts == ()


def test_a_bad_host_names_its_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"hosts": [{"name": "devbox", "destination": "-oProxyCommand=x"}]}, "c.toml")
    message = str(caught.value)
    assert message.startswith("c.toml: hosts[0].destination: ")
    assert "\n" not in message


# --- [answer] and [away] ------------------------------------------------------------------


def test_answer_defaults_to_the_keys_of_the_agents_rules(tmp_path: Path) -> None:
    assert parse_config({}).answer == DEFAULT_SETTINGS  # no rules given: no keys
    config = load_config(env_for(tmp_path))
    assert config.answer == SHIPPED_SETTINGS
    assert config.answer.enabled
    assert config.answer.keys_for("claude-code") == AppKeys("1", "\x1b")
    assert config.answer.keys_for("codex") == AppKeys("y", "\x1b")


def test_the_contract_answer_example_reads_as_the_defaults(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        "[answer]\nenabled = true\n"
        '[answer.apps.claude-code]\napprove = "1"\ndeny = "\\u001b"\n'
        '[answer.apps.codex]\napprove = "y"\ndeny = "\\u001b"\n',
    )
    assert load_config(env_for(tmp_path)).answer == SHIPPED_SETTINGS


def test_answer_can_be_turned_off_and_apps_added() -> None:
    config = parse_config(
        {"answer": {"enabled": False, "apps": {"aider": {"approve": "y", "deny": "n"}}}},
        known_keys=SHIPPED_KEYS,
    )
    assert not config.answer.enabled
    assert config.answer.keys_for("aider") == AppKeys("y", "n")
    assert config.answer.keys_for("claude-code") == AppKeys("1", "\x1b")


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"enabled": "yes"}, "answer.enabled"),
        ({"enable": True}, "answer.enable"),
        ({"apps": {"x": {"approve": "\r", "deny": "n"}}}, "answer.apps.x.approve"),
        ({"apps": {"x": {"approve": "y"}}}, "answer.apps.x.deny"),
        ({"apps": {"x": {"approve": "\x1by", "deny": "n"}}}, "answer.apps.x.approve"),
        ({"apps": {"bad name": {"approve": "y", "deny": "n"}}}, "answer.apps.bad name"),
    ],
)
def test_a_bad_answer_table_names_its_key(table: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"answer": table}, "c.toml")
    message = str(caught.value)
    assert message.startswith(f"c.toml: {key}: ")
    assert "\n" not in message


def test_answer_must_be_a_table() -> None:
    with pytest.raises(ConfigError, match=r"^config\.toml: answer: expected a table"):
        parse_config({"answer": 3})


def test_away_is_none_without_its_table() -> None:
    assert parse_config({}).away is None


def test_away_is_read(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        '[away]\nafter = "2m"\nforward = ["ntfys://ntfy.sh/my-topic", "pover://USER@TOKEN"]\n'
        'states = ["blocked"]\n',
    )
    away = load_config(env_for(tmp_path)).away
    assert away is not None
    assert away.after == 120.0
    assert away.forward == ("ntfys://ntfy.sh/my-topic", "pover://USER@TOKEN")
    assert away.states == frozenset({"blocked"})
    # The secret stays out of the repr, which ends up in logs.
    assert "TOKEN" not in repr(load_config(env_for(tmp_path)))


def test_an_empty_away_table_has_the_defaults() -> None:
    away = parse_config({"away": {}}).away
    assert away is not None
    assert (away.after, away.forward, away.states) == (300.0, (), frozenset({"blocked", "error"}))


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"after": "soon"}, "away.after"),
        ({"after": 0}, "away.after"),
        ({"forward": "ntfy://x"}, "away.forward"),
        ({"forward": ["no-scheme-SECRET"]}, "away.forward[0]"),
        ({"states": ["working"]}, "away.states"),
        ({"afer": "5m"}, "away.afer"),
    ],
)
def test_a_bad_away_table_names_its_key_and_never_its_secret(
    table: dict[str, object], key: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"away": table}, "c.toml")
    message = str(caught.value)
    assert message.startswith(f"c.toml: {key}: ")
    assert "\n" not in message
    assert "SECRET" not in message


def test_a_config_with_away_is_read_without_apprise() -> None:
    # `tray run` reads the config: whether Apprise knows a URL is the app's question.
    code = (
        "from tray.core.config.settings import parse_config\n"
        "config = parse_config({'away': {'forward': ['ntfys://ntfy.sh/t']}})\n"
        "assert config.away is not None and config.away.schemes == ('ntfys',)\n"
    )
    assert app_libraries_imported(code) == set()


def test_the_manuals_configuration_example_is_a_valid_config() -> None:
    page = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
    section = page.read_text(encoding="utf-8")
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block is not None
    config = parse_config(tomllib.loads(block.group(1)), "docs/configuration.md", SHIPPED_KEYS)
    assert config.answer == SHIPPED_SETTINGS
    assert config.away is not None
    assert config.away.schemes == ("ntfys",)


@pytest.mark.parametrize(
    ("text", "keep_ended"),
    [(None, Config().sessions.keep_ended), ('[sessions]\nkeep_ended = "2h"\n', 7200.0)],
    ids=["no file", "a file"],
)
def test_loading_the_config_imports_none_of_the_apps_libraries(
    tmp_path: Path, text: str | None, keep_ended: float
) -> None:
    # Every command and each `tray run` loads it; none of them is the app.
    if text is not None:
        write_config(tmp_path, text)
    environment = f"Environment(environ={{'XDG_CONFIG_HOME': {str(tmp_path)!r}}})"
    code = (
        "from tray.state.environment import Environment\n"
        "from tray.state.config_file import load_config\n"
        f"assert load_config({environment}).sessions.keep_ended == {keep_ended!r}\n"
    )
    assert app_libraries_imported(code) == set()


def test_load_config_names_the_file_in_its_errors(tmp_path: Path) -> None:
    write_config(tmp_path, "[sessions\n")
    with pytest.raises(ConfigError) as caught:
        load_config(env_for(tmp_path))
    assert str(caught.value).startswith(f"{tmp_path / 'tray' / 'config.toml'}: ")
