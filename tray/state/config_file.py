"""The user's ``config.toml``, read from the config directory and parsed by
:mod:`tray.core.config`."""

from __future__ import annotations

import os
from pathlib import Path

from tray.core.config import FILE_NAME, Config, ConfigError, parse_config
from tray.state.environment import Environment


def config_path(env: Environment) -> Path:
    return env.config_dir() / FILE_NAME


def load_config(env: Environment) -> Config:
    """The settings in ``config.toml``, or the defaults when there is no such file."""
    # A string, not config_path's Path: pathlib (with fnmatch, re and enum) would cost
    # every `tray run` milliseconds.
    path = os.path.join(env.config_directory(), FILE_NAME)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, once the file is read
    except FileNotFoundError:
        return Config()
    except OSError as error:
        raise ConfigError(f"{path}: {error.strerror or error}") from None
    # Only now: tomllib, with the datetime it needs, is milliseconds of every `tray run`,
    # and most people have no config file.
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
    return parse_config(document, path)
