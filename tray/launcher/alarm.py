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
    """``arm(deadline)`` on every pass of the loop; ``ring()`` when SIGALRM arrived, and
    the loop, seeing ``rung``, calls ``heard()`` and runs its timers. ``rung`` is a plain
    attribute: the byte loop looks at it on every pass."""

    def __init__(self) -> None:
        self._at = math.inf
        self.rung = False

    def arm(self, deadline: float) -> None:
        """Ring by ``deadline`` (monotonic seconds). A deadline that moved later lets the
        timer ring early; that only costs the loop a look."""
        if deadline < self._at:
            self._at = deadline
            signal.setitimer(signal.ITIMER_REAL, max(_SOONEST, deadline - time.monotonic()))

    def ring(self) -> None:
        """SIGALRM came (read from the signal pipe)."""
        self.rung = True

    def heard(self) -> None:
        """The loop saw the ring; the next deadline arms the timer again."""
        self.rung = False
        self._at = math.inf

    def disarm(self) -> None:
        # Before the SIGALRM handler goes, or a late ring would kill us.
        signal.setitimer(signal.ITIMER_REAL, 0)
        self._at = math.inf
