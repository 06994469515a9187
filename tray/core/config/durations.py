"""Pure: durations as config.toml writes them, ``300``, ``"500ms"``, ``"5m"`` or ``"1h30m"``.

Its own module so that every table of the config (``[notify]``, ``[away]``) reads them
the same way without importing one another.

>>> parse_duration("1h30m")
5400.0
>>> parse_duration(2)
2.0
"""

from __future__ import annotations

import math
import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_BARE_NUMBER = re.compile(r"\d+(?:\.\d+)?")
EXPECTED = 'expected a number of seconds >= 0 or a duration such as "30s", "5m", "1h"'


def parse_duration(value: object) -> float:
    """Seconds from a number of seconds or a string such as ``"500ms"``, ``"5m"`` or
    ``"1h30m"``; a ValueError that says what was expected otherwise."""
    if isinstance(value, bool):
        raise ValueError(EXPECTED)
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _duration_text(value.strip())
    else:
        raise ValueError(EXPECTED)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(EXPECTED)
    return seconds


def _duration_text(text: str) -> float:
    if _BARE_NUMBER.fullmatch(text):
        return float(text)
    total = 0.0
    position = 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            raise ValueError(EXPECTED)
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position == 0 or position != len(text):
        raise ValueError(EXPECTED)
    return total
