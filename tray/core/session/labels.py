"""Pure: what a session is called.

Shared by the app's overview and the remote package (which labels a host's sessions
"devbox · ..."), so it sits below both.
"""

from __future__ import annotations

from tray.base.safe_text import clean_text
from tray.core.session.model import Session


def session_app(session: Session) -> str | None:
    root = next((r for r in session.records if r.id == ""), None)
    if root is not None and root.app:
        return root.app
    return next((r.app for r in session.records if r.app), None)


def session_label(session: Session) -> str:
    """``--name`` when given, else "app · directory", else the derived name (with the
    directory a program reported by OSC 7); one clean line."""
    if session.name_given:
        return clean_text(session.name) or session.id
    app = session_app(session)
    directory = clean_text(session.cwd.rstrip("/").rsplit("/", 1)[-1])
    if app is None:
        name = clean_text(session.name) or session.id
        # A shell that says where it is (OSC 7) is known by that place, as an agent is.
        return f"{name} · {directory}" if session.cwd_reported and directory else name
    return f"{app} · {directory}" if directory else app
