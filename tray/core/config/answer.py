"""Pure: the ``[answer]`` table, read into the gate's :class:`AnswerSettings`.

The gate (``tray.core.answers.gate``) says which keys may ever be typed; this reads the
user's table over the keys of the agents' rules files, naming the key of any mistake.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from tray.core.answers.gate import AnswerSettings, AppKeys, key_string
from tray.core.config.parsing import ConfigError, checked, no_unknown_keys
from tray.protocol.state import ANSWERS, Answer

# As protocol.md spells an app (ASCII only: \w would take any letter).
_APP_NAME: Final = re.compile(r"[A-Za-z0-9_.+-]{1,32}")


def parse_answer(
    document: Mapping[str, Any], known: Mapping[str, AppKeys] | None = None
) -> AnswerSettings:
    """The ``[answer]`` table of an already parsed config (absent: the defaults), over
    the ``known`` keys of the agents' rules files."""
    table = document.get("answer", {})
    if not isinstance(table, dict):
        raise ConfigError("expected a table", "answer")
    no_unknown_keys(table, ("enabled", "apps"), "answer.")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError("expected true or false", "answer.enabled")
    apps_table = table.get("apps", {})
    if not isinstance(apps_table, dict):
        raise ConfigError("expected a table", "answer.apps")
    apps = dict(known or {})
    for name, entry in apps_table.items():
        # A table here replaces the built-in one whole: half of each would be a surprise.
        apps[name] = _app_keys(name, entry)
    return AnswerSettings(enabled=enabled, apps=apps)


def _app_keys(name: str, entry: object) -> AppKeys:
    prefix = f"answer.apps.{name}"
    if _APP_NAME.fullmatch(name) is None:
        raise ConfigError("not an app name (letters, digits, _ . + -; 1 to 32)", prefix)
    if not isinstance(entry, dict):
        raise ConfigError("expected a table with approve and deny", prefix)
    no_unknown_keys(entry, ANSWERS, f"{prefix}.")
    keys = {
        answer: checked(f"{prefix}.{answer}", key_string, entry.get(answer)) for answer in ANSWERS
    }
    return AppKeys(approve=keys[Answer.APPROVE], deny=keys[Answer.DENY])


__all__ = ["parse_answer"]
