"""``org.freedesktop.ScreenSaver``'s ``GetActive`` and its ``ActiveChanged`` signal on
the session bus: whether the screen saver (and so the lock) is on, where logind does
not say."""

from __future__ import annotations

from ._active_lock import ActiveLockSource

SCREENSAVER = "org.freedesktop.ScreenSaver"
# KDE answers on both paths; others on the first only.
SCREENSAVER_PATHS = ("/org/freedesktop/ScreenSaver", "/ScreenSaver")


class ScreenSaverLock(ActiveLockSource):
    key = "screensaver-lock"
    name = "the screen saver's lock (org.freedesktop.ScreenSaver)"
    interface = SCREENSAVER
    names = (SCREENSAVER,)
    paths = SCREENSAVER_PATHS
