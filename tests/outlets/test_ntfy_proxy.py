"""tray's ntfy outlet behind a web proxy (FakeProxy, on loopback) in front of FakeNtfy:
an https server through a CONNECT tunnel, an http one by its whole URL, both the publish
and the reply stream (which still streams); NO_PROXY goes around it; a proxy that
refuses, or a setting that cannot be used, is one warning without a secret."""

from __future__ import annotations

import base64
import logging
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.fake_proxy import Asked, FakeProxy
from helpers.log_records import Recorder, assert_no_secret
from helpers.ntfy_standin import FakeNtfy, tls_contexts
from helpers.waiting import wait_for

from tray.app.phone_answers import PhoneAnswers
from tray.core.answers.phone_tokens import reply_topic
from tray.core.config.away import AwaySettings
from tray.outlets.ntfy import NtfyPublisher, ReplyStream

TOPIC = "tray-prompts-Q7vXk2"
REPLIES = "tray-replies-Z3mWp9"
TOKEN = "tk_made0up0token0for0tests0a1b2"  # noqa: S105 - a made-up secret the test hunts for
PASSWORD = "proxy-Pa55-k8"  # noqa: S105 - likewise
SECRETS = (TOPIC, REPLIES, TOKEN, PASSWORD, "approve.1")
STOP_WITHIN = 30.0  # generous: stop wakes a blocked read, it does not wait one out
FIRST = 0.05
MOST = 0.4


@pytest.fixture
def recorder(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> Iterator[Recorder]:
    caplog.set_level(logging.DEBUG)
    recorder = Recorder("ntfy")
    yield recorder
    assert_no_secret(recorder, (caplog.text, *capfd.readouterr()), SECRETS)


@pytest.fixture
def tls(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    return tls_contexts(tmp_path)


class Replies(list[str]):
    def __call__(self, text: str) -> None:
        self.append(text)


def phone_tap(fake: FakeNtfy, text: str) -> None:
    """The phone's tap, as the server gets it (straight to it: the phone is elsewhere)."""
    fake.publish(REPLIES, text)


def through_both(
    fake: FakeNtfy,
    environ: dict[str, str],
    recorder: Recorder,
    client_tls: ssl.SSLContext | None = None,
) -> list[str]:
    """Publish once and get one reply, each with ``environ``; the replies received."""
    replies = Replies()
    publisher = NtfyPublisher(fake.url, TOKEN, recorder.log, environ=environ, tls=client_tls)
    stream = ReplyStream(
        fake.url, REPLIES, TOKEN, replies, recorder.log, environ=environ, tls=client_tls
    )
    stream.start()
    try:
        publisher.publish({"topic": TOPIC, "message": "approve.1 or deny"})
        wait_for(lambda: fake.published(TOPIC), what="the publish")
        wait_for(lambda: fake.streams(REPLIES) == 1, what="the subscription")
        # Sent after the subscription: it can only come down the open stream.
        phone_tap(fake, "approve.1.signature")
        wait_for(lambda: replies == ["approve.1.signature"], what="the reply")
        phone_tap(fake, "approve.2.signature")
        wait_for(lambda: len(replies) == 2, what="the second reply")
    finally:
        assert stream.stop(STOP_WITHIN)
        assert publisher.stop(STOP_WITHIN)
    subscriptions = [r for r in fake.requests if r.method == "GET"]
    assert len(subscriptions) == 1  # one stream held open, never a poll
    assert {r.authorization for r in fake.requests} == {f"Bearer {TOKEN}"}
    assert not recorder.at(logging.WARNING)
    return list(replies)


def test_an_https_server_is_reached_through_a_connect_tunnel(
    tls: tuple[ssl.SSLContext, ssl.SSLContext], recorder: Recorder
) -> None:
    server_tls, client_tls = tls
    with FakeNtfy(token=TOKEN, tls=server_tls) as fake, FakeProxy() as proxy:
        environ = {"HTTPS_PROXY": proxy.url, "HTTP_PROXY": "http://127.0.0.1:9"}
        through_both(fake, environ, recorder, client_tls)
    tunnel = f"127.0.0.1:{fake.port}"
    # Both went through it, as tunnels: the proxy saw the host, never a topic or token.
    assert proxy.requests() == [Asked("CONNECT", tunnel, None)] * 2
    assert recorder.at(logging.INFO) == [
        f"ntfy: listening for replies at 127.0.0.1 (through the proxy at 127.0.0.1:{proxy.port})"
    ]


def test_an_http_server_is_asked_for_through_the_proxy_by_its_whole_url(
    recorder: Recorder,
) -> None:
    with FakeNtfy(token=TOKEN) as fake, FakeProxy() as proxy:
        through_both(fake, {"http_proxy": f"127.0.0.1:{proxy.port}"}, recorder)
    methods = sorted((a.method, a.target.split("?")[0]) for a in proxy.requests())
    assert methods == [("GET", f"{fake.url}/{REPLIES}/json"), ("POST", f"{fake.url}/")]


def test_the_proxy_s_password_goes_to_it_alone(
    tls: tuple[ssl.SSLContext, ssl.SSLContext], recorder: Recorder
) -> None:
    server_tls, client_tls = tls
    basic = "Basic " + base64.b64encode(f"me@corp:{PASSWORD}".encode()).decode()
    with FakeNtfy(token=TOKEN, tls=server_tls) as fake, FakeProxy(basic) as proxy:
        url = f"http://me%40corp:{PASSWORD}@127.0.0.1:{proxy.port}"
        through_both(fake, {"HTTPS_PROXY": url}, recorder, client_tls)
    assert {a.authorization for a in proxy.requests()} == {basic}


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "localhost,127.0.0.0/8", "*"])
def test_no_proxy_goes_around_the_proxy(no_proxy: str, recorder: Recorder) -> None:
    with FakeNtfy(token=TOKEN) as fake, FakeProxy() as proxy:
        environ = {"HTTP_PROXY": proxy.url, "NO_PROXY": no_proxy}
        through_both(fake, environ, recorder)
    assert proxy.requests() == []
    assert recorder.at(logging.INFO) == ["ntfy: listening for replies at 127.0.0.1"]


