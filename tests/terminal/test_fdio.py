"""tray.terminal.fdio: a write that finishes, even on a full, non-blocking pipe."""

from __future__ import annotations

import os
import threading

from tray.terminal.fdio import write_all


def test_everything_is_written_through_a_full_non_blocking_pipe() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    data = bytes(range(256)) * 4096  # 1 MiB: far more than a pipe holds
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_end, 65536):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        write_all(write_end, data)
    finally:
        os.close(write_end)
        reader.join(30)
        os.close(read_end)
    assert bytes(received) == data
