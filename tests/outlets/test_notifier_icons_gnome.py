"""On a real GNOME Shell 43: the banner shows tray's icon of the state, not the shell's own.

Without an icon, GNOME draws a stock icon of its own: on a critical notification, the
themed ``dialog-error``, a "no entry" sign (measured: the banner's St.Icon had it). With
one, the banner's notification and its icon actor hold the file tray sent, and the
banner's pixels have the state's colour.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from helpers.desktop_screen import colour_count, main_colour
from helpers.gnome_shell import GnomeShell
from helpers.waiting import wait_for
from PIL import Image

from outlets.test_notifier_icons import installed_icon
from tray.core.view.overview import IconState
from tray.outlets.notifier import Notifier

# The banner's notification, the icons drawn in it, and where it is on the screen.
_BANNER_ICON: Final = """(() => {
    const banner = Main.messageTray._banner;
    if (!banner || !banner.notification) return null;
    const drawn = [];
    const walk = actor => {
        if (actor.gicon && actor.mapped) drawn.push(actor.gicon.to_string());
        for (const child of actor.get_children()) walk(child);
    };
    walk(banner);
    const [x, y] = banner.get_transformed_position();
    return {
        // Only once the banner has slid into place are its pixels where they stay.
        shown: Main.messageTray._notificationState === imports.ui.messageTray.State.SHOWN,
        title: banner.notification.title,
        gicon: banner.notification.gicon ? banner.notification.gicon.to_string() : null,
        drawn,
        box: [x, y, banner.width, banner.height],
    };
})()"""
# Measured in the banner: 507 pixels of amber for the blocked icon, 646 of red for the
# error one; the shell's grey banner, white text and "no entry" sign have neither colour.
DRAWN_PIXELS: Final = 300


@pytest.fixture
def notifier(gnome_shell: GnomeShell, monkeypatch: pytest.MonkeyPatch) -> Iterator[Notifier]:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", gnome_shell.env["DBUS_SESSION_BUS_ADDRESS"])
    gnome_shell.clear_notifications()
    sender = Notifier("tray", lambda _key, _token: None, logging.getLogger("tray.test.gnome"))
    try:
        yield sender
    finally:
        sender.close()
        gnome_shell.clear_notifications()


@pytest.mark.parametrize(("state", "urgency"), [("blocked", "critical"), ("error", "normal")])
def test_the_gnome_banner_shows_trays_icon_of_the_state(
    state: IconState,
    urgency: str,
    notifier: Notifier,
    gnome_shell: GnomeShell,
    tmp_path: Path,
) -> None:
    title = f"api-server {state}"
    notifier.send(title, "the message", urgency, "s-api", icon=state)
    shown: dict[str, Any] = gnome_shell.wait_eval(
        f"(() => {{ const b = {_BANNER_ICON}; "
        f"return b && b.shown && b.title === {title!r} ? b : null; }})()",
        f"the {state} banner",
    )
    expected = str(installed_icon(state))
    assert shown["gicon"] == expected
    assert expected in shown["drawn"]
    assert "dialog-error" not in shown["drawn"]
    left, top, width, height = (round(value) for value in shown["box"])

    def drawn() -> int:
        shot = Image.open(gnome_shell.screenshot(tmp_path / "banner.png")).convert("RGB")
        banner = shot.crop((left, top, left + width, top + height))
        return colour_count(banner, main_colour(state))

    wait_for(lambda: drawn() >= DRAWN_PIXELS, what=f"the {state} icon in GNOME's banner")
