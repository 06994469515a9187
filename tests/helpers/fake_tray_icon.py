"""The tray icon's stand-in for tests of the app's worker: no display, no tray."""

from __future__ import annotations

import threading
from typing import Any

from tray.core.view.overview import Overview


class FakeTrayIcon:
    """A TrayIcon that writes down each overview it was given, keeps the last menu it
    was handed (the app hands None when the menu stays as it is), and notes when it is
    shown again; ``backend`` is the pystray backend it claims to run on."""

    def __init__(self, backend: str = "fake") -> None:
        self.applied: list[Overview] = []
        self.menu: Any = None
        self.reshown = threading.Event()
        self._backend = backend

    def apply(self, overview: Overview, menu: Any | None) -> None:
        self.applied.append(overview)
        if menu is not None:
            self.menu = menu

    def backend_name(self) -> str:
        return self._backend

    def reshow(self) -> None:
        self.reshown.set()

    def stop(self) -> None:
        pass
