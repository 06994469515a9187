"""The state of an agent that speaks no OSC 7501, from its titles, notifications, screen
and bell: the sources rank, and a prompt seen once ends with the answer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tray.core.agents.rules import parse_agent_file
from tray.core.agents.tracker import TITLES_KEPT, AgentTracker, screen_text
from tray.protocol.report import Report
from tray.protocol.state import Answer, State

RULES = parse_agent_file(
    """
name = "Demo"
commands = ["demo"]
checked = "1"
[[titles]]
match = '^✦\\s+Working'
state = "working"
[[titles]]
match = '^◇\\s+Ready'
state = "done"
[[titles]]
match = '^✋\\s+Action Required'
state = "blocked"
kind = "permission"
msg = "Demo needs approval"
[[titles]]
match = '^Failed'
state = "error"
[[notifications]]
body = '^Approval required \\| (.*)'
state = "blocked"
kind = "permission"
msg = "{body}"
[[screen]]
match = 'Run shell command\\? \\(Y\\)es/\\(N\\)o'
state = "blocked"
kind = "permission"
msg = "Run shell command?"
[bell]
state = "blocked"
kind = "permission"
""",
    "demo",
)


def said(report: Report | None) -> tuple[str, str | None, str | None] | None:
    return None if report is None else (report.state, report.kind, report.msg)


def test_a_turn_told_by_titles() -> None:
    tracker = AgentTracker(RULES)
    assert said(tracker.title("◇  Ready (proj)")) == ("idle", None, None)
    assert said(tracker.title("✦  Working… (proj)")) == ("working", None, None)
    blocked = tracker.title("✋  Action Required (proj)")
    assert said(blocked) == ("blocked", "permission", "Demo needs approval")
    assert blocked is not None
    assert blocked.app == "demo"
    assert blocked.id == ""
    assert said(tracker.title("✦  Working… (proj)")) == ("working", None, None)
    assert said(tracker.title("◇  Ready (proj)")) == ("done", None, None)
    assert said(tracker.title("Failed")) == ("error", None, None)


def test_a_title_no_rule_knows_says_nothing() -> None:
    tracker = AgentTracker(RULES)
    assert tracker.title("vim notes.txt") is None
    assert tracker.title("✦  Working…") is not None


def test_the_notifications_words_outrank_the_titles_for_the_same_prompt() -> None:
    tracker = AgentTracker(RULES)
    tracker.title("✦  Working…")
    note = tracker.notification("Demo", "Approval required | Run: touch x")
    assert said(note) == ("blocked", "permission", "Approval required | Run: touch x")
    # The title says the same a moment later: the notification's words stay.
    assert tracker.title("✋  Action Required") is None
    # Back to work: the title, a lower source, still moves the state on.
    assert said(tracker.title("✦  Working…")) == ("working", None, None)


def test_the_title_first_then_the_notification_replaces_its_words() -> None:
    tracker = AgentTracker(RULES)
    tracker.title("✦  Working…")
    assert tracker.title("✋  Action Required") is not None
    assert said(tracker.notification("Demo", "Approval required | Run: ls")) == (
        "blocked",
        "permission",
        "Approval required | Run: ls",
    )


def test_a_notification_no_rule_takes_is_left_alone() -> None:
    tracker = AgentTracker(RULES)
    assert not tracker.matches_notification("Demo", "Build finished")
    assert tracker.notification("Demo", "Build finished") is None
    assert tracker.matches_notification("Demo", "Approval required | x")


def test_once_the_program_reports_for_itself_no_rule_counts() -> None:
    tracker = AgentTracker(RULES)
    tracker.reported()
    assert tracker.title("✋  Action Required") is None
    assert tracker.notification("Demo", "Approval required | x") is None
    assert not tracker.matches_notification("Demo", "Approval required | x")
    assert tracker.bell() is None
    assert tracker.screen(b"Run shell command? (Y)es/(N)o") is None
    assert not tracker.watches_screen


def test_a_prompt_seen_on_the_screen_lasts_until_the_answer() -> None:
    tracker = AgentTracker(RULES)
    assert tracker.watches_screen
    prompt = b"\x1b[1mRun shell command?\x1b[0m \x1b[33m(Y)es/(N)o/(D)on't ask again [Yes]:\x1b[0m "
    assert said(tracker.screen(prompt)) == ("blocked", "permission", "Run shell command?")
    assert tracker.screen(b"more output") is None
    assert said(tracker.answered()) == ("working", None, None)
    assert tracker.answered() is None  # answered once
    # The same prompt again is a new prompt.
    assert said(tracker.screen(prompt)) == ("blocked", "permission", "Run shell command?")


def test_the_answer_leaves_a_prompt_the_title_still_shows() -> None:
    tracker = AgentTracker(RULES)
    tracker.title("✋  Action Required")
    tracker.notification("Demo", "Approval required | x")
    # A key of the user's while the dialog stands: the title says it still waits.
    assert tracker.answered() is None
    assert said(tracker.title("✦  Working…")) == ("working", None, None)


def test_a_title_prompt_is_not_ended_by_keys() -> None:
    tracker = AgentTracker(RULES)
    tracker.title("✋  Action Required")
    assert tracker.answered() is None


def test_the_bell_means_what_the_rules_say_once() -> None:
    tracker = AgentTracker(RULES)
    tracker.title("✦  Working…")
    assert said(tracker.bell()) == ("blocked", "permission", None)
    assert tracker.bell() is None  # ringing again says nothing new
    assert said(tracker.answered()) == ("working", None, None)


PROMPT = b"\x1b[2K\rRun shell command? \x1b[1m(Y)es/(N)o\x1b[0m [Yes]: "
NOISE = b"\x1b[38;5;12mthinking\x1b[0m\r\n" * 3


@given(st.lists(st.integers(0, len(NOISE + PROMPT)), max_size=6))
def test_the_screen_prompt_is_found_however_the_output_is_cut(cuts: list[int]) -> None:
    stream = NOISE + PROMPT
    points = sorted(set(cuts))
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    tracker = AgentTracker(RULES)
    found = [said(r) for r in (tracker.screen(chunk) for chunk in chunks) if r is not None]
    assert found == [("blocked", "permission", "Run shell command?")]


def test_screen_text_keeps_words_apart_and_drops_strings() -> None:
    assert screen_text(b"a\x1b[5Cb") == "a b"
    assert screen_text(b"x\x1b]0;title\x07y") == "x y"
    assert screen_text(b"bad \xff byte") == "bad \ufffd byte"


def test_a_title_does_not_turn_a_notifications_question_into_a_permission() -> None:
    rules = parse_agent_file(
        """
