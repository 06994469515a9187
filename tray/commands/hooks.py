"""``tray hooks [list|install AGENT|remove AGENT]``: tray's hooks in an agent's settings.

An agent that speaks no OSC 7501 may still run a command on its own events (a permission
asked, a turn ended). ``install`` adds one such hook for each event the agent's rules
name (``[[hooks]]`` in its rules file, so the events are said in one place), each running
``tray emit --hook AGENT EVENT``, except the events whose hooks would harm the agent when
they fail (said, with why); an older layout of tray's hooks is brought up to date in
place. ``remove`` takes exactly tray's hooks away; ``list`` says what is installed where.
The agents' formats are :mod:`tray.shell.hook_formats` and
:mod:`tray.shell.opencode_plugin`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tray.base.exit_codes import FAILURE, SUCCESS, UsageError
from tray.commands.autostart_files import AutostartError, tray_command
from tray.core.agents.rules import AgentRules
from tray.shell.hook_formats import (
    CopilotHooks,
    GeminiHooks,
    HookFileError,
    HookFormat,
    QwenHooks,
    command_line,
)
from tray.shell.opencode_plugin import OpencodePlugin
from tray.state.agent_files import load_agent_book
from tray.state.environment import Environment

FORMATS: dict[str, HookFormat] = {
    hook_format.app: hook_format
    for hook_format in (CopilotHooks(), GeminiHooks(), OpencodePlugin(), QwenHooks())
}


class _HooksError(Exception):
    """What stops the command, in one line."""


def run(args: argparse.Namespace, env: Environment) -> int:
    try:
        argv = tray_command(sys.argv[0], sys.executable, env.environ.get("PATH"))
    except AutostartError as error:
        env.stderr.write(f"tray hooks: {error}\n")
        return FAILURE
    return hooks(args.action or "list", args.agent, env, argv)


def hooks(action: str, agent: str | None, env: Environment, argv: Sequence[str]) -> int:
    """The command, with ``argv`` the tray the hooks are to run."""
    if action in ("install", "remove") and agent is None:
        raise UsageError(f"tray hooks {action}: missing AGENT ({_names()})")
    if agent is not None and agent not in FORMATS:
        raise UsageError(f"tray hooks: no hooks for {agent!r}: tray has them for {_names()}")
    try:
        home = _home(env)
        if action == "install":
            assert agent is not None
            return _install(FORMATS[agent], home, env, argv)
        if action == "remove":
            assert agent is not None
            return _remove(FORMATS[agent], home, env)
        return _list([FORMATS[agent]] if agent else list(FORMATS.values()), home, env, argv)
    except (_HooksError, HookFileError) as error:
        env.stderr.write(f"tray hooks: {' '.join(str(error).split())}\n")
        return FAILURE


def _install(hook_format: HookFormat, home: Path, env: Environment, argv: Sequence[str]) -> int:
    rules = load_agent_book(env).get(hook_format.app)
    events, refused = installable(hook_format, rules)
    name = _name(hook_format.app, rules)
    say = _say(env)
    if not events and not refused:
        raise _HooksError(f"the rules for {name} name no hook events: nothing to install")
    path = hook_format.path(env.environ, home)
    # With every event refused, tray's hooks of an older install still go.
    change = hook_format.install(path, events, argv) if events else hook_format.remove(path)
    if not change.changed:
        if events:
            say(f"tray's hooks for {name} are in {path} already: nothing changed.")
    else:
        say(f"tray's hooks for {name}, in {path}:")
        for event in change.added:
            say(f"  added   {event}: {command_line(argv, hook_format.app, event)}")
        for event in change.updated:
            say(f"  updated {event}: {command_line(argv, hook_format.app, event)}")
        for event in change.removed:
            why = "tray never installs it" if event in refused else "no longer in the rules"
            say(f"  removed {event} ({why})")
        if change.added or change.updated:
            say(f"  each runs for at most {hook_format.timeout}")
    for event, reason in refused.items():
        say(f"not installed: {event}: {reason}")
    for note in change.notes:
        say(f"note: {note}")
    if not events:
        raise _HooksError(f"the rules for {name} name no hook event tray installs")
    return SUCCESS


def _remove(hook_format: HookFormat, home: Path, env: Environment) -> int:
    name = _name(hook_format.app, load_agent_book(env).get(hook_format.app))
    path = hook_format.path(env.environ, home)
    change = hook_format.remove(path)
    say = _say(env)
    if not change.changed:
        say(f"no hooks of tray's for {name} in {path}: nothing changed.")
    else:
        say(f"tray's hooks for {name}, in {path}:")
        for event in change.removed:
            say(f"  removed {event}")
        if change.deleted:
            say(f"  deleted {path}: it held nothing else")
    for note in change.notes:
        say(f"note: {note}")
    return SUCCESS


def _list(formats: Sequence[HookFormat], home: Path, env: Environment, argv: Sequence[str]) -> int:
    book = load_agent_book(env)
    say = _say(env)
    status = SUCCESS
    for hook_format in formats:
        app = hook_format.app
        events, _ = installable(hook_format, book.get(app))
        path = hook_format.path(env.environ, home)
        try:
            installed = hook_format.installed(path)
            # Current when installing would change nothing: the events, their commands,
            # and where and how they sit (a matcher, the plugin's code).
            current = not hook_format.install(path, events, argv, write=False).changed
        except HookFileError as error:
            say(f"{app}: {' '.join(str(error).split())}")
            status = FAILURE
            continue
        found = list(dict.fromkeys(hook.event for hook in installed))
        if not installed:
            state = "not installed" if events else "none (its rules name no hook events)"
            say(f"{app}: {state} ({path})")
            continue
        if current:
            say(f"{app}: {', '.join(found)} ({path})")
        else:
            say(
                f"{app}: {', '.join(found)}, not what this tray would install: "
                f"run 'tray hooks install {app}' ({path})"
            )
    return status


def installable(
    hook_format: HookFormat, rules: AgentRules | None
) -> tuple[list[str], dict[str, str]]:
    """The hook events the rules name that tray installs, and those it refuses, with why."""
    events: list[str] = []
    refused: dict[str, str] = {}
    for event in dict.fromkeys(rule.event for rule in rules.hooks) if rules else ():
        reason = hook_format.refusal(event)
        if reason is None:
            events.append(event)
        else:
            refused[event] = reason
    return events, refused


def _name(app: str, rules: AgentRules | None) -> str:
    return rules.name if rules is not None and rules.name else app


def _names() -> str:
    names = sorted(FORMATS)
    return f"{', '.join(names[:-1])} or {names[-1]}"


def _home(env: Environment) -> Path:
    home = env.environ.get("HOME", "")
    if not os.path.isabs(home):
        raise _HooksError("HOME is not set to an absolute path")
    return Path(home)


def _say(env: Environment) -> Callable[[str], None]:
    def say(line: str) -> None:
        env.stdout.write(line + "\n")

    return say


__all__ = ["FORMATS", "hooks", "installable", "run"]
