"""The key of the phone's tokens: made once, private, and never one that is not ours alone."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tray.state.phone_key import KEY_BYTES, KEY_NAME, phone_key


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_made_once_private_and_kept(tmp_path: Path) -> None:
    key = phone_key(tmp_path)
    assert len(key) == KEY_BYTES
    assert _mode(tmp_path / KEY_NAME) == 0o600
    assert phone_key(tmp_path) == key
    assert phone_key(tmp_path / ".." / tmp_path.name) == key


def test_a_key_others_could_read_or_of_another_size_is_made_anew(tmp_path: Path) -> None:
    path = tmp_path / KEY_NAME
    key = phone_key(tmp_path)
    path.chmod(0o644)
    fresh = phone_key(tmp_path)
    assert fresh != key
    assert _mode(path) == 0o600
    path.write_bytes(b"short")
    assert len(phone_key(tmp_path)) == KEY_BYTES


def test_a_symlink_in_its_place_is_replaced_never_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"x" * KEY_BYTES)
    os.chmod(target, 0o600)
    (tmp_path / KEY_NAME).symlink_to(target)
    key = phone_key(tmp_path)
    assert key != b"x" * KEY_BYTES
    assert target.read_bytes() == b"x" * KEY_BYTES
    assert not (tmp_path / KEY_NAME).is_symlink()
