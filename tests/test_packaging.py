"""The version is written once (``deniable.__version__``) and the packaging metadata agrees.

``scripts/package`` builds the wheel and the sdist, checks their contents and smoke-tests the
wheel in a fresh environment; these tests keep the sources consistent in the meantime.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import deniable

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_reads_the_version_from_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"]  # one place only: deniable.__version__
    assert "version" in pyproject["project"]["dynamic"]
    dynamic = pyproject["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "deniable.__version__"}


def test_version_is_a_release_number() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", deniable.__version__)


def test_installed_metadata_carries_the_package_version() -> None:
    assert importlib.metadata.version("deniable") == deniable.__version__


def test_the_typed_marker_ships() -> None:
    assert (Path(deniable.__file__).parent / "py.typed").is_file()
