"""The answer channel's client and wire format: how ``tray answer``, the tray app and a
host's stream ask a session's launcher to answer its prompt.

The launcher serves the channel (:mod:`tray.launcher.answer_socket`) on a Unix socket in
the state directory, ``<session id>.answer``, mode 0600 in the 0700 directory, that only
a peer of the launcher's own uid may use. A connection carries one request, one JSON line
of at most :data:`MAX_REQUEST` bytes::

    {"answer": "approve", "record": "", "since": 1764470012.5}

and gets one JSON line back before it is closed: ``{"ok": true, "record": ..., "since":
...}`` once the keys went into the program's input, or ``{"ok": false, "reason": ...}``.
The request only names a prompt: the keys are the launcher's to choose.

The socket sits beside the session's file, so it is the state directory's, like the
file: both sides, a tier apart, read its name and its lines here.
"""

from __future__ import annotations

import math
import os
import socket
import time

from tray.base.safe_text import clean_text, cut
from tray.core.answers.gate import Request
from tray.core.session.model import Session
from tray.protocol.state import ANSWER_NAMED
from tray.state.liveness import with_liveness
from tray.state.store import ANSWER_SUFFIX, StateStore, valid_session_id

SUFFIX = ANSWER_SUFFIX
MAX_REQUEST = 512
# From the connection's start: time to send the request, and for an early answer to wait
# for its prompt to settle. A peer that stalls is cut off, never waited for.
REQUEST_TIMEOUT = 2.0
HOLD_LIMIT = 5.0
# The client's wait: a request's time, the longest hold, and a margin.
REPLY_TIMEOUT = REQUEST_TIMEOUT + HOLD_LIMIT + 2.0
MAX_REPLY = 4096


def socket_path(state_dir: str | os.PathLike[str], session_id: str) -> str:
    """The socket of ``session_id`` in ``state_dir``, as a string."""
    return os.path.join(state_dir, f"{session_id}{SUFFIX}")


def parse_request(line: bytes) -> Request | str:
    """A request line, or why it is not one. Only these three fields, strictly."""
    import json  # noqa: PLC0415 - only a request needs it, and most sessions get none

    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return "bad request: not JSON"
    if not isinstance(data, dict) or set(data) - {"answer", "record", "since"}:
        return "bad request: unknown fields"
    answer, record, since = data.get("answer"), data.get("record"), data.get("since")
    if answer not in ANSWER_NAMED:
        return "bad request: answer must be approve or deny"
    if record is not None and (not isinstance(record, str) or len(record) > 128):
        return "bad request: record"
    if since is not None:
        if isinstance(since, bool) or not isinstance(since, (int, float)):
            return "bad request: since"
        if not math.isfinite(float(since)):
            return "bad request: since"
        since = float(since)
    return Request(str(answer), record, since)


def encode_line(document: dict[str, object]) -> bytes:
    """A request or a reply as it goes on the socket: one JSON line."""
    import json  # noqa: PLC0415 - see parse_request

    return json.dumps(document).encode() + b"\n"


def send_answer(
    path: str | os.PathLike[str],
    answer: str,
    record: str | None,
    since: float | None,
    timeout: float = REPLY_TIMEOUT,
) -> tuple[bool, str]:
    """The client's side, for ``tray answer`` and the tray app: one request on a
    launcher's socket. True when the keys went in; else False and one short line why."""
    import json  # noqa: PLC0415 - see parse_request

    request: dict[str, object] = {"answer": answer, "record": record, "since": since}
    deadline = time.monotonic() + timeout
    data = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC) as client:
        client.settimeout(timeout)
        try:
            client.connect(os.fspath(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return False, "its launcher takes no answers (an older tray?)"
        except OSError as error:
            return False, cut(clean_text(error.strerror or str(error)), 80)
        try:
            client.sendall(encode_line(request))
            while not data.endswith(b"\n") and len(data) < MAX_REPLY:
                client.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = client.recv(MAX_REPLY)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            return False, "no reply from its launcher"
        except OSError as error:
            if not data:
                return False, cut(clean_text(error.strerror or str(error)), 80)
    try:
        reply = json.loads(data)
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        return False, "no reply from its launcher"
    if reply.get("ok") is True:
        return True, ""
    reason = reply.get("reason")
    # The launcher's words, but shown as text only, and short.
    return False, cut(clean_text(reason), 100) if isinstance(reason, str) else "refused"


# What answer_stored_session says happened.
ANSWERED = "answered"
NOT_AN_ID = "not a session id"
NO_SESSION = "no such session"
UNREADABLE = "unreadable"
HAS_ENDED = "ended"
REFUSED = "refused"


def answer_stored_session(
    state_dir: str | os.PathLike[str],
    session_id: str,
    answer: str,
    record: str | None,
    since: float | None,
) -> tuple[str, str, Session | None]:
    """The client's whole way for a session of this machine, for ``tray answer`` and the
    remote stream: read its state file and, while it runs, :func:`send_answer`.

    Returns one of the outcomes above; the read error or the launcher's reason (else
    ""); and the session once it was read. Each caller words the outcome its own way.
    """
    if not valid_session_id(session_id):
        return NOT_AN_ID, "", None
    store = StateStore(os.fspath(state_dir))
    try:
        session = with_liveness(store.read(store.path_for(session_id)))
    except FileNotFoundError:
        return NO_SESSION, "", None
    except (OSError, ValueError) as error:
        return UNREADABLE, str(error), None
    if not session.running:
        return HAS_ENDED, "", session
    ok, reason = send_answer(socket_path(state_dir, session_id), answer, record, since)
    return (ANSWERED, "", session) if ok else (REFUSED, reason, session)
