"""The docstring rewriting behind the API reference (``scripts/docs_griffe.py``).

``scripts/docs`` builds the site with ``mkdocs build --strict``, which fails on any
cross-reference that names nothing; these tests pin what the extension turns the house
docstrings into, so a docstring reads the same in ``help()`` and on the site.
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _extension() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_griffe", ROOT / "scripts/docs_griffe.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ext = _extension()


def rewrite(text: str) -> str:
    text = ext.ROLE.sub(ext._role, inspect.cleandoc(text))
    return str(ext._rewrite(ext._tables(text)))


def test_roles_become_cross_references() -> None:
    out = rewrite(
        "See :class:`Estimate`, :func:`~deniable.survey.analyze`, :meth:`Design.ci` and "
        ":class:`fractions.Fraction`."
    )
    assert out == (
        "See [`Estimate`][Estimate], [`analyze`][deniable.survey.analyze], "
        "[`Design.ci`][Design.ci] and `fractions.Fraction`."  # no inventory of the stdlib
    )


def test_prose_doctests_are_fenced_but_examples_sections_are_left_to_griffe() -> None:
    out = rewrite(
        """Text.

        >>> [1, 2]
        [1, 2]

        Examples
        --------
        >>> 1 + 1
        2
        """
    )
    assert out.split("\n") == [
        "Text.",
        "",
        "```pycon",
        ">>> [1, 2]",
        "[1, 2]",
        "```",
        "",
        "Examples",
        "--------",
        ">>> 1 + 1",
        "2",
    ]


def test_compact_items_become_numpydoc_items_and_typed_items_stay() -> None:
    out = rewrite(
        """Parameters
        ----------
        design : the design that randomized the reports.
        level : float
            Confidence level.
        tol, max_iter : tolerance and iteration limit.
        """
    )
    assert out.split("\n") == [
        "Parameters",
        "----------",
        "design",
        "    the design that randomized the reports.",
        "level : float",
        "    Confidence level.",
        "tol, max_iter",
        "    tolerance and iteration limit.",
    ]


def test_rst_simple_tables_become_markdown_tables() -> None:
    out = rewrite(
        """=======  ==========
        design   estimands
        =======  ==========
        ``cdm``  cheaters,
                 honest ones
        ``sld``  honesty
        =======  ==========
        """
    )
    assert out.split("\n") == [
        "| design | estimands |",
        "| --- | --- |",
        "| ``cdm`` | cheaters, honest ones |",
        "| ``sld`` | honesty |",
    ]
