"""Start real GitHub Copilot CLI, opencode and aider against the loopback chat fake.

Each gets a private ``HOME`` holding just enough settings to reach
:class:`helpers.model_standins.FakeChatCompletions` with no sign-in and no first-run
dialog, and a fresh work directory where ``approved-file`` may appear. Everything else is
the agent's default, except opencode's ``"permission": {"bash": "ask"}``: its own default
runs shell commands without asking anyone.

- Copilot CLI: its own-provider mode (``COPILOT_OFFLINE``, ``COPILOT_PROVIDER_BASE_URL``,
  ``COPILOT_MODEL``), the work directory trusted in ``~/.copilot/config.json`` (else a
  "Confirm folder trust" dialog comes first). ``hooks`` (event -> shell command) become a
  user-level hook file ``~/.copilot/hooks/tray.json``.
- opencode: an ``@ai-sdk/openai-compatible`` provider in ``~/.config/opencode/opencode.json``
  (the package is bundled in its binary), and its plugin SDK listed as installed there so
  that it runs no npm install. ``plugin`` (JavaScript text) becomes
  ``~/.config/opencode/plugins/tray.js``.
- aider: ``--openai-api-base`` and ``--model openai/NAME`` with ``--edit-format diff`` (the
  one that offers a fenced shell block as a command to run), the model's entry in
  ``~/.aider.model.metadata.json``, no git, no analytics, no update check, no model
  warnings: each of those would ask or reach the network before the prompt. Its prompt
  is typed at its input prompt, as a user would. ``tracked`` files make the work
  directory a git repository holding them, with its git on.

``state_dir`` None runs the agent directly; else under ``tray run`` with that state
directory.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from helpers.agent_terminal import AGENTS, PROJECT_ROOT, PlayedTerminal
from helpers.agents import PROMPT, _base_env, played

COPILOT = AGENTS / ".bin" / "copilot"
OPENCODE = AGENTS / ".bin" / "opencode"
AIDER = PROJECT_ROOT / ".agents" / "aider" / "bin" / "aider"
FAKE_KEY = "fake-api-key-for-the-loopback-stand-in"
MODEL = "fake-model"
OPENCODE_VERSION = "1.18.33"
# What aider draws once it reads the user's first message.
AIDER_READY = "> "
# What each draws, in one piece, when its permission prompt comes up.
PROMPT_TEXT = {
    "copilot": b"Do you want to run this command?",
    "opencode": b"Permission required",
    "aider": b"Run shell command?",
}


def _folders(root: Path) -> tuple[Path, Path]:
    home, work = root / "home", root / "api-server"
    home.mkdir(exist_ok=True)  # it may hold what `tray hooks install` wrote there
    work.mkdir()
    return home, work


def copilot_home(
    root: Path, base_url: str, hooks: dict[str, str] | None = None
) -> tuple[dict[str, str], Path]:
    """Copilot CLI's private home under ``root``: the environment and the work directory."""
    home, work = _folders(root)
    config = home / ".copilot"
    config.mkdir(exist_ok=True)
    # Trusting the work directory skips the "Confirm folder trust" dialog. Copilot keeps
    # the list in config.json (what "Yes, and remember this folder" writes), not in
    # settings.json.
    (config / "config.json").write_text(json.dumps({"trustedFolders": [str(work)]}))
    if hooks:
        (config / "hooks").mkdir(exist_ok=True)
        table = {
            event: [{"type": "command", "bash": command, "timeoutSec": 10}]
            for event, command in hooks.items()
        }
        (config / "hooks" / "tray.json").write_text(json.dumps({"version": 1, "hooks": table}))
    env = _base_env(home) | {
        # Its own-provider mode: no GitHub sign-in, no network besides the provider.
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"{base_url}/v1",
        "COPILOT_PROVIDER_API_KEY": FAKE_KEY,
        "COPILOT_MODEL": MODEL,
    }
    return env, work


def start_copilot(
    root: Path,
    base_url: str,
    state_dir: Path | None = None,
    hooks: dict[str, str] | None = None,
    env_extra: dict[str, str] | None = None,
) -> tuple[PlayedTerminal, Path]:
    env, work = copilot_home(root, base_url, hooks)
    argv = [str(COPILOT), "--interactive", PROMPT]
    return played(argv, env | (env_extra or {}), work, state_dir)


