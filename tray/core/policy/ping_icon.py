"""Pure: which of tray's icons a notification carries, so that it shows the state it is
about in the tray icon's own colour and shape (amber "!" for a prompt, red cross for a
failure, green check for a finish)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from tray.core.policy.wording import Ping
from tray.core.view.overview import IconState, icon_of
from tray.protocol.state import URGENCY, State

# The tray icon's own order (tray.core.view.overview): a summary of a prompt and a
# failure is about the prompt first, as the icon would be. Idle shows as calm.
_MOST_URGENT_FIRST: Final[tuple[IconState, ...]] = tuple(
    icon_of(state) for state in URGENCY if state is not State.IDLE
)


def icon_for_states(states: Collection[str]) -> IconState:
    """The most urgent of ``states`` as an icon; calm when none of them is one."""
    return next((state for state in _MOST_URGENT_FIRST if state in states), "calm")


def ping_icon(ping: Ping) -> IconState:
    """The icon of the state ``ping`` reports (the most urgent, for a summary)."""
    return icon_for_states(ping.states)
