"""Start real Gemini CLI and Qwen Code against the loopback fakes, on a played terminal.

Each gets a private ``HOME`` holding just enough settings to skip first-run dialogs and
to talk to the fake (:class:`helpers.model_standins.FakeGemini`,
:class:`helpers.model_standins.FakeChatCompletions`), and a fresh work directory where
``approved-file`` may appear. Everything else is the agent's default, except Qwen's
``tools.approvalMode: "default"``: its own default runs shell commands without asking.
``settings`` are merged over these (one level deep per top-level key) for the variants
that turn notifications on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers.agent_terminal import AGENTS, PlayedTerminal
from helpers.agents import PROMPT, _base_env, played
from helpers.hook_homes import install_hooks

GEMINI = AGENTS / ".bin" / "gemini"
QWEN = AGENTS / ".bin" / "qwen"
FAKE_KEY = "fake-api-key-for-the-loopback-stand-in"
MODEL = "fake-model"


def _merge(base: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    merged = dict(base)
    for key, value in (extra or {}).items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _folders(root: Path) -> tuple[Path, Path]:
    home, work = root / "home", root / "api-server"
    home.mkdir()
    work.mkdir()
    return home, work


def gemini_home(
    root: Path, base_url: str, settings: dict[str, Any] | None = None
) -> tuple[dict[str, str], Path]:
    """Gemini CLI's private home under ``root``: the environment and the work directory."""
    home, work = _folders(root)
    config = home / ".gemini"
    config.mkdir()
    base = {
        # Picks the API key over the "how will you sign in" dialog.
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        # Nothing leaves the machine: no update check, no usage statistics. Neither
        # changes what the agent draws or writes at its prompt.
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
    }
    (config / "settings.json").write_text(json.dumps(_merge(base, settings)))
    # Folder trust is on by default: trusting the work directory skips its dialog.
    (config / "trustedFolders.json").write_text(json.dumps({str(work): "TRUST_FOLDER"}))
    env = _base_env(home) | {
        "GEMINI_API_KEY": FAKE_KEY,
        "GOOGLE_GEMINI_BASE_URL": base_url,
    }
    return env, work


def start_gemini(
    root: Path,
    base_url: str,
    state_dir: Path | None = None,
    *,
    settings: dict[str, Any] | None = None,
    env_extra: dict[str, str] | None = None,
    hooks: bool = False,
) -> tuple[PlayedTerminal, Path]:
    env, work = gemini_home(root, base_url, settings)
    if hooks:  # `tray hooks install` as the user runs it, over the settings above
        install_hooks("gemini", Path(env["HOME"]))
    argv = [str(GEMINI), "--prompt-interactive", PROMPT]
    return played(argv, env | (env_extra or {}), work, state_dir)


def qwen_home(
    root: Path, base_url: str, settings: dict[str, Any] | None = None
) -> tuple[dict[str, str], Path]:
    """Qwen Code's private home under ``root``: the environment and the work directory."""
    home, work = _folders(root)
    config = home / ".qwen"
    config.mkdir()
    base = {
        # An OpenAI-compatible provider, from the environment below: no sign-in dialog.
        "security": {"auth": {"selectedType": "openai"}},
        # Its default, "auto", runs shell commands without asking anyone.
        "tools": {"approvalMode": "default"},
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
    }
    (config / "settings.json").write_text(json.dumps(_merge(base, settings)))
    env = _base_env(home) | {
        "OPENAI_BASE_URL": f"{base_url}/v1",
        "OPENAI_API_KEY": FAKE_KEY,
        "OPENAI_MODEL": MODEL,
    }
    return env, work


def start_qwen(
    root: Path,
    base_url: str,
    state_dir: Path | None = None,
    *,
    settings: dict[str, Any] | None = None,
    env_extra: dict[str, str] | None = None,
    hooks: bool = False,
) -> tuple[PlayedTerminal, Path]:
    env, work = qwen_home(root, base_url, settings)
    if hooks:  # `tray hooks install` as the user runs it, over the settings above
        install_hooks("qwen-code", Path(env["HOME"]))
    argv = [str(QWEN), "--prompt-interactive", PROMPT]
    return played(argv, env | (env_extra or {}), work, state_dir)