def opencode_home(
    root: Path, base_url: str, plugin: str | None = None
) -> tuple[dict[str, str], Path]:
    """opencode's private home under ``root``: the environment and the work directory."""
    home, work = _folders(root)
    config = home / ".config" / "opencode"
    config.mkdir(parents=True, exist_ok=True)
    settings = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "stub": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Loopback stand-in",
                "options": {"baseURL": f"{base_url}/v1", "apiKey": FAKE_KEY},
                "models": {MODEL: {"name": "Fake model", "tool_call": True}},
            }
        },
        "model": f"stub/{MODEL}",
        "small_model": f"stub/{MODEL}",
        # Its default runs shell commands without asking anyone.
        "permission": {"bash": "ask"},
        "autoupdate": False,
        "share": "disabled",
    }
    (config / "opencode.json").write_text(json.dumps(settings))
    # opencode installs its plugin SDK into each config directory with npm at start,
    # unless the directory's lock file already lists it: listing it keeps the run off
    # the network. Nothing here imports the SDK.
    wanted = {"@opencode-ai/plugin": OPENCODE_VERSION}
    (config / "package.json").write_text(json.dumps({"dependencies": wanted}))
    lock = {"lockfileVersion": 3, "packages": {"": {"dependencies": wanted}}}
    (config / "package-lock.json").write_text(json.dumps(lock))
    (config / "node_modules").mkdir()
    if plugin is not None:
        (config / "plugins").mkdir(exist_ok=True)
        (config / "plugins" / "tray.js").write_text(plugin)
    env = _base_env(home) | {
        # Nothing leaves the machine: no models.dev catalogue, no update check.
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
    }
    return env, work


def start_opencode(
    root: Path,
    base_url: str,
    state_dir: Path | None = None,
    plugin: str | None = None,
    env_extra: dict[str, str] | None = None,
) -> tuple[PlayedTerminal, Path]:
    env, work = opencode_home(root, base_url, plugin)
    return played([str(OPENCODE), "--prompt", PROMPT], env | (env_extra or {}), work, state_dir)


def aider_argv(base_url: str, git: bool = False) -> list[str]:
    """``git``: aider looks for the work directory's repository (it offers to add a file
    the model names to the chat only when git tracks that file), without touching it:
    no .gitignore entry of its own (that would be one more question first), no commits."""
    repository = ["--git", "--no-gitignore", "--no-auto-commits", "--no-dirty-commits"]
    return [
        str(AIDER),
        "--model",
        f"openai/{MODEL}",
        "--openai-api-base",
        f"{base_url}/v1",
        "--openai-api-key",
        FAKE_KEY,
        # Its default for a model it does not know, "whole", reads every fenced block as
        # a file; "diff" (its usual one) reads a ```bash block as a shell command to offer.
        "--edit-format",
        "diff",
        # Without a repository it would ask to create one; with one, see above.
        *(repository if git else ["--no-git"]),
        # Each of these would ask a question or reach the network before the prompt.
        "--analytics-disable",
        "--no-check-update",
        "--no-show-model-warnings",
        "--no-show-release-notes",
    ]


def start_aider(
    root: Path,
    base_url: str,
    state_dir: Path | None = None,
    extra: list[str] | None = None,
    tracked: dict[str, str] | None = None,
) -> tuple[PlayedTerminal, Path]:
    """aider at its own prompt, then the prompt typed as a user would: its ``--message``
    would answer once and exit, and a denied command must leave it waiting instead.
    ``tracked`` (name -> text): files written in the work directory and staged in a new
    git repository there, which aider then reads."""
    home, work = _folders(root)
    # aider looks up a model it does not know in a price list it downloads; the model's
    # own entry in ~/.aider.model.metadata.json keeps it off the network, and quiet.
    metadata = {
        f"openai/{MODEL}": {
            "max_input_tokens": 128000,
            "max_output_tokens": 4096,
            "input_cost_per_token": 0,
            "output_cost_per_token": 0,
            "litellm_provider": "openai",
            "mode": "chat",
        }
    }
    (home / ".aider.model.metadata.json").write_text(json.dumps(metadata))
    env = _base_env(home)
    if tracked:
        _stage(work, tracked, env)
    argv = [*aider_argv(base_url, git=bool(tracked)), *(extra or [])]
    terminal, _ = played(argv, env, work, state_dir)
    try:
        terminal.wait_for("aider's prompt", lambda: AIDER_READY in terminal.screen_text(), 120)
        terminal.write(PROMPT.encode())
        terminal.wait_for("the typed prompt", lambda: PROMPT in terminal.screen_text())
        terminal.write(b"\r")
    except BaseException:
        terminal.close()  # the caller gets no terminal to close
        raise
    return terminal, work


def _stage(work: Path, files: dict[str, str], env: dict[str, str]) -> None:
    """``files`` written in ``work`` and staged in a new repository there: aider counts
    staged files as tracked, so nothing is committed. The repository's own identity
    spares aider's warning that git has none."""
    for name, text in files.items():
        (work / name).write_text(text)
    for argv in (
        ["git", "init", "--quiet"],
        ["git", "config", "user.name", "Tray Tests"],
        ["git", "config", "user.email", "tray-tests@example.invalid"],
        ["git", "add", "--", *files],
    ):
        subprocess.run(argv, cwd=work, env=env, check=True, capture_output=True)


# Each ``start_*``: (root, base_url, state_dir) -> the played terminal and the work directory.
Starter = Callable[[Path, str, Path | None], tuple[PlayedTerminal, Path]]
STARTERS: dict[str, Starter] = {
    "copilot": start_copilot,
    "opencode": start_opencode,
    "aider": start_aider,
}
