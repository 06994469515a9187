"""Synthetic input on a real KWin: a pointer that moves and clicks, through KWin's own
Wayland protocol ``org_kde_kwin_fake_input`` (version 4), spoken with tray's small wire
client (tray/desktop/wayland_wire.py).

KWin hides the protocol from clients it does not trust: the Plasma fixture starts KWin
with ``KWIN_WAYLAND_NO_PERMISSION_CHECKS=1``. Without that switch the grant is a desktop
file whose ``Exec`` resolves to the very executable KWin sees (``/proc/PID/exe``: the
interpreter's real path, not the venv's symlink), with
``X-KDE-Wayland-Interfaces=org_kde_kwin_fake_input``; KWin takes the first application
that matches, so a packaged one (Debian's python3.11.desktop) must be shadowed by a file
of the same name in ``$XDG_DATA_HOME/applications``, then ``kbuildsycoca5`` (measured on
KWin 5.27.5).

Each event goes where the pointer is, through KWin's input stack, as a real mouse's would.
"""

from __future__ import annotations

from collections.abc import Mapping

from tray.desktop.wayland_wire import Interface, Proxy, WaylandConnection

# From plasma-wayland-protocols' fake-input.xml: requests only (it has no events).
FAKE_INPUT = Interface(
    "org_kde_kwin_fake_input",
    {
        "authenticate": (0, "ss"),
        "pointer_motion": (1, "ff"),
        "button": (2, "uu"),
        "pointer_motion_absolute": (9, "ff"),  # since version 3
    },
)
FAKE_INPUT_VERSION = 4
BTN_LEFT = 0x110  # linux/input-event-codes.h
PRESSED, RELEASED = 1, 0
# Where the pointer rests between uses: the middle of the upper desktop, away from
# popups (bottom right), the panel (bottom) and the screen's corners (KWin's hot corners).
REST = (640.0, 200.0)


class FakePointer:
    """A pointer driven through org_kde_kwin_fake_input; close it when done."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._connection = WaylandConnection.connect(env)
        try:
            self._connection.roundtrip()  # the registry's globals
            self._device: Proxy = self._connection.bind(FAKE_INPUT, FAKE_INPUT_VERSION)
            if self._device.version < 3:
                raise AssertionError("KWin's fake input has no absolute motion (version < 3)")
            self._device.request("authenticate", "tray tests", "click notifications")
            self._connection.roundtrip()
        except BaseException:
            self._connection.close()
            raise

    def rest(self) -> None:
        """Put the pointer on the bare desktop, off every popup."""
        self.move(*REST)

    def move(self, x: float, y: float) -> None:
        """Put the pointer at (x, y) in the compositor's global coordinates."""
        self._device.request("pointer_motion_absolute", float(x), float(y))
        self._connection.roundtrip()

    def press(self, button: int = BTN_LEFT) -> None:
        """Press and release ``button`` where the pointer is; returns once KWin has
        handled both."""
        self._device.request("button", button, PRESSED)
        self._device.request("button", button, RELEASED)
        self._connection.roundtrip()

    def click(self, x: float, y: float, button: int = BTN_LEFT) -> None:
        """Move to (x, y) and click there.

        A Qt Quick window that the pointer has just entered may let such a click through
        unseen (measured on Plasma's popups: most first clicks were lost, none after the
        popup had drawn a hover); see helpers.plasma_popups.hover_button."""
        self.move(x, y)
        self.press(button)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> FakePointer:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
