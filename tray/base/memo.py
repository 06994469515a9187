"""A function's results remembered by argument, in a bounded table: what a program's
output repeats (its titles, its progress reports) is worked out once, and a program that
never repeats itself costs no memory beyond the bound."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(dict[K, V]):
    """``make(key)``, remembered for up to ``limit`` keys and read as ``memo[key]``; when
    full, every key is forgotten at once (a plain dict, no order to keep: what comes back
    is made again).

    A dict, so that a key seen before is found without a call into Python: the launcher
    looks up every title change and report this way, thousands of times a second.

    >>> made = []
    >>> double = Memo(lambda n: made.append(n) or 2 * n, limit=2)
    >>> double[1], double[1], double[2], made
    (2, 2, 4, [1, 2])
    >>> double[3], double[1], made  # the third key emptied the table
    (6, 2, [1, 2, 3, 1])
    >>> len(double)
    2
    """

    __slots__ = ("_limit", "_make")

    def __init__(self, make: Callable[[K], V], limit: int) -> None:
        super().__init__()
        self._make = make
        self._limit = limit

    def __missing__(self, key: K) -> V:
        if len(self) >= self._limit:
            self.clear()
        value = self[key] = self._make(key)
        return value
