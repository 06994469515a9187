"""Which icon a ping carries: the state it reports, the most urgent for a summary."""

from __future__ import annotations

from tray.core.policy.ping_icon import icon_for_states, ping_icon
from tray.core.policy.wording import Ping, summary_ping
from tray.protocol.state import State


def ping(*states: str, session: str = "s") -> Ping:
    return Ping("t", "b", "normal", (session,), states=frozenset(states), label=session)


def test_each_state_is_its_own_icon() -> None:
    assert ping_icon(ping(State.BLOCKED)) == State.BLOCKED
    assert ping_icon(ping(State.ERROR)) == State.ERROR
    assert ping_icon(ping(State.DONE)) == State.DONE


def test_a_summary_shows_its_most_urgent_state() -> None:
    mixed = summary_ping([ping("done", session="a"), ping("error", session="b")])
    assert ping_icon(mixed) == State.ERROR
    mixed = summary_ping([ping("error", session="a"), ping("blocked", session="b")])
    assert ping_icon(mixed) == State.BLOCKED


def test_no_state_it_knows_is_calm() -> None:
    assert ping_icon(ping()) == "calm"
    assert icon_for_states({"", "idle"}) == "calm"
