"""``validation.instance`` and ``instance_or_none``: one message for a value of the wrong
class, ``"`name` must be WHAT, got TYPE."``, abstract classes and unions included."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

import pytest

from deniable.common import validation
from deniable.exceptions import ParameterTypeError


class _Shape(ABC):
    @abstractmethod
    def area(self) -> float: ...


class _Square(_Shape):
    def area(self) -> float:
        return 1.0


@pytest.mark.parametrize(
    ("value", "kind"),
    [(_Square(), _Shape), ({}, Mapping), (3, int | str), ("3", (int, str))],
)
def test_an_instance_passes(value: object, kind: object) -> None:
    assert validation.instance("x", value, kind, "a thing") is None
    assert validation.instance_or_none("x", value, kind, "a thing") is None


def test_none_passes_only_where_allowed() -> None:
    assert validation.instance_or_none("x", None, _Shape, "a shape") is None
    with pytest.raises(ParameterTypeError, match=r"^`x` must be a shape, got NoneType\.$"):
        validation.instance("x", None, _Shape, "a shape")


def test_the_message_names_the_parameter_the_kind_and_the_type_only() -> None:
    with pytest.raises(ParameterTypeError) as info:
        validation.instance("design", [0.5], _Shape, "a Design")
    assert str(info.value) == "`design` must be a Design, got list."
    with pytest.raises(ParameterTypeError) as info:
        validation.instance_or_none("store", "secret", int | float, "a number")
    assert str(info.value) == "`store` must be a number or None, got str."
    assert "secret" not in str(info.value)  # the value itself is never quoted
