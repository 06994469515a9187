"""tray's ntfy outlet against FakeNtfy: JSON publishes with their actions and token, and
the reply stream through drops, restarts, outages, junk and stops; never a topic, token
or message in the log."""

from __future__ import annotations

import http.client
import itertools
import json
import logging
import socket
import time
from collections.abc import Iterator

import pytest
from helpers.log_records import Recorder, assert_no_secret
from helpers.ntfy_standin import FakeNtfy, Seen
from helpers.waiting import wait_for, wait_past

from tray.core.config.away import ntfy_topic
from tray.outlets.ntfy import READ_TIMEOUT, STREAM_BACKOFF_FIRST, NtfyPublisher, ReplyStream

TOPIC = "tray-prompts-Q7vXk2"
REPLIES = "tray-replies-Z3mWp9"
TOKEN = "tk_made0up0token0for0tests0a1b2"  # noqa: S105 - a made-up secret the test hunts for
# What must never be logged: the topics, the token, and what the messages say.
SECRETS = (TOPIC, REPLIES, TOKEN, "signature", "approved-file")
# Fast backoffs, so an outage takes the test a second, not minutes.
FIRST = 0.05
MOST = 0.4
# What stop may take: far less than the read timeout or backoff it must cut short.
STOP_WITHIN = 30.0
LONG = 3600.0


