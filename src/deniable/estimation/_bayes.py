"""Bayesian estimation of a prevalence: :func:`posterior` and its result, :class:`Posterior`.

One-group binary designs get the exact posterior, a finite mixture of Beta densities
(:mod:`._bayes_exact`), for up to :data:`EXACT_MAX_N` reports, and the same posterior
integrated numerically on [0, 1] beyond (:mod:`._bayes_numeric`, with a stated error
bound); two-group designs get the marginal posterior of the prevalence, integrated
numerically over the nuisance parameter (:mod:`._bayes_twogroup`).  No Markov chain is
involved: every number is a deterministic function of the counts.

Categorical designs (k-ary, forced response with k outcomes) are not covered: their
posterior under a Dirichlet prior has no such finite form that stays cheap, and an
approximation would need its own checks.  Collapse the categories to a binary question, or
use the design's frequentist estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import BinaryDesign, Design, Tally, TwoGroupDesign, group_counts
from deniable.estimation._bayes_exact import EXACT_MAX_N, BetaMixture
from deniable.estimation._bayes_numeric import GridDensity
from deniable.estimation._bayes_prior import Beta, resolve_prior
from deniable.estimation._bayes_twogroup import TwoGroupLogMarginal
from deniable.estimation._regression_data import check_design
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.results import Result, Table

__all__ = ["INTERVAL_KINDS", "POSTERIOR_METHODS", "Posterior", "posterior"]

Array = npt.NDArray[np.float64]

#: The kinds of credible interval :meth:`Posterior.interval` gives.
INTERVAL_KINDS = ("equal-tailed", "hpd")
#: The ``method`` values of :func:`posterior`.
POSTERIOR_METHODS = ("auto", "exact", "numerical")


class _Density(Protocol):
    method: str
    error: float

    @property
    def mean(self) -> float: ...
    @property
    def var(self) -> float: ...
    def log_pdf(self, x: Any) -> Array: ...
    def cdf(self, x: Any) -> Array: ...
    def bracket(self, q: float) -> tuple[float, float]: ...
    def tabulate(self) -> tuple[Array, Array]: ...


@dataclass(frozen=True, eq=False)
class Posterior(Result):
    """The posterior distribution of a prevalence ``pi`` given randomized reports.

    Attributes
    ----------
    design : the design the reports came from.
    prior : the :class:`Beta` prior of ``pi``.
    yes, n : the "yes" reports and reports (per group, for a two-group design).
    method : ``"exact Beta mixture"`` or ``"numerical integration"``.
    error : a bound on the quadrature error of any probability the posterior gives (0 for
        the exact mixture); float rounding (about 1e-13) comes on top.
    """

    design: Design
    prior: Beta
    yes: tuple[int, ...]
    n: tuple[int, ...]
    _density: _Density = field(repr=False)

    @property
    def method(self) -> str:
        return self._density.method

    @property
    def error(self) -> float:
        return float(self._density.error)

    @property
    def mean(self) -> float:
        """The posterior mean of ``pi``."""
        return min(max(float(self._density.mean), 0.0), 1.0)

    @property
    def sd(self) -> float:
        """The posterior standard deviation of ``pi``."""
        return math.sqrt(self._density.var)

    def pdf(self, x: Any) -> Any:
        """The posterior density at ``x`` (a number or an array; 0 outside [0, 1])."""
        xs = np.asarray(x, dtype=np.float64)
        flat = np.atleast_1d(xs).ravel()
        inside = (flat > 0) & (flat < 1)
        out = np.zeros(flat.shape)
        if inside.any():
            out[inside] = np.exp(self._density.log_pdf(flat[inside]))
        return float(out[0]) if xs.ndim == 0 else out.reshape(xs.shape)

    def cdf(self, x: Any) -> Any:
        """``P(pi <= x | reports)`` (a number or an array)."""
        xs = np.asarray(x, dtype=np.float64)
        out = self._density.cdf(np.clip(np.atleast_1d(xs).ravel(), 0.0, 1.0))
        return float(out[0]) if xs.ndim == 0 else out.reshape(xs.shape)

    def quantile(self, q: Any) -> float:
        """The ``q``-quantile of the posterior, in [0, 1]."""
        q = v.probability("q", q)
        return self._quantile(q)

    def _quantile(self, q: float) -> float:
        from scipy.optimize import brentq

        if q <= 0.0:
            return 0.0
        if q >= 1.0:
            return 1.0

        def gap(x: float) -> float:
            return float(self._density.cdf(x)[0]) - q

        lo, hi = self._density.bracket(q)
        if not (gap(lo) <= 0.0 <= gap(hi)):  # rounding at a panel edge: search all of [0, 1]
            lo, hi = 0.0, 1.0
        return float(brentq(gap, lo, hi, xtol=1e-300, rtol=1e-12))

    def interval(self, level: Any = 0.95, kind: str = "equal-tailed") -> tuple[float, float]:
        """A credible interval of posterior probability ``level``, inside [0, 1].

        ``kind="equal-tailed"``: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles.
        ``kind="hpd"``: the shortest interval of probability ``level`` (the highest
        posterior density interval when the density is unimodal); it starts at 0 when the
        density decreases from 0 (e.g. after only "no" reports).
        """
        level = v.level(level)
        kind = v.choice("kind", kind, INTERVAL_KINDS)
        if kind == "equal-tailed":
            return self._quantile((1 - level) / 2), self._quantile((1 + level) / 2)
        return self._shortest(level)

    def _shortest(self, level: float) -> tuple[float, float]:
        """The shortest interval of probability ``level``: ``[Q(u), Q(u + level)]`` at the
        ``u`` that minimises its width.  ``u`` is located on the density's tabulated CDF
        (:meth:`tabulate`), then refined with exact quantiles; the interval's probability
        is exact whatever ``u``, and near the optimum the width changes only to second
        order in ``u``."""
        from scipy.optimize import minimize_scalar

        room = 1.0 - level
        xs, cdf = self._density.tabulate()
        us = np.linspace(0.0, room, 201)
        approx = np.interp(us + level, cdf, xs) - np.interp(us, cdf, xs)
        best = int(np.argmin(approx))

        def width(u: float) -> float:
            return self._quantile(u + level) - self._quantile(u)

        lo, hi = float(us[max(best - 10, 0)]), float(us[min(best + 10, len(us) - 1)])
        res = minimize_scalar(width, bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-7 * room})  # fmt: skip
        u_best, w_best = float(res.x), float(res.fun)
        for edge in (lo, hi) if best < 10 or best > len(us) - 11 else ():
            if width(edge) <= w_best:  # a density monotone from an end: the interval starts there
                u_best, w_best = edge, width(edge)
        return self._quantile(u_best), self._quantile(u_best + level)

    def table(self, level: float = 0.95) -> Table:
        """The posterior summary as a table of labelled values."""
        lo, hi = self.interval(level)
        hlo, hhi = self.interval(level, kind="hpd")
        counts = ", ".join(f"{y} of {n}" for y, n in zip(self.yes, self.n, strict=True))
        pct = f"{100 * level:g}%"
        rows = [
            ("design", f"{self.design!r}"),
            ("prior", str(self.prior)),
            ('"yes" reports', counts),
            ("posterior mean", self.mean),
            ("posterior SD", self.sd),
            ("median", self._quantile(0.5)),
            (f"{pct} equal-tailed", f"[{_f(lo)}, {_f(hi)}]"),
            (f"{pct} HPD", f"[{_f(hlo)}, {_f(hhi)}]"),
            ("method", self.method),
        ]
        if self.error:
            rows.append(("numerical error below", f"{self.error:.1e}"))
        return Table.pairs(rows, title="Posterior of the prevalence")

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON data: the summary, both intervals and the method."""
        return {
            "design": self.design.describe(),
            "prior": {"a": self.prior.a, "b": self.prior.b},
            "yes": list(self.yes),
            "n": list(self.n),
            "mean": self.mean,
            "sd": self.sd,
            "median": self._quantile(0.5),
            "level": level,
            "interval": list(self.interval(level)),
            "hpd": list(self.interval(level, kind="hpd")),
            "method": self.method,
            "error": self.error,
        }


