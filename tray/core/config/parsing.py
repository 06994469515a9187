"""Pure: the one toolkit that reads a parsed TOML document into settings, and its one error.

Every table of config.toml and every agent's rules file is checked with these, so a
mistake reads the same wherever it is: the file, the key's path as the user wrote it
(``notify.settle``, ``hosts[0].name``, ``answer.apps.codex.approve``), and what is wrong.

>>> error = ConfigError("unknown key (known: wrap, ignore)", "shell.warp")
>>> str(error)
'shell.warp: unknown key (known: wrap, ignore)'
>>> str(error.within("config.toml"))
'config.toml: shell.warp: unknown key (known: wrap, ignore)'
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
V = TypeVar("V")

# A string value in a brief message is cut here: enough to find it in the file.
_BRIEF_TEXT = 80


class ConfigError(ValueError):
    """A setting that cannot be used, as one line: ``origin`` the file (or ""), ``key``
    the key's path (or "", for a file that cannot be read at all) and ``problem``.

    Users cause these, so ``tray`` prints the line and never a traceback.
    """

    def __init__(self, problem: str, key: str = "", origin: str = "") -> None:
        super().__init__(": ".join(part for part in (origin, key, problem) if part))
        self.problem = problem
        self.key = key
        self.origin = origin

    def within(self, origin: str) -> ConfigError:
        """The same error, said of the file ``origin``."""
        return type(self)(self.problem, self.key, origin)


def show(value: object, *, brief: bool = False) -> str:
    """A value as the user wrote it in TOML, near enough to find it in the file.

    ``brief`` cuts text at 80 characters and names an array or another type by its kind
    alone, for values that may be long or hold what a message need not repeat.

    >>> show(["a", 2, True]), show({"a": 1}), show(["a"], brief=True), show(None, brief=True)
    ('["a", 2, true]', 'a table', 'an array', 'NoneType')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value[:_BRIEF_TEXT] if brief else value, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list):
        return "an array" if brief else "[" + ", ".join(show(item) for item in value) + "]"
    if brief and not isinstance(value, int | float):
        return type(value).__name__
    return str(value)


def quoted(text: str) -> str:
    """``text`` quoted as JSON (and as a TOML basic string), for a message's choices."""
    return json.dumps(text, ensure_ascii=False)


def no_unknown_keys(table: Mapping[str, Any], known: Iterable[str], prefix: str = "") -> None:
    """Refuse a key that is not ``known``; the message lists the known ones in order."""
    names = tuple(known)
    for key in table:
        if key not in names:
            raise ConfigError(f"unknown key (known: {', '.join(names)})", f"{prefix}{key}")


def table(
    document: Mapping[str, Any], name: str, key: str | None = None, *, got: bool = True
) -> Mapping[str, Any]:
    """``document[name]``, a table ({} when absent); ``key`` is its path in messages
    (``name`` by default), and ``got`` says what was there instead."""
    value = document.get(name, {})
    if not isinstance(value, dict):
        problem = f"expected a table, got {show(value)}" if got else "expected a table"
        raise ConfigError(problem, name if key is None else key)
    return value


def setting(values: Mapping[str, Any], key: str, convert: Callable[[object], T], default: T) -> T:
    """The value at the dotted ``key``'s last name, converted, or ``default`` when absent.
    ``convert`` raises ValueError with what it expected; the message adds what it got."""
    name = key.rsplit(".", 1)[-1]
    if name not in values:
        return default
    try:
        return convert(values[name])
    except ValueError as error:
        raise ConfigError(f"{error}, got {show(values[name])}", key) from None


def checked(key: str, check: Callable[[V], T], value: V) -> T:
    """``check(value)``, its ValueError said of ``key``, word for word."""
    try:
        return check(value)
    except ValueError as error:
        raise ConfigError(str(error), key) from None


__all__ = [
    "ConfigError",
    "checked",
    "no_unknown_keys",
    "quoted",
    "setting",
    "show",
    "table",
]
