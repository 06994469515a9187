"""Forwarding through the real Apprise to a loopback HTTP server that the test starts:
json:// and ntfy:// bodies, a dead and a hanging server, and the secret kept out of
every log line and output."""

from __future__ import annotations

import base64
import logging
import socket
import time

import pytest
from helpers.log_records import Recorder
from helpers.receiver import Receiver, start_receiver
from helpers.waiting import wait_for

from tray.core.config.away import AwaySettings, parse_away
from tray.core.config.parsing import ConfigError
from tray.outlets.forward import Forwarder, apprise_accepts, check_away

SECRET = "s3cr3t-T0KEN-8e1f"  # noqa: S105 - a made-up secret the test hunts for


@pytest.fixture
def recorder() -> Recorder:
    return Recorder("forward")


@pytest.fixture
def everything_logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """The root logger at DEBUG: any record that reached it would be here."""
    caplog.set_level(logging.DEBUG)
    return caplog


def _no_secret(
    recorder: Recorder, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    out, err = capfd.readouterr()
    for text in (recorder.text(), caplog.text, out, err):
        assert SECRET not in text
    assert not [r for r in caplog.records if r.name.startswith(("apprise", "urllib3"))]


def _dead_port() -> socket.socket:
    """A port where nothing answers: bound at 0 (the port read back from it) and held, not
    listening, so a connection is refused and nothing else can take the port meanwhile."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    return held


def test_json_url_gets_title_and_plain_text_body(
    receiver: Receiver,
    recorder: Recorder,
    everything_logged: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    url = f"json://tray:{SECRET}@127.0.0.1:{receiver.port}/hook"
    forwarder = Forwarder([url], recorder.log)
    try:
        body = "Allow <b>rm -rf</b> & *more*? [y/n]"
        forwarder.send("build (laptop): waiting for you", body, "blocked")
        wait_for(lambda: receiver.requests, what="the JSON request")
    finally:
        forwarder.stop()
    (request,) = receiver.requests
    assert request.path == "/hook"
    assert request.body["title"] == "build (laptop): waiting for you"
    # Plain text, exactly as the program said it: no markup escaping.
    assert request.body["message"] == body
    assert request.body["type"] == "warning"
    expected = base64.b64encode(f"tray:{SECRET}".encode()).decode()
    assert request.headers["Authorization"] == f"Basic {expected}"
    assert forwarder.stats() == {"json:// (away.forward[0])": (1, 0, False)}
    _no_secret(recorder, everything_logged, capfd)


def test_ntfy_url_posts_topic_title_and_message_with_its_token(
    receiver: Receiver,
    recorder: Recorder,
    everything_logged: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    url = f"ntfy://127.0.0.1:{receiver.port}/tray-pings?token={SECRET}"
    forwarder = Forwarder([url], recorder.log)
    try:
        forwarder.send("api (ci-box): error", "exit 1: tests failed", "error")
        forwarder.send("api (ci-box): error", "still waiting (reminder)", "error")
        wait_for(lambda: len(receiver.requests) == 2, what="two ntfy requests")
    finally:
        forwarder.stop()
    first, second = receiver.requests
    # Apprise's least spacing for ntfy (5.5 s), kept by the forwarder's own clock.
    assert second.at - first.at >= 5.0
    assert first.path == "/"
    assert first.body["topic"] == "tray-pings"
    assert first.body["title"] == "api (ci-box): error"
    assert first.body["message"] == "exit 1: tests failed"
    assert second.body["message"] == "still waiting (reminder)"
    assert first.headers["Authorization"] == f"Bearer {SECRET}"
    _no_secret(recorder, everything_logged, capfd)


def test_dead_server_one_warning_backoff_and_the_newest_kept(
    recorder: Recorder,
    everything_logged: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    held = _dead_port()
    port = int(held.getsockname()[1])
    url = f"json://tray:{SECRET}@127.0.0.1:{port}/hook"
    forwarder = Forwarder([url], recorder.log, timeout=1.0, backoff_first=1.5)
    revived: Receiver | None = None
    try:
        # Twenty sends to a dead server: queued, the newest eight kept (see below).
        for number in range(20):
            forwarder.send("t", f"ping {number}", "blocked")
        wait_for(lambda: recorder.at(logging.WARNING), what="the outage's warning")
        failed_at = next(r.created for r in recorder.records if r.levelno == logging.WARNING)
        assert forwarder.stats()["json:// (away.forward[0])"] == (0, 1, True)
        warning = recorder.at(logging.WARNING)[0]
        assert "json:// (away.forward[0])" in warning
        assert str(port) not in warning
        # The retry comes only after the first backoff: until it, every look finds the
        # one failure, for at least a second after it.
        quiet_until = failed_at

        def retried() -> bool:
            nonlocal quiet_until
            looked_at = time.time()  # before the look: no retry had come by then
            failures = forwarder.stats()["json:// (away.forward[0])"][1]
            if failures == 1:
                quiet_until = looked_at
            return failures >= 2

        wait_for(retried, 15.0, interval=0.01, what="the first retry")
        assert quiet_until - failed_at >= 1.0
        assert len(recorder.at(logging.WARNING)) == 1  # the retry failed too, unsaid
        # The server comes back: after the backoff, the newest pings arrive, once. The
        # port is let go only to be bound again at once, by the same thread.
        held.close()
        revived = start_receiver(port)
        wait_for(lambda: recorder.at(logging.INFO), 15.0, what="forwarding works again")
        wait_for(lambda: len(revived.requests) == 8, what="the kept pings")
        messages = [r.body["message"] for r in revived.requests]
        assert messages == [f"ping {n}" for n in range(12, 20)]
        assert len(recorder.at(logging.WARNING)) == 1
    finally:
        held.close()
        forwarder.stop()
        if revived is not None:
            revived.server.shutdown()
            revived.server.server_close()
    _no_secret(recorder, everything_logged, capfd)


def test_the_caller_never_waits_for_the_server(receiver: Receiver, recorder: Recorder) -> None:
    # The server holds the request unanswered for 30 s, the forwarder would wait a minute:
    # a send made on the caller's thread would return only with its failure counted.
    receiver.hang.set()
    url = f"json://127.0.0.1:{receiver.port}/hook"
    forwarder = Forwarder([url], recorder.log, timeout=60.0, backoff_first=30.0)
    try:
        forwarder.send("t", "one", "blocked")
        forwarder.send("t", "two", "blocked")
        # Apprise loads on the forwarder's thread, slowly on a busy machine: the target is
        # there to count once it has.
        wait_for(lambda: forwarder.schemes, what="Apprise to load")
        assert forwarder.stats()["json:// (away.forward[0])"] == (0, 0, False)
    finally:
        forwarder.stop()


def test_a_hanging_server_times_out_and_backs_off(receiver: Receiver, recorder: Recorder) -> None:
    receiver.hang.set()  # for 30 s: the forwarder's timeout is what ends the send
    url = f"json://127.0.0.1:{receiver.port}/hook"
    forwarder = Forwarder([url], recorder.log, timeout=1.0, backoff_first=30.0)
    try:
        forwarder.send("t", "one", "blocked")
        forwarder.send("t", "two", "blocked")
        wait_for(lambda: recorder.at(logging.WARNING), what="the timeout's warning")
        assert forwarder.stats()["json:// (away.forward[0])"] == (0, 1, True)
    finally:
        forwarder.stop()


def test_a_url_apprise_does_not_know_is_a_config_error_with_the_scheme_only(
    everything_logged: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    good = f"ntfys://ntfy.sh/{SECRET}"
    bad = f"nosuchservice://user:{SECRET}@example.org/x"
    assert apprise_accepts(good)
    assert not apprise_accepts(bad)
    with pytest.raises(ConfigError) as caught:
        parse_away({"forward": [good, bad]}, accepts=apprise_accepts)
    assert caught.value.key == "away.forward[1]"
    assert str(caught.value) == (
        "away.forward[1]: Apprise does not accept this nosuchservice:// URL"
        " (see its wiki for the form)"
    )
    # Apprise logs the unparseable URL at ERROR (2.3 masks only the middle of its
    # password): none of its records may reach a handler.
    out, err = capfd.readouterr()
    for text in (everything_logged.text, out, err):
        assert SECRET not in text
        assert "example.org" not in text
    assert not [r for r in everything_logged.records if r.name.startswith("apprise")]


def test_doctor_line_names_the_source_and_the_schemes_only() -> None:
    settings = AwaySettings(
        forward=(f"ntfys://ntfy.sh/{SECRET}", f"pover://user@{SECRET}"),
    )
    line = check_away(settings, {}, lambda _env, _after: "X11 idle time (MIT-SCREEN-SAVER)")
    assert line.status == "ok"
    assert line.line() == (
        "ok   away: after 5 min without input or a locked screen"
        " (tells by X11 idle time (MIT-SCREEN-SAVER)), blocked and error pings also go to"
        " ntfys://, pover://"
    )
    blind = check_away(settings, {}, lambda _env, _after: None)
    assert blind.status == "warn"
    assert "nothing here tells whether you are away, so nothing is forwarded" in blind.found
    off = check_away(None, {}, lambda _env, _after: None)
    assert off.line() == (
        "ok   away: off (no [away] forward or answer); nothing here tells whether you are away"
    )
    missing = check_away(settings, {}, lambda _env, _after: "x", available=lambda: False)
    assert missing.status == "FAIL"
    assert missing.found == "forward is set (ntfys://, pover://) but Apprise is not installed"
    assert missing.fix is not None and missing.fix.endswith("-m pip install apprise")
    for check in (line, blind, off, missing):
        assert SECRET not in check.line()
    assert SECRET not in repr(settings)


def test_doctor_line_says_answering_from_the_phone_is_on_with_the_server_only() -> None:
    settings = AwaySettings(answer=f"https://ntfy.example.com/{SECRET}", answer_token=SECRET)
    line = check_away(settings, {}, lambda _env, _after: "X11 idle time", available=lambda: False)
    assert line.line() == (
        "ok   away: after 5 min without input or a locked screen (tells by X11 idle time),"
        " blocked and error pings also go to ntfy at ntfy.example.com, with Approve and Deny"
    )
    assert SECRET not in line.line()
