"""Check what the wheel and the sdist in a directory hold (run by ``scripts/package``).

Usage: ``python scripts/check_dist.py DIST``; prints the version and exits 1 listing every
problem. The wheel must hold every module of ``src/deniable``, ``py.typed``, the
``deniable`` console script and the declared dependencies, and nothing else (no tests); the
sdist must hold the package, the tests (with their helpers) and the documentation sources, so
the suite and the site can be built from it. Both must carry the version written in
``src/deniable/__init__.py`` (the one place it is written).
"""

from __future__ import annotations

import ast
import email
import pathlib
import sys
import tarfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def source_version() -> str:
    """``__version__`` from ``src/deniable/__init__.py``, read without importing it."""
    tree = ast.parse((SRC / "deniable/__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise SystemExit("src/deniable/__init__.py sets no __version__")


def package_files() -> set[str]:
    """The package's files as installed: ``deniable/...`` (modules, ``py.typed`` and the
    package data such as the demo survey), i.e. every file under ``src/deniable`` except
    byte-code caches."""
    files = {
        p
        for p in (SRC / "deniable").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in {".pyc", ".pyo"}
    }
    return {p.relative_to(SRC).as_posix() for p in files}


def check_wheel(path: pathlib.Path, version: str, problems: list[str]) -> None:
    with zipfile.ZipFile(path) as whl:
        names = set(whl.namelist())
        info = f"deniable-{version}.dist-info"
        meta = email.message_from_bytes(whl.read(f"{info}/METADATA"))
        entry_points = whl.read(f"{info}/entry_points.txt").decode()
    code = {n for n in names if not n.startswith(f"{info}/")}
    if missing := sorted(package_files() - code):
        problems.append(f"wheel: missing {missing}")
    if extra := sorted(code - package_files()):
        problems.append(f"wheel: holds files outside the package: {extra}")
    if meta["Version"] != version:
        problems.append(f"wheel: METADATA Version {meta['Version']}, expected {version}")
    requires = " ".join(meta.get_all("Requires-Dist") or [])
    for dep in ("numpy", "scipy", "typer", "rich"):
        if dep not in requires:
            problems.append(f"wheel: no Requires-Dist on {dep}")
    extras = set(meta.get_all("Provides-Extra") or [])
    if not {"cli", "plot", "data"} <= extras:
        problems.append(f"wheel: extras {sorted(extras)} lack cli, plot or data")
    if "deniable = deniable.cli:main" not in entry_points:
        problems.append("wheel: no `deniable` console script")


def check_sdist(path: pathlib.Path, version: str, problems: list[str]) -> None:
    top = f"deniable-{version}/"
    with tarfile.open(path) as sdist:
        names = {n.removeprefix(top) for n in sdist.getnames()}
        pkg_info = sdist.extractfile(top + "PKG-INFO")
        assert pkg_info is not None
        meta = email.message_from_bytes(pkg_info.read())
    if meta["Version"] != version:
        problems.append(f"sdist: PKG-INFO Version {meta['Version']}, expected {version}")
    wanted = {f"src/{f}" for f in package_files()}
    wanted |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").glob("*.py")}
    wanted |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")}
    wanted |= {"pyproject.toml", "README.md", "mkdocs.yml", "scripts/docs_griffe.py"}
    if missing := sorted(wanted - names):
        problems.append(f"sdist: missing {missing}")


def main() -> None:
    dist = pathlib.Path(sys.argv[1])
    version = source_version()
    problems: list[str] = []
    wheels = sorted(dist.glob("deniable-*.whl"))
    sdists = sorted(dist.glob("deniable-*.tar.gz"))
    expected_wheel = f"deniable-{version}-py3-none-any.whl"
    if [w.name for w in wheels] != [expected_wheel]:
        problems.append(f"{dist}: wheels {[w.name for w in wheels]}, expected {expected_wheel}")
    else:
        check_wheel(wheels[0], version, problems)
    if [s.name for s in sdists] != [f"deniable-{version}.tar.gz"]:
        problems.append(f"{dist}: sdists {[s.name for s in sdists]}, expected one of {version}")
    else:
        check_sdist(sdists[0], version, problems)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        raise SystemExit(1)
    print(version)


if __name__ == "__main__":
    main()
