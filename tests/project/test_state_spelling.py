"""A state or an answer is spelled once: in ``tray/protocol/state.py``, as ``State`` and ``Answer``.

Anywhere else in ``tray/``, a string constant equal to a state ("idle", "working",
"done", "blocked", "error") or an answer ("approve", "deny") is a second spelling: a
typo there would be a prompt that never pings, and mypy could not see it. The test walks
every module with ``ast`` and reports each such constant, with its file and line.

Text that is the same word but no state is named below, each with why: a word of another
protocol or of another thing's facts. ``__slots__`` names attributes, so its strings are
never states. Data files (the agents' TOML) are not Python and not walked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import tray
from tray.protocol.state import Answer, State

TRAY = Path(tray.__file__).parent
ROOT = TRAY.parent
DEFINED_IN = "tray/protocol/state.py"
WORDS = frozenset({*State, *Answer})

# (a module, or a folder ending in "/"; the word): why it is no state or answer there.
NOT_A_STATE: dict[tuple[str, str], str] = {
    ("tray/protocol/attention.py", "error"): "OSC 9;4's progress state, the terminal's word",
    ("tray/desktop/wayland_wire.py", "error"): "the name of wl_display's error event",
    ("tray/desktop/wayland_wire.py", "done"): "the name of wl_callback's done event",
    ("tray/desktop/idle/", "idle"): "an idle source's kind: the user is idle, not a session",
    ("tray/desktop/probes.py", "error"): "a probe's facts name what went wrong 'error'",
    ("tray/desktop/tray_area.py", "error"): "the X display facts' field for what went wrong",
    ("tray/commands/doctor.py", "error"): "the probes' facts' field for what went wrong",
    ("tray/cli.py", "error"): "argparse's word for a usage message that has none",
}


def _excused(module: str, word: str) -> bool:
    return any(
        word == excused_word
        and (module == where or (where.endswith("/") and module.startswith(where)))
        for where, excused_word in NOT_A_STATE
    )


def _slot_names(tree: ast.AST) -> set[int]:
    """The ids of the constants that name attributes in a ``__slots__``."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
        ):
            found.update(id(sub) for sub in ast.walk(node.value) if isinstance(sub, ast.Constant))
    return found


def spellings(source: str, module: str) -> Iterator[str]:
    """``module:line: "word"`` for each state or answer spelled as text in ``source``."""
    if module == DEFINED_IN:
        return
    tree = ast.parse(source)
    slots = _slot_names(tree)
    found = sorted(
        (node.lineno, node.col_offset, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in WORDS
        and id(node) not in slots
        and not _excused(module, node.value)
    )
    for line, _, word in found:
        yield f'{module}:{line}: "{word}"'


def test_no_state_or_answer_is_spelled_outside_its_module() -> None:
    found = [
        line
        for path in sorted(TRAY.rglob("*.py"))
        for line in spellings(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    ]
    assert found == [], "spell these as State.X or Answer.X:\n" + "\n".join(found)


def test_every_excused_word_is_a_state_or_an_answer() -> None:
    # An entry for another word would excuse nothing: it is a mistake in this list.
    assert {word for _, word in NOT_A_STATE} <= WORDS


# -- the checker, on made-up sources --------------------------------------------------------


def test_a_state_compared_as_text_is_found() -> None:
    source = 'def late(row):\n    return row.state == "blocked"\n'
    assert list(spellings(source, "tray/core/view/made_up.py")) == [
        'tray/core/view/made_up.py:2: "blocked"'
    ]


def test_every_state_and_answer_is_found_in_a_table_or_a_default() -> None:
    source = (
        'ORDER = ("idle", "working", "done", "blocked", "error")\n'
        'def answer(word="approve"):\n    return {"deny": 1}\n'
    )
    found = list(spellings(source, "tray/app/made_up.py"))
    assert [line.rsplit(" ", 1)[1] for line in found] == [
        '"idle"',
        '"working"',
        '"done"',
        '"blocked"',
        '"error"',
        '"approve"',
        '"deny"',
    ]


def test_the_states_own_module_may_spell_them() -> None:
    assert list(spellings('BLOCKED = "blocked"\n', DEFINED_IN)) == []


def test_other_words_and_longer_text_are_not_states() -> None:
    source = 'a = "blocked!"\nb = f"{x} done"\nc = "Blocked"\nd = "waiting"\n'
    assert list(spellings(source, "tray/app/made_up.py")) == []


def test_slots_name_attributes_not_states() -> None:
    source = 'class Pending:\n    __slots__ = ("done", "result")\n    state = "done"\n'
    assert list(spellings(source, "tray/remote/made_up.py")) == ['tray/remote/made_up.py:3: "done"']


def test_an_excused_word_is_excused_only_where_named() -> None:
    assert list(spellings('KIND = "idle"\n', "tray/desktop/idle/made_up.py")) == []
    assert list(spellings('KIND = "idle"\n', "tray/desktop/made_up.py")) == [
        'tray/desktop/made_up.py:1: "idle"'
    ]
    # The folder's excuse is for "idle" alone.
    assert list(spellings('KIND = "done"\n', "tray/desktop/idle/made_up.py")) == [
        'tray/desktop/idle/made_up.py:1: "done"'
    ]
