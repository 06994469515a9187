"""Pure: the state of an agent that speaks no OSC 7501, from what it shows.

The launcher feeds one :class:`AgentTracker` the agent's titles, notifications, screen
text and bells, and the user's keys; each call returns the report to apply to the
session's root record, or None when nothing changes. The report is an ordinary one
(``app`` is the agent's), so the record table, the policy, the menu and the answer gate
treat it as if the agent had sent it.

Sources rank as ``contract.md`` says: the program's own OSC 7501, then its hooks, then its
notification text, then its title and what it draws, then the bell. Once the program or
its hooks have reported, nothing lower counts any more, except that the hooks of an agent
whose rules set ``hooks_outrank_rules = false`` are one more signal (:meth:`hooked`),
ranked above the rest. Among the rest, the newest signal decides, except that a lower
source saying the same state as a higher one does not replace the higher one's kind or
words.

>>> from tray.core.agents.rules import parse_agent_file
>>> rules = parse_agent_file('''
... name = "Demo"
... commands = ["demo"]
... checked = "1"
... [[titles]]
... match = "^Working"
... state = "working"
... [[titles]]
... match = "^Ready"
... state = "done"
... [[titles]]
... match = "^Waiting"
... state = "blocked"
... kind = "permission"
... msg = "demo waits"
... ''', "demo")
>>> tracker = AgentTracker(rules)
>>> tracker.title("Ready").state  # nothing was done yet
'idle'
>>> report = tracker.title("Waiting")
>>> report.state, report.kind, report.app, report.msg
('blocked', 'permission', 'demo', 'demo waits')
>>> tracker.title("Waiting") is None  # the same title again says nothing new
True
>>> tracker.title("Ready").state
'done'
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from typing import Final, NamedTuple

from tray.base.memo import Memo
from tray.core.agents.rules import AgentRules, Effect, report_for
from tray.protocol.report import Clear, Report
from tray.protocol.state import RUNNING, Answer, State

BELL_RANK: Final = 0
TITLE_RANK: Final = 1  # the title, and what the agent draws on the screen
NOTIFICATION_RANK: Final = 2
# A hook's report, for an agent whose hooks do not outrank its other rules.
HOOK_RANK: Final = 3
# What the screen rules search: the text of the latest output, with what came just
# before it, so that a prompt cut in two by a read is still found whole.
SCREEN_CARRY: Final = 512
# Escape sequences, removed before the screen rules search: CSI, OSC and the other
# strings up to their end, and two-byte escapes. Cursor moves between words become a
# space, so words that a TUI draws apart still read apart.
_ESCAPES: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -~]?"
)
# An escape sequence cut off at the end of a read: held back until the next one ends it.
_UNFINISHED: Final = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*|[\]PX^_][^\x07\x1b]*)?\Z")
MAX_HELD: Final = 4096
# The titles and the notifications whose rule is remembered: more than any agent's set of
# titles (a title with a changing count in it comes back less often, and the memory starts
# over when full).
TITLES_KEPT: Final = 256
NOTIFICATIONS_KEPT: Final = 256
_BLANKS: Final = re.compile(r"[\x00-\x09\x0b-\x1f\x7f ]+")


class RuleMatch(NamedTuple):
    """The rule a title or a notification meets, what it gives the message, and its
    report: made once for each text, as an agent repeats its titles and notifications."""

    effect: Effect
    values: Mapping[str, object]
    report: Report


def screen_text(data: bytes) -> str:
    r"""What output shows as text: escape sequences and controls removed.

    >>> screen_text(b"\x1b[1mRun shell command?\x1b[0m \x1b[2C(Y)es\r\n")
    ' Run shell command? (Y)es \n'
    """
    return _BLANKS.sub(" ", _ESCAPES.sub(" ", data.decode("utf-8", "replace")))


class AgentTracker:
    """One session's inferred root record, for the agent of ``rules``."""

    def __init__(self, rules: AgentRules) -> None:
        self.rules = rules
        # Set once the program itself, or its hooks, have reported: the rules stop.
        self.outranked = False
        self._state: tuple[State | Clear, str | None] | None = None
        self._rank = -1
        self._worked = False
        self._title: str | None = None
        self._title_effect: Effect | None = None
        self._title_match = Memo(self._first_title_match, TITLES_KEPT)
        self._notification_match = Memo(self._first_notification_match, NOTIFICATIONS_KEPT)
        self._screen_tail = ""
        self._screen_held = b""
        self._screen_decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._last: Report | None = None
        # The current state came from a one-off signal (a notification, the bell, the
        # screen): nothing says when it is over but the user's answer.
        self._until_answered = False
        # The root's state came from a hook's blocked report.
        self._hook_prompt = False

    @property
    def watches_screen(self) -> bool:
        return bool(self.rules.screen) and not self.outranked

    def reported(self, report: Report | None = None, *, hook: bool = False) -> None:
        """The program, or a hook of the agent, sent OSC 7501: it outranks every rule.

        A hook's prompt on the root is over at the answer, as one seen on the screen is:
        an agent need not run a hook when its prompt is refused (Copilot CLI runs none).
        """
        self.outranked = True
        if report is not None and not report.id:
            self._hook_prompt = (
                hook and report.state == State.BLOCKED and self.rules.answer_ends_hook_prompt
            )

    def hooked(self, report: Report) -> Report | None:
        """A hook's report, for an agent whose hooks tell only some moments
        (``hooks_outrank_rules = false``): one more signal, above its notifications, so
        that a prompt keeps the hook's words when the title says it too; the prompt is
        over at the answer, and the title tells what comes next.

        >>> from tray.core.agents.rules import parse_agent_file
        >>> rules = parse_agent_file('''
        ... name = "Demo"
        ... commands = ["demo"]
        ... checked = "1"
        ... hooks_outrank_rules = false
        ... [[titles]]
        ... match = "^Waiting"
        ... state = "blocked"
        ... kind = "permission"
        ... [[titles]]
        ... match = "^Ready"
        ... state = "done"
        ... ''', "demo")
        >>> tracker = AgentTracker(rules)
        >>> tracker.title("Waiting").msg is None
        True
        >>> tracker.hooked(Report(State.BLOCKED, kind="permission", msg="Run: make")).msg
        'Run: make'
        >>> tracker.title("Waiting again") is None  # the title says less
        True
        >>> tracker.title("Ready").state
        'done'
        """
        if report.id:
            return None  # the tracker keeps the root record alone
        values = {} if report.msg is None else {"msg": report.msg}
        effect = Effect(report.state, report.kind, None if report.msg is None else "{msg}")
        return self._infer(effect, HOOK_RANK, values, lasting=False)

    def title(self, text: str) -> Report | None:
        if text == self._title:
            return None
        self._title = text
        found = self._title_match[text]
        if found is None:
            return None
        self._title_effect = found.effect
        return self._infer(
            found.effect, TITLE_RANK, found.values, lasting=True, report=found.report
        )

    def title_meaning(self, text: str) -> RuleMatch | None:
        """What the rules make of a title: the same object each time for the same text
        (while it is remembered), None for a title no rule reads."""
        return self._title_match[text]

    def _first_title_match(self, text: str) -> RuleMatch | None:
        """The first title rule that matches, with its report (remembered in
        ``_title_match``, as an agent's titles come back again and again: a spinner's few
        frames, each turn's)."""
        for rule in self.rules.titles:
            if (match := rule.pattern.search(text)) is not None:
                values = {"title": text, "match": match[0]}
                return RuleMatch(rule.effect, values, report_for(self.rules, rule.effect, values))
        return None

    def notification(self, title: str, body: str) -> Report | None:
        """An OSC 9, 777 or 99 notification; a rule that matches it makes it a state."""
        found = self._notification_match[title, body]
        if found is None:
            return None
        return self._infer(
            found.effect, NOTIFICATION_RANK, found.values, lasting=False, report=found.report
        )

    def matches_notification(self, title: str, body: str) -> bool:
        """Whether a rule takes this notification (then it is the state, not a ping)."""
        return not self.outranked and self._notification_match[title, body] is not None

    def _first_notification_match(self, note: tuple[str, str]) -> RuleMatch | None:
        """The first rule whose patterns all match, with the text its last pattern matched
        among the values of its message."""
        title, body = note
        for rule in self.rules.notifications:
            found = None
            if rule.title is not None and (found := rule.title.search(title)) is None:
                continue
            if rule.body is not None and (found := rule.body.search(body)) is None:
                continue
            assert found is not None  # a rule has a title or a body pattern
            values = {"title": title, "body": body, "match": found[0]}
            return RuleMatch(rule.effect, values, report_for(self.rules, rule.effect, values))
        return None

    def bell(self) -> Report | None:
        effect = self.rules.bell
        if effect is None:
            return None
        return self._infer(effect, BELL_RANK, {}, lasting=False)

    def screen(self, data: bytes) -> Report | None:
        """Output as the agent wrote it; searched only when its rules read the screen."""
        if not self.watches_screen:
            return None
        data = self._screen_held + data
        cut = data.rfind(b"\x1b")
        self._screen_held = b""
        if cut != -1 and len(data) - cut <= MAX_HELD and _UNFINISHED.match(data, cut):
            data, self._screen_held = data[:cut], data[cut:]
        # Decoded as a stream: a character cut in two by a read is still one character.
        text = _BLANKS.sub(
            " ", self._screen_tail + _ESCAPES.sub(" ", self._screen_decoder.decode(data))
        )
        self._screen_tail = text[-SCREEN_CARRY:]
        for rule in self.rules.screen:
            if (found := rule.pattern.search(text)) is not None:
                # Searched once: the same text must not match again from the carry.
                self._screen_tail = text[found.end() :][-SCREEN_CARRY:]
                return self._infer(rule.effect, TITLE_RANK, {"match": found[0]}, lasting=False)
        return None

    def answered(self, answer: Answer | None = None) -> Report | None:
        """The user typed, or tray typed ``answer`` ("approve" or "deny"): a prompt seen
        only once (on the screen, in a notification, by the bell, from a hook) is over,
        unless the title still shows it. After tray's Deny the agent waits for the user:
        idle, and the "done" it may show next is that same rest, not news. Otherwise it is
        back at work.

        >>> from tray.core.agents.rules import parse_agent_file
        >>> rules = parse_agent_file('''
        ... name = "Demo"
        ... commands = ["demo"]
        ... checked = "1"
        ... [[screen]]
        ... match = 'Run it[?]'
        ... state = "blocked"
        ... kind = "permission"
        ... [[screen]]
        ... match = '> $'
        ... state = "done"
        ... ''', "demo")
        >>> tracker = AgentTracker(rules)
        >>> tracker.screen(b"Run it?").state
        'blocked'
        >>> tracker.answered(Answer.DENY).state
        'idle'
        >>> tracker.screen(b"> ") is None  # the rest it was already said to be in
        True
        """
        after = State.IDLE if answer == Answer.DENY else State.WORKING
        if self.outranked:
            if not self._hook_prompt:
                return None
            self._hook_prompt = False
            return Report(after, app=self.rules.app)
        if not self._until_answered:
            return None
        self._until_answered = False
        fallback = self._title_effect
        if fallback is not None and fallback.state == self._current_state():
            return None
        self._state, self._rank, self._last = None, -1, None
        if after == State.IDLE:
            self._worked = False  # the refusal ended its turn
        return self._infer(Effect(after, None, None), TITLE_RANK, {}, lasting=True)

    def _current_state(self) -> State | Clear | None:
        return None if self._state is None else self._state[0]

    def _infer(
        self,
        effect: Effect,
        rank: int,
        values: Mapping[str, object],
        *,
        lasting: bool,
        report: Report | None = None,
    ) -> Report | None:
        """The report ``effect`` makes, from a source of ``rank``, or None when it says
        nothing new; ``report`` is the one it makes, when made already."""
        if self.outranked:
            return None
        state = effect.state
        if state == State.DONE and not self._worked:
            # A turn that never started has not ended: the agent is ready, not done.
            state = State.IDLE
        if state in RUNNING:
            self._worked = True
        said = (state, effect.kind if state == State.BLOCKED else None)
        previous = self._state
        if previous is not None and state == previous[0] and rank < self._rank:
            # Said already by a better source, which knows the kind and the words best
            # (a notification can tell a question from a permission; a title cannot).
            return None
        self._state, self._rank = said, rank
        self._until_answered = not lasting and state == State.BLOCKED
        if state != effect.state:
            effect, report = Effect(state, None, effect.msg), None
        if report is None:
            report = report_for(self.rules, effect, values)
        # The last report said ``previous``: one that says another state or kind is news
        # without a look at its words.
        if said == previous and report == self._last:
            return None  # the same again, from a source of the same rank
        self._last = report
        return report
