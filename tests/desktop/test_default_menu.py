"""The appindicator icon's menu of the default item alone, built from one look at the
menu, on a real GTK on the test's Xvfb.

The worker hands the icon a new menu at any time, and a dynamic pystray menu makes its
items anew at each look. pystray's own default menu looked twice (whether there is a
default item, then which), so a menu without one handed in between made it raise
StopIteration on the GTK thread: seen once in a whole ``make test``, as a prompt came.
Here the menu's default item comes and goes at each look, so two looks in one build
always disagree. Runs this file as the driver (``python -m tests.desktop.test_default_menu``),
which prints the number of items of each menu built, or the error.
"""

from __future__ import annotations

import itertools

from helpers.desktop_apps import run_icon_driver

BUILDS = 4


def test_the_default_menu_is_built_from_one_look_at_the_menu(desktop_env: dict[str, str]) -> None:
    done = run_icon_driver("tests.desktop.test_default_menu", desktop_env)
    assert done.returncode == 0, done.stderr
    # Looks 0, 2, ... see the default item; 1, 3, ... do not, and give an empty menu.
    assert done.stdout.split() == ["1", "0"] * (BUILDS // 2), (done.stdout, done.stderr)


def build_default_menus() -> None:
    """Driver: build the default menu BUILDS times over a menu that changes at each look."""
    import pystray  # noqa: PLC0415  (needs the display, which only the driver has)

    from tray.desktop.icon_images import icon_image  # noqa: PLC0415
    from tray.desktop.pystray_icons import robust_icon_class  # noqa: PLC0415

    looks = itertools.count()

    def items() -> tuple[pystray.MenuItem, ...]:
        with_default = next(looks) % 2 == 0
        return (
            pystray.MenuItem("Focus", lambda: None, default=with_default),
            pystray.MenuItem("Quit", lambda: None),
        )

    icon = robust_icon_class(pystray.Icon)(
        "tray-default-menu-test", icon=icon_image("calm", 0, size=64), menu=pystray.Menu(items)
    )
    for _ in range(BUILDS):
        print(len(icon._create_default_menu().get_children()), flush=True)


if __name__ == "__main__":
    build_default_menus()
