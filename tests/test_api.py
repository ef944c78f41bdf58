"""The public API: every public module's ``__all__`` is sorted and equals what it exports
(httpx's pattern), the top level is small and lazy, and every design is reachable from it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
import types

import pytest

import deniable
from deniable.designs import DESIGNS, TWO_GROUP_DESIGNS

#: Every public package or module of deniable (the CLI is an application, not an API).
PUBLIC_MODULES = (
    "deniable.accounting",
    "deniable.audit",
    "deniable.common",
    "deniable.designs",
    "deniable.distributed",
    "deniable.estimation",
    "deniable.exceptions",
    "deniable.mechanisms",
    "deniable.oracles",
    "deniable.plotting",
    "deniable.quantitative",
    "deniable.randomness",
    "deniable.results",
    "deniable.service",
    "deniable.sampling",
    "deniable.simulation",
    "deniable.survey",
)


def test_public_modules_are_every_package() -> None:
    # a new subpackage is covered by the __all__ tests below without an edit here
    found = {
        f"deniable.{m.name}" for m in pkgutil.iter_modules(deniable.__path__) if m.name[0] != "_"
    }
    assert found == {*PUBLIC_MODULES, "deniable.cli"}


def isort_key(name: str) -> tuple[int, list[object]]:
    """The order ruff's RUF022 enforces on ``__all__`` (the project selects "RUF"):
    SCREAMING_SNAKE_CASE, then CamelCase, then the rest; natural order within each."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    parts: list[object] = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
    return kind, parts


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


def exported(module: types.ModuleType) -> set[str]:
    """The public names a module holds: for a package, every name not starting with ``_``
    except submodules; for a plain module, the public classes, functions and constants it
    defines itself (not what it imports)."""
    names = set()
    is_package = hasattr(module, "__path__")
    for name, obj in vars(module).items():
        if name.startswith("_") or name == "annotations" or inspect.ismodule(obj):
            continue
        if is_package or (
            getattr(obj, "__module__", module.__name__) == module.__name__
            and not (
                name in {"TYPE_CHECKING", "Any"}
                or (name[0].isupper() and hasattr(obj, "__origin__"))
            )
        ):
            names.add(name)
    return names


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_and_equals_what_the_module_exports(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__, key=isort_key), name
    assert len(set(module.__all__)) == len(module.__all__), name
    missing = [a for a in module.__all__ if not hasattr(module, a)]
    assert missing == [], (name, missing)
    extra = exported(module) - set(module.__all__)
    assert extra == set(), (name, sorted(extra))


def test_top_level_all_is_sorted_and_resolves() -> None:
    assert deniable.__all__ == sorted(deniable.__all__, key=isort_key)
    assert set(deniable.__all__) == set(deniable._ORIGIN)
    for name in deniable.__all__:
        obj = getattr(deniable, name)
        origin = importlib.import_module(deniable._ORIGIN[name])
        assert obj is getattr(origin, name), name
        assert name in origin.__all__, name


def test_every_design_is_at_the_top_level() -> None:
    for name, cls in {**DESIGNS, **TWO_GROUP_DESIGNS}.items():
        assert cls.__name__ in deniable.__all__, name
        assert getattr(deniable, cls.__name__) is cls


def test_subpackages_are_reachable_as_attributes() -> None:
    # in a fresh interpreter: here an earlier `import deniable.x` has already set the attribute
    names = sorted(m.split(".", 1)[1] for m in (*PUBLIC_MODULES, "deniable.cli"))
    code = (
        "import importlib, sys\n"
        "import deniable\n"
        f"for name in {names!r}:\n"
        "    assert name in dir(deniable), name\n"
        "    assert getattr(deniable, name) is importlib.import_module('deniable.' + name), name\n"
        "heavy = [m for m in ('pandas', 'matplotlib', 'pyarrow', 'dask', 'distributed', 'fastapi',"
        " 'sqlalchemy', 'typer') if m in sys.modules]\n"
        "assert heavy == [], heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = deniable.nope  # type: ignore[attr-defined]


def test_import_deniable_loads_no_heavy_dependency() -> None:
    # what `import deniable` costs is measured in the benchmark; here: what it loads.  A
    # design and its estimate need numpy only (scipy.stats is loaded by the first interval
    # that needs a quantile); the CLI's --help loads no scipy, pandas or matplotlib.
    code = (
        "import sys\n"
        "import deniable\n"
        "heavy = [m for m in ('scipy', 'pandas', 'matplotlib', 'pyarrow', 'typer', 'rich',"
        " 'dask', 'distributed', 'numba') if m in sys.modules]\n"
        "assert heavy == [], heavy\n"
        "d = deniable.TwoCoin()\n"
        "e = d.estimate(yes=400, n=1000)\n"
        "assert round(e.value, 4) == 0.3\n"
        "heavy = [m for m in ('scipy.stats', 'pandas', 'matplotlib') if m in sys.modules]\n"
        "assert heavy == [], heavy\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_exported_classes_and_functions_are_documented() -> None:
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert inspect.getdoc(obj), (module_name, name)


def test_exception_tree() -> None:
    from deniable import DataError, DeniableError, ParameterError, ParameterTypeError, PrivacyError

    assert issubclass(ParameterTypeError, DeniableError) and issubclass(
        ParameterTypeError, TypeError
    )
    for cls in (ParameterError, DataError, PrivacyError):
        assert issubclass(cls, DeniableError) and issubclass(cls, ValueError)


def test_version() -> None:
    assert isinstance(deniable.__version__, str) and deniable.__version__.count(".") == 2
