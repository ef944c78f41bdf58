"""The public API: ``deniable.__all__`` is sorted, resolves, and exports every design."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

import deniable
from deniable import designs, exceptions
from deniable.designs import DESIGNS


def isort_key(name: str) -> tuple[int, list[object]]:
    """The order ruff's RUF022 enforces on ``__all__`` (the project selects "RUF"):
    SCREAMING_SNAKE_CASE, then CamelCase, then the rest; natural order within each."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    parts: list[object] = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
    return kind, parts


def test_all_is_sorted_and_unique() -> None:
    # "sorted" in the isort sense ruff checks; plain sorted() would put BiasedCoin before
    # DESIGNS and make this test and `ruff check` disagree
    assert deniable.__all__ == sorted(deniable.__all__, key=isort_key)
    assert len(set(deniable.__all__)) == len(deniable.__all__)


def test_isort_key() -> None:
    names = [
        "make_design",
        "DESIGNS",
        "Warner",
        "CHUNK",
        "BiasedCoin",
        "channel_epsilon",
        "K2",
        "K10",
    ]
    assert sorted(names, key=isort_key) == [
        "CHUNK", "DESIGNS", "K2", "K10", "BiasedCoin", "Warner", "channel_epsilon", "make_design",
    ]  # fmt: skip


def test_every_name_in_all_resolves() -> None:
    missing = [name for name in deniable.__all__ if not hasattr(deniable, name)]
    assert missing == []


def test_every_design_is_exported_at_top_level() -> None:
    for name, cls in DESIGNS.items():
        assert cls.__name__ in deniable.__all__, name
        assert getattr(deniable, cls.__name__) is cls


@pytest.mark.parametrize(
    "module", [exceptions, designs], ids=lambda m: m.__name__.rsplit(".", 1)[-1]
)
def test_public_names_of_public_modules_are_exported(module: object) -> None:
    # design_parameters is a CLI helper, reached as deniable.designs.design_parameters
    public = set(module.__all__) - {"design_parameters"}  # type: ignore[attr-defined]
    assert public <= set(deniable.__all__), sorted(public - set(deniable.__all__))


def test_submodule_all_lists_are_sorted_and_resolve() -> None:
    for name in ("deniable.designs", "deniable.exceptions", "deniable.randomness"):
        module = importlib.import_module(name)
        assert module.__all__ == sorted(module.__all__, key=isort_key), name
        for attr in module.__all__:
            assert hasattr(module, attr), (name, attr)


def test_exported_classes_and_functions_are_documented() -> None:
    for name in deniable.__all__:
        obj = getattr(deniable, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), name


def test_exception_tree() -> None:
    from deniable import DataError, DeniableError, ParameterError, ParameterTypeError, PrivacyError

    assert issubclass(ParameterTypeError, DeniableError) and issubclass(
        ParameterTypeError, TypeError
    )
    for cls in (ParameterError, DataError, PrivacyError):
        assert issubclass(cls, DeniableError) and issubclass(cls, ValueError)


def test_version() -> None:
    assert isinstance(deniable.__version__, str) and deniable.__version__.count(".") == 2