def _f(x: float) -> str:
    from deniable.results import format_cell

    return format_cell(x)


def posterior(
    design: Any,
    data: Any = None,
    prior: Any = "uniform",
    *,
    yes: Any = None,
    n: Any = None,
    method: str = "auto",
) -> Posterior:
    """The posterior distribution of the prevalence given randomized reports.

    Parameters
    ----------
    design : a one-group binary design (``Warner``, ``ForcedResponse``, ``Crosswise``, ...)
        or a two-group design (``UnrelatedUnknown``, ``CheaterDetection``,
        ``StochasticLieDetector``).
    data : the reports (0/1, or 0..3 for a two-group design) or a
        :class:`~deniable.designs.Tally`; or give ``yes`` and ``n`` (one-group designs).
    prior : a :class:`Beta`, a pair ``(a, b)``, ``"uniform"`` (Beta(1, 1), the default) or
        ``"jeffreys"`` (Beta(1/2, 1/2)).  Under a two-group design it is the prior of the
        prevalence; the nuisance parameter is uniform on its range given the prevalence.
    method : ``"exact"`` (the Beta mixture; one-group designs with at most
        :data:`EXACT_MAX_N` reports), ``"numerical"`` (integration on [0, 1]) or ``"auto"``
        (exact where it is offered).

    Returns
    -------
    Posterior
        The posterior of the prevalence.

    Notes
    -----
    The likelihood of ``y`` "yes" among ``n`` is binomial in
    ``lambda = P0 + (P1 - P0) pi``; with a Beta(a, b) prior the posterior is the mixture
    ``sum_m w_m Beta(a + m, b + n - m)`` (Winkler & Franklin 1979; Migon & Tachibana 1997;
    Unnikrishnan & Kunte 1999).

    Examples
    --------
    A Warner design with ``p = 3/4``: 2 "yes" among 10 reports.

    >>> from deniable import Warner
    >>> post = posterior(Warner(0.75), yes=2, n=10)
    >>> round(post.mean, 3), round(post.sd, 3)
    (0.212, 0.169)
    >>> lo, hi = post.interval(0.95)
    >>> 0 <= lo < hi <= 1
    True
    """
    prior = resolve_prior(prior)
    method = v.choice("method", method, POSTERIOR_METHODS)
    if isinstance(design, TwoGroupDesign):
        if method == "exact":
            raise ParameterError(
                f"`method` must be 'auto' or 'numerical' for a two-group design, got {method!r}: "
                "the exact Beta mixture is for one-group binary designs."
            )
        tally = _tally(design, data, yes, n)
        ys, ns = group_counts(tally)
        log_f = TwoGroupLogMarginal(design, ys, ns, prior.a, prior.b)
        density: _Density = GridDensity(log_f, prior.a, prior.b, log_f.centers)
        return Posterior(design, prior, tuple(ys), tuple(ns), density)
    if not isinstance(design, BinaryDesign) and isinstance(design, Design):
        raise ParameterTypeError(
            "`design` must be a one-group binary design (Warner, ForcedResponse, ...) or a "
            "two-group design (UnrelatedUnknown, CheaterDetection, StochasticLieDetector), "
            f"got {type(design).__name__} {design!r}: the posterior of a categorical design is "
            "not offered (collapse it to a yes/no question)."
        )
    design = check_design(design)
    tally = _tally(design, data, yes, n)
    y, total = int(tally.counts[1]), int(tally.counts[0] + tally.counts[1])
    p1, p0 = float(design.p_yes_given_1), float(design.p_yes_given_0)
    if method == "exact" and total > EXACT_MAX_N:
        raise ParameterError(
            f"`method` 'exact' is offered for at most {EXACT_MAX_N} reports, got n = {total}: "
            "use method='numerical' (or 'auto')."
        )
    if method == "exact" or (method == "auto" and total <= EXACT_MAX_N):
        density = BetaMixture(y, total, p1, p0, prior.a, prior.b)
    else:
        density = _binary_grid(y, total, p1, p0, prior)
    return Posterior(design, prior, (y,), (total,), density)


