"""Immutable value classes for the launcher's path, without the dataclasses module.

Importing dataclasses brings inspect, and through it ast, dis and tokenize: more of every
``tray run`` than the launcher's own modules together, and each decorated class costs a
little more. ``typing.NamedTuple`` would need typing, and builds each class with exec.
So the values ``tray run`` uses derive from :class:`Value` and write their ``__init__``
out, with their fields as ``Final`` attributes so that mypy keeps them read-only; Value
gives them the rest of a frozen dataclass: equality, a hash, a repr and :meth:`replace`,
all from ``__slots__``, which must name every field and nothing else.

Off dataclasses stays every module that ``tray run`` imports (the cli, environment, usage,
config, session, store, json_text, answering, fdio, ``protocol`` and ``launcher`` modules), for the
start-up time of every agent; ``tests/commands/test_startup_imports.py`` fails if one imports it.
"""

from __future__ import annotations

# typing is for mypy only (which takes any TYPE_CHECKING as true): importing it would
# cost every `tray run` milliseconds.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Self


class Value:
    """Equal to another of the same class with equal fields, as a dataclass is."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Value) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{self.__class__.__qualname__}({fields})"

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed, as ``dataclasses.replace`` makes.

        Unlike that, mypy cannot check the names and types of ``changes``: a name that is
        no field is a TypeError, at run time.
        """
        names = self.__slots__
        unknown = changes.keys() - set(names)
        if unknown:
            raise TypeError(f"{self.__class__.__qualname__} has no field {min(unknown)!r}")
        fields = {name: changes[name] if name in changes else getattr(self, name) for name in names}
        make: Callable[..., Self] = self.__class__
        return make(**fields)
