"""The launcher's one timer: an interval timer whose SIGALRM lands on the signal pipe
(:class:`tray.launcher.terminal.SignalPipe`), armed only when the earliest deadline moves
earlier, never a poll() timeout (why: :mod:`tray.launcher.proxy`)."""

from __future__ import annotations

import math
import signal
import time

# setitimer(0) would disarm the timer; a deadline already past fires at once instead.
_SOONEST = 1e-6


class Alarm:
    """``arm(deadline)`` on every pass of the loop, ``rang()`` when SIGALRM arrived."""

    def __init__(self) -> None:
        self._at = math.inf
        self._rang = False

    def arm(self, deadline: float) -> None:
        """Ring by ``deadline`` (monotonic seconds). A deadline that moved later lets the
        timer ring early; that only costs the loop a look."""
        if deadline < self._at:
            self._at = deadline
            signal.setitimer(signal.ITIMER_REAL, max(_SOONEST, deadline - time.monotonic()))

    def ring(self) -> None:
        """SIGALRM came (read from the signal pipe)."""
        self._rang = True

    def rang(self) -> bool:
        """Whether it rang since the last call; the next deadline then arms it again."""
        if not self._rang:
            return False
        self._rang = False
        self._at = math.inf
        return True

    def disarm(self) -> None:
        # Before the SIGALRM handler goes, or a late ring would kill us.
        signal.setitimer(signal.ITIMER_REAL, 0)
        self._at = math.inf
