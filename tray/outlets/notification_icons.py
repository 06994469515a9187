"""The file of tray's icon for each state, for the notification server to draw.

A notification server loads an icon from a path or a ``file://`` URI of its own reading:
it cannot read a file inside a zip, and it is another process, so the file must stay
where it is for as long as the notification may be shown. The artwork is the tray
icon's (:func:`tray.desktop.icon_images.artwork_folder`: the installed package data
``tray.artwork``, else the checkout's ``icons/``). Installed as files (a wheel, pipx, an
editable checkout), that is the installed PNG itself; from a zip, it is copied out once
with :func:`importlib.resources.as_file` and the copy kept until :meth:`close`.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
from pathlib import Path
from typing import Final

from tray.core.view.overview import IconState
from tray.desktop.icon_images import MissingArtworkError, artwork_folder

# The largest drawn size: servers scale down (dunst to its max_icon_size, GNOME to its
# banner's), and a scaled-up 32 px icon would look blurred on a HiDPI screen.
ICON_SIZE: Final = 64


def icon_name(state: IconState) -> str:
    return f"{state}-{ICON_SIZE}.png"


class NotificationIcons:
    """Each state's icon file, looked up once; one thread's only (the notifier's).

    A missing file is logged once and the notification goes without an icon: an icon is
    a help, never a reason to lose the notification."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._paths: dict[IconState, Path | None] = {}
        self._copies = contextlib.ExitStack()

    def path(self, state: IconState) -> Path | None:
        """The absolute path of ``state``'s icon, or None when it cannot be had."""
        if state not in self._paths:
            self._paths[state] = self._find(state)
        return self._paths[state]

    def close(self) -> None:
        """Remove the copies taken out of a zip; the installed files stay, of course."""
        self._paths.clear()
        self._copies.close()

    def _find(self, state: IconState) -> Path | None:
        name = icon_name(state)
        try:
            entry = artwork_folder().joinpath(name)
            if not entry.is_file():
                raise MissingArtworkError(f"{name} is missing from tray's artwork")
            if isinstance(entry, Path):
                # A file on disk (the usual install): the server reads it there.
                return entry.resolve()
            return self._copies.enter_context(importlib.resources.as_file(entry))
        except (MissingArtworkError, OSError) as problem:
            self._log.warning("notifications go without tray's %s icon: %s", state, problem)
            return None