def _tally(design: Design, data: Any, yes: Any, n: Any) -> Tally:
    if data is None and yes is None and n is None:
        raise ParameterError("`data` is missing: give the reports, a Tally, or `yes` and `n`.")
    if data is None:
        if yes is None or n is None:
            raise ParameterError("give both `yes` and `n`, or the reports in `data`.")
        if isinstance(design, TwoGroupDesign):
            tally = design.bind(_group_tally(yes, n))
        else:
            tally = design.bind(Tally.binary(yes, n))
    elif yes is not None or n is not None:
        raise ParameterError("give the reports in `data`, or `yes` and `n`, not both.")
    elif isinstance(data, Tally):
        tally = design.bind(data)
    else:
        tally = design.tally(data)
    if int(np.sum(tally.counts)) == 0:
        raise ParameterError("`data` holds no reports: the posterior would be the prior.")
    return tally


def _group_tally(yes: Any, n: Any) -> Tally:
    """The four counts of a two-group design from ``yes = (y1, y2)`` and ``n = (n1, n2)``."""
    pairs = isinstance(yes, tuple | list) and isinstance(n, tuple | list)
    if not (pairs and len(yes) == 2 and len(n) == 2):
        raise ParameterError(
            "`yes` and `n` of a two-group design must be pairs (group 1, group 2), got "
            f"yes={yes!r}, n={n!r}."
        )
    counts: list[int] = []
    for y_g, n_g in zip(yes, n, strict=True):
        one = Tally.binary(y_g, n_g)
        counts += [int(one.counts[0]), int(one.counts[1])]
    return Tally(counts)


class _BinaryLogDensity:
    """The unnormalised log posterior of a binary design (a class, not a closure, so that a
    :class:`Posterior` pickles)."""

    def __init__(self, y: int, n: int, p1: float, p0: float, a: float, b: float) -> None:
        self.y, self.n, self.p1, self.p0, self.a, self.b = y, n, p1, p0, a, b

    def __call__(self, pi: Array) -> Array:
        from scipy.special import xlogy

        lam = np.clip(self.p0 + (self.p1 - self.p0) * pi, 0.0, 1.0)
        out: Array = (
            xlogy(self.a - 1, pi)
            + xlogy(self.b - 1, 1 - pi)
            + xlogy(self.y, lam)
            + xlogy(self.n - self.y, 1 - lam)
        )
        return out


def _binary_grid(y: int, n: int, p1: float, p0: float, prior: Beta) -> GridDensity:
    log_f = _BinaryLogDensity(y, n, p1, p0, prior.a, prior.b)
    lam_hat = (y + 0.5) / (n + 1.0)
    center = float(np.clip((lam_hat - p0) / (p1 - p0), 0.0, 1.0))
    scale = math.sqrt(lam_hat * (1 - lam_hat) / n) / abs(p1 - p0)
    return GridDensity(log_f, prior.a, prior.b, [(center, max(scale, 1e-9))])
