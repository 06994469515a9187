"""The real `tray app` on a real GNOME Shell 43 (headless, Wayland; helpers/gnome_shell.py):
its icon in the top bar through the AppIndicator extension, its menu opened by a click,
and a blocked prompt's banner answered by a click on its button.

What the tests read is the shell's own state (org.gnome.Shell.Eval), and what they click
they click with a virtual pointer inside the compositor, as a user's pointer would. The
prompt's session has a launcher end served by the test (helpers/fake_launcher.py, as in
tests/app/test_app_answer_desktop.py): the real answer socket and gate, with the keys
written down instead of typed into a program.

Run as a program (``python -m tests.desktop.test_gnome_shell``), this module is the driver
of one test: it shows a pystray appindicator icon before any menu was handed to it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from app.test_app_answer_desktop import CONFIG, SID, blocked_session, prompt
from helpers.desktop_apps import TIMEOUT, RunningApp, run_icon_driver, start_app_process
from helpers.desktop_services import stop_process
from helpers.fake_launcher import FakeLauncher
from helpers.gnome_shell import GnomeShell
from helpers.sessions import live_session, working
from helpers.waiting import wait_for

from tray.core.answers.target import APPROVE_LABEL, DENY_LABEL
from tray.desktop.icon_images import icon_image
from tray.desktop.pystray_icons import robust_icon_class
from tray.outlets.notifier import SNOOZE_LABEL
from tray.state.store import StateStore

INDICATOR_PREFIX = "appindicator-"

# Every label in a PopupMenu, submenus' after their own item's, in order.
_MENU_LABELS = """(() => {
    const labels = [];
    const walk = menu => menu._getMenuItems().forEach(item => {
        if (item.label && item.label.text) labels.push(item.label.text);
        if (item.menu && item.menu !== menu) walk(item.menu);
    });
    walk(%s.menu);
    return labels;
})()"""


@pytest.fixture
def gnome_app(gnome_shell: GnomeShell, tmp_path: Path) -> Iterator[list[RunningApp]]:
    """The apps a test starts on the shell, on a top bar that no earlier test's icon is
    still leaving; stopped after it, their logs checked, and the shell's notifications
    closed for the next test."""
    wait_for_no_indicator(gnome_shell)
    started: list[RunningApp] = []
    yield started
    for app in started:
        stop_process(app.proc)
    gnome_shell.close_menus()
    gnome_shell.clear_notifications()
    for app in started:
        assert "Traceback" not in app.log, app.log


def wait_for_no_indicator(shell: GnomeShell) -> None:
    """Wait until the top bar holds no AppIndicator item. An app stopped by an earlier
    test leaves the bus at once, but the extension takes its icon away a moment later:
    seen then, it would pass for the next test's own."""
    wait_for(
        lambda: not [key for key in shell.status_area() if key.startswith(INDICATOR_PREFIX)],
        TIMEOUT,
        0.05,
        "the top bar to hold no earlier test's icon",
    )


def indicator_of(shell: GnomeShell) -> str | None:
    """Once the top bar has one AppIndicator item: a JS expression for the one it has when
    evaluated (null while it has none). The extension may drop an item and build it again
    as the app's item registers anew, under a new key; the expression finds it again."""
    keys = [key for key in shell.status_area() if key.startswith(INDICATOR_PREFIX)]
    if len(keys) != 1:
        return None
    return (
        "((items) => items.length === 1 ? items[0] : null)(Object.keys(Main.panel.statusArea)"
        f".filter(key => key.startsWith({json.dumps(INDICATOR_PREFIX)}))"
        ".map(key => Main.panel.statusArea[key]))"
    )


