"""Pure: the tokens on the phone's Approve and Deny buttons.

A token names one answer to one prompt: the host of the tray that made it, the session,
the record, the prompt's ``since``, the answer and when it expires. It is signed with
HMAC-SHA256 under the app's key, which never leaves the machine
(``tray/state/phone_key.py``). The phone sends it back as it got it; the app checks the
signature and the expiry here, that the prompt was not answered from the phone before
(:class:`UsedTokens`), and the launcher's gate checks that the prompt is still the same
and that the user typed nothing since.

Everything that comes back is untrusted: a reply is parsed only after its signature
holds, and what it names is only ever compared, never used as a path or a command.

>>> key = bytes(32)
>>> token = sign(key, Grant("desk", "abc", "", 1700000000.25, "approve", 1700000600.0))
>>> token.startswith("t1.")
True
>>> verify(key, token, now=1700000100.0).answer
'approve'
>>> verify(key, token, now=1700000700.0).reason
'expired'
>>> verify(key, token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1], 1.0).reason
'bad signature'
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Final

from tray.protocol.state import ANSWERS

VERSION: Final = "t1"
# How long a button answers: a prompt older than this is answered at the desk.
LIFETIME: Final = 600.0
# No token tray makes is near this long; a longer reply is junk, refused unread.
MAX_TOKEN: Final = 1024
_FIELDS: Final = ("h", "s", "r", "t", "a", "e")


@dataclass(frozen=True, slots=True)
class Grant:
    """What a token allows: ``answer`` to the prompt of ``session``'s ``record`` that
    has been what it is since ``since``, until ``expires``."""

    host: str
    session: str
    record: str
    since: float
    answer: str
    expires: float


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a reply types nothing; never holds the token."""

    reason: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, signed: str) -> str:
    return _b64(hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest())


def sign(key: bytes, grant: Grant) -> str:
    """The token for ``grant``: ``t1.PAYLOAD.MAC``, URL-safe base64 without padding."""
    fields = [
        grant.host,
        grant.session,
        grant.record,
        grant.since,
        grant.answer,
        grant.expires,
    ]
    payload = json.dumps(dict(zip(_FIELDS, fields, strict=True)), separators=(",", ":"))
    signed = f"{VERSION}.{_b64(payload.encode())}"
    return f"{signed}.{_mac(key, signed)}"


def verify(key: bytes, token: str, now: float) -> Grant | Refusal:
    """The grant a reply carries, or why it is refused: malformed, bad signature,
    expired. Whether it was used already is :class:`UsedTokens`'s to say."""
    text = token.strip()
    if len(text) > MAX_TOKEN or not text.isascii():
        return Refusal("malformed")
    parts = text.split(".")
    if len(parts) != 3 or parts[0] != VERSION:  # the version, the payload and the MAC
        return Refusal("malformed")
    signed = f"{parts[0]}.{parts[1]}"
    if not hmac.compare_digest(_mac(key, signed), parts[2]):
        return Refusal("bad signature")
    grant = _grant(parts[1])
    if grant is None:
        return Refusal("malformed")  # signed by this key, yet not ours: never typed
    if now >= grant.expires:
        return Refusal("expired")
    return grant


def _grant(payload: str) -> Grant | None:
    try:
        fields = json.loads(_unb64(payload))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(fields, dict) or set(fields) != set(_FIELDS):
        return None
    host, session, record, since, answer, expires = (fields[name] for name in _FIELDS)
    texts = (host, session, record, answer)
    if not all(isinstance(value, str) for value in texts) or answer not in ANSWERS:
        return None
    times = (since, expires)
    if not all(isinstance(value, int | float) and not isinstance(value, bool) for value in times):
        return None
    return Grant(host, session, record, float(since), answer, float(expires))


class UsedTokens:
    """The prompts answered from the phone, kept until their tokens expire: a replayed
    reply finds its prompt here. One tap uses up both buttons of a prompt, so that
    Approve after Deny types nothing."""

    def __init__(self) -> None:
        self._used: dict[tuple[str, str, float], float] = {}

    def take(self, grant: Grant, now: float) -> bool:
        """True the first time a prompt's token is taken; False for every later one."""
        self._used = {prompt: until for prompt, until in self._used.items() if until > now}
        prompt = (grant.session, grant.record, grant.since)
        if prompt in self._used:
            return False
        self._used[prompt] = grant.expires
        return True


def reply_topic(topic: str) -> str:
    """The topic the buttons reply on: made from the user's secret topic, so that only
    who knows that one can find it, and within ntfy's 64 characters.

    >>> reply_topic("tray-7f3k2q9x")
    'tray-reply-5bda3a9198300722d7382fa6'
    """
    digest = hashlib.sha256(f"tray reply topic:{topic}".encode()).hexdigest()
    return f"tray-reply-{digest[:24]}"


__all__ = [
    "ANSWERS",
    "LIFETIME",
    "MAX_TOKEN",
    "Grant",
    "Refusal",
    "UsedTokens",
    "reply_topic",
    "sign",
    "verify",
]
