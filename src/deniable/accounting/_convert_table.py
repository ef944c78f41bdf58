"""One privacy guarantee converted to another DP flavour by every method that applies
(:func:`convert_guarantee`, what ``deniable privacy convert`` prints), each value rounded
toward safety."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from deniable.accounting._composition import optimal_rr_delta, optimal_rr_epsilon, sequence
from deniable.accounting._conversions import (
    compose_gdp,
    gdp_delta,
    gdp_epsilon,
    pure_to_zcdp,
    zcdp_delta,
    zcdp_epsilon,
)
from deniable.accounting._measures import GDP, RDP, ZCDP
from deniable.accounting._rdp import (
    check_delta,
    check_epsilon,
    pure_to_rdp,
    rdp_delta,
    rdp_epsilon,
)
from deniable.common import format_delta, format_epsilon, to_jsonable
from deniable.common import validation as v
from deniable.exceptions import ParameterError
from deniable.results import Result, Table

__all__ = ["CONVERSIONS", "Conversion", "conversion_methods", "convert_guarantee"]

#: ``(from, to, method) -> reference``: every conversion, the default method of a pair first.
CONVERSIONS: dict[tuple[str, str, str], str] = {
    ("pure", "approx", "exact"): "binary RR, the worst case (KOV 2015)",
    ("zcdp", "approx", "improved"): "CKS 2020, Prop. 12, continuous α",
    ("zcdp", "approx", "classic"): "Bun & Steinke 2016, Prop. 1.3",
    ("rdp", "approx", "improved"): "CKS 2020, Prop. 12",
    ("rdp", "approx", "classic"): "Mironov 2017, Prop. 3",
    ("gdp", "approx", "exact"): "Dong, Roth & Su 2019, Cor. 2.13",
    ("pure", "zcdp", "sharp"): "ρ = ε tanh(ε/2) (Steinke 2024)",
    ("pure", "zcdp", "classic"): "ρ = ε²/2 (Bun & Steinke 2016)",
    ("pure", "rdp", "exact"): "binary RR's curve, tight (Steinke 2024)",
    ("zcdp", "rdp", "exact"): "ε(α) = ρα (Bun & Steinke 2016)",
    ("gdp", "gdp", "exact"): "μ = √Σμᵢ² (Dong, Roth & Su 2019)",
}

Curve = Callable[[float], float]


def conversion_methods(source: str, target: str) -> list[str]:
    """The methods converting ``source`` to ``target`` (the default first); empty when
    there is no such conversion."""
    return [m for (s, t, m) in CONVERSIONS if (s, t) == (source, target)]


def _times_up(rho: float, alpha: float) -> float:
    """``rho * alpha`` rounded up (never below the exact product); ``0 * inf = 0``."""
    if rho == 0:
        return 0.0
    prod = rho * alpha
    if math.isinf(prod) or Fraction(prod) >= Fraction(rho) * Fraction(alpha):
        return prod
    return math.nextafter(prod, math.inf)


@dataclass(frozen=True)
class Conversion(Result):
    """A guarantee (``source`` with its ``values``) converted to ``target``: one dict per
    method in ``results`` (``method``, ``reference`` and the converted values: ``epsilon``
    and ``delta`` (and ``vacuous``) for ``approx``, ``rho``, ``alphas`` and ``epsilons``
    for ``rdp``, ``mu``)."""

    source: str
    values: dict[str, Any]
    target: str
    results: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: ``from``, ``source`` (its values), ``to`` and ``results``."""
        out: dict[str, Any] = to_jsonable(
            {
                "from": self.source,
                "source": self.values,
                "to": self.target,
                "results": self.results,
            }
        )
        return out

    def describe_source(self) -> str:
        """The source guarantee in words, e.g. ``ε = 1.0000 (pure DP)``."""
        src = self.values
        if self.source == "pure":
            return f"ε = {format_epsilon(src['epsilon'])} (pure DP)"
        if self.source == "zcdp":
            return f"ρ = {format_epsilon(src['rho'])} (zCDP)"
        if self.source == "gdp":
            if len(src["mus"]) > 1:
                parts = ", ".join(format_epsilon(m) for m in src["mus"])
                return f"μ = {format_epsilon(src['mu'])} (GDP; composed from {parts})"
            return f"μ = {format_epsilon(src['mu'])} (GDP)"
        pairs = ", ".join(
            f"{format_epsilon(a, 2)}: {format_epsilon(e)}"
            for a, e in zip(src["alphas"], src["epsilons"], strict=True)
        )
        return f"Renyi DP, α: ε(α) = {pairs}"

    def table(self) -> Table:
        """The source and target, then one row per method (per order for ``rdp``)."""
        rows = self.results
        if self.target == "rdp":
            body = Table(
                ("α", *(f"ε(α) {r['method']}" for r in rows)),
                tuple(
                    (format_epsilon(a, 2), *(format_epsilon(r["epsilons"][i]) for r in rows))
                    for i, a in enumerate(rows[0]["alphas"])
                ),
                notes=(f"reference: {rows[0]['reference']}",),
                align="l" + "r" * len(rows),
            )
        else:
            cells = []
            for r in rows:
                if self.target == "approx":
                    value = f"ε = {format_epsilon(r['epsilon'])} at δ = {format_delta(r['delta'])}"
                elif self.target == "zcdp":
                    value = f"ρ = {format_epsilon(r['rho'], 6)}"
                else:
                    value = f"μ = {format_epsilon(r['mu'], 6)}"
                cells.append((r["method"], value, r["reference"]))
            body = Table(("method", "result", "reference"), tuple(cells), align="lrl")
        return Table.pairs(
            [("from", self.describe_source()), ("to", self.target)], sections=(body,)
        )


