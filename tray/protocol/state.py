"""A record's state and an answer to a prompt: each spelled here once, as protocol.md does.

Both are ``StrEnum``: a member is its plain value in JSON, in an f-string and in a
comparison with text, so the contract's shape stays byte for byte what it was, while a
misspelled state is a type error rather than a prompt that never pings.

Text from outside (a report's bytes, a state file) becomes a member with a dict lookup,
never ``State(text)``: the scanner's hot path parses a report per frame.

>>> State.BLOCKED == "blocked", f"{State.DONE}", [State.ERROR]
(True, 'done', ['error'])
>>> STATE_NAMED.get("sleeping") is None
True
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Final


class _Text(StrEnum):
    # The repr of the text itself, as before these were types: a log line or a message
    # that shows a state with !r reads as it always has.
    __repr__ = str.__repr__


class State(_Text):
    """A record's state, and so a session's."""

    IDLE = "idle"
    WORKING = "working"
    DONE = "done"
    BLOCKED = "blocked"
    ERROR = "error"


class Answer(_Text):
    """What a permission prompt is answered with."""

    APPROVE = "approve"
    DENY = "deny"


# Most urgent first: the one order of the icon, the menu, the session's own state and the
# pings.
URGENCY: Final = (State.BLOCKED, State.ERROR, State.WORKING, State.DONE, State.IDLE)
# The states a ping can be about, in URGENCY's order: the person has something to do or
# to see. Working and idle are no news.
PINGED: Final = tuple(state for state in URGENCY if state not in (State.WORKING, State.IDLE))
# The finished states: they outlive the program and a new prompt, until the person has
# seen them.
FINISHED: Final = frozenset({State.DONE, State.ERROR})
# The working states: a program that is gone is never still in one.
RUNNING: Final = frozenset({State.WORKING, State.BLOCKED})

# Both answers, approve first: the order of buttons and of help.
ANSWERS: Final = (Answer.APPROVE, Answer.DENY)
STATE_NAMED: Final[dict[str, State]] = {state.value: state for state in State}
ANSWER_NAMED: Final[dict[str, Answer]] = {answer.value: answer for answer in Answer}
_RANK: Final[dict[str, int]] = {state.value: rank for rank, state in enumerate(URGENCY)}


def urgency(state: State) -> int:
    """A state's place in :data:`URGENCY`: 0 is the most urgent.

    >>> urgency(State.BLOCKED), urgency(State.IDLE)
    (0, 4)
    """
    return _RANK[state]


def most_urgent(states: Iterable[str]) -> State | None:
    """The state of :data:`URGENCY` that comes first, or None; text that is not a state,
    such as the record table's ``clear``, is passed over.

    >>> most_urgent([State.DONE, State.BLOCKED, State.WORKING])
    'blocked'
    >>> most_urgent([]) is None
    True
    """
    present = set(states)
    for state in URGENCY:
        if state in present:
            return state
    return None


__all__ = [
    "ANSWERS",
    "ANSWER_NAMED",
    "FINISHED",
    "PINGED",
    "RUNNING",
    "STATE_NAMED",
    "URGENCY",
    "Answer",
    "State",
    "most_urgent",
    "urgency",
]
