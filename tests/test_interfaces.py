"""Each subpackage's ``__all__`` is its interface (issue 15, part 3).

A module of one package may import from another package only what that package exports:
never one of its private modules (``deniable.results._estimate``) nor an underscore name
(``from deniable.audit import _epsilons``).  Within a package, private modules import each
other freely.  The check reads the source (``ast``), so it also covers modules that are
imported lazily inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import deniable

SRC = Path(deniable.__file__).parent


def _package_of(path: Path) -> str | None:
    """The subpackage a module belongs to (``designs`` for designs/_warner.py), None for a
    module at the top of ``deniable``."""
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else None


def _module_of(path: Path) -> list[str]:
    parts = ["deniable", *path.relative_to(SRC).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def private_imports(source: str, path: Path) -> list[str]:
    """Every import in ``source`` (the text of ``path``) of another package's private module
    or underscore name, as ``"line: target [names]"``."""
    own = _package_of(path)
    package = _module_of(path) if path.name == "__init__.py" else _module_of(path)[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = [*base, *(node.module.split(".") if node.module else [])]
            else:
                target = (node.module or "").split(".")
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name.split(".")
                if (
                    target[0] == "deniable"
                    and len(target) > 2
                    and target[1] != own
                    and any(part.startswith("_") for part in target[2:])
                ):
                    found.append(f"{node.lineno}: import {alias.name}")
            continue
        else:
            continue
        if target[0] != "deniable" or len(target) < 2 or target[1] == own:
            continue
        private_module = any(part.startswith("_") for part in target[1:])
        private_names = [name for name in names if name.startswith("_")]
        if private_module or private_names:
            found.append(f"{node.lineno}: from {'.'.join(target)} import {', '.join(names)}")
    return found


def test_no_module_imports_another_packages_private_parts() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for hit in private_imports(path.read_text(encoding="utf-8"), path):
            offenders.append(f"{path.relative_to(SRC.parent)}:{hit}")
    assert not offenders, (
        "import what the other package exports in its __init__'s __all__ instead:\n"
        + "\n".join(offenders)
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from deniable.results._estimate import normal_quantile\n", 1),
        ("from deniable.audit import _epsilons\n", 1),
        ("import deniable.results._table\n", 1),
        ("from ..results._table import Table\n", 1),
        ("from deniable.results import normal_quantile\n", 0),
        ("from deniable.designs._tally import Tally\n", 0),  # its own package
        ("from ._tally import MAX_COUNT\n", 0),
        ("from deniable.common import validation\n", 0),
    ],
)
def test_the_check_finds_what_it_should(source: str, expected: int) -> None:
    # the check itself can fail: a module of deniable.designs with each import
    path = SRC / "designs" / "_example.py"
    assert len(private_imports(source, path)) == expected
