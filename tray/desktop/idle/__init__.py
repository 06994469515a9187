"""Idle and screen-lock detection: is anyone at the desk? One module a source.

Two kinds of source, each tried in the order of :data:`monitor.SOURCES`; the first of
each kind that answers wins and is named (for ``tray doctor``):
- lock: logind's session ``LockedHint`` (system bus, :mod:`.logind`), then
  ``GetActive`` with its ``ActiveChanged`` signal of GNOME's ``org.gnome.ScreenSaver``
  interface (:mod:`.gnome_screensaver`: GNOME has no working
  ``org.freedesktop.ScreenSaver``), then of ``org.freedesktop.ScreenSaver``
  (:mod:`.screensaver_lock`), the two sharing :mod:`._active_lock`;
- idle: GNOME's ``org.gnome.Mutter.IdleMonitor`` (idle and user-active watches, so no
  polling, also on Wayland: :mod:`.mutter`), then the Wayland compositor's
  ``ext_idle_notifier_v1`` (KWin's, on Plasma's Wayland; idled and resumed events on a
  connection of its own: :mod:`.wayland_idle`), then
  ``org.freedesktop.ScreenSaver.GetSessionIdleTime`` (KDE's ksmserver on X11:
  :mod:`.screensaver_idle`), then X11's MIT-SCREEN-SAVER extension through python-xlib
  (:mod:`.x11`).

Each is a :class:`._source.Source`: a key, its name in words, its kind, ``follow`` (try
it, and report and subscribe when it answers) and ``close``. Sources with signals are
followed by their signals. The polled ones (:class:`._source.PolledSource`) are asked
when the idle time could first reach ``after`` and every few seconds only while the user
is away (see tray.core.away.tracker.AwayTracker.next_poll). Where no source answers, the state
stays "present" for ever: nothing is forwarded when tray cannot tell.

The D-Bus calls and signal subscriptions go through :mod:`tray.desktop.bus`, each with
its timeout, on the connections of the app's one bus loop (:mod:`tray.desktop.bus_loop`),
where the sources run.
"""

from __future__ import annotations

from .monitor import NAMES, SOURCES, PresenceMonitor, describe_sources, probe

__all__ = ["NAMES", "SOURCES", "PresenceMonitor", "describe_sources", "probe"]
