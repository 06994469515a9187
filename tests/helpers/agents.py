"""Start real Claude Code and Codex against the loopback fakes, on a played terminal.

Each gets a private home (``HOME`` for Claude, ``CODEX_HOME`` for Codex) holding just
enough settings to skip first-run questions and to talk to the fake, and a fresh work
directory where ``approved-file`` may appear.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers.agent_terminal import CLAUDE, CODEX, PlayedTerminal
from helpers.tray_cli import tray_argv

# The real CLI, found through the interpreter that runs the tests: `tray run -- AGENT ...`
# when a test runs an agent under the launcher.
TRAY = tray_argv()

# Looks like a key to the agents; only ever sent to the loopback fake.
FAKE_KEY = "sk-ant-api03-" + "fake" * 20 + "-AAAAAAAA"
PROMPT = "create the marker file"


def _base_env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "USER": os.environ.get("USER", "user"),
        "SHELL": "/bin/bash",
    }


def played(
    argv: list[str], env: dict[str, str], work: Path, state_dir: Path | None
) -> tuple[PlayedTerminal, Path]:
    """``argv`` on a played terminal in ``work``, as it is or under `tray run` with its
    own state directory; the terminal and ``work``."""
    if state_dir is not None:
        argv = [*TRAY, "run", "--", *argv]
        env = env | {"TRAY_STATE_DIR": str(state_dir)}
    return PlayedTerminal(argv, work, env), work


def claude_home(root: Path, base_url: str) -> tuple[dict[str, str], Path]:
    """Claude Code's private home under ``root``, set to talk to the fake at ``base_url``:
    the environment to start it with, and its work directory."""
    home, work = root / "home", root / "api-server"
    home.mkdir()
    work.mkdir()
    settings = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [FAKE_KEY[-20:]], "rejected": []},
        "projects": {str(work): {"hasTrustDialogAccepted": True, "allowedTools": []}},
    }
    (home / ".claude.json").write_text(json.dumps(settings))
    env = _base_env(home) | {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    return env, work


def start_claude(
    root: Path, base_url: str, state_dir: Path | None = None
) -> tuple[PlayedTerminal, Path]:
    env, work = claude_home(root, base_url)
    return played([str(CLAUDE), "--permission-mode", "default", PROMPT], env, work, state_dir)


def start_codex(
    root: Path, base_url: str, state_dir: Path | None = None
) -> tuple[PlayedTerminal, Path]:
    home, codex_home, work = root / "home", root / "codex-home", root / "api-server"
    for folder in (home, codex_home, work):
        folder.mkdir()
    config = f"""\
model = "fake-model"
model_provider = "fake"
approval_policy = "on-request"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"

[projects."{work}"]
trust_level = "trusted"
"""
    (codex_home / "config.toml").write_text(config)
    env = _base_env(home) | {"CODEX_HOME": str(codex_home), "FAKE_API_KEY": "fake"}
    return played([str(CODEX), PROMPT], env, work, state_dir)