def test_the_icon_is_in_the_top_bar_and_its_menu_lists_the_sessions(
    gnome_shell: GnomeShell, gnome_app: list[RunningApp], tmp_path: Path
) -> None:
    now = time.time()
    session = replace(
        live_session("s-gnome", working(now, "building the docs"), now), name="gnome-docs"
    )
    StateStore(tmp_path / "state").ensure()
    StateStore(tmp_path / "state").write(session)
    app = start_app_process(gnome_shell.env, tmp_path, "")
    gnome_app.append(app)
    assert "tray backend: appindicator" in app.log
    indicator = wait_for(
        lambda: indicator_of(gnome_shell), TIMEOUT, 0.05, "the icon in the top bar"
    )
    shown: dict[str, Any] = gnome_shell.wait_eval(
        f"(() => {{ const item = {indicator}; if (!item.mapped) return null;"
        " const [x, y] = item.get_transformed_position();"
        " const [width, height] = item.get_transformed_size();"
        " return [x, y, width, height].every(Number.isFinite) ? {x, y, width, height} : null;"
        " })()",
        "the icon to be shown",
    )
    assert shown["y"] < 40 and shown["width"] > 0 and shown["height"] > 0, shown
    # The image shown is the one the app wrote, not the extension's placeholder.
    image = gnome_shell.wait_eval(
        f"const icon = {indicator}._icon.gicon; icon ? icon.get_icon().to_string() : null",
        "the icon's image",
    )
    assert Path(image).parent == app.state_dir / "icons" and Path(image).is_file(), image
    gnome_shell.click_actor(indicator)
    gnome_shell.wait_eval(f"{indicator}.menu.isOpen", "the menu to open")
    labels: list[str] = gnome_shell.wait_eval(
        f"(() => {{ const labels = {_MENU_LABELS % indicator};"
        " return labels.some(label => label.startsWith('gnome-docs')) ? labels : null; })()",
        "the session in the menu",
    )
    [header] = [label for label in labels if label.startswith("gnome-docs")]
    assert "working" in header, labels
    assert any("building the docs" in label for label in labels), labels


# Every label in a PopupMenu with its dbusmenu item's id, in order, submenus' after their
# own item's: the extension's copy of the app's menu, kept filled whether open or not.
_MENU_ITEMS = """(() => {
    const items = [];
    const walk = menu => menu._getMenuItems().forEach(item => {
        if (item.label && item.label.text)
            items.push([item.label.text, item._dbusItem ? item._dbusItem.getId() : null]);
        if (item.menu && item.menu !== menu) walk(item.menu);
    });
    walk(%s.menu);
    return items;
})()"""


def test_the_top_bar_menu_follows_the_apps_menu_as_it_changes(
    gnome_shell: GnomeShell, gnome_app: list[RunningApp], tmp_path: Path
) -> None:
    """The app changes its menu's words in place, and hands the indicator a new menu when
    the shape changes (tray.desktop.gtk_menu); the extension follows both, and the menu
    opened after shows the new items."""
    now = time.time()
    store = StateStore(tmp_path / "state")
    store.ensure()
    first = replace(live_session("s-first", working(now, "building the docs"), now), name="first")
    store.write(first)
    app = start_app_process(gnome_shell.env, tmp_path, "")
    gnome_app.append(app)
    indicator = wait_for(
        lambda: indicator_of(gnome_shell), TIMEOUT, 0.05, "the icon in the top bar"
    )

    def item_id(label: str) -> int | None:
        items: list[tuple[str, int]] = gnome_shell.eval(_MENU_ITEMS % indicator)
        return next((number for text, number in items if text.strip() == label), None)

    message = wait_for(lambda: item_id("building the docs"), TIMEOUT, 0.05, "the message")
    # The same shape, other words: changed in place, the same item over D-Bus.
    store.write(replace(first, records=working(time.time(), "checking the links")))
    changed = wait_for(lambda: item_id("checking the links"), TIMEOUT, 0.05, "the new words")
    assert changed == message
    assert item_id("building the docs") is None
    # Another session: a menu of another shape, handed to the indicator as a new one.
    later = time.time()
    store.write(
        replace(live_session("s-second", working(later, "second's job"), later), name="second")
    )
    wait_for(lambda: item_id("second's job"), TIMEOUT, 0.05, "the second session")

    gnome_shell.click_actor(indicator)  # one click: a second one soon after is a double click
    gnome_shell.wait_eval(f"{indicator}.menu.isOpen", "the menu to open")
    labels = [text.strip() for text, _ in gnome_shell.eval(_MENU_ITEMS % indicator)]
    assert {"checking the links", "second's job"} <= set(labels), labels
    assert item_id("checking the links") != message  # rebuilt: new items


