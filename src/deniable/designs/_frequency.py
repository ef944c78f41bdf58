"""The one estimate of ``k`` frequencies: :class:`FrequencyEstimate`, returned by the k-ary
design (:class:`~deniable.designs.Categorical`, GRR) and by every frequency oracle.

A report *supports* value ``j`` with probability ``p_j`` when the true value is ``j`` and
``q_j`` otherwise (k-ary randomized response: the report *is* ``j``; unary encoding, local
hashing, Hadamard response, subset selection: Wang, Blocki, Li & Jha 2017).  With ``c_j``
the reports that support ``j`` among ``n`` and ``lambda_j = c_j / n``, the estimate of the
frequency of ``j`` is the unbiased ``(lambda_j - q_j) / (p_j - q_j)``.

**Two variances, named** (the same rule for every mechanism):

* ``sampling`` (the default: :attr:`~FrequencyEstimate.variances`, ``se``): the respondents
  are a random sample of a population whose frequencies are estimated; each report then
  supports ``j`` independently with probability ``lambda_j``, and the variance is
  ``lambda_j (1 - lambda_j) / (n (p_j - q_j)^2)``, plug-in (divides by n; ``se_unbiased``
  divides by n - 1);
* ``fixed`` (``variances_fixed``, ``se_fixed``): the frequencies of the ``n`` respondents
  themselves, only the randomization random: Wang et al. (2017, Theorem 2),
  ``(pi_j p_j (1 - p_j) + (1 - pi_j) q_j (1 - q_j)) / (n (p_j - q_j)^2)`` at
  ``pi_j`` = the estimate.

At the estimate the two differ by exactly ``pi_j (1 - pi_j) / n`` (the variance of sampling
the respondents): ``sampling = fixed + pi (1 - pi) / n``, so the default never states less
uncertainty than the fixed-population one, and it is the variance the exact
(Clopper-Pearson, binomial) interval assumes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_epsilon, format_interval, format_number, to_jsonable
from deniable.common import validation as v
from deniable.designs._binary_estimate import binary_estimate
from deniable.designs._tally import Tally
from deniable.exceptions import DataError
from deniable.results import (
    Estimate,
    Result,
    Table,
    beta_quantile_bounds,
    information_note,
    normal_quantile,
)

__all__ = ["SE_FIXED", "SE_SAMPLING", "FrequencyEstimate"]

FloatArray = npt.NDArray[np.float64]
Probability = float | FloatArray

#: The variance convention of :attr:`FrequencyEstimate.se` (and ``variances``).
SE_SAMPLING = "sampling: respondents drawn from a population, plug-in (divides by n)"
#: The convention of :attr:`FrequencyEstimate.se_fixed` (and ``variances_fixed``).
SE_FIXED = "fixed population: Wang et al. (2017) exact variance at the estimate"

#: Rows :meth:`FrequencyEstimate.table` prints unless told otherwise.
TABLE_ROWS = 32

#: Largest ``k`` whose ``k x k`` covariance is built (128 MB of doubles).
MAX_DENSE_K = 4096

_INTERVALS = ("exact", "wald", "wilson")


def _head(x: Probability, rows: int) -> Probability:
    """The first ``rows`` entries of a per-category array (a scalar is every category's)."""
    return x if isinstance(x, float) else x[:rows]


@dataclass(frozen=True, eq=False)
class FrequencyEstimate(Result):
    """The frequency of each of ``k`` values from the support counts of ``n`` reports.

    Built by each mechanism's ``estimate`` (:meth:`from_counts`); the module docstring has
    the estimator and both variance conventions.

    * :attr:`values`: the unbiased estimates ``(lambda_j - q_j) / (p_j - q_j)`` (they may
      leave [0, 1] and, for an oracle, need not sum to 1: :mod:`deniable.oracles`
      post-processing makes them consistent on request);
    * :attr:`bounded`: the maximum-likelihood estimate on the probability simplex where
      the mechanism has one in closed form (the k-ary design: :attr:`simplex` is true),
      else each value's estimate clipped to [0, 1] (its MLE as the binary design "the
      report supports ``j`` or not", as :meth:`category` gives it);
    * :attr:`variances`, :attr:`se` (sampling, the default; :attr:`se_convention` names
      it), :attr:`se_unbiased` (divides by n - 1), :attr:`variances_fixed` and
      :attr:`se_fixed` (Wang et al.'s, for the fixed population of the ``n`` respondents);
    * :meth:`ci`: ``exact`` (Clopper-Pearson for ``lambda_j``, mapped and clipped to
      [0, 1]; for an oracle's sum of independent Bernoulli draws conservative by
      Hoeffding 1956), ``wilson`` (mapped alike) and ``wald`` (``values +- z se``);
    * :meth:`category`: value ``j`` as the binary design "the report supports ``j`` or not",
      an :class:`~deniable.results.Estimate`;
    * :attr:`covariance` (sampling): where each report supports exactly one value (the
      k-ary design), ``(diag(lambda) - lambda lambda^T) / (n (p - q)^2)``.

    Everything per category is O(k); :meth:`table` and :meth:`to_dict` with ``rows``
    compute the intervals of the rows shown only.  Two estimates are equal when their
    mechanism and tally are.
    """

    mechanism: Any
    tally: Tally
    counts: npt.NDArray[np.int64] = field(repr=False)
    n: int
    p: Probability = field(repr=False)
    q: Probability = field(repr=False)
    slope: float = field(repr=False)
    values: FloatArray = field(repr=False)
    bounded: FloatArray = field(repr=False)
    simplex: bool = field(default=False, repr=False)
    label: str = field(default="frequency", repr=False)
    exclusive: bool = field(default=False, repr=False)

    @classmethod
    def from_counts(
        cls, mechanism: Any, tally: Tally, counts: npt.ArrayLike, n: int, p: Probability,
        q: Probability, *, slope: float | None = None, bounded: FloatArray | None = None,
        label: str = "frequency", exclusive: bool = False,
    ) -> FrequencyEstimate:  # fmt: skip
        """The estimate from the support ``counts`` of ``n`` reports of ``mechanism`` (its
        ``tally``), with support probabilities ``p`` and ``q`` (numbers, or one per
        category) and ``slope = p - q`` (given where it is known more exactly, e.g. the
        k-ary design's ``p_truthful``).  ``bounded``: the MLE on the probability simplex,
        where the mechanism has one (else each value's estimate clipped to [0, 1], its MLE
        as the binary design "supports j or not"); ``label``: what a value is
        (``"frequency"``, the design's ``"share"``); ``exclusive``: each report supports
        exactly one value (multinomial counts)."""
        c = np.asarray(counts)
        s = float(np.asarray(p) - np.asarray(q)) if slope is None else slope
        lam = c / n
        values = np.asarray((lam - q) / s, dtype=np.float64)
        values.setflags(write=False)
        simplex = bounded is not None
        mle = np.clip(values, 0.0, 1.0) if bounded is None else bounded
        return cls(mechanism, tally, c, int(n), p, q, s, values, mle, simplex, label, exclusive)

    @classmethod
    def from_tally(cls, mechanism: Any, tally: Tally) -> FrequencyEstimate:
        """``mechanism.estimate(tally)``: the estimate of a tally of the k-ary design or of
        a frequency oracle (kept from ``CategoricalEstimate`` and the oracles'
        ``FrequencyEstimate``)."""
        out = mechanism.estimate(tally)
        if not isinstance(out, FrequencyEstimate):
            raise DataError(
                f"`mechanism` must estimate frequencies (the k-ary design or a frequency "
                f"oracle), got {type(mechanism).__name__}."
            )
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FrequencyEstimate):
            return NotImplemented
        return bool(self.mechanism == other.mechanism and self.tally == other.tally)

    def __hash__(self) -> int:
        return hash((self.mechanism, self.tally))

    # ---- sizes and names kept from the two classes this one replaces

    @property
    def k(self) -> int:
        """Number of categories."""
        return int(self.counts.size)

    @property
    def design(self) -> Any:
        """The mechanism (the name ``CategoricalEstimate`` gave it)."""
        return self.mechanism

    @property
    def oracle(self) -> Any:
        """The mechanism (the name the oracles' ``FrequencyEstimate`` gave it)."""
        return self.mechanism

    @property
    def support_shares(self) -> FloatArray:
        """``lambda_j = c_j / n``: the share of reports that support each value."""
        return np.asarray(self.counts / self.n, dtype=np.float64)

    # ---- variances: sampling (the default) and fixed population

    @cached_property
    def variances(self) -> FloatArray:
        """The sampling variance of each value, ``lambda (1 - lambda) / (n (p - q)^2)``
        (plug-in, divides by n): the default convention, :attr:`se_convention`."""
        lam = self.support_shares
        out = np.asarray((lam - lam * lam) / (self.n * self.slope * self.slope))
        out.setflags(write=False)
        return out

    @property
    def se(self) -> FloatArray:
        """Standard errors, the square roots of :attr:`variances` (sampling, plug-in)."""
        return np.sqrt(self.variances)

    @property
    def se_convention(self) -> str:
        """Which variance :attr:`se` is: ``SE_SAMPLING`` (:attr:`se_fixed` is the other)."""
        return SE_SAMPLING

    @property
    def variances_unbiased(self) -> FloatArray:
        """:attr:`variances` times ``n / (n - 1)`` (NaN for n = 1)."""
        if self.n == 1:
            return np.full(self.k, math.nan)
        return np.asarray(self.variances * self.n / (self.n - 1))

    @property
    def se_unbiased(self) -> FloatArray:
        """Sampling standard errors dividing by n - 1 (NaN for n = 1)."""
        return np.sqrt(self.variances_unbiased)

    @cached_property
    def variances_fixed(self) -> FloatArray:
        """The variance for the fixed population of the ``n`` respondents (Wang et al. 2017,
        Theorem 2) at ``pi = values``, ``(pi p (1 - p) + (1 - pi) q (1 - q)) / (n (p -
        q)^2)``: linear in ``pi``, so an unbiased estimate of the exact variance; never
        negative (at ``c = 0`` and ``c = n`` it is ``p q`` and ``(1 - p)(1 - q)`` over
        ``n (p - q)^2``; float rounding below 0 is clipped)."""
        out = self._fixed(self.values, self.p, self.q)
        out.setflags(write=False)
        return out

    def _fixed(self, pi: FloatArray, p: Probability, q: Probability) -> FloatArray:
        out = (pi * p * (1 - p) + (1 - pi) * q * (1 - q)) / (self.n * self.slope**2)
        return np.asarray(np.maximum(out, 0.0), dtype=np.float64)

    @property
    def se_fixed(self) -> FloatArray:
        """Square roots of :attr:`variances_fixed` (convention ``SE_FIXED``)."""
        return np.sqrt(self.variances_fixed)

    @property
    def variances_plug_in(self) -> FloatArray:
        """:attr:`variances` (the name the oracles' estimate gave the sampling variance)."""
        return self.variances

    @property
    def se_plug_in(self) -> FloatArray:
        """:attr:`se` (the name the oracles' estimate gave the sampling standard error)."""
        return self.se

    # ---- covariance (reports that each support one value)

    @cached_property
    def covariance(self) -> FloatArray:
        """Sampling covariance of :attr:`values`, ``(diag(lambda) - lambda lambda^T) / (n
        (p - q)^2)`` (divides by n), for reports that each support exactly one value (the
        k-ary design): built on first access, ``k x k`` up to ``k = 4096``, above it only
        the diagonal (:attr:`variances`).  An oracle's support counts do not determine it
        (:class:`~deniable.exceptions.DataError`)."""
        if not self.exclusive:
            raise DataError(
                f"`covariance` needs reports that each support one value (k-ary randomized "
                f"response); the support counts of {self.mechanism.name!r} do not determine "
                "it: use `variances`."
            )
        if self.k > MAX_DENSE_K:
            return self.variances
        lam = self.support_shares
        # in one k x k array, the same floats as (diag(lam) - outer(lam, lam)) / (n s^2):
        # -(lam_i lam_j), plus lam_i on the diagonal (lam_i - lam_i^2), then / (n s^2)
        cov = np.multiply.outer(lam, lam)
        np.negative(cov, out=cov)
        diagonal = cov.reshape(-1)[:: self.k + 1]
        np.add(diagonal, lam, out=diagonal)
        cov /= self.n * self.slope * self.slope
        return cov

    @cached_property
    def covariance_unbiased(self) -> FloatArray:
        """:attr:`covariance` times ``n / (n - 1)`` (NaN for n = 1)."""
        cov, n = self.covariance, self.n
        if n == 1:
            return np.full_like(cov, math.nan)
        out = cov * n
        out /= n - 1
        return out

    # ---- one category, intervals

    def category(self, j: int) -> Estimate:
        """Value ``j`` as the binary design "the report supports ``j`` or not" (for the k-ary
        design: "report ``j`` or not"), an :class:`~deniable.results.Estimate` with its
        exact and Wilson intervals and both SE conventions of a binary design."""
        j = v.integer("j", j, minimum=0, maximum=self.k - 1)
        p = self.p if isinstance(self.p, float) else float(self.p[j])
        q = self.q if isinstance(self.q, float) else float(self.q[j])
        return binary_estimate(p, q, int(self.counts[j]), self.n, parameter=f"{self.label} of {j}")

    def ci(self, level: float = 0.95, method: str = "exact") -> FloatArray:
        """``(k, 2)`` intervals at ``level``: ``exact`` (Clopper-Pearson for ``lambda_j``,
        mapped through ``(lambda - q) / (p - q)`` and clipped to [0, 1]), ``wilson``
        (alike) or ``wald`` (``values +- z se``, not clipped)."""
        return self._ci(level, method, self.k)

    def _ci(self, level: float, method: str, rows: int) -> FloatArray:
        """The intervals of the first ``rows`` categories only (the work follows them)."""
        lvl = v.level(level)
        v.choice("method", method, _INTERVALS)
        if method == "wald":
            half = normal_quantile(lvl) * self.se[:rows]
            values = self.values[:rows]
            return np.stack([values - half, values + half], axis=1).astype(np.float64)
        c, n = self.counts[:rows], self.n
        if method == "exact":
            lo, hi = beta_quantile_bounds(c, n, (1 - lvl) / 2)
        else:  # Wilson (1927), as deniable.results.binomial_interval computes it
            z = normal_quantile(lvl)
            phat = c / n
            denom = 1 + z * z / n
            centre = (phat + z * z / (2 * n)) / denom
            spread = z * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denom
            lo, hi = np.maximum(0.0, centre - spread), np.minimum(1.0, centre + spread)
        p, q = _head(self.p, rows), _head(self.q, rows)
        a, b = (lo - q) / (p - q), (hi - q) / (p - q)
        out = np.clip(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1), 0.0, 1.0)
        return np.asarray(out, dtype=np.float64)

    # ---- output

    def _shown(self, rows: int | None, default: int | None = None) -> int:
        limit = (self.k if default is None else default) if rows is None else rows
        return min(v.integer("rows", limit, minimum=0), self.k)

    @property
    def _notes(self) -> tuple[str, ...]:
        return information_note(self.slope, self.n)

    def to_dict(self, level: float = 0.95, rows: int | None = None) -> dict[str, Any]:
        """Plain JSON: the mechanism's key, ``n``, ``k``, ``p`` and ``q``, and per category
        the counts and support shares (``lambda_hat``), the estimate (and
        ``estimate_bounded``, :attr:`bounded`), ``se``
        (``se_convention``), ``se_unbiased``, ``se_fixed`` and ``se_plug_in`` (= ``se``),
        the exact and Wald intervals at ``level``, and for the k-ary design
        ``categories``: each category as the binary design "report j or not".  With
        ``rows``: the first ``rows`` categories only, computed for them only (and
        ``"rows"``: how many)."""
        shown = self._shown(rows)
        counts = self.counts[:shown]
        var = self.variances[:shown]
        unbiased = np.full(shown, math.nan) if self.n == 1 else var * self.n / (self.n - 1)
        out: dict[str, Any] = {
            "mechanism": self.tally.mechanism,
            "n": self.n,
            "k": self.k,
            "p": _head(self.p, shown),
            "q": _head(self.q, shown),
            "estimate": self.values[:shown],
        }
        out["estimate_bounded"] = self.bounded[:shown]
        fixed = self._fixed(self.values[:shown], _head(self.p, shown), _head(self.q, shown))
        out.update(
            se=np.sqrt(var), se_convention=SE_SAMPLING, se_unbiased=np.sqrt(unbiased),
            se_fixed=np.sqrt(fixed), se_fixed_convention=SE_FIXED, se_plug_in=np.sqrt(var),
            ci_exact=self._ci(level, "exact", shown), ci_wald=self._ci(level, "wald", shown),
            level=level, counts=counts, lambda_hat=[c / self.n for c in counts.tolist()],
        )  # fmt: skip
        if self.exclusive:
            out["categories"] = [self._category_dict(j, level) for j in range(shown)]
        out["notes"] = list(self._notes)
        if rows is not None:
            out["rows"] = shown
        result: dict[str, Any] = to_jsonable(out)
        return result

    def _category_dict(self, j: int, level: float) -> dict[str, Any]:
        row = self.category(j).to_dict(level)
        p1 = self.p if isinstance(self.p, float) else float(self.p[j])
        row["p_yes_given_1"], row["p_yes_given_0"] = p1, p1 - self.slope
        return row

    def table(self, level: float = 0.95, rows: int | None = None) -> Table:
        """One row per category (the first ``rows``; by default every category up to 32,
        else the first 32 and a note counting the rest): the reports (for the k-ary
        design), the unbiased estimate, the MLE on the simplex (where there is one), the SE
        (sampling), and the Wald and exact intervals at ``level``."""
        shown = self._shown(rows, self.k if self.k <= TABLE_ROWS else TABLE_ROWS)
        wald = self._ci(level, "wald", shown)  # the shown categories only: O(rows)
        exact = self._ci(level, "exact", shown)
        mech = self.mechanism
        title = (
            f"{mech.name}: {self.k} categories, n = {self.n}, epsilon = "
            f"{format_epsilon(mech.epsilon)}"
        )
        se = self.se
        body = []
        for j in range(shown):
            row: list[Any] = [str(j)]
            if self.exclusive:
                row.append(int(self.counts[j]))
            row.append(format_number(float(self.values[j]), 6))
            if self.simplex:
                row.append(format_number(float(self.bounded[j]), 6))
            row += [format_number(float(se[j]), 6), format_interval(wald[j], 6),
                    format_interval(exact[j], 6)]  # fmt: skip
            body.append(tuple(row))
        columns = ["category", *(["reports"] if self.exclusive else []), "estimate",
                   *(["MLE"] if self.simplex else []), "SE", f"{level:.0%} CI (Wald)",
                   f"{level:.0%} CI (exact)"]  # fmt: skip
        mle = "; MLE: on the simplex" if self.simplex else ""
        notes = [f"estimate: unbiased (may leave [0, 1]){mle}; SE {SE_SAMPLING}",
                 f"se_fixed (to_dict): {SE_FIXED}", *self._notes]  # fmt: skip
        if shown < self.k:
            notes.append(f"... {self.k - shown} more categories (table(rows=...) shows them)")
        return Table(
            tuple(columns), tuple(body), title=title, notes=tuple(notes),
            align="r" * len(columns),
        )  # fmt: skip
