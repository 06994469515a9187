"""The user's ``config.toml``, read from the config directory and parsed by
:mod:`tray.core.config.settings`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tray.core.answers.gate import AppKeys
from tray.core.config.settings import FILE_NAME, Config, ConfigError, parse_config
from tray.state.environment import Environment


def config_path(env: Environment) -> Path:
    return env.config_dir() / FILE_NAME


def load_config(env: Environment, agent_keys: Mapping[str, AppKeys] | None = None) -> Config:
    """The settings in ``config.toml``, or the defaults when there is no such file; under
    ``[answer.apps]``, ``agent_keys``, by default those of the agents' rules files."""
    path = config_path(env)
    if agent_keys is None:
        # Imported here: `tray run` reads its config before the agents' rules (see
        # tray/launcher/attached.py), and must not pay for them then.
        from tray.state.agent_files import load_agent_book  # noqa: PLC0415

        agent_keys = load_agent_book(env).answer_keys()
    known_keys = agent_keys
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return parse_config({}, str(path), known_keys)
    except OSError as error:
        raise ConfigError(f"{path}: {error.strerror or error}") from None
    # Only a file there needs the TOML parser: a `tray run` without one never loads it.
    import tomllib  # noqa: PLC0415

    try:
        with handle:
            document = tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: {error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise ConfigError(f"{path}: {error.strerror or error}") from None
    return parse_config(document, str(path), known_keys)
