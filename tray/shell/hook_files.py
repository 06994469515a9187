"""Other programs' settings files, as ``tray hooks`` reads and writes them.

A settings file belongs to its program and its user: it is read whole, changed in
memory, and written back only when something changed, atomically (a temporary file
beside it, then a rename), with the mode it had. A file that is not valid JSON is never
written; a symbolic link (a dotfiles repository's) is followed, so the file it points to
is what changes.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from tray.state.atomic_file import replace_file

# A settings file is a few pages of text; a larger one is not something to rewrite.
MAX_SETTINGS = 4 * 1024 * 1024
# A file tray creates may sit beside secrets (an agent's settings may hold an API key).
NEW_FILE_MODE = 0o600
NEW_DIRECTORY_MODE = 0o700


class HookFileError(Exception):
    """A settings file that cannot be used; the message is one line naming it."""


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when there is no file."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SETTINGS + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise HookFileError(f"{path}: {error.strerror or error}") from None
    if len(data) > MAX_SETTINGS:
        raise HookFileError(f"{path}: larger than {MAX_SETTINGS // (1024 * 1024)} MiB")
    return data


def read_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None when there is no file."""
    data = read_bytes(path)
    return None if data is None else parse_object(data, path)


def parse_object(data: bytes, path: Path) -> dict[str, Any]:
    """The JSON object that ``data``, read from ``path``, holds."""
    if not data.strip():
        return {}  # an empty file is a file with nothing set
    try:
        document = json.loads(data)
    except UnicodeDecodeError:
        raise HookFileError(f"{path}: not UTF-8 text; left as it is") from None
    except json.JSONDecodeError as error:
        raise HookFileError(
            f"{path}: not valid JSON ({error.msg} at line {error.lineno} column "
            f"{error.colno}); left as it is"
        ) from None
    except RecursionError:
        raise HookFileError(f"{path}: nested too deeply; left as it is") from None
    if not isinstance(document, dict):
        raise HookFileError(f"{path}: not a JSON object; left as it is")
    return document


def json_bytes(document: object) -> bytes:
    """How tray writes a settings document: two-space indents, a final newline."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_atomically(path: Path, data: bytes) -> None:
    """Make ``path`` (or the file its symbolic link points to) hold ``data``.

    Readers see the old file or the new one, never half of one. An existing file keeps
    its mode; a new one is private, in a private new directory.
    """
    target = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    try:
        _make_directory(target.parent)
        replace_file(target, data, mode, temp_suffix=".tray-tmp")
    except OSError as error:
        where = error.filename if error.filename is not None else target
        raise HookFileError(f"{os.fsdecode(where)}: {error.strerror or error}") from None


def remove(path: Path) -> None:
    try:
        Path(os.path.realpath(path)).unlink(missing_ok=True)
    except OSError as error:
        raise HookFileError(f"{path}: {error.strerror or error}") from None


def _make_directory(folder: Path) -> None:
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        created.mkdir(mode=NEW_DIRECTORY_MODE, exist_ok=True)


__all__ = [
    "HookFileError",
    "json_bytes",
    "parse_object",
    "read_bytes",
    "read_object",
    "remove",
    "write_atomically",
]
