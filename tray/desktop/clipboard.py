"""Copy text to the desktop clipboard with whichever tool the platform has."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass

TIMEOUT = 3.0


@dataclass(frozen=True)
class CopyResult:
    ok: bool
    message: str


def _candidates(environ: Mapping[str, str]) -> list[list[str]]:
    if sys.platform == "darwin":
        return [["pbcopy"]]
    tools = []
    if environ.get("WAYLAND_DISPLAY"):
        tools.append(["wl-copy"])
    if environ.get("DISPLAY"):
        tools += [["xclip", "-selection", "clipboard"], ["xsel", "--clipboard", "--input"]]
    return tools


def copy_text(text: str, environ: Mapping[str, str]) -> CopyResult:
    tried = []
    for argv in _candidates(environ):
        if shutil.which(argv[0]) is None:
            tried.append(argv[0])
            continue
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=dict(environ),
                start_new_session=True,
            )
            assert process.stdin is not None
            process.stdin.write(text.encode("utf-8"))
            process.stdin.close()
            # xclip, xsel and wl-copy fork a server for the selection; the first
            # process exits once it has the text.
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return CopyResult(False, f"{argv[0]} did not finish")
        except OSError as error:
            return CopyResult(False, f"{argv[0]}: {error}")
        return CopyResult(True, f"copied with {argv[0]}")
    if not tried:
        return CopyResult(False, "no display to copy to")
    return CopyResult(False, f"no clipboard tool found (tried {', '.join(tried)})")
