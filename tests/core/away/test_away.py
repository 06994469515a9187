"""The away state machine (tray.core.away.tracker) and the ``[away]`` settings
(tray.core.config.away)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.core.away.tracker import (
    POLL_MAX,
    POLL_MIN,
    PRESENT,
    AwayState,
    AwayTracker,
    is_forwarded,
    menu_line,
)
from tray.core.config.away import (
    AwaySettings,
    check_forward,
    ntfy_topic,
    parse_away,
    scheme_of,
    without_topic,
)
from tray.core.config.parsing import ConfigError
from tray.protocol.state import State

SECRET = "TOKEN-9f2c"  # noqa: S105 - made up, hunted for in every message
# Above 0, not ">= 0": zero is refused, as a bad duration is, with the same words.
EXPECTED_AFTER = (
    'expected a duration above 0: a number of seconds, or text such as "30s", "5m", "1h"'
)


# -- the tracker ---------------------------------------------------------------------------


def test_polled_idle_time_reaching_after_is_away_since_that_moment() -> None:
    tracker = AwayTracker(after=300.0)
    assert tracker.idle_seconds(10.0, now=1000.0) is None
    assert tracker.state == PRESENT
    # Polled late: the user left at 700, so away since 700 + 300.
    assert tracker.idle_seconds(310.0, now=1010.0) == AwayState(True, 1000.0)
    # Later polls of the same absence change nothing, whatever their rounding.
    assert tracker.idle_seconds(320.4, now=1020.0) is None
    assert tracker.idle_seconds(0.5, now=1030.0) == PRESENT
    assert tracker.idle_seconds(0.9, now=1031.0) is None


def test_a_lock_is_away_at_once_and_unlocking_is_back() -> None:
    tracker = AwayTracker(after=300.0)
    assert tracker.locked(False, now=5.0) is None
    assert tracker.locked(True, now=7.0) == AwayState(True, 7.0)
    assert tracker.locked(True, now=9.0) is None
    assert tracker.locked(False, now=20.0) == PRESENT


def test_lock_during_an_idle_absence_keeps_its_start() -> None:
    tracker = AwayTracker(after=60.0)
    assert tracker.idle_seconds(61.0, now=161.0) == AwayState(True, 160.0)
    assert tracker.locked(True, now=200.0) is None
    # Unlocked but the idle time still says away (nobody touched anything yet).
    assert tracker.locked(False, now=210.0) is None
    assert tracker.state == AwayState(True, 160.0)
    assert tracker.idle_seconds(1.0, now=220.0) == PRESENT


def test_unlocking_is_input_for_an_edge_source() -> None:
    tracker = AwayTracker(after=60.0)
    assert tracker.locked(True, now=10.0) == AwayState(True, 10.0)
    assert tracker.idle_edge(True, now=70.0) is None
    assert tracker.idle_edge(False, now=80.0) is None  # still locked
    assert tracker.locked(False, now=81.0) == PRESENT


def test_idle_edges() -> None:
    tracker = AwayTracker(after=60.0)
    assert tracker.idle_edge(False, now=1.0) is None
    assert tracker.idle_edge(True, now=61.0) == AwayState(True, 61.0)
    assert tracker.idle_edge(True, now=121.0) is None
    assert tracker.idle_edge(False, now=130.0) == PRESENT


def test_polls_are_rare_while_present_and_quick_while_away() -> None:
    tracker = AwayTracker(after=300.0)
    assert tracker.next_poll(0.0) == POLL_MAX
    assert tracker.next_poll(280.0) == 20.0
    assert tracker.next_poll(299.5) == POLL_MIN
    assert tracker.next_poll(900.0) == POLL_MIN


@given(st.lists(st.tuples(st.floats(0, 1e4), st.booleans()), max_size=40))
def test_the_state_is_always_what_the_last_reports_say(reports: list[tuple[float, bool]]) -> None:
    tracker = AwayTracker(after=120.0)
    now = 0.0
    idle_away = locked = False
    for idle, lock in reports:
        now += 1.0
        tracker.idle_seconds(idle, now)
        tracker.locked(lock, now)
        idle_away, locked = idle >= 120.0, lock
        assert tracker.state.away == (idle_away or locked)
        assert (tracker.state.since is not None) == tracker.state.away
    if not reports:
        assert tracker.state == PRESENT


# -- [away] --------------------------------------------------------------------------------


def test_defaults() -> None:
    assert parse_away({}) == AwaySettings(300.0, (), frozenset({State.BLOCKED, State.ERROR}))


def test_every_key() -> None:
    settings = parse_away(
        {
            "after": "90s",
            "forward": [" ntfys://ntfy.sh/topic ", "json://h/x", "json://h/x"],
            "states": ["done", "blocked"],
        }
    )
    assert settings.after == 90.0
    assert settings.forward == ("ntfys://ntfy.sh/topic", "json://h/x")
    assert settings.states == frozenset({"done", "blocked"})
    assert settings.schemes == ("ntfys", "json")
    assert parse_away({"after": 12}).after == 12.0


def test_the_after_error_says_only_what_is_accepted() -> None:
    for refused in (0, 0.0, "0s", "0m", -5, "soon", True):
        with pytest.raises(ConfigError) as caught:
            parse_away({"after": refused})
        assert caught.value.problem == EXPECTED_AFTER
    for accepted, seconds in ((0.5, 0.5), (1, 1.0), ("1ms", 0.001), ("5m", 300.0)):
        assert parse_away({"after": accepted}).after == seconds


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([], "away: expected a table ([away])"),
        ({"aftr": "5m"}, "away.aftr: unknown key (known: after, forward, states, answer, "
         "answer_token)"),
        ({"answer": f"ntfy://{SECRET}"}, "away.answer: an ntfy URL must start with https:// or "
         "http://"),
        ({"answer": f"https://ntfy.sh/{SECRET}/x y"}, 'away.answer: expected an ntfy URL such '
         'as "https://ntfy.sh/my-topic": a host, perhaps a port, then the path, with no user, '
         'no empty part and no ? or # part'),
        ({"answer": f"https://ntfy.sh/{SECRET}/a.b"}, 'away.answer: expected an ntfy topic URL '
         'such as "https://ntfy.sh/my-topic", its topic 1 to 64 letters, digits, \'-\' or \'_\''),
        ({"answer": 3}, 'away.answer: expected an ntfy topic URL such as '
         '"https://ntfy.sh/my-topic"'),
        ({"answer_token": SECRET}, "away.answer_token: set only with away.answer"),
        ({"answer": "https://ntfy.sh/t", "answer_token": f"{SECRET} x"}, "away.answer_token: "
         'expected the ntfy server\'s access token, such as "tk_..."'),
        ({"after": "soon"}, f"away.after: {EXPECTED_AFTER}"),
        ({"after": 0}, f"away.after: {EXPECTED_AFTER}"),
        ({"states": ["blocked", "idle"]}, 'away.states: expected a list of states from "blocked", '
         '"error", "done"'),
        ({"forward": f"ntfy://{SECRET}"}, 'away.forward: expected a list of Apprise URLs such as '
         '["ntfys://ntfy.sh/my-topic"]'),
        ({"forward": [f"{SECRET}@host"]}, 'away.forward[0]: expected a list of Apprise URLs such '
         'as ["ntfys://ntfy.sh/my-topic"]; this one has no scheme://'),
    ],
)  # fmt: skip
def test_errors_name_the_key_and_never_the_url(table: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_away(table)
    assert str(caught.value) == message
    assert SECRET not in str(caught.value)


def test_a_url_the_checker_refuses_names_its_place_and_scheme_only() -> None:
    urls = ["ntfys://ntfy.sh/a", f"Pover://user@{SECRET}"]
    with pytest.raises(ConfigError) as caught:
        parse_away({"forward": urls}, accepts=lambda url: url.startswith("ntfys"))
    assert caught.value.key == "away.forward[1]"
    assert "pover://" in str(caught.value)
    assert SECRET not in str(caught.value)
    settings = parse_away({"forward": urls})
    with pytest.raises(ConfigError):
        check_forward(settings, lambda url: url.startswith("ntfys"))


def test_answer_from_the_phone_is_read_and_its_secrets_never_shown() -> None:
    settings = parse_away(
        {"answer": f" https://ntfy.example.com:8443/{SECRET} ", "answer_token": f"tk_{SECRET}"}
    )
    assert settings.answer == f"https://ntfy.example.com:8443/{SECRET}"
    assert settings.answer_token == f"tk_{SECRET}"
    assert settings.forward == ()
    assert SECRET not in repr(settings)
    assert "ntfy.example.com:8443" in repr(settings)
    assert ntfy_topic(settings.answer) == ("https://ntfy.example.com:8443", SECRET)


def test_the_answer_topic_is_taken_out_of_forward_and_nothing_else() -> None:
    answer = f"https://ntfy.sh/{SECRET}"
    assert without_topic(f"ntfys://ntfy.sh/{SECRET}", answer) is None
    assert without_topic(f"ntfy://user:pw@NTFY.sh/{SECRET}?priority=high", answer) is None
    assert without_topic(f"ntfy://{SECRET}", answer) is None
    assert without_topic(f"ntfys://ntfy.sh/{SECRET}/other", answer) == "ntfys://ntfy.sh/other"
    assert (
        without_topic(f"ntfys://u@ntfy.sh/a/{SECRET}/b?x=1", answer) == "ntfys://u@ntfy.sh/a/b?x=1"
    )
    for other in (f"ntfys://other.host/{SECRET}", f"pover://{SECRET}", "ntfy://else"):
        assert without_topic(other, answer) == other


def test_repr_shows_schemes_not_urls() -> None:
    settings = parse_away({"forward": [f"tgram://{SECRET}/123"]})
    assert SECRET not in repr(settings)
    assert "tgram" in repr(settings)


def test_scheme_of() -> None:
    assert scheme_of("NTFYS://x") == "ntfys"
    assert scheme_of(f"{SECRET}") == "?"
    assert scheme_of("mailto://a@b") == "mailto"


# -- what is forwarded, and the menu -------------------------------------------------------


def test_only_the_chosen_states_while_away() -> None:
    away = AwayState(True, 100.0)
    states = frozenset({State.BLOCKED, State.ERROR})
    assert is_forwarded("blocked", states, away)
    assert is_forwarded("error", states, away)
    assert not is_forwarded("done", states, away)
    assert not is_forwarded(None, states, away)
    assert not is_forwarded("blocked", states, PRESENT)


def test_menu_line() -> None:
    away = AwayState(True, 100.0)
    assert menu_line(away, True, "14:02") == "Away since 14:02: pings also go to your phone"
    assert menu_line(away, False, "14:02") is None
    assert menu_line(PRESENT, True, "14:02") is None