@pytest.mark.parametrize("https", [True, False], ids=["tunnel", "whole-url"])
def test_a_proxy_that_asks_for_a_password_is_one_warning_each(
    https: bool, tls: tuple[ssl.SSLContext, ssl.SSLContext], recorder: Recorder
) -> None:
    server_tls, client_tls = tls
    with (
        FakeNtfy(token=TOKEN, tls=server_tls if https else None) as fake,
        FakeProxy("Basic bm9ib2R5OmhlcmU=") as proxy,
    ):
        environ = {"HTTPS_PROXY" if https else "HTTP_PROXY": proxy.url}
        publisher = NtfyPublisher(
            fake.url, TOKEN, recorder.log, environ=environ, tls=client_tls, backoff_first=FIRST
        )
        stream = ReplyStream(
            fake.url,
            REPLIES,
            TOKEN,
            Replies(),
            recorder.log,
            environ=environ,
            tls=client_tls,
            backoff_first=FIRST,
            backoff_max=MOST,
        )
        stream.start()
        try:
            publisher.publish({"topic": TOPIC, "message": "approve.1 or deny"})
            wait_for(lambda: len(recorder.at(logging.WARNING)) == 2, what="both warnings")
            wait_for(lambda: len(proxy.requests()) >= 5, what="more attempts")
        finally:
            assert stream.stop(STOP_WITHIN)
            assert publisher.stop(STOP_WITHIN)
    assert fake.requests == []
    said = "the proxy refused the tunnel: HTTP 407" if https else "HTTP 407"
    warnings = recorder.at(logging.WARNING)
    assert len(warnings) == 2 and all(f"({said})" in w for w in warnings), warnings


def test_a_proxy_setting_that_cannot_be_used_is_said_by_its_name(recorder: Recorder) -> None:
    with FakeNtfy(token=TOKEN) as fake:
        environ = {"all_proxy": f"socks5://me:{PASSWORD}@127.0.0.1:1080"}
        publisher = NtfyPublisher(fake.url, TOKEN, recorder.log, environ=environ)
        stream = ReplyStream(fake.url, REPLIES, TOKEN, Replies(), recorder.log, environ=environ)
        stream.start()
        try:
            publisher.publish({"topic": TOPIC, "message": "approve.1 or deny"})
            wait_for(lambda: len(recorder.at(logging.WARNING)) == 2, what="both warnings")
        finally:
            assert stream.stop(STOP_WITHIN)
            assert publisher.stop(STOP_WITHIN)
    assert fake.requests == []
    for warning in recorder.at(logging.WARNING):
        assert "(ALL_PROXY: only an http:// proxy is supported)" in warning


def test_the_app_s_phone_side_hands_its_environment_to_both(
    tmp_path: Path, recorder: Recorder
) -> None:
    with FakeNtfy(token=TOKEN) as fake, FakeProxy() as proxy:
        settings = AwaySettings(answer=f"{fake.url}/{TOPIC}", answer_token=TOKEN)
        environ = {"HTTP_PROXY": proxy.url}
        phone = PhoneAnswers(
            settings, tmp_path, "desk", recorder.log, lambda _: None, environ=environ
        )
        phone.start()
        try:
            wait_for(lambda: fake.streams(reply_topic(TOPIC)) == 1, what="the subscription")
            phone.ping("build needs you", "approve.1 or deny", None, None)
            wait_for(lambda: fake.published(TOPIC), what="the publish")
        finally:
            phone.stop()
    assert sorted(a.method for a in proxy.requests()) == ["GET", "POST"]
