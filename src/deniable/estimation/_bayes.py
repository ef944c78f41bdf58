"""Bayesian estimation of a prevalence: :func:`posterior` and its result, :class:`Posterior`.

One-group binary designs get the exact posterior, a finite mixture of Beta densities
(:mod:`._bayes_exact`), for up to :data:`EXACT_MAX_N` reports, and the same posterior
integrated numerically on [0, 1] beyond (:mod:`._bayes_numeric`, with a stated error
bound); two-group designs get the marginal posterior of the prevalence, integrated
numerically over the nuisance parameter (:mod:`._bayes_twogroup`).  No Markov chain is
involved: every number is a deterministic function of the counts.

Categorical designs (k-ary, forced response with k outcomes, Kuk's design with several
draws) get a Dirichlet prior on their ``k`` prevalences and a :class:`CategoricalPosterior`
(:mod:`._bayes_categorical`): the exact Dirichlet mixture for few reports, NumPyro's NUTS
beyond.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import BinaryDesign, Design, Tally, TwoGroupDesign, group_counts
from deniable.estimation._bayes_categorical import CategoricalPosterior, categorical_posterior
from deniable.estimation._bayes_exact import EXACT_MAX_N, BetaMixture, density_quantile
from deniable.estimation._bayes_numeric import GridDensity, binary_grid
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
POSTERIOR_METHODS = ("auto", "exact", "numerical", "nuts")


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
        return density_quantile(self._density, q)

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
    counts: Any = None,
    chains: int = 2,
    draws: int = 1000,
    warmup: int = 1000,
    seed: int = 0,
) -> Posterior | CategoricalPosterior:
    """The posterior distribution of the prevalence given randomized reports.

    Parameters
    ----------
    design : a one-group binary design (``Warner``, ``ForcedResponse``, ``Crosswise``, ...),
        a two-group design (``UnrelatedUnknown``, ``CheaterDetection``,
        ``StochasticLieDetector``) or a categorical design (``Categorical``, ``Kuk`` with
        several draws: any one-group design with ``k`` true values).
    data : the reports (0/1, 0..3 for a two-group design, 0..r-1 for a categorical design)
        or a :class:`~deniable.designs.Tally`; or give ``yes`` and ``n`` (one-group binary
        designs) or ``counts`` (categorical designs: one count per report value).
    prior : a :class:`Beta`, a pair ``(a, b)``, ``"uniform"`` (Beta(1, 1), the default) or
        ``"jeffreys"`` (Beta(1/2, 1/2)).  Under a two-group design it is the prior of the
        prevalence; the nuisance parameter is uniform on its range given the prevalence.
        Under a categorical design it is a Dirichlet prior of the ``k`` prevalences:
        ``"uniform"`` (all ones), ``"jeffreys"`` (all 1/2) or a sequence of ``k`` numbers
        > 0 (for ``k = 2``, a :class:`Beta` of ``pi_1`` is Dirichlet(b, a)).
    method : ``"exact"`` (the Beta mixture of a one-group binary design with at most
        :data:`EXACT_MAX_N` reports; the Dirichlet mixture of a categorical design while
        ``n k (n + 1)^(k - 1)`` is at most :data:`CATEGORICAL_EXACT_MAX_WORK`),
        ``"numerical"`` (integration on [0, 1]; binary and two-group designs), ``"nuts"``
        (NumPyro's sampler; categorical designs, the ``bayes`` extra) or ``"auto"`` (exact
        where it is offered, else numerical or NUTS).
    chains, draws, warmup, seed : NUTS's chains (run one after another), kept draws and
        warm-up draws per chain, and seed; used only when NUTS runs.

    Returns
    -------
    Posterior or CategoricalPosterior
        The posterior of the prevalence (of each category's prevalence for a categorical
        design).

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
    method = v.choice("method", method, POSTERIOR_METHODS)
    sampler = {"chains": v.integer("chains", chains, minimum=1),
               "draws": v.integer("draws", draws, minimum=10),
               "warmup": v.integer("warmup", warmup, minimum=10),
               "seed": v.integer("seed", seed, minimum=0, maximum=2**32 - 1)}  # fmt: skip
    if _is_categorical(design):
        if method == "numerical":
            raise ParameterError(
                "`method` must be 'auto', 'exact' or 'nuts' for a categorical design, got "
                "'numerical': numerical integration is for one prevalence."
            )
        if yes is not None or n is not None:
            raise ParameterError(
                "`yes` and `n` are for binary designs: give a categorical design's reports in "
                "`data` or its report counts in `counts`."
            )
        tally = _categorical_tally(design, data, counts)
        return categorical_posterior(design, tally.counts, prior, method, **sampler)
    if counts is not None:
        raise ParameterError(
            "`counts` is for categorical designs: give a binary design's reports in `data`, "
            "or `yes` and `n`."
        )
    if method == "nuts":
        raise ParameterError(
            "`method` 'nuts' is for categorical designs, got a binary or two-group design: "
            "its posterior is exact ('exact') or integrated ('numerical'), no sampler needed."
        )
    prior = resolve_prior(prior)
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
        density = binary_grid(y, total, p1, p0, prior.a, prior.b)
    return Posterior(design, prior, (y,), (total,), density)


def _is_categorical(design: Any) -> bool:
    """A one-group design that is not binary (k-ary, Kuk with several draws)."""
    return (
        isinstance(design, Design)
        and not isinstance(design, BinaryDesign | TwoGroupDesign)
        and design.n_groups == 1
    )


def _categorical_tally(design: Design, data: Any, counts: Any) -> Tally:
    if data is not None and counts is not None:
        raise ParameterError("give the reports in `data` or their counts in `counts`, not both.")
    if counts is not None:
        if isinstance(counts, Tally):
            raise ParameterTypeError(
                "`counts` must be a sequence of numbers: pass a Tally as `data`."
            )
        tally = Tally(counts)
        if len(tally.counts) != design.n_reports:
            raise ParameterError(
                "`counts` must have one count per report value of the design "
                f"({design.n_reports}), got {len(tally.counts)}."
            )
        return _tally(design, tally, None, None)
    return _tally(design, data, None, None)


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
