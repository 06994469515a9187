"""The phone's button tokens: what they allow, and that nothing else gets through."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tray.core.answers.phone_tokens import (
    LIFETIME,
    MAX_TOKEN,
    Grant,
    Refusal,
    UsedTokens,
    reply_topic,
    sign,
    verify,
)

KEY = bytes(range(32))
NOW = 1_700_000_000.0
GRANT = Grant("desk", "a1b2c3", "", NOW - 5.25, "approve", NOW + LIFETIME)


def test_a_token_gives_back_exactly_what_it_grants() -> None:
    assert verify(KEY, sign(KEY, GRANT), NOW) == GRANT
    record = Grant("devbox", "devbox:abc", "build/test", 1.5, "deny", NOW + 1)
    assert verify(KEY, sign(KEY, record), NOW) == record


@given(st.data())
def test_any_change_to_a_token_types_nothing(data: st.DataObject) -> None:
    token = sign(KEY, GRANT)
    index = data.draw(st.integers(0, len(token) - 1))
    byte = data.draw(
        st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
    )
    changed = token[:index] + byte + token[index + 1 :]
    if changed != token:
        assert isinstance(verify(KEY, changed, NOW), Refusal)


@given(st.text(max_size=2 * MAX_TOKEN))
def test_junk_is_refused_and_never_raises(text: str) -> None:
    assert isinstance(verify(KEY, text, NOW), Refusal)


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (sign(bytes(32), GRANT), "bad signature"),  # another key's
        (sign(KEY, GRANT) + "x" * MAX_TOKEN, "malformed"),
        ("t2." + sign(KEY, GRANT)[3:], "malformed"),
        (sign(KEY, GRANT).replace(".", "", 1), "malformed"),
        (sign(KEY, Grant("desk", "a", "", 1.0, "approve", NOW)), "expired"),
        (sign(KEY, Grant("desk", "a", "", 1.0, "always", NOW + 9)), "malformed"),
    ],
)
def test_why_a_reply_types_nothing(token: str, reason: str) -> None:
    assert verify(KEY, token, NOW) == Refusal(reason)


def test_one_tap_uses_up_both_buttons_of_a_prompt_until_they_expire() -> None:
    used = UsedTokens()
    assert used.take(GRANT, NOW)
    assert not used.take(GRANT, NOW + 1)
    deny = Grant(GRANT.host, GRANT.session, GRANT.record, GRANT.since, "deny", GRANT.expires)
    assert not used.take(deny, NOW + 2)
    later = Grant(GRANT.host, GRANT.session, GRANT.record, NOW + 60, "approve", NOW + 660)
    assert used.take(later, NOW + 61)  # the next prompt of the session is its own
    assert used.take(GRANT, GRANT.expires)  # forgotten once it could not be used anyway


def test_the_reply_topic_is_the_users_topic_made_unguessable() -> None:
    first, second = reply_topic("tray-7f3k2q9x"), reply_topic("tray-7f3k2q9y")
    assert first != second
    assert first == reply_topic("tray-7f3k2q9x")
    assert "7f3k2q9x" not in first
    assert len(first) <= 64