@pytest.fixture
def recorder(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> Iterator[Recorder]:
    """The outlet's log; after the test, neither it, the root logger, stdout nor stderr
    holds a secret."""
    caplog.set_level(logging.DEBUG)
    recorder = Recorder("ntfy")
    yield recorder
    assert_no_secret(recorder, (caplog.text, *capfd.readouterr()), SECRETS)


@pytest.fixture
def fake() -> Iterator[FakeNtfy]:
    with FakeNtfy(keepalive=30.0) as started:
        yield started


class Replies:
    """What on_reply got, from the stream's thread."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> None:
        self.texts.append(text)

    def wait(self, expected: list[str]) -> None:
        wait_for(lambda: self.got() == expected, what=f"the replies {expected}")

    def got(self) -> list[str]:
        return list(self.texts)


def call(
    fake: FakeNtfy, method: str, path: str, body: str | None = None, token: str | None = None
) -> tuple[int, list[dict[str, object]]]:
    """One request to the fake: its status and the JSON objects of its lines."""
    connection = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=10)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        connection.request(method, path, body=body and body.encode(), headers=headers)
        response = connection.getresponse()
        return response.status, [json.loads(line) for line in response.read().splitlines()]
    finally:
        connection.close()


def tap(fake: FakeNtfy, text: str, token: str | None = None) -> str:
    """What a phone's http action does: POST the text to the reply topic; the new id."""
    status, (answer,) = call(fake, "POST", f"{fake.prefix}/{REPLIES}", text, token)
    assert status == 200, answer
    return str(answer["id"])


def subscribes(fake: FakeNtfy) -> list[Seen]:
    return [r for r in fake.requests if r.method == "GET" and r.path == f"/{REPLIES}/json"]


def stream_on(
    fake: FakeNtfy,
    replies: Replies,
    recorder: Recorder,
    token: str | None = None,
    *,
    since: float | None = None,
    backoff_first: float = STREAM_BACKOFF_FIRST,
    backoff_max: float = MOST,
    read_timeout: float = READ_TIMEOUT,
) -> ReplyStream:
    stream = ReplyStream(
        fake.url,
        REPLIES,
        token,
        replies,
        recorder.log,
        since=since,
        backoff_first=backoff_first,
        backoff_max=backoff_max,
        read_timeout=read_timeout,
    )
    stream.start()
    return stream


# -- ntfy_topic -------------------------------------------------------------------


def test_ntfy_topic_gives_the_base_and_the_topic() -> None:
    assert ntfy_topic(f"https://ntfy.sh/{TOPIC}") == ("https://ntfy.sh", TOPIC)
    assert ntfy_topic(f"http://10.0.0.2:8080/ntfy/{TOPIC}") == (
        "http://10.0.0.2:8080/ntfy",
        TOPIC,
    )
    assert ntfy_topic(f"https://[::1]:2586/{TOPIC}") == ("https://[::1]:2586", TOPIC)
    assert ntfy_topic(f" https://ntfy.sh/{TOPIC}/ ") == ("https://ntfy.sh", TOPIC)


@pytest.mark.parametrize(
    "url",
    [
        f"ftp://ntfy.sh/{TOPIC}",
        f"ntfy.sh/{TOPIC}",
        f"https:///{TOPIC}",
        f"https://user:pass@ntfy.sh/{TOPIC}",
        f"https://ntfy.sh:99999/{TOPIC}",
        f"https://ntfy.sh:port/{TOPIC}",
        f"https://ntfy.sh/{TOPIC}?auth=x",
        f"https://ntfy.sh/{TOPIC}#x",
        f"https://ntfy.sh//{TOPIC}",
        f"https://ntfy.sh/{TOPIC}.json",
        f"https://ntfy.sh/{TOPIC * 4}",
        "https://ntfy.sh",
    ],
)
def test_ntfy_topic_refuses_without_naming_the_topic(url: str) -> None:
    with pytest.raises(ValueError, match="ntfy") as raised:
        ntfy_topic(url)
    assert TOPIC not in str(raised.value)
    # Nor through a chained error's text (urlsplit's names the port it could not read).
    assert raised.value.__cause__ is None
    if raised.value.__context__ is not None:
        assert raised.value.__suppress_context__


# -- NtfyPublisher -----------------------------------------------------------------------


def prompt(number: int = 1) -> dict[str, object]:
    approve = {
        "action": "http",
        "label": "Approve",
        "url": f"http://127.0.0.1:1/{REPLIES}",
        "method": "POST",
        "headers": {"Content-Type": "text/plain"},
        "body": f"approve.{number}.signature",
        "clear": True,
    }
    deny = {**approve, "label": "Deny", "body": f"deny.{number}.signature"}
    return {
        "topic": TOPIC,
        "message": f"build (laptop) asks: run `touch approved-file`? #{number}",
        "title": "build needs approval",
        "priority": 4,
        "tags": ["warning"],
        "actions": [approve, deny],
    }


def test_publish_reaches_the_topic_with_its_fields_and_actions(
    fake: FakeNtfy, recorder: Recorder
) -> None:
    publisher = NtfyPublisher(fake.url, None, recorder.log)
    try:
        publisher.publish(prompt())
        (got,) = wait_for(lambda: fake.published(TOPIC), what="the publish")
    finally:
        publisher.stop()
    sent = prompt()
    for key in ("message", "title", "priority", "tags"):
        assert got[key] == sent[key]
    actions = got["actions"]
    assert isinstance(actions, list)
    # The server gives each action an id of its own; all else is as sent.
    assert [{k: v for k, v in a.items() if k != "id"} for a in actions] == sent["actions"]
    (request,) = fake.requests
    assert (request.method, request.path, request.authorization) == ("POST", "/", None)
    assert publisher.stats() == (1, 0, False)
    assert not recorder.at(logging.WARNING)


def test_publish_sends_the_token_and_without_it_is_refused(recorder: Recorder) -> None:
    with FakeNtfy(token=TOKEN, prefix="/ntfy") as fake:
        with_token = NtfyPublisher(fake.url, TOKEN, recorder.log)
        without = NtfyPublisher(fake.url, None, recorder.log, backoff_first=FIRST, backoff_max=MOST)
        try:
            without.publish(prompt(1))
            wait_for(lambda: recorder.at(logging.WARNING), what="the refusal's warning")
            with_token.publish(prompt(2))
            wait_for(lambda: fake.published(TOPIC), what="the publish with the token")
            wait_for(lambda: without.stats()[1] >= 3, what="retries")
        finally:
            with_token.stop()
            without.stop()
    assert [m["message"] for m in fake.published(TOPIC)] == [prompt(2)["message"]]
    tokens = {r.authorization for r in fake.requests}
    assert tokens == {None, f"Bearer {TOKEN}"}
    assert {r.path for r in fake.requests} == {"/ntfy/"}
    (warning,) = recorder.at(logging.WARNING)
    assert "127.0.0.1" in warning and "HTTP 401" in warning


def test_an_outage_warns_once_keeps_the_newest_eight_and_recovers(recorder: Recorder) -> None:
    fake = FakeNtfy().start()
    fake.stop()  # down, on a port it will come back to
    publisher = NtfyPublisher(fake.url, None, recorder.log, backoff_first=FIRST, backoff_max=MOST)
    try:
        for number in range(12):
            publisher.publish(prompt(number))
        wait_for(lambda: publisher.stats()[1] >= 4, what="a few failed attempts")
        (warning,) = recorder.at(logging.WARNING)
        assert "127.0.0.1" in warning and "ConnectionRefusedError" in warning
        fake.start()
        wait_for(lambda: len(fake.published(TOPIC)) == 8, what="the kept messages")
        wait_for(lambda: recorder.at(logging.INFO), what="works again")
    finally:
        publisher.stop()
        fake.stop()
    got = [m["message"] for m in fake.published(TOPIC)]
    assert got == [prompt(n)["message"] for n in range(4, 12)]
    assert len(recorder.at(logging.WARNING)) == 1
    assert recorder.at(logging.INFO) == ["ntfy: publishing to 127.0.0.1 works again"]


def test_publish_returns_before_the_server_answers(recorder: Recorder) -> None:
    # The test is the server, and answers only once publish has returned: a publish sent
    # on the caller's thread would have waited for an answer that never came, and
    # returned with its failure counted.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(STOP_WITHIN)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        publisher = NtfyPublisher(url, None, recorder.log, timeout=LONG)
        try:
            publisher.publish(prompt())
            assert publisher.stats() == (0, 0, False)  # nothing settled: no answer yet
            connection, _ = listener.accept()
            with connection:
                connection.settimeout(STOP_WITHIN)
                received = connection.recv(65536)
                head, _, body = received.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(body) < length:
                    body += connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                wait_for(lambda: publisher.stats() == (1, 0, False), what="the publish settled")
        finally:
            assert publisher.stop(STOP_WITHIN)
    assert received.startswith(b"POST / HTTP/1.1\r\n")
    assert json.loads(body) == prompt()


def test_a_message_the_server_refuses_is_dropped_and_holds_up_no_other(
    fake: FakeNtfy, recorder: Recorder
) -> None:
    publisher = NtfyPublisher(fake.url, None, recorder.log, backoff_first=30.0)
    try:
        publisher.publish({**prompt(1), "priority": 9})
        publisher.publish(prompt(2))
        wait_for(lambda: fake.published(TOPIC), what="the second message")
    finally:
        publisher.stop()
    assert [m["message"] for m in fake.published(TOPIC)] == [prompt(2)["message"]]
    assert recorder.at(logging.WARNING) == [
        "ntfy: 127.0.0.1 refused a message (HTTP 400); dropped it"
    ]
    assert publisher.stats() == (1, 0, False)


def test_a_server_that_never_answers_times_out(recorder: Recorder) -> None:
    with socket.socket() as silent:  # accepts (the kernel's backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        publisher = NtfyPublisher(url, None, recorder.log, timeout=0.5, backoff_first=LONG)
        try:
            publisher.publish(prompt())
            # The timeout ended the send: the server never will.
            wait_for(lambda: recorder.at(logging.WARNING), what="the timeout's warning")
            assert "timed out" in recorder.at(logging.WARNING)[0]
        finally:
            assert publisher.stop(STOP_WITHIN)  # cuts the hour's backoff short


# -- ReplyStream -------------------------------------------------------------------------


def test_the_stream_gets_each_reply_once_in_order(fake: FakeNtfy, recorder: Recorder) -> None:
    replies = Replies()
    stream = stream_on(fake, replies, recorder)
    try:
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
        texts = [f"approve.{n}.signature" for n in range(5)]
        for text in texts:
            tap(fake, text)
        fake.publish(TOPIC, "a prompt on another topic")
        replies.wait(texts)
        # A server may send a message again (ntfy does when it is published while the
        # stream subscribes, or for a since id it no longer has): it is handed on once.
        (again, *_) = fake.published(REPLIES)
        fake.send_raw(REPLIES, json.dumps(again).encode() + b"\n")
        tap(fake, "marker")  # after it, nothing more can be on its way
        replies.wait([*texts, "marker"])
    finally:
        stream.stop()
    assert len(subscribes(fake)) == 1
    assert recorder.at(logging.INFO) == ["ntfy: listening for replies at 127.0.0.1"]
    assert not recorder.at(logging.WARNING)


def test_the_first_connection_asks_since_the_time_given(fake: FakeNtfy, recorder: Recorder) -> None:
    now = time.time()
    fake.publish(REPLIES, "an old reply", at=now - 600)
    fake.publish(REPLIES, "sent while the app started", at=now - 5)
    replies = Replies()
    stream = stream_on(fake, replies, recorder, since=now - 60)
    try:
        replies.wait(["sent while the app started"])
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
        tap(fake, "live")
        replies.wait(["sent while the app started", "live"])
    finally:
        stream.stop()
    assert subscribes(fake)[0].query == {"since": str(int(now - 60))}


def test_after_a_drop_it_reconnects_and_gets_what_it_missed_once(
    fake: FakeNtfy, recorder: Recorder
) -> None:
    replies = Replies()
    stream = stream_on(fake, replies, recorder, backoff_first=0.3)
    try:
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
        first = tap(fake, "one")
        replies.wait(["one"])
        assert fake.drop_streams() == 1
        tap(fake, "two")  # most likely while the stream waits to reconnect
        tap(fake, "three")
        replies.wait(["one", "two", "three"])
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the new subscription")
        tap(fake, "four")
        replies.wait(["one", "two", "three", "four"])
    finally:
        stream.stop()
    assert [s.query["since"] for s in subscribes(fake)][1:] == [first]
    assert len(recorder.at(logging.WARNING)) == 1
    assert "ntfy: the reply stream from 127.0.0.1 is connected again" in recorder.at(logging.INFO)


def test_after_the_server_restarts_it_catches_up(recorder: Recorder) -> None:
    fake = FakeNtfy().start()
    replies = Replies()
    stream = stream_on(fake, replies, recorder, backoff_first=FIRST)
    try:
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
        tap(fake, "before")
        replies.wait(["before"])
        fake.stop()
        wait_for(lambda: recorder.at(logging.WARNING), what="the outage's warning")
        # Replies that reached the server's cache while the stream was away.
        fake.publish(REPLIES, "meanwhile 1")
        fake.publish(REPLIES, "meanwhile 2")
        fake.start()
        replies.wait(["before", "meanwhile 1", "meanwhile 2"])
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the new subscription")
        tap(fake, "after")
        replies.wait(["before", "meanwhile 1", "meanwhile 2", "after"])
    finally:
        stream.stop()
        fake.stop()
    assert len(recorder.at(logging.WARNING)) == 1


def test_while_the_server_is_down_attempts_space_out_and_it_warns_once(
    fake: FakeNtfy, recorder: Recorder
) -> None:
    replies = Replies()
    stream = stream_on(fake, replies, recorder, backoff_first=FIRST)
    try:
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
        fake.unavailable = True
        fake.drop_streams()
        wait_for(lambda: len(subscribes(fake)) >= 7, what="six failed attempts")
        fake.unavailable = False
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the new subscription")
        tap(fake, "back")
        replies.wait(["back"])
    finally:
        stream.stop()
    times = [s.at for s in subscribes(fake)][1:7]
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    # 0.05 s after the drop, then 0.1, 0.2, 0.4 (the most), 0.4, 0.4: never sooner.
    for gap, least in zip(gaps, [0.1, 0.2, 0.4, 0.4, 0.4], strict=True):
        assert gap >= least * 0.95, gaps
    assert gaps[0] < gaps[-1]
    (warning,) = recorder.at(logging.WARNING)
    assert "127.0.0.1" in warning
    assert (
        recorder.at(logging.INFO)[-1] == "ntfy: the reply stream from 127.0.0.1 is connected again"
    )


def test_a_silent_connection_times_out_and_reconnects(recorder: Recorder) -> None:
    with FakeNtfy(keepalive=3600.0) as fake:  # no keepalives: a dead NAT mapping, say
        replies = Replies()
        stream = stream_on(fake, replies, recorder, read_timeout=0.5, backoff_first=FIRST)
        try:
            wait_for(lambda: len(subscribes(fake)) >= 2, what="the reconnect")
            wait_for(lambda: fake.streams(REPLIES) >= 1, what="the new subscription")
            tap(fake, "still here")
            replies.wait(["still here"])
        finally:
            stream.stop()
    assert "timed out" in recorder.at(logging.WARNING)[0]


def test_keepalives_keep_a_quiet_stream_open(recorder: Recorder) -> None:
    with FakeNtfy(keepalive=0.1) as fake:
        replies = Replies()
        stream = stream_on(fake, replies, recorder, read_timeout=1.0)
        try:
            wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
            # Three read timeouts' worth of keepalives only: the one connection lasts.
            wait_past(time.time() + 3.0)
            tap(fake, "late")
            replies.wait(["late"])
        finally:
            stream.stop()
    assert len(subscribes(fake)) == 1
    assert not recorder.at(logging.WARNING)


def test_the_token_goes_with_the_subscription_and_without_it_is_refused(
    recorder: Recorder,
) -> None:
    with FakeNtfy(token=TOKEN) as fake:
        refused, allowed = Replies(), Replies()
        outside = stream_on(fake, refused, recorder, backoff_first=FIRST)
        inside = stream_on(fake, allowed, recorder, token=TOKEN)
        try:
            wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription with the token")
            tap(fake, "approve.1.signature", TOKEN)
            allowed.wait(["approve.1.signature"])
            wait_for(lambda: len(subscribes(fake)) >= 5, what="refused attempts")
        finally:
            outside.stop()
            inside.stop()
    assert refused.got() == []
    (warning,) = recorder.at(logging.WARNING)
    assert "HTTP 401" in warning


def test_junk_and_oversized_messages_never_reach_on_reply_nor_stop_the_stream(
    recorder: Recorder,
) -> None:
    with FakeNtfy() as fake:
        fake.message_limit = 100_000  # a server set to take big messages
        replies = Replies()
        stream = stream_on(fake, replies, recorder)
        try:
            wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
            junk = [
                b"not json\n",
                b"\xff\xfe{]\n",
                b"[1, 2, 3]\n",
                b'"a string"\n',
                b'{"event": "message", "message": "no id"}\n',
                b'{"event": "message", "id": "../../x?y", "message": "a bad id"}\n',
                b'{"event": "message", "id": "abcdefabcdef", "message": 7}\n',
                b'{"event": "poll_request", "id": "abcdefabcdeg", "message": "poll"}\n',
                b'{"event": "open", "id": "abcdefabcdeh", "message": "open"}\n',
                b'{"event": "message", "id": "abcdefabcdei", "topic": "other", "message": "x"}\n',
                b'{"event": "message", "id": "abcdefabcdej", "encoding": "base64",'
                b' "message": "eA=="}\n',
                b'{"event": "message", "id": "abcdefabcdek", "message": "'
                + b"x" * 70_000
                + b'"}\n',
                b"[" * 60_000 + b"\n",
                # A reply of the right size, on a line too long to read.
                b'{"event": "message", "id": "abcdefabcdel", "message": "padded", "pad": "'
                + b"x" * 70_000
                + b'"}\n',
            ]
            for line in junk:
                fake.send_raw(REPLIES, line)
            tap(fake, "y" * 5000)  # a real message, too big to be a reply
            tap(fake, "good")
            replies.wait(["good"])
        finally:
            stream.stop()
    assert len(subscribes(fake)) == 1
    assert not recorder.at(logging.WARNING)


def test_a_failing_on_reply_does_not_end_the_stream(fake: FakeNtfy, recorder: Recorder) -> None:
    replies = Replies()

    def on_reply(text: str) -> None:
        replies(text)
        if text == "first":
            raise RuntimeError(text)

    stream = ReplyStream(fake.url, REPLIES, None, on_reply, recorder.log)
    stream.start()
    try:
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
        tap(fake, "first")
        tap(fake, "second")
        replies.wait(["first", "second"])
    finally:
        stream.stop()
    assert recorder.at(logging.ERROR) == ["ntfy: handling a reply failed (RuntimeError)"]


def test_stop_ends_the_stream_while_reading_and_while_waiting(
    fake: FakeNtfy, recorder: Recorder
) -> None:
    # An hour's read timeout and backoff: only stop itself can end either in time.
    replies = Replies()
    reading = stream_on(fake, replies, recorder, read_timeout=LONG, backoff_max=LONG)
    waiting = ReplyStream(fake.url, REPLIES, None, replies, recorder.log, backoff_first=LONG)
    wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
    assert reading.stop(STOP_WITHIN)
    wait_for(lambda: fake.streams(REPLIES) == 0, what="the connection's end")
    fake.unavailable = True  # the second one fails, then waits an hour
    waiting.start()
    wait_for(lambda: recorder.at(logging.WARNING), what="the failure")
    assert waiting.stop(STOP_WITHIN)


# -- the fake itself: the parts of ntfy's API the tests above lean on --------------------


def test_the_fake_answers_poll_since_and_tokens_as_ntfy_documents() -> None:
    poll = f"/{REPLIES}/json?poll=1"
    with FakeNtfy(token=TOKEN) as fake:
        old = fake.publish(REPLIES, "old", at=time.time() - 600)
        new = fake.publish(REPLIES, "new")
        fake.publish(TOPIC, "elsewhere")
        status, events = call(fake, "GET", poll, None, TOKEN)
        assert status == 200 and events == [old, new]
        _, events = call(fake, "GET", f"{poll}&since={old['id']}", None, TOKEN)
        assert events == [new]
        _, events = call(fake, "GET", f"{poll}&since={int(time.time()) - 60}", None, TOKEN)
        assert events == [new]
        _, events = call(fake, "GET", f"{poll}&since=unknownid123", None, TOKEN)
        assert events == [old, new]
        status, events = call(fake, "GET", f"{poll}&since=10m", None, TOKEN)
        assert status == 400
        status, events = call(fake, "GET", poll, None, "tk_wrong")
        assert status == 401 and events == [{"code": 40101, "http": 401, "error": "unauthorized"}]
        assert call(fake, "GET", poll)[0] == 401
