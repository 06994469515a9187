"""The app's key for the tokens on the phone's buttons (:mod:`tray.core.answers.phone_tokens`).

Made once, 32 random bytes, kept in the state directory with mode 0600 and never sent
anywhere: the phone only ever holds tokens signed with it. The state directory lives in
``$XDG_RUNTIME_DIR``, so a reboot makes a new key, and the buttons of before (at most
ten minutes old anyway) answer nothing.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from tray.state.atomic_file import replace_file

KEY_NAME = ".phone-key"
KEY_BYTES = 32


def phone_key(state_dir: Path) -> bytes:
    """The key in ``state_dir``, made when there is none, or none that is ours alone (a
    file of another size, another owner's, or readable by others). OSError when the
    directory cannot hold one."""
    path = state_dir / KEY_NAME
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return _make(path)  # none yet, or a symlink (never followed): a new one
    try:
        info = os.fstat(fd)
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    private = stat.S_IMODE(info.st_mode) & 0o077 == 0 and info.st_uid == os.getuid()
    if len(key) != KEY_BYTES or not stat.S_ISREG(info.st_mode) or not private:
        return _make(path)
    return key


def _make(path: Path) -> bytes:
    key = secrets.token_bytes(KEY_BYTES)
    replace_file(path, key, 0o600)
    return key


__all__ = ["KEY_NAME", "phone_key"]
