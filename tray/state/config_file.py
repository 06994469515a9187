"""The user's ``config.toml``, read from the config directory and parsed by
:mod:`tray.core.config`."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tray.core.config import FILE_NAME, Config, ConfigError, parse_config
from tray.state.environment import Environment


def config_path(env: Environment) -> Path:
    return env.config_dir() / FILE_NAME


def load_config(env: Environment) -> Config:
    """The settings in ``config.toml``, or the defaults when there is no such file."""
    path = config_path(env)
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        return Config()
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: {error}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise ConfigError(f"{path}: {error.strerror or error}") from None
    return parse_config(document, str(path))
