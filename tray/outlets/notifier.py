"""Native notifications through desktop-notifier, on the app's one D-Bus loop.

desktop-notifier only runs click callbacks while an asyncio loop keeps running, and the
rest of the app is threads (pystray, the watcher). So the notifier runs on the bus loop
(:mod:`tray.desktop.bus_loop`), which keeps running for the app's whole life, and
``send`` only hands work over to it.

On Linux it also asks the bus itself, before each notification, whether a server owns
``org.freedesktop.Notifications``: desktop-notifier's own ``send`` neither raises nor
reports a missing server, and warns with a traceback for every notification. Asking
first gives one warning per outage, and the server's capabilities (``body-markup``),
which desktop-notifier does not expose.

Each notification carries tray's own icon for the state it reports (amber for a prompt,
red for a failure, ...), as the file's ``file://`` URI in ``app_icon``: without one,
GNOME Shell draws a stock icon of its own (on a critical one, ``dialog-error``: a "no
entry" sign) (:mod:`tray.outlets.notification_icons`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from desktop_notifier import Button, DesktopNotifier, Icon, Urgency

from tray.base.safe_text import clean_text, escape_markup
from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL, AnswerTarget
from tray.core.view.overview import IconState
from tray.desktop.bus import NOTIFICATIONS, BusCallError, activate, name_owner
from tray.desktop.bus import capabilities as bus_capabilities
from tray.desktop.bus_loop import attach
from tray.outlets.activation_tokens import ActivationTokens
from tray.outlets.notification_icons import NotificationIcons
from tray.protocol.state import Answer

# desktop-notifier depends on dbus-fast on Linux only; elsewhere it talks to the
# platform's own notification centre, which renders no markup.
if sys.platform == "linux":
    from dbus_fast.aio import MessageBus
    from dbus_fast.errors import DBusFastError

SERVER_NAME = NOTIFICATIONS

URGENCIES = {"low": Urgency.Low, "normal": Urgency.Normal, "critical": Urgency.Critical}

# A server that accepts the connection and then hangs must not stall every later
# notification behind it.
DELIVERY_TIMEOUT = 10.0
# Bounds the backlog while a server is slow; the policy upstream already rate-limits.
QUEUE_LIMIT = 64
CLOSE_TIMEOUT = 5.0
# The snooze button: its action key on the bus, and its label.
SNOOZE_ACTION = "snooze"
SNOOZE_LABEL = "Snooze 1 h"
# A permission prompt tray can answer gets these two as well (action key, label).
ANSWER_BUTTONS = ((Answer.APPROVE, APPROVE_LABEL), (Answer.DENY, DENY_LABEL))
# Answerable notifications remembered, to withdraw once their prompt is answered.
SHOWN_KEPT = 64


@dataclass(frozen=True, slots=True)
class _Pending:
    title: str
    body: str
    urgency: Urgency
    key: str
    snooze: tuple[str, ...]
    answer: AnswerTarget | None = None
    icon: IconState = "calm"


@dataclass(frozen=True, slots=True)
class _Server:
    owner: str  # the unique bus name, so a restarted server is asked again
    markup: bool


class _NoServerError(Exception):
    """No notification server can be reached; the message says why, in one line."""


class Notifier:
    """Shows notifications; ``on_click(key, token)`` and ``on_snooze(session_ids)`` run on
    the bus loop's thread. ``token`` is the server's activation token for the click
    (:mod:`tray.outlets.activation_tokens`), or None when the server sent none.

    ``environ`` names the session bus (the process's own environment by default, which
    desktop-notifier reads too)."""

    def __init__(
        self,
        app_name: str,
        on_click: Callable[[str, str | None], None],
        log: logging.Logger,
        on_snooze: Callable[[tuple[str, ...]], None] | None = None,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._app_name = app_name
        self._on_click = on_click
        self._tokens = ActivationTokens()
        self._clicks: set[asyncio.Task[None]] = set()
        self._on_snooze = on_snooze
        # Set by the app: ``on_answer(target, "approve" | "deny")`` for the Approve and
        # Deny buttons, on the bus loop's thread.
        self.on_answer: Callable[[AnswerTarget, str], None] | None = None
        # prompt -> the ids of its notifications still up (the bus loop's thread only)
        self._shown: OrderedDict[AnswerTarget, list[str]] = OrderedDict()
        self._withdrawals: set[asyncio.Task[None]] = set()
        self._log = log
        self._icons = NotificationIcons(log)
        self._desktop = self._new_desktop_notifier()
        self._server: _Server | None = None
        self._outage = False
        self._closed = False
        self._bus_loop = attach(os.environ if environ is None else environ)
        self._loop = self._bus_loop.loop
        # Bound to the loop only once used, there.
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(QUEUE_LIMIT)
        self._worker: asyncio.Task[None] | None = None
        self._closing: asyncio.Task[None] | None = None
        self._serving = self._bus_loop.submit(self._serve())

    def send(  # noqa: PLR0917 - positional, as it always could be
        self,
        title: str,
        body: str,
        urgency: str,
        key: str,
        snooze: Sequence[str] = (),
        answer: AnswerTarget | None = None,
        *,
        icon: IconState = "calm",
    ) -> None:
        """Queue one notification; returns at once and never raises for delivery trouble.

        ``urgency`` is "low", "normal" or "critical". ``key`` never leaves the process:
        it only comes back through ``on_click``. With ``snooze`` (session ids) and an
        ``on_snooze``, the notification has a "Snooze 1 h" button that hands those ids
        to ``on_snooze``; they never leave the process either. With ``answer`` and an
        ``on_answer``, it also has "Approve" and "Deny", which hand the target back.
        ``icon`` is the state it reports: it shows tray's icon of that state.
        """
        level = URGENCIES.get(urgency)
        if level is None:
            raise ValueError(f"unknown urgency {urgency!r}")
        if self._closed:
            self._log.debug("notifier closed; dropping a notification")
            return
        pending = _Pending(
            clean_text(title), clean_text(body), level, key, tuple(snooze), answer, icon
        )
        try:
            self._loop.call_soon_threadsafe(self._enqueue, pending)
        except RuntimeError:  # the loop closed between the check and the call
            self._log.debug("notifier closed; dropping a notification")

    def close(self) -> None:
        """Stop sending, let go of the connections; pending notifications are dropped."""
        if self._closed:
            return
        self._closed = True
        if self._bus_loop.on_loop():
            # Called from on_click: the shutdown runs once the callback returns (kept
            # here until then, as the loop holds its tasks only weakly).
            self._closing = self._loop.create_task(self._shutdown())
            self._closing.add_done_callback(lambda _task: self._bus_loop.detach())
            return
        try:
            self._bus_loop.run(self._shutdown(), CLOSE_TIMEOUT)
        except TimeoutError:
            self._log.warning("the notifier did not stop within %.0f s", CLOSE_TIMEOUT)
        except RuntimeError:
            pass  # the loop closed already
        self._bus_loop.detach()

    # Everything below runs on the bus loop's thread.

    async def _shutdown(self) -> None:
        worker = self._worker
        if worker is None:  # cancelled before it began: nothing was opened but icons
            self._serving.cancel()
            self._icons.close()
            return
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker  # its cleanup, closing desktop-notifier's connection, is done

    def _enqueue(self, pending: _Pending) -> None:
        try:
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            self._log.debug("notification backlog full; dropping a notification")

    async def _serve(self) -> None:
        self._worker = asyncio.current_task()
        try:
            while True:
                pending = await self._queue.get()
                try:
                    await asyncio.wait_for(self._deliver(pending), DELIVERY_TIMEOUT)
                except TimeoutError:
                    self._lost(
                        f"the notification server did not answer within {DELIVERY_TIMEOUT:.0f} s"
                    )
                except _NoServerError as problem:
                    self._lost(str(problem))
                except Exception:
                    self._log.exception("sending a notification failed")
        finally:
            _release(self._desktop)
            self._tokens.forget()
            self._icons.close()

    async def _deliver(self, pending: _Pending) -> None:
        server = await self._find_server()
        body = escape_markup(pending.body) if server.markup else pending.body
        dispatched: list[bool] = []
        buttons = self._answer_buttons(pending.answer)
        if pending.snooze and self._on_snooze is not None:
            # A fixed identifier, not desktop-notifier's random one: the action key is
            # what the server and any script driving it see.
            buttons.append(
                Button(
                    SNOOZE_LABEL,
                    on_pressed=lambda: self._snoozed(pending.snooze),
                    identifier=SNOOZE_ACTION,
                )
            )
        icon_path = self._icons.path(pending.icon)
        identifier = await self._desktop.send(
            pending.title,
            body,
            urgency=pending.urgency,
            icon=None if icon_path is None else Icon(path=icon_path),
            buttons=buttons,
            on_clicked=lambda: self._clicked(pending.key),
            on_dispatched=lambda: dispatched.append(True),
        )
        if not dispatched:
            # desktop-notifier keeps a half-built D-Bus proxy after a failure; a new
            # instance starts clean against whatever server appears next.
            _release(self._desktop)
            self._desktop = self._new_desktop_notifier()
            raise _NoServerError("the notification server refused the notification")
        if pending.answer is not None:
            self._note_shown(pending.answer, identifier)
        if self._outage:
            self._outage = False
            self._log.info("a notification server is back; notifications resume")

    # Answering: the buttons, and withdrawing a prompt's notifications once answered.

    def _answer_buttons(self, target: AnswerTarget | None) -> list[Button]:
        on_answer = self.on_answer
        if target is None or on_answer is None:
            return []
        return [
            Button(
                label,
                on_pressed=partial(self._answered, on_answer, target, action),
                identifier=action,
            )
            for action, label in ANSWER_BUTTONS
        ]

    def _answered(
        self, on_answer: Callable[[AnswerTarget, str], None], target: AnswerTarget, answer: str
    ) -> None:
        try:
            on_answer(target, answer)
        except Exception:
            self._log.exception("handling a notification's %s failed", answer)

    def _note_shown(self, target: AnswerTarget, identifier: str) -> None:
        self._shown.setdefault(target, []).append(identifier)
        self._shown.move_to_end(target)
        while len(self._shown) > SHOWN_KEPT:
            self._shown.popitem(last=False)

    def withdraw(self, target: AnswerTarget) -> None:
        """Close the notifications shown for this prompt (its first ping, reminders);
        safe from any thread, and a no-op for those already closed."""
        if self._closed:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self._loop.call_soon_threadsafe(self._start_withdraw, target)

    def _start_withdraw(self, target: AnswerTarget) -> None:
        identifiers = self._shown.pop(target, [])
        if identifiers:
            task = self._loop.create_task(self._withdraw(identifiers))
            self._withdrawals.add(task)  # kept alive until done
            task.add_done_callback(self._withdrawals.discard)

    async def _withdraw(self, identifiers: list[str]) -> None:
        for identifier in identifiers:
            try:
                await asyncio.wait_for(self._desktop.clear(identifier), DELIVERY_TIMEOUT)
            except (KeyError, TimeoutError):
                pass  # closed already (a button press closes it), or a server gone quiet
            except Exception:
                self._log.exception("withdrawing a notification failed")

    def _lost(self, reason: str) -> None:
        self._server = None
        if not self._outage:
            self._outage = True
            self._log.warning("notifications are off: %s; will retry on the next one", reason)
        else:
            self._log.debug("notification dropped: %s", reason)

    def _clicked(self, key: str) -> None:
        task = self._loop.create_task(self._activated(key))
        self._clicks.add(task)
        task.add_done_callback(self._clicks.discard)

    async def _activated(self, key: str) -> None:
        try:
            self._on_click(key, await self._tokens.take())
        except Exception:
            self._log.exception("handling a notification click failed")

    def _snoozed(self, session_ids: tuple[str, ...]) -> None:
        if self._on_snooze is None:
            return
        try:
            self._on_snooze(session_ids)
        except Exception:
            self._log.exception("handling a notification's snooze failed")

    def _new_desktop_notifier(self) -> DesktopNotifier:
        # No app icon: desktop-notifier's default is the Python logo. Each notification
        # names its own icon instead, the state's.
        return DesktopNotifier(app_name=self._app_name, app_icon=None)

    async def _find_server(self) -> _Server:
        if sys.platform != "linux":
            return _Server(owner="", markup=False)
        try:
            bus = await self._bus_loop.session()
            if bus is None:
                raise _NoServerError(
                    f"cannot reach the D-Bus session bus ({self._bus_loop.session_error})"
                )
            owner = await name_owner(bus, SERVER_NAME)
            if owner is None and await activate(bus, SERVER_NAME):
                owner = await name_owner(bus, SERVER_NAME)
            if owner is None:
                raise _NoServerError(f"no notification server ({SERVER_NAME}) on the session bus")
            if self._server is None or self._server.owner != owner:
                capabilities = await _capabilities(bus, owner)
                # Unknown capabilities: escaping is the safe guess.
                markup = capabilities is None or "body-markup" in capabilities
                self._server = _Server(owner, markup)
            await self._tokens.watch(bus, owner)
        # KeyError: no bus address and no HOME to look one up in.
        except (OSError, EOFError, KeyError, ValueError, DBusFastError) as problem:
            self._tokens.forget()
            raise _NoServerError(f"cannot reach the D-Bus session bus ({problem})") from problem
        return self._server


def _release(desktop: DesktopNotifier) -> None:
    """Close desktop-notifier's own D-Bus connection, which it never closes itself.

    It is not public API, hence the careful lookups: at worst the socket leaks, as it
    would anyway.
    """
    if sys.platform != "linux":
        return
    bus = getattr(getattr(desktop, "_backend", None), "bus", None)
    if isinstance(bus, MessageBus):
        bus.disconnect()


async def _capabilities(bus: MessageBus, owner: str) -> frozenset[str] | None:
    try:
        return frozenset(await bus_capabilities(bus, owner))
    except BusCallError:
        return None
