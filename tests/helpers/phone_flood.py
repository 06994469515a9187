"""A flood of junk on the reply topic, as anyone who learnt its name could send: noise,
near misses of a real token, replies too long, and lines that are no ntfy event at all.

The replies go through the server (plain publishes over HTTP, on a thread of their own,
until told to stop); the broken lines straight into the app's open stream.
"""

from __future__ import annotations

import random
import string
import threading
import urllib.error
import urllib.request

from helpers.ntfy_standin import FakeNtfy

# Lines the server itself would never send, written into the stream as they are.
RAW_JUNK = [
    b"not json\n",
    b"\xff\xfe\x00garbage\n",
    b'{"event":"message","id":"../../etc","message":"x"}\n',
    b'{"event":"message","message":"no id"}\n',
    b"[" * 5000 + b"\n",
    b'{"event":"message","id":"abcdefghijkl","topic":"elsewhere","message":"x"}\n',
    b"x" * 70000 + b"\n",
]


def junk(rng: random.Random, token: str) -> str:
    """A reply that is none of ours: noise, a near miss of ``token``, or far too long."""
    body = token.split(".")[1]
    kinds = [
        lambda: "".join(rng.choices(string.printable, k=rng.randrange(1, 200))),
        lambda: flip(token, rng.randrange(3, len(token)), rng),
        lambda: token[: rng.randrange(1, len(token))],
        lambda: f"t1.{body}.{'A' * 43}",  # the payload with a made-up signature
        lambda: "t1." + "A" * rng.randrange(1000, 5000),
        lambda: token.replace("t1.", "t2.", 1),
        lambda: "\u202e" + token,
        lambda: rng.randbytes(rng.randrange(1, 64)).decode("latin-1"),
    ]
    return rng.choice(kinds)()


def flip(token: str, where: int, rng: random.Random) -> str:
    other = rng.choice(
        [c for c in string.ascii_letters + string.digits + "-_" if c != token[where]]
    )
    return f"{token[:where]}{other}{token[where + 1 :]}"


class Flood:
    """Publishes junk to ``topic`` until :meth:`stop`, at least ``least`` replies; counts
    those the server took (it refuses a message over its size limit, as ntfy does)."""

    def __init__(self, ntfy: FakeNtfy, topic: str, token: str, least: int, seed: int) -> None:
        self._ntfy = ntfy
        self._url = f"{ntfy.url}/{topic}"
        self._topic = topic
        self._token = token
        self._least = least
        self._rng = random.Random(seed)
        self.sent = 0
        self.taken = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Flood:
        self._thread.start()
        return self

    def _run(self) -> None:
        while self.sent < self._least or not self._stop.is_set():
            if self.sent % 50 == 0:
                self._ntfy.send_raw(self._topic, RAW_JUNK[self.sent // 50 % len(RAW_JUNK)])
            request = urllib.request.Request(  # noqa: S310 - the test's own loopback URL
                self._url, data=junk(self._rng, self._token).encode(), method="POST"
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                    response.read()
                    self.taken += 1
            except urllib.error.HTTPError as refused:  # 413: too long for the server
                refused.close()
            self.sent += 1

    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Ask it to end, and wait until it has (after ``least`` replies at the soonest)."""
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive(), "the flood did not end"


__all__ = ["RAW_JUNK", "Flood", "junk"]
