"""What the menu's Focus item says for each session, decided on the worker.

``focus_plan`` runs nothing, but it checks every recorded value, so the worker computes
it once per session (again only when the session's terminal facts change), never on the
menu's thread. When Focus can do nothing the item is disabled with the reason in its
label, "Focus (kitty: remote control is off)". After a focus that only partly worked
(GNOME Terminal's search provider off: the window raised, the tab not) the reason is
logged once and shown under the item until a focus works in full.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from tray.base.safe_text import clean_text, cut
from tray.core.hosts.remote_sessions import split_remote_id
from tray.core.session.model import Session
from tray.desktop.focus import FocusResult, focus_plan
from tray.desktop.tray_menu import FocusLook

FOCUS = "Focus"
# A menu item wider than this pushes the whole menu across the screen.
LABEL_WIDTH = 72
# A note may hold the command that fixes it (GNOME Terminal's gsettings line): room for it.
NOTE_WIDTH = 200


def focus_label(reason: str | None) -> str:
    """ "Focus", or "Focus (kitty: remote control is off)" when it can do nothing."""
    if not reason:
        return FOCUS
    return cut(f"{FOCUS} ({clean_text(reason)})", LABEL_WIDTH)


class FocusLooks:
    """The worker's own: each local session's Focus item, cached per terminal."""

    def __init__(self, environ: Mapping[str, str], log: logging.Logger) -> None:
        self._environ = environ
        self._log = log
        # Per session: the terminal facts and note its item was made from, and the item.
        # Checked on every refresh, so the check is one dict comparison: no sorting, no
        # label rebuilt, no text cleaned unless the facts or the note changed.
        self._looks: dict[str, tuple[dict[str, str], str, FocusLook]] = {}
        # What the last focus of a session left undone, as logged (once).
        self._notes: dict[str, str] = {}

    def looks(self, sessions: Mapping[str, Session]) -> dict[str, FocusLook]:
        """Every local session's item; a remote session is focused over ssh, and the
        overview's ``focusable`` already says whether it can be."""
        looks: dict[str, FocusLook] = {}
        cache = self._looks
        for session_id, session in sessions.items():
            note = self._notes.get(session_id, "")
            cached = cache.get(session_id)
            if cached is not None and cached[1] == note and cached[0] == session.terminal:
                looks[session_id] = cached[2]
                continue
            if split_remote_id(session_id) is not None:
                continue
            reason = self._reason(session)
            # One line per part: what was done, then what was not and how to fix it.
            lines = tuple(cut(clean_text(part), NOTE_WIDTH) for part in note.split("; ") if part)
            look = FocusLook(reason is None, focus_label(reason), lines)
            # A copy: the facts compared next time must be the ones this item was made from.
            cache[session_id] = (dict(session.terminal), note, look)
            looks[session_id] = look
        if len(cache) > len(looks):
            for gone in set(cache) - set(looks):
                del cache[gone]
        for gone in set(self._notes) - set(sessions):
            del self._notes[gone]
        return looks

    def _reason(self, session: Session) -> str | None:
        """Why Focus can do nothing for ``session``; None when it can do something."""
        try:
            way, reason = focus_plan(session.terminal, self._environ)
        except Exception:  # a plan is a hint for a label: never worth the menu
            self._log.exception("cannot plan focus for %s", session.name)
            way, reason = None, "cannot tell how"
        return None if way is not None else reason

    def focused(self, session: Session, result: FocusResult) -> bool:
        """After a focus: note what it left undone. True when the menu should change."""
        before = self._notes.get(session.id)
        if result.ok and result.partial:
            if before != result.message:
                self._log.warning("focused %s only in part: %s", session.name, result.message)
            self._notes[session.id] = result.message
        elif result.ok:
            self._notes.pop(session.id, None)
        return self._notes.get(session.id) != before


__all__ = ["FOCUS", "FocusLooks", "focus_label"]
