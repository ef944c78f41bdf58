"""Square Wave (Li, Wang, Lopuhaä-Zwakenberg, Li & Škorić, SIGMOD 2020): the distribution of
bounded numbers under epsilon-LDP, estimated by EM with smoothing
(:mod:`deniable.oracles._square_wave_em`).

A number ``x`` in ``[lower, upper]`` is mapped to ``v = (x - lower) / (upper - lower)`` in
``[0, 1]``.  The continuous mechanism reports ``y`` in ``[-b, 1 + b]`` with density ``p =
e^eps / (2 b e^eps + 1)`` where ``|y - v| <= b`` and ``q = 1 / (2 b e^eps + 1)`` elsewhere:
the densities integrate to ``2 b p + q = 1`` and any two values' densities differ by at most
the factor ``p / q = e^eps``, so it is exactly eps-LDP (``epsilon = ln(p / q)``, reached by
every ``y`` near one value and far from another).  Li et al.'s ``b`` maximises an upper
bound of the mutual information between ``v`` and ``y``::

    b(eps) = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps))

(``1/2`` as eps -> 0, about ``eps e^-eps / 2`` for large eps), the default.

**As implemented** (the project's rule: every probability is realised on the word grid and
the stated epsilon is of what is realised, see :mod:`deniable.oracles._longitudinal_unary`):
``y`` lives on a grid of cells of width ``1 / G``, ``G = 4096``.  The window is ``w =
max(1, round(2 b G))`` cells (the realised ``b`` is :attr:`SquareWave.half_width` ``= w /
(2 G)``), and a report is one of ``M = G + w`` cells: cell ``u`` stands for ``y = -b + (u
+ 1/2) / G``.  A value's window starts at cell ``s``, ``s = floor(v G)`` or that plus one
with probability ``frac(v G)`` (from the top 53 bits of a first word, as the piecewise
mechanism rounds), so the window ``[s, s + w)`` is centred on ``v`` on average.  A second
64-bit word picks the cell by the inverse CDF on the integer weights: each window cell has
probability ``alpha / 2**64``, every other cell ``beta / 2**64``, ``w alpha + G beta =
2**64`` exactly and ``alpha / beta`` the largest such ratio at most ``e^eps`` (rounded
toward privacy).  Every cell's probability lies in ``[beta, alpha] / 2**64`` whatever the
value (a mixture of two windows included), so the realised epsilon is ``ln(alpha / beta)
<= eps`` (:attr:`SquareWave.implemented_epsilon`; within about ``10**-15`` of eps).  Two
words per report whatever the value.

**Server.**  The ``M`` cells are binned into ``d`` output bins (``output_bins``; cell ``u``
goes to the bin holding its centre) and ``[0, 1]`` into ``d'`` equal input bins (``bins``);
:attr:`SquareWave.transition` is the exact ``d x d'`` matrix ``P[output bin | value uniform
in input bin]`` of the implemented grid mechanism.  The tally is the count of each output
bin and the sums of the cells and their squares (it adds across batches; the sums give the
exactly unbiased moment mean, ``(u - c0) / c1`` averaged, beside EM's);
:meth:`SquareWave.estimate` runs EM with smoothing (EMS) or plain EM on the counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import MechanismBase, Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._base import check_epsilon
from deniable.oracles._numeric_base import (
    _TWO53,
    _TWO64,
    FloatArray,
    MeanChannel,
    check_bounds,
    check_window,
    checked_values,
    window_epsilon,
    window_reports,
    window_weights,
)
from deniable.oracles._square_wave_em import SquareWaveEstimate, transition_matrix

__all__ = ["SW_GRID", "SquareWave", "square_wave_b"]

#: ``G``: grid cells per unit of ``y`` (the values' window starts are ``0..G``).
SW_GRID = 4096
#: The largest ``b`` accepted (the grid then has ``G + 2 b G`` cells, at most 20480).
MAX_B = 2.0


def square_wave_b(epsilon: float) -> float:
    """Li et al.'s (2020) window half-width ``b(eps) = (eps e^eps - e^eps + 1) / (2 e^eps
    (e^eps - 1 - eps))``, which maximises an upper bound of the mutual information.

    Both numerator and bracket are ``sum_k c_k eps^k`` series (``(k - 1) / k!`` and ``1 /
    k!`` from ``k = 2``), summed directly below eps = 1 where the closed form cancels.

    >>> round(square_wave_b(1.0), 6), round(square_wave_b(1e-8), 6)
    (0.256083, 0.5)
    """
    eps = check_epsilon(epsilon)
    if eps < 1.0:
        terms = [eps**k / math.factorial(k) for k in range(2, 40)]
        num = math.fsum((k - 1) * t for k, t in zip(range(2, 40), terms, strict=True))
        bracket = math.fsum(terms)
        return num / (2 * math.exp(eps) * bracket)
    if eps > 700:
        return eps / (2 * math.exp(min(eps, 700.0)))  # below 2**-1000: w is 1 anyway
    e = math.exp(eps)
    return (eps * e - e + 1) / (2 * e * (e - 1 - eps))


@dataclass(frozen=True)
class SquareWave(MechanismBase):
    """Square Wave (Li et al. 2020) for the distribution of numbers in ``[lower, upper]``
    (module docstring): report a grid cell near the value with probability ``e^eps`` times
    that of a far one.

    Parameters
    ----------
    epsilon : float
        The requested epsilon (the realised one, :attr:`implemented_epsilon`, is at most it).
    b : float or None
        The window's half-width on the ``[0, 1]`` scale, in ``(0, 2]``; ``None`` (default)
        for Li et al.'s :func:`square_wave_b`.  Realised as ``w / (2 G)``.
    lower, upper : float
        The values' range (default ``[0, 1]``).
    bins : int
        ``d'``, input bins of the estimated distribution (default 256, at most ``G``).
    output_bins : int or None
        ``d``, output bins of the tally (default ``bins``; at most ``G + w``).
    clip : bool
        Values outside ``[lower, upper]`` raise :class:`~deniable.exceptions.DataError`
        unless ``clip=True``, which moves them to the nearer bound before randomizing (the
        estimate is then of the clipped values; epsilon is unchanged).  NaN always raises.

    Examples
    --------
    >>> sw = SquareWave(1.0)
    >>> sw.window, round(sw.half_width, 4), sw.implemented_epsilon <= 1.0
    (2098, 0.2561, True)
    >>> x = np.random.default_rng(0).beta(2, 5, 100_000)
    >>> est = sw.estimate(sw.randomize(x, rng=1))
    >>> bool(abs(est.mean_value - x.mean()) < 0.01), est.method
    (True, 'ems')
    """

    name: ClassVar[str] = "square-wave"
    epsilon: float
    b: float | None = None
    lower: float = 0.0
    upper: float = 1.0
    bins: int = 256
    output_bins: int | None = None
    clip: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.b is None:
            object.__setattr__(self, "b", square_wave_b(self.epsilon))
        else:
            b = v.real("b", self.b)
            if not 0 < b <= MAX_B:
                raise ParameterError(f"`b` must be in (0, {MAX_B:g}], got {self.b!r}.")
            object.__setattr__(self, "b", b)
        check_bounds(self)
        bins = v.integer("bins", self.bins, minimum=2, maximum=SW_GRID)
        object.__setattr__(self, "bins", bins)
        out = bins if self.output_bins is None else self.output_bins
        out = v.integer("output_bins", out, minimum=2, maximum=self.n_reports)
        object.__setattr__(self, "output_bins", out)
        if not isinstance(self.clip, bool):
            raise ParameterTypeError(f"`clip` must be True or False, got {self.clip!r}.")
        check_window(self.weights, self.epsilon, self.name, f"{SW_GRID} cells")

    # -- the grid ---------------------------------------------------------------------

    @cached_property
    def window(self) -> int:
        """``w = max(1, round(2 b G))``: cells of the likely window."""
        assert self.b is not None
        return max(1, round(2 * self.b * SW_GRID))

    @property
    def half_width(self) -> float:
        """The realised ``b = w / (2 G)``."""
        return self.window / (2 * SW_GRID)

    @property
    def n_reports(self) -> int:
        """``M = G + w``: the report cells."""
        return SW_GRID + self.window

    @cached_property
    def weights(self) -> tuple[int, int]:
        """``(alpha, beta)``: a cell's probability is ``alpha / 2**64`` in the window and
        ``beta / 2**64`` outside; ``w alpha + G beta = 2**64``, ``alpha / beta <= e^eps``."""
        return window_weights(self.window, SW_GRID, self.epsilon)

    def _epsilon_per_report(self) -> float:
        """What one report costs a device against any change of its values
        (:func:`~deniable.oracles.report_epsilon`): its ``epsilon``, a fresh cell
        every report (at most ``alpha / beta``, the implemented epsilon, at most it)."""
        return float(self.epsilon)

    @property
    def implemented_epsilon(self) -> float:
        return window_epsilon(self.weights, self.epsilon)

    @property
    def densities(self) -> tuple[float, float]:
        """``(p, q)`` of the continuous mechanism at the realised ``b``: ``p = e^eps / (2 b
        e^eps + 1)``, ``q = 1 / (2 b e^eps + 1)``."""
        tail = math.exp(-self.epsilon)  # e^-eps: p = 1 / (2 b + e^-eps), q = e^-eps p
        p = 1 / (2 * self.half_width + tail)
        return p, tail * p

    @property
    def channel(self) -> MeanChannel:
        """:class:`~deniable.oracles.MeanChannel`: ``P[cell | value]`` one value at a time."""
        return MeanChannel(self)

    @property
    def n_cells(self) -> int:
        """Cells of the tally: the ``d`` output-bin counts, then ``sum u`` and ``sum u^2``."""
        return self._d + 2

    @property
    def _d(self) -> int:
        assert self.output_bins is not None
        return self.output_bins

    @property
    def _tally_cells(self) -> int:
        return self.n_cells

    def _reports_in(self, tally: Tally) -> int:
        return int(tally.counts[: self._d].sum())

    def _check_counts(self, counts: npt.NDArray[np.int64]) -> None:
        n = int(counts[: self._d].sum())
        top = self.n_reports - 1
        total, squares = int(counts[-2]), int(counts[-1])
        if not (0 <= total <= n * top and total <= squares <= n * top * top):
            raise DataError(
                f"the tally's sums (sum u = {total}, sum u^2 = {squares}) cannot come from "
                f"{n} reports of {self.name!r} (cells 0..{top})."
            )

    @property
    def words_per_report(self) -> int:
        return 2

    # -- the client -------------------------------------------------------------------

    def unit(self, values: npt.ArrayLike) -> FloatArray:
        """``values`` checked (finite; in ``[lower, upper]`` unless ``clip``) and mapped to
        ``v`` in ``[0, 1]``."""
        hint = "" if self.clip else " (or pass clip=True to move them to the bounds)"
        x = checked_values(values, self.lower, self.upper, clip=self.clip, hint=hint)
        u = (x - self.lower) / (self.upper - self.lower)
        return np.clip(u, 0.0, 1.0)  # rounding only, unless clip=True

    def _start(self, u: FloatArray) -> tuple[FloatArray, npt.NDArray[np.uint64]]:
        """``(floor(v G), floor(frac(v G) 2**53))``."""
        x = u * SW_GRID
        whole = np.floor(x)
        return whole, np.floor((x - whole) * 2.0**53).astype(np.uint64)

    def randomize(self, values: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint16]:
        """Report cells ``0..M-1`` for numbers in ``[lower, upper]``; report ``i`` uses words
        ``2 i`` (rounding the window's start) and ``2 i + 1`` (the cell, by inverse CDF)."""
        return window_reports(self.unit(values), self._start, self.weights, self.window, rng)

    def report_distribution(self, value: float) -> FloatArray:
        """``P[cell | value]`` for the ``M`` cells, as implemented (exact up to the float
        division of the integer weights)."""
        u = self.unit([value])
        whole, frac = self._start(u)
        s0, up = int(whole[0]), int(frac[0]) / _TWO53
        alpha, beta = self.weights
        out = np.zeros(self.n_reports)
        for s, weight in ((s0, 1 - up), (s0 + 1, up)):
            if weight == 0:
                continue
            probs = np.full(self.n_reports, beta / _TWO64)
            probs[s : s + self.window] = alpha / _TWO64
            out += weight * probs
        return out

    def cell_centres(self) -> FloatArray:
        """The ``y`` each cell stands for (its centre, ``-b + (u + 1/2) / G``), on the scale
        of ``[lower, upper]``."""
        y = -self.half_width + (np.arange(self.n_reports) + 0.5) / SW_GRID
        return self._to_value(y)

    @cached_property
    def _linear(self) -> tuple[float, float]:
        """``(c0, c1)``: ``E[u | v] = c0 + c1 v`` exactly for the implemented grid.

        ``E[u | s] = (beta M (M - 1) / 2 + (alpha - beta) (w s + w (w - 1) / 2)) / 2**64`` is
        linear in the window's start ``s`` and ``E[s] = v G``.
        """
        alpha, beta = self.weights
        m, w = self.n_reports, self.window
        c0 = (beta * m * (m - 1) // 2 + (alpha - beta) * w * (w - 1) // 2) / _TWO64
        return c0, (alpha - beta) * w * SW_GRID / _TWO64

    def report_values(self) -> FloatArray:
        """The unbiased value each cell stands for, ``(u - c0) / c1`` on ``[0, 1]`` mapped to
        ``[lower, upper]`` (``E[u | v] = c0 + c1 v``): the mean of a report's value is the
        true value, so the mean of the reports' values is an unbiased (if noisy) mean."""
        c0, c1 = self._linear
        return self._to_value((np.arange(self.n_reports) - c0) / c1)

    def _to_value(self, u: npt.NDArray[Any]) -> FloatArray:
        return np.asarray(self.lower + u * (self.upper - self.lower), dtype=np.float64)

    # -- the server -------------------------------------------------------------------

    @cached_property
    def output_edges(self) -> npt.NDArray[np.int64]:
        """The first cell of each output bin and ``M`` (``d + 1`` integers): cell ``u`` is
        in bin ``floor((2 u + 1) d / (2 M))``, the bin that holds its centre."""
        cells = np.arange(self.n_reports, dtype=np.int64)
        bin_of = (2 * cells + 1) * self._d // (2 * self.n_reports)
        return np.searchsorted(bin_of, np.arange(self._d + 1), side="left").astype(np.int64)

    def tally(self, reports: npt.ArrayLike) -> Tally:
        """The count of reports in each of the ``d`` output bins, then ``sum u`` and ``sum
        u^2`` of the cells (for the unbiased moment mean), exactly in int64: a tally holds up
        to about ``10**18 / M^2`` reports (``2 * 10**9`` at the largest ``b``)."""
        arr = v.reports_array("reports", reports, categories=self.n_reports).astype(np.int64)
        bin_of = np.searchsorted(self.output_edges, arr, side="right") - 1
        counts = np.bincount(bin_of, minlength=self._d)
        sums = [int(arr.sum()), int(np.dot(arr, arr))]
        return Tally(np.concatenate([counts, sums]), mechanism=self.key)

    @cached_property
    def transition(self) -> FloatArray:
        """The ``d x d'`` matrix ``T[j, i] = P[output bin j | value uniform in input bin
        i]`` of the implemented grid mechanism (columns sum to 1).

        ``T = O S``: ``O[j, s] = (beta n_j + (alpha - beta) |bin j ∩ [s, s + w)|) / 2**64``
        is bin ``j``'s probability when the window starts at ``s``, and ``S[s, i]`` the
        probability of start ``s`` when ``v G`` is uniform on bin ``i``'s
        ``[i G / d', (i + 1) G / d')``: the integral of the rounding's hat function ``max(0,
        1 - |x - s|)`` over that interval, divided by its length ``G / d'``.
        """
        return transition_matrix(self)

    def estimate(
        self, data: Any, *, method: str = "ems", tol: float = 1e-9, max_iter: int = 10_000
    ) -> SquareWaveEstimate:
        """The distribution of the numbers over the ``d'`` input bins, by EM with smoothing
        (``method="ems"``, Li et al.'s default) or plain EM (``"em"``), stopped after the
        first iteration that changes the log-likelihood per report by at most ``tol`` or
        after ``max_iter``: a :class:`~deniable.oracles.SquareWaveEstimate`
        (docs/distributions.md)."""
        tally = self._as_tally(data)
        return SquareWaveEstimate.fit(self, tally, method=method, tol=tol, max_iter=max_iter)
