"""Crush and Amp cannot run here (Crush's npm package downloads its binary from outside the
registries; Amp needs its own servers): their rules files come from their documentation
and source, and are checked on bytes written as those describe them."""

from __future__ import annotations

from tray.core.agents.tracker import AgentTracker
from tray.protocol.attention import Notification, parse_osc777
from tray.protocol.output_events import Osc, Title
from tray.protocol.scanner import Scanner
from tray.state.agent_files import shipped_agent_book


def _tracker(app: str) -> AgentTracker:
    rules = shipped_agent_book().get(app)
    assert rules is not None
    assert not rules.live
    assert rules.answer is None  # no keys that were not checked on the agent
    return AgentTracker(rules)


def _osc(stream: bytes) -> list[Osc]:
    return [e for e in Scanner().feed(stream).events if isinstance(e, Osc)]


def _titles(stream: bytes) -> list[str]:
    events = Scanner(titles=True).feed(stream).events
    return [e.text.decode() for e in events if isinstance(e, Title)]


def test_crush_notifications_as_its_source_sends_them() -> None:
    tracker = _tracker("crush")
    # internal/ui: OSC 777 with the title "Crush is waiting..." over SSH or "osc".
    stream = (
        b'\x1b]777;notify;Crush is waiting...;Permission required to execute "bash"\x1b\\'
        b"\x1b]777;notify;Crush is waiting...;1 question needs your input\x1b\\"
        b"\x1b]777;notify;Crush is waiting...;Agent's turn completed\x1b\\"
    )
    states = []
    for event in _osc(stream):
        note = parse_osc777(event.payload)
        assert isinstance(note, Notification)
        report = tracker.notification(note.title, note.body)
        assert report is not None
        states.append((report.state, report.kind, report.msg))
    assert states == [
        ("blocked", "permission", 'Crush: Permission required to execute "bash"'),
        ("blocked", "question", "Crush: 1 question needs your input"),
        ("done", None, None),
    ]
    assert tracker.notification("Crush is waiting...", "something else") is None


def test_amp_titles_as_described() -> None:
    tracker = _tracker("amp")
    titles = _titles(
        "\x1b]0;\u280b fix the tests\x07"
        "\x1b]0;Plugin confirmation needed\x07"
        "\x1b]0;fix the tests - amp - ~/src/api\x07".encode()
    )
    said = [tracker.title(title) for title in titles]
    assert [(r.state, r.kind) for r in said if r is not None] == [
        ("working", None),
        ("blocked", "permission"),
        ("done", None),
    ]
