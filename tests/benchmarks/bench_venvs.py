"""The venvs the start-up benchmarks run their programs from, each as a user installs it.

- ``.venv-bench``: tray and its dependencies and nothing else, from a plain, not
  editable, ``pip install`` of this checkout, as pipx would make it. The project's own
  ``.venv`` makes every start pay for the editable install's finder and the dev tools'
  ``.pth`` files. It is built once, rebuilt when pyproject.toml changes, and tray is
  reinstalled into it whenever its sources change.
- ``.venv-bench-asciinema``: asciinema 2.4.0 (the last Python one) from the package
  index, alone.

Neither holds pip or setuptools (whose ``.pth`` file every start would pay for): the
project venv's pip installs into them. pip compiles the bytecode, as for any install.
Both are gitignored, and ``make clean`` removes them.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH_VENV = REPO / ".venv-bench"
ASCIINEMA_VENV = REPO / ".venv-bench-asciinema"
ASCIINEMA_VERSION = "2.4.0"
# What a non-editable install is built from; tests and dev files stay out.
_SOURCES = ("pyproject.toml", "README.md", "tray", "icons")
# pip resolves the dependencies over the network or a local index: give it time.
_INSTALL_TIMEOUT = 900


def _source_digest(files: Sequence[Path]) -> str:
    digest = hashlib.sha256(sys.version.encode())
    for path in files:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _source_files() -> list[Path]:
    files: list[Path] = []
    for name in _SOURCES:
        top = REPO / name
        if top.is_file():
            files.append(top)
            continue
        files += sorted(
            path for path in top.rglob("*") if path.is_file() and "__pycache__" not in path.parts
        )
    return files


def _pip(python: Path, *arguments: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *arguments],
        check=True,
        timeout=_INSTALL_TIMEOUT,
    )


def _new_venv(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120
    )


def fair_venv() -> Path:
    """The bench venv's python, with the current tray installed; built when missing."""
    python = BENCH_VENV / "bin" / "python"
    files = _source_files()
    digest = _source_digest(files)
    stamp = BENCH_VENV / "tray-sources.sha256"
    # The dependencies come from pyproject.toml: when it changes, start from scratch.
    deps = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    deps_stamp = BENCH_VENV / "tray-deps.sha256"
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return python
    fresh = not python.exists() or not deps_stamp.exists() or deps_stamp.read_text() != deps
    print(f"  ({'building' if fresh else 'updating'} the fair baseline venv {BENCH_VENV})")
    if fresh:
        _new_venv(BENCH_VENV)
    with tempfile.TemporaryDirectory() as scratch:
        # A copy, so the build leaves no build/ or egg-info in the checkout, and no file
        # deleted since the last build lingers in a reused build/ directory.
        tree = Path(scratch, "tray")
        for path in files:
            target = tree / path.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        if fresh:
            _pip(python, str(tree))
        else:
            _pip(python, "--no-deps", "--force-reinstall", str(tree))
    deps_stamp.write_text(deps)
    stamp.write_text(digest)
    return python


def asciinema() -> Path:
    """The ``asciinema`` program of its own venv; built when missing or of another version."""
    program = ASCIINEMA_VENV / "bin" / "asciinema"
    stamp = ASCIINEMA_VENV / "asciinema-version"
    if program.exists() and stamp.exists() and stamp.read_text() == ASCIINEMA_VERSION:
        return program
    print(f"  (building {ASCIINEMA_VENV} with asciinema {ASCIINEMA_VERSION})")
    _new_venv(ASCIINEMA_VENV)
    _pip(ASCIINEMA_VENV / "bin" / "python", f"asciinema=={ASCIINEMA_VERSION}")
    stamp.write_text(ASCIINEMA_VERSION)
    return program
