"""The state directory made, or checked, as this user's alone.

Its own small module, so that ``tray run`` can check it before the command's exec
without loading the store (:mod:`tray.state.store`, which uses it too).
"""

from __future__ import annotations

import os
import stat


def private_directory_problem(path: str) -> str | None:
    """Make ``path`` (mode 0700) or take the one there; None when it is a directory of
    this user's alone (its mode made 0700 if it was not), else what is wrong, in words.
    OSError when it can be neither made nor looked at."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        return f"state directory {path} is not a directory"
    if info.st_uid != os.geteuid():
        # Another user's directory could feed us sessions or read ours.
        return f"state directory {path} belongs to uid {info.st_uid}, not to you"
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return None
