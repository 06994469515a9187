"""The notification server's activation token for a click (notification spec 1.2).

A server that implements 1.2 sends ``ActivationToken(id, token)`` just before
``ActionInvoked(id, key)``; the token lets a Wayland terminal raise its own window
(xdg-activation). desktop-notifier 6.x neither listens for it nor tells its callbacks
the notification's id, so the notifier watches both signals on the bus loop's
connection (one connection delivers them in the order sent) and, when desktop-notifier reports a
click, takes the click just seen there: with its token, or None from a server that sent
none (dunst 1.9, for one).

The two connections may deliver the same click in either order, so a click reported
first by desktop-notifier waits briefly for this connection's. A click on another
program's notification is seen here too; it is dropped when no click of ours claims it
within :data:`CLICK_AGE`. The token is never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import Any

from tray.desktop.bus import (
    NOTIFICATIONS,
    NOTIFICATIONS_PATH,
    BusCallError,
    Subscription,
    subscribe,
)

# How long a click reported by desktop-notifier waits for this connection's signal. Every
# server sends it, so the wait ends when it comes; the bound only matters on a loaded
# machine, where a quarter of a second was seen to pass and the click lost its token.
CLICK_WAIT = 1.0
# A click seen here and not claimed within this long was some other program's.
CLICK_AGE = 2.0
_TOKEN_LIMIT = 16
_TOKEN_LENGTH = 4096
DEFAULT_ACTION = "default"


class ActivationTokens:
    """Tokens and default-action clicks seen on one bus connection; the bus loop's
    thread only."""

    def __init__(self) -> None:
        self._bus: Any = None
        # Taken off the connection again by forget: it is shared, and outlives us.
        self._subscriptions: list[Subscription] = []
        self._owner: str | None = None
        self._tokens: dict[int, str] = {}
        self._clicks: deque[tuple[float, str | None]] = deque(maxlen=_TOKEN_LIMIT)
        self._seen = asyncio.Event()

    async def watch(self, bus: Any, owner: str) -> None:
        """Follow the server ``owner``'s signals on ``bus`` (once per connection)."""
        self._owner = owner
        if bus is self._bus:
            return
        rule = {"path": NOTIFICATIONS_PATH, "interface": NOTIFICATIONS}
        self.forget()
        try:
            for member, handler in (
                ("ActivationToken", self._on_token),
                ("ActionInvoked", self._on_action),
            ):
                self._subscriptions.append(
                    await subscribe(bus, {**rule, "member": member}, handler)
                )
        except BusCallError:
            # Clicks then go without a token at once, rather than each waiting for one.
            return
        self._bus = bus

    def forget(self) -> None:
        """Stop watching: the next :meth:`watch` subscribes again."""
        self._bus = None
        for subscription in self._subscriptions:
            subscription.cancel()
        self._subscriptions.clear()

    def _from_server(self, message: Any) -> bool:
        return self._owner is not None and message.sender == self._owner

    def _on_token(self, message: Any) -> None:
        body = message.body
        if not self._from_server(message) or len(body) != 2:
            return
        nid, token = body
        if isinstance(nid, int) and isinstance(token, str) and 0 < len(token) <= _TOKEN_LENGTH:
            if len(self._tokens) >= _TOKEN_LIMIT:
                self._tokens.pop(next(iter(self._tokens)))
            self._tokens[nid] = token

    def _on_action(self, message: Any) -> None:
        body = message.body
        if not self._from_server(message) or len(body) != 2:
            return
        nid, key = body
        if not isinstance(nid, int):
            return
        token = self._tokens.pop(nid, None)
        if key == DEFAULT_ACTION:
            self._clicks.append((time.monotonic(), token))
            self._seen.set()

    async def take(self) -> str | None:
        """The token of the click desktop-notifier just reported, or None."""
        if self._bus is None:
            return None
        if not self._fresh():
            self._seen.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seen.wait(), CLICK_WAIT)
        if not self._fresh():
            return None
        return self._clicks.popleft()[1]

    def _fresh(self) -> bool:
        while self._clicks and self._clicks[0][0] < time.monotonic() - CLICK_AGE:
            self._clicks.popleft()
        return bool(self._clicks)


__all__ = ["ActivationTokens"]
