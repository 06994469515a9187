"""The agents' rules files: the ones tray ships (``tray/core/agents/*.toml``), and the
user's own in ``$XDG_CONFIG_HOME/tray/agents/``, where a file of the same name replaces
the shipped one and a new name adds an agent. Parsed by :mod:`tray.core.agents.rules`."""

from __future__ import annotations

import functools
from pathlib import Path

import tray.core
from tray.core.agents.rules import (
    AgentBook,
    AgentFileError,
    AgentRules,
    is_app_name,
    parse_agent_file,
)
from tray.state.environment import Environment

SUFFIX = ".toml"
# A rules file is a page of text; anything this large is not one.
MAX_FILE = 256 * 1024


def user_agents_dir(env: Environment) -> Path:
    return env.config_dir() / "agents"


def _shipped_dir() -> Path:
    return Path(tray.core.__file__).parent / "agents"


@functools.cache
def _shipped() -> tuple[AgentRules, ...]:
    # Cached: the shipped files are part of the installed package and never change
    # while it runs; a broken one is a bug in tray, and its tests fail on it.
    # Package data beside the modules (pyproject's package-data): a plain folder, read
    # without importlib.resources, whose import alone would cost every launcher ~10 ms.
    folder = _shipped_dir()
    return tuple(
        parse_agent_file(entry.read_text(encoding="utf-8"), entry.name.removesuffix(SUFFIX))
        for entry in sorted(folder.iterdir())
        if entry.name.endswith(SUFFIX)
    )


def shipped_agent_book() -> AgentBook:
    return AgentBook(_shipped())


def load_agent_book(env: Environment) -> AgentBook:
    """The shipped agents, with the user's files over them. A user file that cannot be
    read or parsed is left out, and said in ``problems`` (one line each)."""
    agents = {rules.app: rules for rules in _shipped()}
    problems: list[str] = []
    folder = user_agents_dir(env)
    try:
        names = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(SUFFIX))
    except FileNotFoundError:
        names = []
    except OSError as error:
        problems.append(f"{folder}: {error.strerror or error}")
        names = []
    for name in names:
        path = folder / name
        try:
            rules = parse_agent_file(_read(path), name.removesuffix(SUFFIX))
        except (AgentFileError, OSError, UnicodeDecodeError) as error:
            problems.append(
                f"{folder}/{_problem(error)}"
                if isinstance(error, AgentFileError)
                else f"{path}: {_problem(error)}"
            )
            continue
        agents[rules.app] = rules
    return AgentBook(agents.values(), problems)


def load_agent_rules(env: Environment, app: str) -> AgentRules | None:
    """One agent's rules alone, as :func:`load_agent_book` would give them, reading only
    its file (what a hook needs, in the time the agent waits for it): the user's file of
    that name when it reads, else the shipped one; None when neither exists."""
    if not is_app_name(app):
        return None
    try:
        return parse_agent_file(_read(user_agents_dir(env) / f"{app}{SUFFIX}"), app)
    except (AgentFileError, OSError, UnicodeDecodeError):
        pass  # none, or one left out: the shipped file applies, as in the whole book
    try:
        return parse_agent_file(_read(_shipped_dir() / f"{app}{SUFFIX}"), app)
    except FileNotFoundError:
        return None


def _read(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(MAX_FILE + 1)
    if len(data) > MAX_FILE:
        raise OSError(f"larger than {MAX_FILE // 1024} KiB")
    return data.decode("utf-8")


def _problem(error: Exception) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)
