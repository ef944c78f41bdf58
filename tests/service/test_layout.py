"""The service's layout holds (docs/architecture.md, "The survey service"): the import
contracts of ``pyproject.toml`` pass, every module sits in its layer by what it imports
(checked again here from the source, so that a contract edited away still fails a test),
and the old module paths still give the moved names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import deniable.service

ROOT = Path(__file__).resolve().parents[2]
SERVICE = Path(deniable.service.__file__).parent
CONTRACTS = ("service-layers", "service-storage-no-http", "service-pure-views")
HTTP = ("fastapi", "starlette", "uvicorn")
#: What each part of the service may not import (beside the layers above it).
FORBIDDEN = {
    "storage": (*HTTP, "pydantic", "jinja2", "deniable.service.core", "deniable.service.routes",
                "deniable.service.pages", "deniable.service.analysis", "deniable.service.app"),
    "core": ("deniable.service.routes", "deniable.service.pages", "deniable.service.analysis",
             "deniable.service.app"),
    "analysis": (*HTTP, "sqlalchemy", "deniable.service.storage", "deniable.service.core",
                 "deniable.service.routes", "deniable.service.pages", "deniable.service.app"),
    "pages": (*HTTP, "sqlalchemy", "deniable.service.storage", "deniable.service.core",
              "deniable.service.routes", "deniable.service.analysis", "deniable.service.app"),
    "routes": ("deniable.service.app",),
}  # fmt: skip


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; the service uses no relative ones)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import"
            base = node.module or ""
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_each_part_imports_only_what_its_layer_allows(part: str) -> None:
    modules = sorted((SERVICE / part).rglob("*.py"))
    assert modules
    for path in modules:
        for name in _imports(path):
            for bad in FORBIDDEN[part]:
                assert name != bad and not name.startswith(bad + "."), (path, name)


def test_the_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    # the public module configures import-linter; its command line would also reconfigure
    # logging (and silence the service's logger for the tests after this one)
    import importlinter.api  # noqa: F401
    from importlinter.application.use_cases import lint_imports

    passed = lint_imports(
        config_filename=str(ROOT / "pyproject.toml"),
        limit_to_contracts=CONTRACTS,
        cache_dir=None,
        no_logo=True,
    )
    out = capsys.readouterr().out
    assert passed, out
    assert out.count("KEPT") == len(CONTRACTS), out


def test_old_module_paths_give_the_moved_names() -> None:
    from deniable.service import db, settings, stores
    from deniable.service import storage as new_storage
    from deniable.service.app import create_app
    from deniable.service.core.settings import Settings
    from deniable.service.storage import ServiceStore, SqlLedgerStore, SqlMemoStore
    from deniable.service.storage import db as new_db

    assert callable(create_app)
    assert settings.Settings is Settings
    assert new_storage.ServiceStore is ServiceStore
    assert (stores.SqlLedgerStore, stores.SqlMemoStore) == (SqlLedgerStore, SqlMemoStore)
    assert db.make_engine is new_db.make_engine and db.migrate is new_db.migrate


def _private_imports(path: Path) -> list[str]:
    """The imports in ``path`` of another package's private module or private name
    (``deniable.accounting._pricing``, ``from deniable.plotting import _dashboard``); the
    service's own modules, and :mod:`deniable.common` (being made public), are not counted."""
    bad = []
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] != "deniable" or parts[:2] in (["deniable", "service"], ["deniable", "common"]):
            continue
        if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
            bad.append(name)
    return sorted(bad)


def test_the_service_uses_only_the_public_names_of_other_packages() -> None:
    found = {
        str(path.relative_to(SERVICE)): bad
        for path in sorted(SERVICE.rglob("*.py"))
        if (bad := _private_imports(path))
    }
    assert not found, found


def test_the_private_import_check_can_fail(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "from deniable.accounting._pricing import spend_limit\n"
        "from deniable.plotting import _dashboard\n"
        "import deniable.mechanisms._memo_store\n"
        "from deniable.common._io import x\n"
        "from deniable.service.storage._plan import checked\n"
        "from deniable.accounting import spend_limit as limit\n"
    )
    assert _private_imports(path) == [
        "deniable.accounting._pricing",
        "deniable.accounting._pricing.spend_limit",
        "deniable.mechanisms._memo_store",
        "deniable.plotting._dashboard",
    ]
