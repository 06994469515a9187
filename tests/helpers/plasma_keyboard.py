"""Synthetic keys on a real KWin, through its Wayland protocol ``org_kde_kwin_fake_input``
(keys since version 4), spoken with tray's wire client (tray/desktop/wayland_wire.py):
each key goes where the keyboard's focus is, through KWin's input stack, as a real
keyboard's would. The grant is the same as for helpers.plasma_input's pointer (the
Plasma fixture's ``KWIN_WAYLAND_NO_PERMISSION_CHECKS=1``).
"""

from __future__ import annotations

from collections.abc import Mapping

from helpers.plasma_input import FAKE_INPUT_VERSION, PRESSED, RELEASED
from tray.desktop.wayland_wire import Interface, WaylandConnection

# From plasma-wayland-protocols' fake-input.xml: the requests used here.
KEYS = Interface("org_kde_kwin_fake_input", {"authenticate": (0, "ss"), "keyboard_key": (10, "uu")})
KEYS_SINCE = 4
# linux/input-event-codes.h
KEY_ESC, KEY_ENTER, KEY_DOWN = 1, 28, 108


class FakeKeyboard:
    """Keys pressed through KWin's org_kde_kwin_fake_input (version 4 has keys); they go
    where the keyboard's focus is, as a real keyboard's would."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._connection = WaylandConnection.connect(env)
        try:
            self._connection.roundtrip()
            self._device = self._connection.bind(KEYS, FAKE_INPUT_VERSION)
            if self._device.version < KEYS_SINCE:
                raise AssertionError("KWin's fake input has no keys (version < 4)")
            self._device.request("authenticate", "tray tests", "keys in the tray's menu")
            self._connection.roundtrip()
        except BaseException:
            self._connection.close()
            raise

    def tap(self, *keys: int) -> None:
        """Press and release each of ``keys`` (Linux key codes), in order; returns once
        KWin has handled them."""
        for key in keys:
            self._device.request("keyboard_key", key, PRESSED)
            self._device.request("keyboard_key", key, RELEASED)
        self._connection.roundtrip()

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> FakeKeyboard:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
