"""``tray doctor``'s agents: one line for each agent tray knows, from its rules file.

Each line says whether the agent's program is on PATH, what tray sees from it, whether
Approve and Deny work on its prompts (the keys, and the version they were checked on),
whether tray's hooks are in its settings (for the agents ``tray hooks`` knows), and what
gives more. An agent on PATH whose hooks are missing is a ``warn``, with the install as
the fix. A user's rules file that cannot be used is one ``warn`` line, since
tray then goes on with its own rules for that agent.

Nothing is run: an agent's program is only looked up on PATH, as the shell would.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tray.base.check import Check
from tray.base.safe_text import clean_text
from tray.commands.hooks import FORMATS, installable
from tray.core.agents.rules import AgentBook, AgentRules
from tray.core.config.settings import Config, ConfigError
from tray.shell.hook_formats import HookFileError
from tray.state.agent_files import load_agent_book, user_agents_dir
from tray.state.environment import Environment


def find_program(rules: AgentRules, environ: Mapping[str, str]) -> str | None:
    """Where the first of the agent's commands is on ``environ``'s PATH, or None."""
    # Without PATH a shell searches its default one; so does shutil, but from os.environ,
    # which is not the environment doctor was given.
    path = environ.get("PATH", os.defpath)
    for command in rules.commands:
        found = shutil.which(command, path=path)
        if found is not None:
            return found
    return None


def sees(rules: AgentRules) -> str:
    """What tray sees from the agent: its file's own words, else what its rules read."""
    said = clean_text(rules.sees)
    if said:
        return said
    read = [
        name
        for name, present in (
            ("its own OSC 7501 reports", rules.speaks_osc7501),
            ("its title", bool(rules.titles)),
            ("its notifications", bool(rules.notifications)),
            ("its screen", bool(rules.screen)),
            ("its bell", rules.bell is not None),
            ("its hooks", bool(rules.hooks)),
        )
        if present
    ]
    return ", ".join(read) if read else "nothing but its output"


def answers(rules: AgentRules, config: Config | ConfigError) -> str:
    """Whether Approve and Deny work on the agent's permission prompts, and why not."""
    own = rules.answer
    if isinstance(config, ConfigError):
        keys = None if own is None else own.keys
        enabled = True
    else:
        keys = config.answer.keys_for(rules.app)
        enabled = config.answer.enabled
    if keys is None:
        return "no Approve or Deny: tray knows no keys for its prompt"
    if not enabled:
        return "Approve and Deny off ([answer] enabled = false)"
    if own is not None and keys == own.keys:
        return f"Approve and Deny work (keys checked on {clean_text(own.checked)})"
    return "Approve and Deny with your keys from [answer.apps] (not checked by tray)"


@dataclass(frozen=True, slots=True)
class HooksState:
    """What doctor says of tray's hooks in an agent's settings; ``current`` when they are
    there for every event its rules name."""

    text: str
    current: bool


def hooks_state(rules: AgentRules, environ: Mapping[str, str]) -> HooksState | None:
    """tray's hooks for the agent, when ``tray hooks`` knows its format and its rules name
    hook events; None otherwise."""
    hook_format = FORMATS.get(rules.app)
    if hook_format is None:
        return None
    # What `tray hooks install` would install: never an event it refuses.
    wanted = sorted(installable(hook_format, rules)[0])
    if not wanted:
        return None
    home = environ.get("HOME", "")
    if not os.path.isabs(home):
        return HooksState("tray's hooks: cannot tell (HOME is not an absolute path)", False)
    path = hook_format.path(environ, Path(home))
    shown = clean_text(str(path))
    try:
        installed = hook_format.installed(path)
    except (HookFileError, OSError) as error:
        return HooksState(f"tray's hooks: cannot read {shown} ({clean_text(str(error))})", False)
    found = sorted({hook.event for hook in installed})
    if not found:
        return HooksState(f"tray's hooks not installed ({shown})", False)
    if found != wanted:
        have, want = ", ".join(found), ", ".join(wanted)
        return HooksState(f"tray's hooks for {have}, where its rules name {want} ({shown})", False)
    return HooksState(f"tray's hooks installed ({shown})", True)


def agent_line(
    rules: AgentRules, environ: Mapping[str, str], config: Config | ConfigError
) -> Check:
    name = clean_text(rules.name) or rules.app
    program = find_program(rules, environ)
    if program is None:
        looked = ", ".join(clean_text(command) for command in rules.commands)
        where = f"not on PATH (looked for {looked})"
    else:
        where = f"on PATH at {clean_text(program)}"
    origin = "tested live" if rules.live else "from its documentation"
    parts = [
        f"{name}, {where}",
        f"tray sees {sees(rules)} (rules for {clean_text(rules.checked)}, {origin})",
        answers(rules, config),
    ]
    hooks = hooks_state(rules, environ)
    if hooks is not None:
        parts.append(hooks.text)
    advice = clean_text(rules.advice)
    if advice:
        parts.append(advice)
    found = "; ".join(parts)
    if program is not None and hooks is not None and not hooks.current:
        # The agent is here, and its hooks would tell tray more than it sees now.
        return Check("warn", f"agent {rules.app}", found, f"tray hooks install {rules.app}")
    return Check("ok", f"agent {rules.app}", found)


def problems_line(book: AgentBook, env: Environment) -> Check | None:
    """The user's rules files that were left out, all on one line, or None."""
    if not book.problems:
        return None
    found = "; ".join(clean_text(problem) for problem in book.problems)
    return Check(
        "warn",
        "agent files",
        f"not used (tray's own rules, if any, apply instead): {found}",
        f"correct them, or remove them from {clean_text(str(user_agents_dir(env)))}",
    )


def agent_checks(
    env: Environment, config: Config | ConfigError, book: AgentBook | None = None
) -> list[Check]:
    """Every agent's line, then the line for bad user files when there are any."""
    book = load_agent_book(env) if book is None else book
    lines = [agent_line(rules, env.environ, config) for rules in book.agents]
    problems = problems_line(book, env)
    return lines if problems is None else [*lines, problems]
