"""``packaging/``: each static file is valid for the tools that read it, and is exactly what
``tray autostart`` generates with plain ``tray``, so the content is written once."""

from __future__ import annotations

import configparser
import plistlib
import subprocess
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import tray
from tray.commands.autostart import (
    APP_ID,
    DESKTOP_FILE,
    LABEL,
    SUMMARY,
    UNIT_NAME,
    desktop_entry,
    launch_agent,
    systemd_unit,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
STATIC_COMMAND = ["tray", "app"]
METAINFO = PACKAGING / f"{APP_ID}.metainfo.xml"


def pyproject() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        document: dict[str, object] = tomllib.load(handle)["project"]
    return document


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)


def test_desktop_entry_is_the_generated_one_and_valid() -> None:
    path = PACKAGING / DESKTOP_FILE
    text = path.read_text(encoding="utf-8")
    assert text == desktop_entry(STATIC_COMMAND)
    assert "Exec=tray app\n" in text.splitlines(keepends=True)
    result = run("desktop-file-validate", str(path))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_metainfo_is_valid_and_agrees_with_the_project() -> None:
    result = run("appstreamcli", "validate", "--no-net", "--pedantic", str(METAINFO))
    assert result.returncode == 0, result.stdout + result.stderr
    component = ET.parse(METAINFO).getroot()  # noqa: S314 - our own file, not untrusted input
    assert component.get("type") == "desktop-application"
    assert component.findtext("id") == APP_ID
    assert component.findtext("summary") == SUMMARY
    project = pyproject()
    # An SPDX expression: the table form makes setuptools warn at every install.
    assert component.findtext("project_license") == project["license"] == "MIT"
    launchable = component.find("launchable")
    assert launchable is not None and launchable.get("type") == "desktop-id"
    assert launchable.text == DESKTOP_FILE
    assert (PACKAGING / DESKTOP_FILE).is_file()
    scripts = project["scripts"]
    assert isinstance(scripts, dict)
    assert [b.text for b in component.iterfind("provides/binary")] == list(scripts)
    description = component.find("description")
    assert description is not None and len(description.findall("p")) >= 1
    newest = component.find("releases/release")
    assert newest is not None and newest.get("version") == tray.__version__


def test_systemd_unit_is_the_generated_one() -> None:
    path = PACKAGING / UNIT_NAME
    text = path.read_text(encoding="utf-8")
    assert text == systemd_unit(STATIC_COMMAND)
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    assert parser.sections() == ["Unit", "Service", "Install"]
    assert parser["Service"]["ExecStart"] == "tray app"
    assert parser["Service"]["Restart"] == "on-failure"
    assert parser["Unit"]["PartOf"] == "graphical-session.target"
    assert parser["Install"]["WantedBy"] == "graphical-session.target"


def test_launch_agent_is_the_generated_one() -> None:
    path = PACKAGING / f"{LABEL}.plist"
    data = path.read_bytes()
    assert data == launch_agent(STATIC_COMMAND)
    document = plistlib.loads(data)
    assert document["Label"] == LABEL
    assert document["ProgramArguments"] == STATIC_COMMAND
    assert document["RunAtLoad"] is True
    assert document["KeepAlive"] == {"SuccessfulExit": False}


def test_readme_describes_every_file() -> None:
    readme = (PACKAGING / "README.md").read_text(encoding="utf-8")
    files = sorted(p.name for p in PACKAGING.iterdir() if p.name != "README.md")
    assert files == sorted(
        [DESKTOP_FILE, METAINFO.name, UNIT_NAME, f"{LABEL}.plist", "screenshots"]
    )
    for name in files:
        assert f"`{name}" in readme
    for shot in (PACKAGING / "screenshots").iterdir():
        assert f"`screenshots/{shot.name}`" in readme
