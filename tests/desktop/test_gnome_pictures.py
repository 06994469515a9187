"""The README's GNOME pictures, taken on a real GNOME Shell 43 (headless, Wayland;
helpers/gnome_shell.py): the top bar's icon with its menu open, and ``tray demo``'s
prompt as a banner with Approve and Deny.

Each test checks what its picture must show, then keeps the picture: in the file named
by ``TRAY_GNOME_MENU_SCREENSHOT`` or ``TRAY_GNOME_BANNER_SCREENSHOT`` when set (as
``TRAY_MENU_SCREENSHOT`` and ``TRAY_DEMO_SCREENSHOT`` do for the X pictures), else under
the test's tmp folder. The crops are computed from the shell's own actors, read through
org.gnome.Shell.Eval, so the pictures follow the shell's layout rather than fixed numbers.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import pytest
from commands.test_demo import demo_argv, demo_dir
from helpers.desktop_apps import REPO, TIMEOUT, start_app_process
from helpers.desktop_screen import colour_count, main_colour
from helpers.desktop_services import stop_process
from helpers.gnome_shell import SCREEN, GnomeShell
from helpers.sessions import live_session, make_record
from helpers.waiting import wait_for
from PIL import Image

from desktop.test_gnome_shell import (
    _MENU_LABELS,
    banner_of,
    indicator_of,
    wait_for_no_indicator,
)
from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL
from tray.outlets.notifier import SNOOZE_LABEL
from tray.protocol.state import State
from tray.state.store import StateStore

__all__ = ["demo_dir"]  # a fixture, used by name: it stops the demo's app afterwards

MENU_VARIABLE: Final = "TRAY_GNOME_MENU_SCREENSHOT"
BANNER_VARIABLE: Final = "TRAY_GNOME_BANNER_SCREENSHOT"
# Room around what a picture shows, in pixels.
MARGIN: Final = 12
# The icon at the top bar's size (16 px) has some amber pixels (measured: 75 with its
# menu open, the badge and the button's highlight taking some, 118 without); the top
# bar's, the menu's and the banner's greys, whites and blues have none.
ICON_PIXELS: Final = 40
# The banner's icon is larger (measured: 507 amber pixels, as in
# tests/outlets/test_notifier_icons_gnome.py).
BANNER_ICON_PIXELS: Final = 300
# No banner in the menu's picture: the blocked sessions would each ping.
QUIET_CONFIG: Final = "[notify]\nenabled = false\n"
BLOCKED_SECONDS: Final = "600"  # only the click on Deny ends the demo's wait in time
DEMO_TITLE: Final = "demo needs approval"

# An actor's box on the screen once it is laid out and no animation moves it, else null.
_SETTLED_BOX: Final = """(() => {
    const actor = %s;
    if (!actor || !actor.mapped) return null;
    for (const name of ['opacity', 'translation-x', 'translation-y', 'y', 'scale-y'])
        if (actor.get_transition(name)) return null;
    if (actor.translation_x !== 0 || actor.translation_y !== 0) return null;
    const [x, y] = actor.get_transformed_position();
    const [width, height] = actor.get_transformed_size();
    return [x, y, width, height].every(Number.isFinite) ? [x, y, width, height] : null;
})()"""
# The banner once it has slid in and, under the pointer, shown its buttons.
_BANNER_EXPANDED: Final = (
    "(() => { const tray = Main.messageTray; const banner = tray._banner;"
    " return !!banner && banner.expanded && banner._actionBin.scale_y === 1"
    " && !banner._actionBin.get_transition('scale-y')"
    " && tray._notificationState === imports.ui.messageTray.State.SHOWN; })()"
)

# The top bar's sign that unsafe mode is on (GNOME 43's panel.js UnsafeModeIndicator).
_UNSAFE_MODE_SIGN: Final = "Main.panel.statusArea.quickSettings._unsafeMode"

Box = tuple[int, int, int, int]  # left, top, right, bottom


def settled_box(shell: GnomeShell, actor: str, what: str) -> Box:
    """Where ``actor`` is on the screen, in whole pixels, once nothing animates it."""
    x, y, width, height = shell.wait_eval(_SETTLED_BOX % actor, what)
    return round(x), round(y), round(x + width), round(y + height)


def around(*boxes: Box) -> Box:
    """The smallest box holding ``boxes``, with MARGIN to spare, within the screen."""
    return (
        max(0, min(box[0] for box in boxes) - MARGIN),
        max(0, min(box[1] for box in boxes) - MARGIN),
        min(SCREEN[0], max(box[2] for box in boxes) + MARGIN),
        min(SCREEN[1], max(box[3] for box in boxes) + MARGIN),
    )


def inside(box: Box, crop: Box) -> Box:
    """``box`` in the coordinates of the picture cropped to ``crop``."""
    return box[0] - crop[0], box[1] - crop[1], box[2] - crop[0], box[3] - crop[1]


def keep(picture: Image.Image, variable: str, fallback: Path) -> Path:
    """Save ``picture`` where ``variable`` says, else at ``fallback``: as a small PNG,
    in a palette of its own colours (the shell's flat greys need few)."""
    path = Path(os.environ.get(variable) or fallback)
    picture.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


@pytest.fixture
def clean_shell(gnome_shell: GnomeShell) -> Iterator[GnomeShell]:
    """The shared shell with no banner and no earlier test's icon before the test and,
    while it runs, without the top bar's unsafe-mode sign (a broken padlock that only the
    tests' shell has, see helpers/gnome_shell.py: no place in the README's pictures).
    After it: no banner, no menu, and the pointer back where it was (left over a banner's
    place, it would keep the next test's banners from expanding on their own)."""
    gnome_shell.clear_notifications()
    wait_for_no_indicator(gnome_shell)
    x, y = gnome_shell.eval("global.get_pointer().slice(0, 2)")
    gnome_shell.eval(f"{_UNSAFE_MODE_SIGN}.hide(); true")
    try:
        yield gnome_shell
    finally:
        gnome_shell.eval(f"{_UNSAFE_MODE_SIGN}.show(); true")
        gnome_shell.close_menus()
        gnome_shell.move_pointer(x, y)
        gnome_shell.clear_notifications()


def test_the_top_bars_icon_and_its_open_menu(clean_shell: GnomeShell, tmp_path: Path) -> None:
    shell = clean_shell
    now = time.time()
    store = StateStore(tmp_path / "state")
    store.ensure()
    for session_id, name, kind, msg, since in (
        ("s-api", "api · ~/src/api", "question", "Allow edits to config.toml?", now - 300),
        ("s-docs", "docs · ~/src/docs", "permission", "Run make publish?", now - 42),
    ):
        prompt = make_record("", "blocked", since, kind=kind, app="claude-code", msg=msg)
        store.write(replace(live_session(session_id, (prompt,), now), name=name))
    app = start_app_process(shell.env, tmp_path, QUIET_CONFIG)
    try:
        indicator = wait_for(lambda: indicator_of(shell), TIMEOUT, 0.05, "the icon in the top bar")
        # The extension fills the menu a moment after the icon shows (measured: 0.1 s),
        # and a click does not open an empty menu.
        labels: list[str] = shell.wait_eval(
            f"(() => {{ const labels = {_MENU_LABELS % indicator};"
            " return labels.some(label => label.startsWith('docs')) ? labels : null; })()",
            "the sessions in the menu",
        )
        shell.click_actor(indicator)
        shell.wait_eval(f"{indicator}.menu.isOpen", "the menu to open")
        icon = settled_box(shell, indicator, "the icon")
        menu = settled_box(shell, f"{indicator}.menu.actor", "the menu to finish opening")
        assert shell.banner() is None
        crop = around(icon, menu)
        shot = Image.open(shell.screenshot(tmp_path / "screen.png")).convert("RGB")
    finally:
        shell.close_menus()
        stop_process(app.proc)
    assert "Traceback" not in app.log, app.log
    headers = [label for label in labels if " — " in label]
    assert any(label.startswith("api · ~/src/api") and "blocked" in label for label in headers)
    assert any(label.startswith("docs · ~/src/docs") and "blocked" in label for label in headers)
    picture = shot.crop(crop)
    # The picture is the icon and the menu under it, whole, and little else.
    assert menu[1] >= icon[3] - 1, (icon, menu)
    assert picture.size == (crop[2] - crop[0], crop[3] - crop[1])
    assert crop[3] - crop[1] <= menu[3] - icon[1] + 2 * MARGIN
    assert crop[2] - crop[0] <= max(menu[2], icon[2]) - min(menu[0], icon[0]) + 2 * MARGIN
    # The icon is amber (two sessions are blocked), and drawn where the shell says it is.
    amber = main_colour(State.BLOCKED)
    assert colour_count(picture.crop(inside(icon, crop)), amber) >= ICON_PIXELS
    keep(picture, MENU_VARIABLE, tmp_path / "gnome-menu.png")


def _banner_box(shell: GnomeShell) -> Box:
    return settled_box(shell, "Main.messageTray._banner", "the banner to settle")


def test_the_demos_prompt_as_a_banner_with_approve_and_deny(
    clean_shell: GnomeShell, tmp_path: Path, demo_dir: Path
) -> None:
    shell = clean_shell
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **shell.env,
        "HOME": str(home),
        "TRAY_STATE_DIR": str(demo_dir),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": str(REPO),
    }
    demo = subprocess.Popen(
        demo_argv("--step-seconds", "0.2", "--blocked-seconds", BLOCKED_SECONDS),
        env=env,
        cwd=home,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner: dict[str, Any] = wait_for(
            lambda: banner_of(shell, DEMO_TITLE), TIMEOUT, 0.05, "the demo's banner"
        )
        assert banner["body"] == "approve Bash: touch demo.txt", banner
        # Under the pointer, as a user sees it when reaching for a button.
        box = _banner_box(shell)
        shell.move_pointer((box[0] + box[2]) // 2, (box[1] + box[3]) // 2)
        shell.wait_eval(_BANNER_EXPANDED, "the banner to show its buttons")
        box = _banner_box(shell)
        banner = wait_for(lambda: banner_of(shell, DEMO_TITLE), TIMEOUT, 0.05, "the buttons")
        indicator = wait_for(lambda: indicator_of(shell), TIMEOUT, 0.05, "the icon in the top bar")
        icon = settled_box(shell, indicator, "the icon")
        shot = Image.open(shell.screenshot(tmp_path / "screen.png")).convert("RGB")
        labels = [button["label"] for button in banner["buttons"]]
        assert labels == [APPROVE_LABEL, DENY_LABEL, SNOOZE_LABEL], banner
        # Deny ends the demo: the banner was the live prompt, not a picture of one.
        [deny] = [button for button in banner["buttons"] if button["label"] == DENY_LABEL]
        shell.click(deny["x"] + deny["width"] / 2, deny["y"] + deny["height"] / 2)
        stdout, stderr = demo.communicate(timeout=TIMEOUT)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()
    assert demo.returncode == 0, stdout + stderr
    assert "  Denied." in stdout, stdout
    assert "Traceback" not in (demo_dir / "app.log").read_text()
    # The top strip of the screen, from the banner to the top bar's right end, which
    # shows the icon where a user finds it.
    left, top, _, bottom = around(box, icon)
    crop = (left, top, SCREEN[0], bottom)
    picture = shot.crop(crop)
    assert picture.size == (crop[2] - crop[0], crop[3] - crop[1])
    assert crop[1] == 0 and crop[3] <= box[3] + MARGIN
    amber = main_colour(State.BLOCKED)
    assert colour_count(picture.crop(inside(box, crop)), amber) >= BANNER_ICON_PIXELS
    assert colour_count(picture.crop(inside(icon, crop)), amber) >= ICON_PIXELS
    keep(picture, BANNER_VARIABLE, tmp_path / "gnome-banner.png")
