"""GNOME's own ``org.gnome.ScreenSaver`` interface on the session bus: ``GetActive`` and
``ActiveChanged`` follow GNOME Shell's screen shield, which comes up when the screen
locks or blanks for idleness. GNOME has no working ``org.freedesktop.ScreenSaver``
(gsd-screensaver-proxy holds the name and answers ``NotSupported``), hence this source;
logind's ``LockedHint`` still comes first where logind is there.

Who answers: GNOME Shell 43 (tested) exports the interface under its own name
``org.gnome.Shell.ScreenShield``, only while it has a lock screen (it has one only when
it finds GDM), and a small service that D-Bus starts on demand relays it as
``org.gnome.ScreenSaver``; older shells, and phosh, own ``org.gnome.ScreenSaver``
themselves. Only a name already owned is asked: nothing of GNOME's is started on
another desktop that merely has it installed."""

from __future__ import annotations

from ._active_lock import ActiveLockSource

GNOME_SCREENSAVER = "org.gnome.ScreenSaver"
GNOME_SHELL_SHIELD = "org.gnome.Shell.ScreenShield"
GNOME_SCREENSAVER_PATH = "/org/gnome/ScreenSaver"


class GnomeScreenSaverLock(ActiveLockSource):
    key = "gnome-screensaver"
    name = "GNOME's lock screen (org.gnome.ScreenSaver)"
    interface = GNOME_SCREENSAVER
    names = (GNOME_SHELL_SHIELD, GNOME_SCREENSAVER)
    paths = (GNOME_SCREENSAVER_PATH,)
    running_only = True
