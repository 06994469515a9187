"""A function's results remembered by argument, in a bounded table: what a program's
output repeats (its titles, its progress reports) is worked out once, and a program that
never repeats itself costs no memory beyond the bound."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """``make(key)``, remembered for up to ``limit`` keys; when full, every key is
    forgotten at once (a plain dict, no order to keep: what comes back is made again).

    >>> made = []
    >>> double = Memo(lambda n: made.append(n) or 2 * n, limit=2)
    >>> double(1), double(1), double(2), made
    (2, 2, 4, [1, 2])
    >>> double(3), double(1), made  # the third key emptied the table
    (6, 2, [1, 2, 3, 1])
    """

    __slots__ = ("_limit", "_make", "_values")

    def __init__(self, make: Callable[[K], V], limit: int) -> None:
        self._make = make
        self._limit = limit
        self._values: dict[K, V] = {}

    def __call__(self, key: K) -> V:
        values = self._values
        if key in values:
            return values[key]
        if len(values) >= self._limit:
            values.clear()
        value = values[key] = self._make(key)
        return value

    def __len__(self) -> int:
        return len(self._values)