name = "Demo"
commands = ["demo"]
checked = "1"
[[titles]]
match = '^Action Required'
state = "blocked"
kind = "permission"
[[notifications]]
body = '^Answer requested'
state = "blocked"
kind = "question"
msg = "{body}"
""",
        "demo",
    )
    tracker = AgentTracker(rules)
    assert said(tracker.notification("Demo", "Answer requested: which?")) == (
        "blocked",
        "question",
        "Answer requested: which?",
    )
    assert tracker.title("Action Required") is None


def test_a_hooks_prompt_ends_at_the_answer_and_the_programs_own_never_does() -> None:
    tracker = AgentTracker(RULES)
    tracker.reported(Report(State.BLOCKED, kind="permission", app="demo"), hook=True)
    assert said(tracker.answered()) == ("working", None, None)
    assert tracker.answered() is None
    tracker.reported(Report(State.BLOCKED, kind="permission", app="demo"), hook=True)
    tracker.reported(Report(State.WORKING, app="demo"), hook=True)
    assert tracker.answered() is None  # a hook said it is over already
    tracker.reported(Report(State.BLOCKED, kind="permission", app="demo"), hook=False)
    assert tracker.answered() is None  # the program says for itself when it is over


def test_where_the_hooks_tell_every_reply_the_answer_leaves_the_state_to_them() -> None:
    rules = parse_agent_file(
        'name = "D"\ncommands = ["d"]\nchecked = "1"\nanswer_ends_hook_prompt = false\n'
        '[[hooks]]\nevent = "asked"\nstate = "blocked"\nkind = "permission"\n',
        "demo",
    )
    tracker = AgentTracker(rules)
    tracker.reported(Report(State.BLOCKED, kind="permission", app="demo"), hook=True)
    assert tracker.answered() is None


def test_hooks_that_do_not_outrank_the_rules_rank_above_notifications() -> None:
    rules = parse_agent_file(
        """
name = "D"
commands = ["d"]
checked = "1"
hooks_outrank_rules = false
[[titles]]
match = '^Working'
state = "working"
[[titles]]
match = '^Asking'
state = "blocked"
kind = "permission"
msg = "title words"
[[notifications]]
body = '^Asks'
state = "blocked"
kind = "question"
msg = "{body}"
""",
        "demo",
    )
    tracker = AgentTracker(rules)
    hook = Report(State.BLOCKED, kind="permission", app="demo", msg="Run: make")
    assert said(tracker.title("Working")) == ("working", None, None)
    assert said(tracker.hooked(hook)) == ("blocked", "permission", "Run: make")
    assert tracker.notification("", "Asks again") is None  # lower, the same state
    assert tracker.title("Asking") is None
    assert not tracker.outranked
    # The answer ends the hook's prompt only once the title no longer shows one.
    assert tracker.answered() is None
    assert said(tracker.title("Working again")) == ("working", None, None)
    assert said(tracker.hooked(hook)) == ("blocked", "permission", "Run: make")
    assert said(tracker.answered()) == ("working", None, None)
    assert tracker.hooked(Report(State.BLOCKED, kind="permission", id="sub")) is None
    tracker.reported(Report(State.WORKING, app="demo"))  # the program speaks for itself
    assert tracker.hooked(hook) is None


def test_titles_read_the_same_however_many_came_before() -> None:
    """Each title's rule is remembered, in a memory that starts over when full."""
    tracker = AgentTracker(RULES)
    for turn in range(3):
        for frame in range(TITLES_KEPT // 2 + 7):
            assert tracker.title(f"✳ frame {frame}") is None
        assert said(tracker.title("✦  Working… (proj)")) == ("working", None, None)
        blocked = tracker.title("✋  Action Required (proj)")
        assert said(blocked) == ("blocked", "permission", "Demo needs approval"), turn
        assert said(tracker.title("◇  Ready (proj)")) == ("done", None, None)


def test_after_trays_deny_the_agent_rests_and_a_done_it_shows_next_is_that_rest() -> None:
    tracker = AgentTracker(RULES)
    assert said(tracker.title("✦  Working… (proj)")) == ("working", None, None)
    assert said(tracker.screen(b"Run shell command? (Y)es/(N)o")) == (
        "blocked",
        "permission",
        "Run shell command?",
    )
    assert said(tracker.answered(Answer.DENY)) == ("idle", None, None)
    assert tracker.title("◇  Ready (proj)") is None  # the rest, said already
    # A hook's prompt (the agent's hooks outrank the rules) ends the same way.
    tracker.reported(Report(State.BLOCKED, kind="permission", app="demo"), hook=True)
    assert said(tracker.answered(Answer.DENY)) == ("idle", None, None)
    tracker.reported(Report(State.BLOCKED, kind="permission", app="demo"), hook=True)
    assert said(tracker.answered(Answer.APPROVE)) == ("working", None, None)
