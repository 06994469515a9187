"""Pure: the autostart entries' contents, for ``tray autostart`` and ``packaging/``.

An XDG autostart entry, a systemd user unit and a LaunchAgent, each from the argv that
starts this tray; every argument is quoted the way its reader splits words.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from tray.base.exit_codes import FAILURE

APP_ID: Final = "io.github.tray"
LABEL: Final = APP_ID  # the LaunchAgent's label
DESKTOP_FILE: Final = "tray.desktop"
UNIT_NAME: Final = "tray.service"
NAME: Final = "tray"
SUMMARY: Final = "Know which terminal session needs you"


class AutostartError(Exception):
    """Autostart cannot be set up here; the message is one line for the user."""

    status = FAILURE


# How to start this tray.


def tray_command(argv0: str, executable: str, search_path: str | None) -> list[str]:
    """The command that starts this tray: the console script's absolute path when that is
    what runs, else this Python with ``-m tray``.

    The path is made absolute but symbolic links are kept: pipx's ``~/.local/bin/tray``
    link survives a reinstall that moves what it points to.
    """
    if Path(argv0).name == NAME:
        located = argv0 if os.sep in argv0 else shutil.which(argv0, path=search_path)
        if located and os.path.isfile(located) and os.access(located, os.X_OK):
            return [os.path.abspath(located)]
    if not executable:
        raise AutostartError("cannot tell which Python runs tray (sys.executable is empty)")
    return [os.path.abspath(executable), "-m", "tray"]


def _check_argument(argument: str) -> None:
    # No quoting rule of these formats carries a line break; a path that holds one is not
    # worth a file that other tools would misread.
    if re.search(r"[\x00-\x1f\x7f]", argument):
        raise AutostartError(f"cannot write a command with a control character: {argument!r}")


# The Desktop Entry spec's reserved characters: an argument holding one is quoted.
_DESKTOP_RESERVED: Final = frozenset(" \t\n\"'\\><~|&;$*?#()`")


def desktop_exec(argv: Sequence[str]) -> str:
    """An ``Exec=`` value, quoted as the Desktop Entry spec says.

    Arguments with reserved characters go in double quotes, with ``"``, `````, ``$`` and
    ``\\`` backslash-escaped; ``%`` is doubled, as it starts a field code. The whole value
    is then a string value, whose own escaping doubles every backslash.
    """
    words = []
    for argument in argv:
        _check_argument(argument)
        if argument and not _DESKTOP_RESERVED.intersection(argument):
            word = argument
        else:
            word = '"' + re.sub(r'(["`$\\])', r"\\\1", argument) + '"'
        words.append(word.replace("%", "%%"))
    return " ".join(words).replace("\\", "\\\\")


def desktop_entry(argv: Sequence[str]) -> str:
    """The desktop entry for application menus and for XDG autostart alike."""
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        f"Name={NAME}\n"
        "GenericName=Terminal session status\n"
        f"Comment={SUMMARY}\n"
        f"Exec={desktop_exec(argv)}\n"
        "Terminal=false\n"
        "Categories=Utility;\n"
        "Keywords=terminal;status;notification;tray;\n"
        "StartupNotify=false\n"
    )


# systemd splits ExecStart= itself: quotes, C escapes, "%" specifiers and "$" variables.
_SYSTEMD_PLAIN: Final = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


def systemd_exec(argv: Sequence[str]) -> str:
    """An ``ExecStart=`` value: odd words double-quoted with C escapes, ``%`` doubled
    everywhere, and ``$`` doubled in the arguments (systemd expands variables there, but
    not in the program's path)."""
    words = []
    for index, argument in enumerate(argv):
        _check_argument(argument)
        if _SYSTEMD_PLAIN.fullmatch(argument):
            word = argument
        else:
            word = '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'
        word = word.replace("%", "%%")
        words.append(word.replace("$", "$$") if index else word)
    return " ".join(words)


def systemd_unit(argv: Sequence[str]) -> str:
    return (
        "[Unit]\n"
        f"Description={NAME}: {SUMMARY.lower()}\n"
        "PartOf=graphical-session.target\n"
        "After=graphical-session.target\n"
        "\n"
        "[Service]\n"
        f"ExecStart={systemd_exec(argv)}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "\n"
        "[Install]\n"
        "WantedBy=graphical-session.target\n"
    )


def launch_agent(argv: Sequence[str]) -> bytes:
    for argument in argv:
        _check_argument(argument)
    document = {
        "Label": LABEL,
        "ProgramArguments": list(argv),
        "RunAtLoad": True,
        # Restarted when it crashes, not when the user quits it from its menu.
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Interactive",
        "LimitLoadToSessionType": "Aqua",
    }
    return plistlib.dumps(document, sort_keys=True)
