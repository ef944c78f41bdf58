"""Square Wave's server side (Li et al., SIGMOD 2020): the distribution of the numbers by
expectation maximisation, with smoothing (EMS) or without (EM), and what follows from it
(the mean, quantiles, parametric-bootstrap intervals).

With ``c`` the ``d`` output-bin counts of ``n`` reports and ``T`` the ``d x d'`` transition
matrix (:attr:`SquareWave.transition <deniable.oracles.SquareWave.transition>`), the
likelihood of a distribution ``pi`` over the ``d'`` input bins is ``sum_j c_j log (T
pi)_j``.  One EM step is::

    pi_i  <-  pi_i sum_j T[j, i] c_j / (T pi)_j / n

and EMS follows each step by the binomial smoothing ``pi_i <- pi_(i-1) / 4 + pi_i / 2 +
pi_(i+1) / 4`` (an edge bin reflects: ``3/4 pi_0 + 1/4 pi_1``, so the total stays 1).
Both start from the uniform distribution.  **Stopping rule:** stop after the first
iteration whose change in the log-likelihood per report, ``|l_t - l_(t-1)| / n``, is at
most ``tol`` (default ``1e-9``), or after ``max_iter`` iterations (default 10 000;
``converged`` says which).  Plain EM fits the noise as well as the signal (its spiky
optimum is the maximum-likelihood estimate); EMS is Li et al.'s recommendation and the
default.

**Intervals** come from a parametric bootstrap: ``B`` tallies drawn from ``Multinomial(n, T
pi_hat)`` (seeded), each fitted the same way (starting from ``pi_hat``); an interval at
level ``L`` holds the replicates' ``(1 - L) / 2`` and ``(1 + L) / 2`` quantiles (the
percentile interval), the SE is their standard deviation.  They include the bias the
smoothing adds only as far as the fitted distribution shows it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_epsilon
from deniable.common import validation as v
from deniable.designs import Tally
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.oracles._numeric_base import float_array
from deniable.results import SE_PLUG_IN, Estimate, Result, Table

if TYPE_CHECKING:
    from deniable.oracles._square_wave import SquareWave

__all__ = [
    "BOOTSTRAP_REPLICATES",
    "SquareWaveEstimate",
    "fit_em",
    "smooth",
    "transition_matrix",
]

_TWO64 = float(1 << 64)

FloatArray = npt.NDArray[np.float64]
METHODS = ("ems", "em")
#: The fewest and the most replicates of :meth:`SquareWaveEstimate.bootstrap` (the default
#: is 200).
BOOTSTRAP_REPLICATES = (2, 100_000)
#: Quantiles printed by :meth:`SquareWaveEstimate.table`.
PRINTED = (0.1, 0.25, 0.5, 0.75, 0.9)


def smooth(pi: FloatArray) -> FloatArray:
    """Li et al.'s binomial smoothing ``[1/4, 1/2, 1/4]`` along axis 0, the edges reflected
    (the total of each column is kept)."""
    padded = np.concatenate([pi[:1], pi, pi[-1:]], axis=0)
    return np.asarray(padded[:-2] / 4 + padded[1:-1] / 2 + padded[2:] / 4, dtype=np.float64)


def fit_em(
    transition: FloatArray,
    counts: npt.ArrayLike,
    *,
    method: str = "ems",
    tol: float = 1e-9,
    max_iter: int = 10_000,
    start: FloatArray | None = None,
) -> tuple[FloatArray, int, bool, FloatArray]:
    """EM (``method="em"``) or EMS (``"ems"``) for the distributions behind one or several
    columns of output-bin ``counts`` (``d`` or ``d x B``), all at once (module docstring).

    Returns ``(pi, iterations, converged, log_likelihood)``: ``pi`` is ``d' x B`` (or
    ``d'``), the log-likelihood one per column.
    """
    method = v.choice("method", method, METHODS)
    tol = v.positive("tol", tol)
    max_iter = v.integer("max_iter", max_iter, minimum=1, maximum=10**7)
    c = np.asarray(counts, dtype=np.float64)
    one = c.ndim == 1
    c = c.reshape(c.shape[0], -1)
    n = c.sum(axis=0)
    d_in = transition.shape[1]
    pi = np.full((d_in, c.shape[1]), 1.0 / d_in) if start is None else start.copy()
    if pi.ndim == 1:
        pi = np.repeat(pi[:, None], c.shape[1], axis=1)
    previous = np.full(c.shape[1], -np.inf)
    converged = False
    iterations = 0
    ll = previous
    for iterations in range(1, max_iter + 1):  # noqa: B007 - iterations is returned
        lam = transition @ pi
        pi = pi * (transition.T @ (c / lam)) / n
        if method == "ems":
            pi = smooth(pi)
        pi /= pi.sum(axis=0)
        ll = np.sum(c * np.log(transition @ pi), axis=0)
        if np.all(np.abs(ll - previous) <= tol * n):
            converged = True
            break
        previous = ll
    return (pi[:, 0] if one else pi), iterations, converged, ll


def _floats(name: str, value: Any, what: str) -> FloatArray:
    """``value`` as floats, or one :class:`~deniable.exceptions.ParameterTypeError` naming
    ``name`` (a string, or what numpy cannot read as numbers)."""
    out = float_array(value)
    if out is None:
        raise ParameterTypeError(f"`{name}` must be {what}, got {type(value).__name__} {value!r}.")
    return out


def _hat_integral(t: FloatArray) -> FloatArray:
    """``H(t) = integral_{-inf}^t max(0, 1 - |x|) dx``."""
    t = np.clip(t, -1.0, 1.0)
    return np.where(t <= 0, (t + 1) ** 2 / 2, 1 - (1 - t) ** 2 / 2)


def transition_matrix(sw: SquareWave) -> FloatArray:
    """``T = O S`` (:attr:`SquareWave.transition <deniable.oracles.SquareWave.transition>`)."""
    alpha, beta = sw.weights
    grid = sw.n_reports - sw.window  # G
    edges = sw.output_edges
    starts = np.arange(grid + 1, dtype=np.int64)
    lo, hi = edges[:-1, None], edges[1:, None]
    overlap = np.clip(
        np.minimum(hi, starts[None, :] + sw.window) - np.maximum(lo, starts[None, :]), 0, None
    )
    size = (hi - lo).astype(np.float64)
    o = (float(beta) * size + float(alpha - beta) * overlap.astype(np.float64)) / _TWO64
    width = grid / sw.bins
    left = np.arange(sw.bins) * width
    k = starts[:, None].astype(np.float64)
    s = (_hat_integral(left[None, :] + width - k) - _hat_integral(left[None, :] - k)) / width
    return np.asarray(o @ s, dtype=np.float64)


@dataclass(frozen=True)
class _Percentile:
    """A picklable percentile interval of bootstrap replicates (``level -> (lo, hi)``)."""

    replicates: tuple[float, ...]

    def __call__(self, level: float) -> tuple[float, float]:
        a = (1 - v.level(level)) / 2
        lo, hi = np.quantile(np.asarray(self.replicates), [a, 1 - a])
        return float(lo), float(hi)


def _quantiles(pi: FloatArray, qs: FloatArray) -> FloatArray:
    """Quantiles on ``[0, 1]`` of distributions ``pi`` (``d' x B``), uniform within each bin:
    ``B x len(qs)``."""
    d = pi.shape[0]
    cum = np.cumsum(pi, axis=0).T  # B x d'
    # the first bin whose cumulative share reaches q: the number of bins below q
    i = np.minimum(np.sum(cum[:, :, None] < qs[None, None, :], axis=1), d - 1)  # B x len(qs)
    rows = np.arange(cum.shape[0])[:, None]
    before = np.where(i > 0, cum[rows, np.maximum(i - 1, 0)], 0.0)
    mass = cum[rows, i] - before
    within = np.where(mass > 0, (qs[None, :] - before) / np.where(mass > 0, mass, 1.0), 0.0)
    return np.asarray((i + np.clip(within, 0.0, 1.0)) / d, dtype=np.float64)


@dataclass(frozen=True)
class SquareWaveEstimate(Result):
    """The distribution of numbers estimated from Square Wave reports: ``shares`` over the
    ``d'`` input bins (:attr:`edges`), the mean and quantiles (uniform within a bin), and
    parametric-bootstrap intervals for them (module docstring)."""

    mechanism: SquareWave
    tally: Tally
    shares: tuple[float, ...]
    method: str
    iterations: int
    converged: bool
    log_likelihood: float
    tol: float = 1e-9
    max_iter: int = 10_000
    _boot: dict[tuple[int, int], FloatArray] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def fit(
        cls, mechanism: SquareWave, tally: Tally, *, method: str = "ems", tol: float = 1e-9,
        max_iter: int = 10_000,
    ) -> SquareWaveEstimate:  # fmt: skip
        """Fit EM or EMS to a bound tally of ``mechanism``."""
        d = mechanism.transition.shape[0]
        pi, it, ok, ll = fit_em(
            mechanism.transition, tally.counts[:d], method=method, tol=tol, max_iter=max_iter
        )
        return cls(
            mechanism, tally, tuple(float(x) for x in pi), method, it, ok, float(ll[0]),
            tol, max_iter,
        )  # fmt: skip

    @property
    def n(self) -> int:
        """Number of reports."""
        return int(self.counts.sum())

    @property
    def counts(self) -> npt.NDArray[np.int64]:
        """The ``d`` output-bin counts."""
        return self.tally.counts[: self.mechanism.transition.shape[0]]

    @property
    def moment_mean(self) -> Estimate:
        """The exactly unbiased moment mean: the average of the reports' values ``(u - c0)
        / c1`` (:meth:`SquareWave.report_values <deniable.oracles.SquareWave.report_values>`)
        from the tally's sums, with both empirical SEs and the Wald interval; it may leave
        ``[lower, upper]`` (``bounded`` is clipped)."""
        m = self.mechanism
        n = self.n
        total, squares = (int(c) for c in self.tally.counts[-2:])
        c0, c1 = m._linear
        scale = m.upper - m.lower
        mean = m.lower + (total / n - c0) / c1 * scale
        ss = max(Fraction(squares * n - total * total, n), Fraction(0))  # sum (u - mean)^2
        se = math.sqrt(float(ss / n) / n) / c1 * scale
        se_unb = math.sqrt(float(ss / (n - 1)) / n) / c1 * scale if n > 1 else math.nan
        return Estimate(
            value=mean,
            bounded=min(max(mean, m.lower), m.upper),
            se=se,
            se_unbiased=se_unb,
            n=n,
            method="moment",
            parameter="mean",
            se_convention=SE_PLUG_IN + " (empirical variance of the reports)",
        )

    @property
    def value(self) -> float:
        """The unbiased moment mean (:attr:`moment_mean`), the headline of every mean."""
        return self.moment_mean.value

    @property
    def se(self) -> float:
        """The moment mean's plug-in SE."""
        return self.moment_mean.se

    @property
    def distribution(self) -> FloatArray:
        """The estimated share of each input bin (sums to 1)."""
        return np.asarray(self.shares, dtype=np.float64)

    @property
    def edges(self) -> FloatArray:
        """The ``d' + 1`` edges of the input bins on ``[lower, upper]``."""
        return self._scale(np.linspace(0.0, 1.0, len(self.shares) + 1))

    def _scale(self, u: FloatArray) -> FloatArray:
        m = self.mechanism
        return np.asarray(m.lower + u * (m.upper - m.lower), dtype=np.float64)

    @property
    def mean_value(self) -> float:
        """The mean of the estimated distribution (bin centres), on ``[lower, upper]``."""
        return float(self._scale(self._means(self.distribution[:, None]))[0])

    def _means(self, pi: FloatArray) -> FloatArray:
        centres = (np.arange(pi.shape[0]) + 0.5) / pi.shape[0]
        return np.asarray(centres @ pi, dtype=np.float64)

    def quantile_value(self, q: npt.ArrayLike) -> FloatArray:
        """The quantiles ``q`` of the estimated distribution, on ``[lower, upper]``."""
        qs = self._check_q(q)
        return self._scale(_quantiles(self.distribution[:, None], qs)[0])

    def cdf(self, x: npt.ArrayLike) -> FloatArray:
        """The estimated ``P[X <= x]`` (linear within a bin)."""
        cum = np.concatenate([[0.0], np.cumsum(self.distribution)])
        return np.asarray(np.interp(_floats("x", x, "numbers"), self.edges, cum))

    @staticmethod
    def _check_q(q: npt.ArrayLike) -> FloatArray:
        qs = np.atleast_1d(_floats("q", q, "probabilities in [0, 1]"))
        if qs.ndim != 1 or not np.all((qs >= 0) & (qs <= 1)):
            raise ParameterError(f"`q` must be probabilities in [0, 1], got {q!r}.")
        return qs

    def bootstrap(self, replicates: int = 200, *, seed: Any = 0) -> FloatArray:
        """``d' x B`` distributions refitted to ``B`` tallies drawn from the fitted model
        (module docstring); ``seed`` a non-negative int (the result is kept per
        ``(replicates, seed)``) or a ``numpy.random.Generator``."""
        least, most = BOOTSTRAP_REPLICATES
        b = v.integer("replicates", replicates, minimum=least, maximum=most)
        key: tuple[int, int] | None = None
        if isinstance(seed, np.random.Generator):
            rng = seed  # not cached: the caller's stream moves on
        else:
            key = (b, v.integer("seed", seed, minimum=0))
            if key in self._boot:
                return self._boot[key]
            rng = np.random.default_rng(key[1])
        m = self.mechanism
        lam = m.transition @ self.distribution
        draws = rng.multinomial(self.n, lam / lam.sum(), size=b).T  # d x B
        pi, _, _, _ = fit_em(
            m.transition, draws, method=self.method, tol=self.tol, max_iter=self.max_iter,
            start=self.distribution,
        )  # fmt: skip
        if key is not None:
            # read-only, so no caller can change what another is given; setdefault is one
            # step under the GIL, so threads racing on one key all get the first stored
            # array (a race costs a second fit, never two answers)
            pi.setflags(write=False)
            return self._boot.setdefault(key, pi)
        return pi

    def _estimate(self, value: float, reps: FloatArray, parameter: str) -> Estimate:
        se = float(np.std(reps, ddof=1))
        return Estimate(
            value=value,
            bounded=value,
            se=se,
            se_unbiased=se,
            n=self.n,
            method=self.method,
            parameter=parameter,
            se_convention=f"parametric bootstrap ({reps.size} replicates)",
            intervals={"bootstrap": _Percentile(tuple(float(r) for r in reps))},
        )

    def mean(self, *, replicates: int = 200, seed: Any = 0) -> Estimate:
        """The mean with its bootstrap SE and interval (``.ci(level, method="bootstrap")``)."""
        reps = self._scale(self._means(self.bootstrap(replicates, seed=seed)))
        return self._estimate(self.mean_value, reps, "mean")

    def quantile(self, q: float, *, replicates: int = 200, seed: Any = 0) -> Estimate:
        """The ``q`` quantile with its bootstrap SE and interval."""
        qs = self._check_q(q)
        if qs.size != 1:
            raise ParameterError(f"`q` must be one probability, got {q!r}.")
        reps = self._scale(_quantiles(self.bootstrap(replicates, seed=seed), qs)[:, 0])
        return self._estimate(float(self.quantile_value(qs)[0]), reps, f"quantile {qs[0]:g}")

    def _printed(self) -> dict[str, float]:
        values = self.quantile_value(PRINTED)
        return {f"quantile {q:g}": float(x) for q, x in zip(PRINTED, values, strict=True)}

    def table(self) -> Table:
        m = self.mechanism
        moment = self.moment_mean
        rows: list[tuple[Any, ...]] = [("mean", self.mean_value)]
        rows += list(self._printed().items())
        stop = "converged" if self.converged else f"stopped at max_iter={self.max_iter}"
        return Table(
            ("statistic", "estimate"),
            tuple(rows),
            title=f"{m.name} distribution ({self.method.upper()}), n = {self.n}",
            notes=(
                f"epsilon = {format_epsilon(m.implemented_epsilon)} (implemented), b = "
                f"{m.half_width:.6g}, {m.output_bins} output bins, {m.bins} input bins on "
                f"[{m.lower:g}, {m.upper:g}]",
                f"{self.iterations} iterations, {stop} (tol {self.tol:g} per report)",
                f"unbiased moment mean {moment.value:.6g} (SE {moment.se:.3g})",
                "intervals: .mean() / .quantile(q) (parametric bootstrap)",
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism.key,
            "n": self.n,
            "method": self.method,
            "iterations": self.iterations,
            "converged": self.converged,
            "log_likelihood": self.log_likelihood,
            "edges": [float(x) for x in self.edges],
            "shares": list(self.shares),
            "mean": self.mean_value,
            "quantiles": {k.split()[1]: x for k, x in self._printed().items()},
            "moment_mean": self.moment_mean.value,
            "moment_mean_se": self.moment_mean.se,
            "counts": [int(c) for c in self.counts],
        }
