"""``tray emit``: exactly one valid report on the controlling terminal, or an error and nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from helpers.data import b64
from helpers.tray_home import Tray
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tray.cli import main
from tray.protocol.report import CLEAR, KINDS, MAX_ID, STATES, Report, parse_body
from tray.protocol.state import State
from tray.state.environment import Environment

PREFIX = b"\x1b]7501;"
BEL = b"\x07"


def body_of(sequence: bytes) -> bytes:
    assert sequence.startswith(PREFIX)
    assert sequence.endswith(BEL)
    assert sequence.count(BEL) == 1
    return sequence[len(PREFIX) : -len(BEL)]


def test_emit_writes_the_exact_sequence_to_the_terminal(tray_home: Tray) -> None:
    run = tray_home.run_on_pty(
        "emit",
        "blocked",
        "--kind",
        "permission",
        "--app",
        "terraform",
        "--msg",
        "Apply 3 to add, 1 to change, 0 to destroy?",
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert run.written == (
        PREFIX + b"state=blocked:kind=permission:app=terraform:"
        b"msg=QXBwbHkgMyB0byBhZGQsIDEgdG8gY2hhbmdlLCAwIHRvIGRlc3Ryb3k/" + BEL
    )


def test_emit_every_field_round_trips(tray_home: Tray) -> None:
    run = tray_home.run_on_pty(
        "emit",
        "working",
        "--id",
        "deploy/eu",
        "--progress",
        "007",
        "--app",
        "cargo",
        "--title",
        "安全",
        "--msg=-starts with a dash",
    )
    assert (run.returncode, run.stderr) == (0, "")
    body = body_of(run.written)
    assert body == (
        f"state=working:id=deploy/eu:progress=7:app=cargo:title={b64('安全')}:"
        f"msg={b64('-starts with a dash')}".encode("ascii")
    )
    assert parse_body(body) == Report(
        State.WORKING, "deploy/eu", None, 7, "cargo", "安全", "-starts with a dash"
    )


def test_emit_clear(tray_home: Tray) -> None:
    run = tray_home.run_on_pty("emit", "clear")
    assert (run.returncode, run.written) == (0, PREFIX + b"state=clear" + BEL)


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("bogus",),
        ("IDLE",),
        ("working", "--progress", "101"),
        ("working", "--progress", "-1"),
        ("working", "--progress", "+1"),
        ("working", "--progress", "4.5"),
        ("working", "--progress", "1_0"),
        ("working", "--progress", " 5"),
        ("working", "--progress", "٣"),
        ("working", "--progress="),
        ("done", "--progress", "10"),
        ("working", "--kind", "permission"),
        ("blocked", "--kind", "dance"),
        ("working", "--app", "a/b"),
        ("working", "--app", "x" * 33),
        ("working", "--app="),
        ("working", "--id", "a//b"),
        ("working", "--id", "/".join("abcdefghi")),
        ("working", "--id", "x" * 33),
        ("working", "--id="),
        ("working", "--msg="),
        ("working", "--msg", "two\nlines"),
        ("working", "--msg", "c1\u0085control"),
        ("working", "--msg", "é" * 1025),
        ("working", "--title", "x" * 193),
        ("working", "extra"),
        ("working", "--bogus"),
        ("working", "--msg"),
        ("working", "--pro", "5"),
    ],
)
def test_bad_arguments_write_nothing(tray_home: Tray, args: tuple[str, ...]) -> None:
    run = tray_home.run_on_pty("emit", *args)
    assert run.returncode == 2
    assert run.written == b""
    (line,) = run.stderr.splitlines()
    assert line.startswith("tray emit: ")


def test_no_controlling_terminal_is_one_line(tray_home: Tray) -> None:
    result = tray_home.run("emit", "working")  # run() starts no terminal at all
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("tray emit: no terminal to write to")


# The same command in-process, writing to a plain file, to cover many reports quickly.

segment = st.text("abcXYZ019_.+-", min_size=1, max_size=32)
text = st.text(
    st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=60
)  # no controls, no surrogates


@st.composite
def reports(draw: st.DrawFn) -> Report:
    state = draw(st.sampled_from((*STATES, "clear")))
    return Report(
        state=CLEAR if state == CLEAR else State(state),
        id=draw(
            st.one_of(
                st.just(""),
                # Eight long segments are longer than an id may be.
                st.lists(segment, min_size=1, max_size=8)
                .map("/".join)
                .filter(lambda i: len(i) <= MAX_ID),
            )
        ),
        kind=draw(st.none() | st.sampled_from(KINDS)) if state == "blocked" else None,
        progress=(
            draw(st.none() | st.integers(0, 100)) if state in ("working", "blocked") else None
        ),
        app=draw(st.none() | st.text("abcXYZ019_.+-", min_size=1, max_size=32)),
        title=draw(st.none() | text),
        msg=draw(st.none() | text),
    )


def arguments(report: Report) -> list[str]:
    argv = ["emit", report.state]
    for option, value in (
        ("id", report.id or None),
        ("kind", report.kind),
        ("progress", None if report.progress is None else str(report.progress)),
        ("app", report.app),
        ("title", report.title),
        ("msg", report.msg),
    ):
        if value is not None:
            argv.append(f"--{option}={value}")
    return argv


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(reports())
def test_emit_round_trips_through_the_parser(tmp_path: Path, report: Report) -> None:
    terminal = tmp_path / "tty"
    terminal.write_bytes(b"")
    stderr = io.StringIO()
    env = Environment(environ={}, stdout=io.StringIO(), stderr=stderr, tty_path=str(terminal))
    assert main(arguments(report), env) == 0, stderr.getvalue()
    assert parse_body(body_of(terminal.read_bytes())) == report
