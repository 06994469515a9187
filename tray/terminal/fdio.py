"""Writing to file descriptors: the one write-everything loop."""

from __future__ import annotations

import os
import select


def write_all(fd: int, data: bytes) -> None:
    """Write everything, blocking if need be: a slow terminal slows the writer down."""
    written = 0
    view: memoryview | None = None
    while written < len(data):
        try:
            if written == 0:
                written = os.write(fd, data)
            else:
                if view is None:
                    view = memoryview(data)
                written += os.write(fd, view[written:])
        except BlockingIOError:
            # Somebody made the fd non-blocking; wait the way a blocking write would.
            waiter = select.poll()
            waiter.register(fd, select.POLLOUT)
            waiter.poll()
