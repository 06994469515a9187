"""Value: what the launcher's classes get in place of a frozen dataclass."""

from __future__ import annotations

from typing import Final

import pytest

from tray.base.value import Value


class Point(Value):
    __slots__ = ("x", "y")

    def __init__(self, x: int, y: str = "a") -> None:
        self.x: Final = x
        self.y: Final = y


class Other(Value):
    __slots__ = ("x", "y")

    def __init__(self, x: int, y: str) -> None:
        self.x: Final = x
        self.y: Final = y


class Empty(Value):
    __slots__ = ()


def test_equal_fields_of_the_same_class_are_equal_and_hash_alike() -> None:
    assert Point(1) == Point(1, "a")
    assert hash(Point(1)) == hash(Point(1, "a"))
    assert Point(1) != Point(2)
    assert Point(1) != Point(1, "b")


def test_another_class_or_a_tuple_is_never_equal() -> None:
    assert Point(1, "a") != Other(1, "a")
    assert Point(1, "a") != (1, "a")
    assert Empty() != Point(1)


def test_an_instance_without_fields_is_true_and_equal_to_its_kind() -> None:
    assert Empty()
    assert Empty() == Empty()
    assert len({Empty(), Empty()}) == 1


def test_repr_names_every_field() -> None:
    assert repr(Point(1, "b")) == "Point(x=1, y='b')"
    assert repr(Empty()) == "Empty()"


def test_replace_changes_only_the_fields_given() -> None:
    point = Point(1, "a")
    moved = point.replace(y="b")
    assert moved == Point(1, "b")
    assert point == Point(1, "a")
    assert type(moved) is Point


def test_replace_refuses_a_name_that_is_no_field() -> None:
    with pytest.raises(TypeError, match="'z'"):
        Point(1).replace(z=3)
