"""Installing with pip gives a working `tray`, `python -m tray`, and the icons.

A fresh virtual environment, a real (non-editable) install of this checkout, and every
check run from outside the checkout, so nothing can come from the source tree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# One worker runs them all (make test's --dist loadgroup), so the install is made once.
pytestmark = pytest.mark.xdist_group("install")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", str(REPO)],
        check=True,
        timeout=600,
        cwd=venv,
    )
    return venv


def _run(argv: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    clean.update(env)
    return subprocess.run(
        argv,
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_console_script_and_the_module_both_work(installed: Path, tmp_path: Path) -> None:
    script = _run([str(installed / "bin" / "tray"), "--version"], tmp_path)
    module = _run([str(installed / "bin" / "python"), "-m", "tray", "--version"], tmp_path)
    assert script.returncode == module.returncode == 0, script.stderr + module.stderr
    assert script.stdout == module.stdout == "tray 0.1.0\n"


def test_the_installed_package_is_not_the_checkout_and_has_its_icons(
    installed: Path, tmp_path: Path
) -> None:
    probe = (
        "import tray, tray.desktop.icon_images as icons\n"
        "print(tray.__file__)\n"
        "print(icons.icon_image('blocked', 2, 22).size)\n"
    )
    result = _run([str(installed / "bin" / "python"), "-c", probe], tmp_path)
    assert result.returncode == 0, result.stderr
    location, size = result.stdout.splitlines()
    assert Path(location).is_relative_to(installed)
    assert size == "(22, 22)"


def test_the_installed_tray_runs_a_command_and_reports_it(installed: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    tray = str(installed / "bin" / "tray")
    ran = _run(
        [tray, "run", "--name", "check", "--", "true"],
        tmp_path,
        TRAY_STATE_DIR=str(state),
    )
    assert ran.returncode == 0, ran.stderr
    status = _run([tray, "status", "--json"], tmp_path, TRAY_STATE_DIR=str(state))
    [session] = json.loads(status.stdout)["sessions"]
    assert (session["name"], session["state"], session["exit_code"]) == ("check", "done", 0)
