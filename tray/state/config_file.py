"""The user's ``config.toml``, read from the config directory and parsed by
:mod:`tray.core.config`."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tray.core.agent_rules import AgentBook
from tray.core.config import FILE_NAME, Config, ConfigError, parse_config
from tray.state.agent_files import load_agent_book
from tray.state.environment import Environment


def config_path(env: Environment) -> Path:
    return env.config_dir() / FILE_NAME


def load_config(env: Environment, agents: AgentBook | None = None) -> Config:
    """The settings in ``config.toml``, or the defaults when there is no such file; the
    answer keys of the agents' rules files under ``[answer.apps]``."""
    path = config_path(env)
    known_keys = (load_agent_book(env) if agents is None else agents).answer_keys()
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        return parse_config({}, str(path), known_keys)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: {error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise ConfigError(f"{path}: {error.strerror or error}") from None
    return parse_config(document, str(path), known_keys)