def _approx(values: dict[str, Any], source: str, method: str) -> tuple[Curve, Curve]:
    """``(epsilon_of_delta, delta_of_epsilon)`` of the source under ``method``."""
    if source == "pure":
        e = values["epsilon"]
        return (lambda d: optimal_rr_epsilon(e, d)), (lambda t: optimal_rr_delta(e, t))
    if source == "zcdp":
        r = values["rho"]
        return (lambda d: zcdp_epsilon(r, d, method)), (lambda t: zcdp_delta(r, t, method))
    if source == "gdp":
        mu = values["mu"]
        return (lambda d: gdp_epsilon(mu, d)), (lambda t: gdp_delta(mu, t))
    grid = RDP(tuple(values["alphas"]), tuple(values["epsilons"]))
    return (lambda d: rdp_epsilon(grid, d, method)), (lambda t: rdp_delta(grid, t, method))


def _source_values(
    source: str,
    epsilon: float | None,
    rho: float | None,
    mu: float | Sequence[float] | None,
    alphas: Sequence[float] | None,
    epsilons: Sequence[float] | None,
) -> dict[str, Any]:
    need = {"pure": "`epsilon`", "zcdp": "`rho`", "gdp": "`mu`", "rdp": "`alphas` and `epsilons`"}
    given = {"pure": epsilon, "zcdp": rho, "gdp": mu, "rdp": alphas}
    if given[source] is None or (source == "rdp" and epsilons is None):
        raise ParameterError(f"`source` {source!r} needs {need[source]}.")
    if source == "pure":
        assert epsilon is not None
        return {"epsilon": check_epsilon(epsilon)}
    if source == "zcdp":
        assert rho is not None
        return {"rho": ZCDP(rho).rho}
    if source == "gdp":
        assert mu is not None
        mus = [GDP(x).mu for x in (mu if isinstance(mu, Sequence) else [mu])]
        return {"mus": mus, "mu": mus[0] if len(mus) == 1 else compose_gdp(mus).mu}
    assert alphas is not None and epsilons is not None
    grid = RDP(tuple(sequence("alphas", alphas)), tuple(sequence("epsilons", epsilons)))
    return {"alphas": list(grid.alphas), "epsilons": list(grid.epsilons)}


def convert_guarantee(
    source: str,
    target: str,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    mu: float | Sequence[float] | None = None,
    alphas: Sequence[float] | None = None,
    epsilons: Sequence[float] | None = None,
    delta: float | None = None,
    target_epsilon: float | None = None,
    orders: Sequence[float] | None = None,
    method: str | None = None,
) -> Conversion:
    """Convert a guarantee of kind ``source`` (``pure``: ``epsilon``; ``zcdp``: ``rho``;
    ``gdp``: ``mu``, or several composed to ``sqrt(sum mu_i^2)``; ``rdp``: the curve
    ``epsilons`` at ``alphas``) to ``target`` (``approx``: epsilon at ``delta`` or delta at
    ``target_epsilon``; ``zcdp``; ``rdp`` at ``orders``; ``gdp``), by ``method`` or by every
    method that applies (:data:`CONVERSIONS`).  Every value is rounded toward safety.

    >>> c = convert_guarantee("pure", "zcdp", epsilon=1.0)
    >>> [(r["method"], round(r["rho"], 4)) for r in c.results]
    [('sharp', 0.4621), ('classic', 0.5)]
    """
    methods = conversion_methods(source, target)
    if not methods:
        pairs = ", ".join(
            f"{s} -> {t}" for s, t in dict.fromkeys((s, t) for s, t, _ in CONVERSIONS)
        )
        raise ParameterError(
            f"cannot convert `source` {source!r} to `target` {target!r}; the conversions are: "
            f"{pairs}."
        )
    if method is not None:
        methods = [v.choice("method", method, methods)]
    values = _source_values(source, epsilon, rho, mu, alphas, epsilons)
    if target == "approx" and (delta is None) == (target_epsilon is None):
        raise ParameterError("`target` 'approx' needs exactly one of `delta` and `target_epsilon`.")
    if target == "rdp" and orders is None:
        raise ParameterError(
            "`target` 'rdp' needs `orders`: the orders at which to give the curve."
        )
    rows = []
    for m in methods:
        row: dict[str, Any] = {"method": m, "reference": CONVERSIONS[(source, target, m)]}
        if target == "approx":
            eps_of, delta_of = _approx(values, source, m)
            if delta is not None:
                d = check_delta(delta)
                row.update(epsilon=eps_of(d), delta=d)
            else:
                assert target_epsilon is not None
                dval = delta_of(check_epsilon(target_epsilon, "target_epsilon"))
                row.update(epsilon=target_epsilon, delta=dval, vacuous=dval >= 1)
        elif target == "zcdp":
            row["rho"] = pure_to_zcdp(values["epsilon"], m).rho
        elif target == "rdp":
            assert orders is not None
            if source == "pure":
                curve = [float(pure_to_rdp(values["epsilon"], a)) for a in orders]
            else:
                curve = [_times_up(values["rho"], a) for a in orders]
            row.update(alphas=list(orders), epsilons=curve)
        else:
            row["mu"] = values["mu"]
        rows.append(row)
    return Conversion(source, values, target, tuple(rows))
