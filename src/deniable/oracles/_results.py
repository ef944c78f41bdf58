"""The estimate of a frequency oracle: every category's unbiased frequency, its exact
variance (Wang et al. 2017) and both empirical standard-error conventions, and intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import _validation as v
from deniable.common._format import format_epsilon
from deniable.designs import Tally
from deniable.oracles._variance import support_probabilities
from deniable.results import Estimate, Result, Table, information_note
from deniable.results._estimate import (
    MappedBinomialInterval,
    beta_quantile_bounds,
    normal_quantile,
)
from deniable.results._table import format_cell

__all__ = ["SE_EXACT", "FrequencyEstimate"]

FloatArray = npt.NDArray[np.float64]

#: How :attr:`FrequencyEstimate.se` is computed.
SE_EXACT = "exact: Wang et al. (2017) variance at the estimate"

#: Rows :meth:`FrequencyEstimate.table` prints unless told otherwise.
TABLE_ROWS = 32


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else ("-inf" if x < 0 else "nan"))


def _nums(xs: npt.ArrayLike) -> list[Any]:
    return [_num(float(x)) for x in np.asarray(xs, dtype=float).ravel()]


@dataclass(frozen=True)
class FrequencyEstimate(Result):
    """The frequency of each of ``k`` values from a frequency oracle's support counts.

    With ``lambda_j = c_j / n`` the share of reports that support ``j``:

    * :attr:`values`: the unbiased estimates ``(lambda_j - q) / (p - q)`` (they may leave
      [0, 1] and need not sum to 1: :mod:`deniable.oracles` post-processing makes them
      consistent on request);
    * :attr:`variances` and :attr:`se`: the exact variance of Wang et al. (2017),
      ``(pi p (1 - p) + (1 - pi) q (1 - q)) / (n (p - q)^2)``, at ``pi = values`` (it is
      linear in ``pi``, so this is an unbiased estimate of the exact variance; it is never
      negative).  It is the variance for the frequency among the ``n`` respondents;
    * :attr:`se_plug_in` and :attr:`se_unbiased`: the empirical conventions
      ``lambda (1 - lambda) / (n (p - q)^2)`` (divides by n) and ``/ (n - 1)``.  The
      second is unbiased for the variance when the respondents are a random sample of a
      larger population, whose frequency it then describes: it adds the sampling variance
      ``pi (1 - pi) / n`` to the exact one.

    :meth:`ci` gives Wald intervals (``values +- z se``) and ``exact`` ones: the
    Clopper-Pearson interval for ``lambda_j`` mapped through ``(lambda - q) / (p - q)`` and
    clipped to [0, 1].  A support count is a sum of independent Bernoulli draws (binomial
    for a random sample of a population); by Hoeffding (1956) the binomial's tails are the
    widest of all such sums with that mean, so the exact interval is conservative.
    """

    oracle: Any
    tally: Tally
    values: FloatArray = field(repr=False)
    variances: FloatArray = field(repr=False)

    @classmethod
    def from_tally(cls, oracle: Any, tally: Tally) -> FrequencyEstimate:
        """The estimate from a support tally (``k`` counts, then n) of ``oracle``."""
        p, q = support_probabilities(oracle)
        counts = tally.counts
        n = int(counts[-1])
        lam = counts[:-1] / n
        values = (lam - q) / (p - q)
        variances = (values * p * (1 - p) + (1 - values) * q * (1 - q)) / (n * (p - q) ** 2)
        # never negative: at the extremes c = 0 and c = n it is p q / n and (1-p)(1-q) / n
        # over (p - q)^2; clip float rounding below 0
        np.maximum(variances, 0.0, out=variances)
        values.setflags(write=False)
        variances.setflags(write=False)
        return cls(oracle, tally, values, variances)

    # ---- sizes

    @property
    def n(self) -> int:
        """Number of reports."""
        return int(self.tally.counts[-1])

    @property
    def k(self) -> int:
        """Number of categories."""
        return int(self.tally.counts.size - 1)

    @property
    def p(self) -> float:
        """The oracle's support probability of the true value."""
        return support_probabilities(self.oracle)[0]

    @property
    def q(self) -> float:
        """The oracle's support probability of one given other value."""
        return support_probabilities(self.oracle)[1]

    @property
    def support_shares(self) -> FloatArray:
        """``lambda_j = c_j / n``: the share of reports that support each value."""
        return np.asarray(self.tally.counts[:-1] / self.n, dtype=np.float64)

    # ---- standard errors

    @property
    def se(self) -> FloatArray:
        """Standard errors from the exact variance at the estimate (:attr:`variances`)."""
        return np.sqrt(self.variances)

    @property
    def se_convention(self) -> str:
        """How :attr:`se` is computed."""
        return SE_EXACT

    @property
    def variances_plug_in(self) -> FloatArray:
        """``lambda (1 - lambda) / (n (p - q)^2)``: the empirical variance, divides by n."""
        lam = self.support_shares
        return np.asarray(lam * (1 - lam) / (self.n * (self.p - self.q) ** 2))

    @property
    def se_plug_in(self) -> FloatArray:
        """Square roots of :attr:`variances_plug_in`."""
        return np.sqrt(self.variances_plug_in)

    @property
    def se_unbiased(self) -> FloatArray:
        """``sqrt(lambda (1 - lambda) / ((n - 1) (p - q)^2))``: divides by n - 1 (NaN for
        n = 1); the standard error for a population the respondents are a sample of."""
        if self.n == 1:
            return np.full(self.k, math.nan)
        lam = self.support_shares
        return np.sqrt(lam * (1 - lam) / ((self.n - 1) * (self.p - self.q) ** 2))

    # ---- intervals

    def ci(self, level: float = 0.95, method: str = "wald") -> FloatArray:
        """``(k, 2)`` intervals at ``level``: ``wald`` (``values +- z se``, not clipped) or
        ``exact`` (Clopper-Pearson for the support share, mapped and clipped to [0, 1])."""
        return self._ci(level, method, self.k)

    def _ci(self, level: float, method: str, rows: int) -> FloatArray:
        """The intervals of the first ``rows`` categories only (the work follows them)."""
        lvl = v.level(level)
        v.choice("method", method, ("wald", "exact"))
        if method == "wald":
            z = normal_quantile(lvl)
            values = self.values[:rows]
            half = z * np.sqrt(self.variances[:rows])
            return np.stack([values - half, values + half], axis=1).astype(np.float64)
        p, q = self.p, self.q
        lo, hi = beta_quantile_bounds(self.tally.counts[:rows], self.n, (1 - lvl) / 2)
        a, b = (lo - q) / (p - q), (hi - q) / (p - q)
        out = np.clip(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1), 0.0, 1.0)
        return np.asarray(out, dtype=np.float64)

    def category(self, j: int) -> Estimate:
        """Category ``j`` as an :class:`~deniable.results.Estimate` ("the report supports j
        or not"), with the exact and Wilson intervals of the support share mapped."""
        j = v.integer("j", j, minimum=0, maximum=self.k - 1)
        p, q = self.p, self.q
        c = int(self.tally.counts[j])
        value = float(self.values[j])
        return Estimate(
            value=value,
            bounded=min(max(value, 0.0), 1.0),
            se=float(self.se[j]),
            se_unbiased=float(self.se_unbiased[j]),
            n=self.n,
            method="moment",
            parameter=f"frequency of {j}",
            lambda_hat=c / self.n,
            se_convention=SE_EXACT,
            intervals={
                m: MappedBinomialInterval(c, self.n, q, p - q, m) for m in ("exact", "wilson")
            },
            remarks=information_note(p - q, self.n),
        )

    # ---- output

    def to_dict(self, level: float = 0.95, rows: int | None = None) -> dict[str, Any]:
        """Plain JSON: the mechanism, n, p, q, and per category the estimate, the three
        standard errors and both intervals (non-finite numbers as strings); with ``rows``,
        the first ``rows`` categories only (and ``"rows"``: how many), computed for them
        only."""
        shown = self.k if rows is None else min(v.integer("rows", rows, minimum=0), self.k)
        n, gap = self.n, (self.p - self.q) ** 2
        lam = self.tally.counts[:shown] / n  # the shown categories' support shares only
        spread = lam * (1 - lam)
        unbiased = np.full(shown, math.nan) if n == 1 else np.sqrt(spread / ((n - 1) * gap))
        out = {
            "mechanism": self.tally.mechanism,
            "n": self.n,
            "k": self.k,
            "p": self.p,
            "q": self.q,
            "estimate": _nums(self.values[:shown]),
            "se": _nums(np.sqrt(self.variances[:shown])),
            "se_convention": SE_EXACT,
            "se_plug_in": _nums(np.sqrt(spread / (n * gap))),
            "se_unbiased": _nums(unbiased),
            "ci_wald": [_nums(row) for row in self._ci(level, "wald", shown)],
            "ci_exact": [_nums(row) for row in self._ci(level, "exact", shown)],
            "level": level,
            "notes": list(information_note(self.p - self.q, self.n)),
        }
        if rows is not None:
            out["rows"] = shown
        return out

    def table(self, level: float = 0.95, rows: int | None = None) -> Table:
        """One row per category (the first ``rows``; default all up to 32 categories, else
        the first 32 and a note counting the rest): estimate, SE, Wald and exact interval."""
        limit = (self.k if self.k <= TABLE_ROWS else TABLE_ROWS) if rows is None else rows
        limit = v.integer("rows", limit, minimum=0)
        shown = min(limit, self.k)
        wald = self._ci(level, "wald", shown)  # the shown categories only: O(rows)
        exact = self._ci(level, "exact", shown)
        title = (
            f"{self.oracle.name}: {self.k} categories, n = {self.n}, epsilon = "
            f"{format_epsilon(self.oracle.epsilon)}"
        )
        body = tuple(
            (j, float(self.values[j]), float(self.se[j]),
             f"[{format_cell(float(wald[j, 0]))}, {format_cell(float(wald[j, 1]))}]",
             f"[{format_cell(float(exact[j, 0]))}, {format_cell(float(exact[j, 1]))}]")
            for j in range(shown)
        )  # fmt: skip
        notes = [f"SE {SE_EXACT}", *information_note(self.p - self.q, self.n)]
        if shown < self.k:
            notes.append(f"... {self.k - shown} more categories (table(rows=...) shows them)")
        return Table(
            ("category", "estimate", "SE", f"{level:.0%} CI (Wald)", f"{level:.0%} CI (exact)"),
            body, title=title, notes=tuple(notes), align="rrrll",
        )  # fmt: skip
