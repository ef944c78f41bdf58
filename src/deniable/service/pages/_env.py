"""The templates' environment: Jinja2 with autoescaping on for every template, strict
about undefined names, and the filters that format the dashboard's numbers.

Autoescaping is the only way text reaches a page: a value is escaped when a template writes
it (``&``, ``<``, ``>``, ``"`` and ``'``), and no code of the service marks a string as
safe HTML.  The templates (``templates/*.html``) carry no inline script or style: the
service's CSP allows only ``/static/dashboard.js`` and ``/static/dashboard.css``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined

from deniable.common import format_epsilon, format_number

__all__ = ["ci", "environment", "eps", "num", "render"]


def num(x: Any) -> str:
    """A number of a table: six significant digits; ``–`` for none, ``∞`` for
    ``"inf"`` (the JSON encoder's word), ``n/a`` for ``"nan"``."""
    if x is None:
        return "–"
    if isinstance(x, str):  # "inf" / "nan" from the JSON encoder
        return {"inf": "∞", "-inf": "−∞", "nan": "n/a"}.get(x, x)
    return format_number(float(x), 6)


def ci(x: Sequence[Any] | None) -> str:
    """An interval ``[low, high]`` (``–`` for none)."""
    return "–" if x is None else f"[{num(x[0])}, {num(x[1])}]"


def eps(x: Any) -> str:
    """An epsilon: ``∞`` for an infinite one, never a finite stand-in."""
    return "∞" if x == "inf" else format_epsilon(float(x))


def _urlpart(x: Any) -> str:
    return quote(str(x), safe="")


def _build() -> Environment:
    env = Environment(
        loader=PackageLoader("deniable.service.pages", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["urlpart"] = _urlpart
    return env


_ENV: Environment | None = None


def environment() -> Environment:
    """The environment (made on first use)."""
    global _ENV
    if _ENV is None:
        _ENV = _build()
    return _ENV


def render(name: str, **context: Any) -> str:
    """The template ``name`` rendered with ``context``."""
    return environment().get_template(name).render(**context)