def test_an_icon_shown_before_its_first_menu_is_shown_all_the_same(
    gnome_shell: GnomeShell, tmp_path: Path
) -> None:
    # The app's icon, a real pystray appindicator icon, shown before any menu was handed
    # to it while its menu has no default item: the order that, under load, left the
    # icon registered but passive, never in the top bar. Run as this module's driver.
    # pystray writes the image in TMPDIR.
    driver_env = gnome_shell.env | {"TMPDIR": str(tmp_path)}
    done = run_icon_driver("tests.desktop.test_gnome_shell", driver_env)
    assert done.stdout.split() == ["active"], (done.stdout, done.stderr)


def show_before_menu() -> None:
    """Driver: show the icon the way pystray's ``visible = True`` does (queued on the
    GTK thread), run what is queued, and print the indicator's status."""
    import pystray  # noqa: PLC0415  (needs the display, which only the driver has)
    from gi.repository import GLib  # noqa: PLC0415

    menu = pystray.Menu(pystray.MenuItem("Quit", lambda: None))
    icon = robust_icon_class(pystray.Icon)(
        "tray-show-test", icon=icon_image("calm", 0, size=64), menu=menu
    )
    icon._show()
    context = GLib.MainContext.default()
    while context.iteration(False):
        pass
    print(icon._appindicator.get_status().value_nick)
    icon._remove_fs_icon()


def banner_of(shell: GnomeShell, title: str) -> dict[str, Any] | None:
    """The banner shown now if it is ``title``'s, with its buttons laid out."""
    banner = shell.banner()
    if banner is None or banner["title"] != title:
        return None
    placed = all(
        button["mapped"] and None not in (button["x"], button["y"], button["width"])
        for button in banner["buttons"]
    )
    return banner if banner["shown"] and banner["buttons"] and placed else None


@pytest.mark.parametrize("case", [(APPROVE_LABEL, b"1"), (DENY_LABEL, b"\x1b")])
def test_a_click_on_the_prompts_banner_answers_it(
    case: tuple[str, bytes],
    gnome_shell: GnomeShell,
    gnome_app: list[RunningApp],
    tmp_path: Path,
) -> None:
    pick, keys = case
    since = time.time() - 3  # settled: the launcher need not hold the answer
    state_dir = tmp_path / "state"
    blocked_session(state_dir, since)
    end = FakeLauncher(state_dir, SID, (prompt(since),))
    try:
        app = start_app_process(gnome_shell.env, tmp_path, CONFIG)
        gnome_app.append(app)
        banner = wait_for(
            lambda: banner_of(gnome_shell, "api-server needs approval"),
            TIMEOUT,
            0.05,
            "the prompt's banner",
        )
        assert banner["body"] == "Bash: ls", banner  # the prompt's message, as the program said
        labels = [button["label"] for button in banner["buttons"]]
        assert labels == [APPROVE_LABEL, DENY_LABEL, SNOOZE_LABEL], banner
        [button] = [button for button in banner["buttons"] if button["label"] == pick]
        gnome_shell.click(button["x"] + button["width"] / 2, button["y"] + button["height"] / 2)
        wait_for(lambda: end.typed, TIMEOUT, what="the answer at the launcher")
        assert end.typed == [keys]
        answer = "approve" if pick == APPROVE_LABEL else "deny"
        assert (end.requests[0].answer, end.requests[0].since) == (answer, since)
        wait_for(lambda: "typed" in app.log, TIMEOUT, what="the app to note it")
        wait_for(lambda: gnome_shell.banner() is None, TIMEOUT, 0.05, "the answered banner to go")
    finally:
        end.close()


if __name__ == "__main__":
    show_before_menu()
