"""The answer channel's client and wire format: requests read strictly, replies shown as
short plain text, and a launcher that is not there said in words."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

from tray.core.answers.gate import Request
from tray.state.answer_channel import encode_line, parse_request, send_answer, socket_path


def test_parse_request_is_strict() -> None:
    assert parse_request(b'{"answer": "deny"}') == Request("deny", None, None)
    assert parse_request(b'{"answer": "approve", "record": "a/b", "since": 5}') == Request(
        "approve", "a/b", 5.0
    )
    assert isinstance(parse_request(b'{"answer": "approve", "record": "' + b"a" * 129 + b'"}'), str)


def test_the_client_shows_a_reply_as_plain_short_text(tmp_path: Path) -> None:
    path = tmp_path / "fake.answer"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)

        def reply() -> None:
            peer, _ = server.accept()
            with peer:
                peer.recv(4096)
                reason = "\x1b[31mred\r\nline\u202e" + "x" * 300
                peer.sendall(json.dumps({"ok": False, "reason": reason}).encode() + b"\n")

        thread = threading.Thread(target=reply)
        thread.start()
        ok, reason = send_answer(path, "approve", None, None, timeout=5)
        thread.join(5)
    assert ok is False
    assert reason.isprintable()
    assert "\u202e" not in reason
    assert len(reason) <= 100


def test_the_client_without_a_launcher(tmp_path: Path) -> None:
    assert send_answer(tmp_path / "none.answer", "deny", None, None) == (
        False,
        "its launcher takes no answers (an older tray?)",
    )


def test_socket_path_is_a_string_from_a_string_or_a_path(tmp_path: Path) -> None:
    expected = f"{tmp_path}/4242-abc.answer"
    assert socket_path(str(tmp_path), "4242-abc") == expected
    assert socket_path(tmp_path, "4242-abc") == expected


def test_a_request_goes_as_one_line_that_the_server_reads_back() -> None:
    encoded = encode_line({"answer": "approve", "record": "r1", "since": 12.5})
    line, newline, rest = encoded.partition(b"\n")
    assert newline == b"\n" and rest == b""
    assert parse_request(line) == Request("approve", "r1", 12.5)
    assert json.loads(encode_line({"ok": False, "reason": "refused"})) == {
        "ok": False,
        "reason": "refused",
    }
