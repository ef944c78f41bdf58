"""The suite runs with every extra installed (``scripts/test`` installs ``.[dev]``), so no
test skips itself for want of one: a test that needs an extra imports it at the top of its
module.  This module fails loudly, naming the missing package and how to install it, when
the environment lacks one, instead of letting hundreds of tests vanish or fail obscurely.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL = "install the test dependencies with `pip install -e '.[dev]'` (scripts/test does)"


def _extras() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        extras: dict[str, list[str]] = tomllib.load(f)["project"]["optional-dependencies"]
    return extras


def _requirements(extra: str, extras: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(extra, distribution name) for every requirement of ``extra``, following the
    ``deniable[...]`` references to other extras."""
    out: list[tuple[str, str]] = []
    for spec in extras[extra]:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", spec)
        assert match, f"cannot read the requirement {spec!r} of the [{extra}] extra"
        name, inner = match.group(1), match.group(2) or ""
        if name == "deniable":
            for sub in inner.split(","):
                out += _requirements(sub.strip(), extras)
        else:
            out.append((extra, name))
    return out


DEV = sorted(set(_requirements("dev", _extras())))


def test_the_dev_extra_holds_every_other_extra() -> None:
    """`.[dev]` is what the suite runs with: it must pull in every extra of the package
    (docs included), or a test of an extra left out would have nothing to run on."""
    extras = _extras()
    covered = {extra for extra, _ in DEV}
    assert set(extras) - {"dev"} <= covered, sorted(set(extras) - {"dev"} - covered)


@pytest.mark.parametrize(("extra", "dist"), DEV, ids=[f"{e}-{d}" for e, d in DEV])
def test_every_requirement_of_the_dev_extra_is_installed(extra: str, dist: str) -> None:
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{dist} (of the [{extra}] extra) is not installed: {INSTALL}.")


#: The modules the tests import from the extras (the import name, where it differs from
#: the distribution's name, is what counts: a broken install passes the metadata check).
MODULES = [
    "alembic",
    "dask.dataframe",
    "distributed",
    "dp_accounting",
    "fastapi",
    "formulaic",
    "httpx",
    "hypothesis",
    "itsdangerous",
    "jax",
    "matplotlib",
    "numpyro",
    "numpyro.infer",
    "pandas",
    "psycopg",
    "pyarrow",
    "pyarrow.parquet",
    "pydantic",
    "pydantic_settings",
    "python_multipart",
    "rich",
    "sqlalchemy",
    "typer",
    "uvicorn",
    "yaml",
]


@pytest.mark.parametrize("module", MODULES)
def test_every_extra_the_tests_use_imports(module: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"cannot import {module} ({exc}): {INSTALL}.")


def test_no_test_skips_itself_for_a_missing_module() -> None:
    """A test that needs an extra imports it at the top of its module: a missing extra then
    fails here and in that module, instead of skipping its tests silently."""
    found = sorted(
        str(f.relative_to(ROOT))
        for f in (ROOT / "tests").rglob("*.py")
        if f.name != "test_extras.py" and "importorskip(" in f.read_text(encoding="utf-8")
    )
    assert not found, found
