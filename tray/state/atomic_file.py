"""Writing a whole file so that readers see the old one or the new one, never half."""

from __future__ import annotations

import os
from pathlib import Path

# The temporary file is private until it has its final mode: what it holds may be secret.
_TEMP_MODE = 0o600


def replace_file(path: Path, data: bytes, mode: int, temp_suffix: str = ".tmp") -> None:
    """Make ``path`` hold ``data`` with ``mode`` (whatever the umask): write a temporary
    file beside it, ``.NAME.PID`` + ``temp_suffix``, sync it, then rename it over ``path``.
    The directory must exist; an OSError leaves no temporary file behind."""
    temp = path.with_name(f".{path.name}.{os.getpid()}{temp_suffix}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, _TEMP_MODE)
    try:
        try:
            os.fchmod(fd, mode)  # the umask must not change it
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
