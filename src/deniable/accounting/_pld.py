"""Privacy loss distributions (PLDs) on a grid, composed by convolution.

The PLD of a pair ``(P, Q)`` (the outputs on two neighbouring inputs) is the law of
``L = ln(P(o) / Q(o))`` with ``o ~ P``; the pair satisfies ``(eps, delta(eps))``-DP with the
hockey-stick divergence

    delta(eps) = E[(1 - e^{eps - L})_+] = sum_{l > eps} P(L = l) (1 - e^{eps - l}) + P(L = inf)

and the PLD of a composition is the convolution of the PLDs (Meiser & Mohammadi 2018;
Koskela, Jälkö & Honkela 2020).  Every pair used here is symmetric (swapping the inputs gives
the same PLD), so one direction suffices.

The Laplace and Gaussian PLDs are in ``_pld_noise``.

Randomized response (binary or k-ary with ``k`` categories, reporting the truth with
probability ``e^eps / (e^eps + k - 1)``): on inputs ``x != x'`` the output ``x`` has loss
``+eps`` (probability ``e^eps / Z``), the output ``x'`` loss ``-eps`` (``1 / Z``) and each of
the ``k - 2`` other outputs loss 0 (``(k - 2) / Z``), ``Z = e^eps + k - 1``.  Three atoms: when
the epsilons of the events share a lattice the composition is exact (no discretisation).

Otherwise losses are *rounded up* to a grid of spacing ``step`` (pessimistic: the composed
loss is pointwise at least the true one, so every delta is an upper bound) and, to bracket
the truth, also rounded down (optimistic).  A priori the pessimistic epsilon exceeds the true
one by at most ``n * step`` for ``n`` discretised mechanism uses; the two roundings give the
actual bracket.  Laplace and Gaussian PLDs are discretised this way (Gaussian upper tail
beyond 37.5 standard deviations goes to ``+inf``).

Proof note: ``proofs/pld_discretization.md`` (why rounding up gives upper bounds, the tests).

Floating point: sums of non-negative products have a relative error we track (``rel_error``);
FFT convolution (used only when direct convolution would be too slow) has an absolute error
bounded by ``16 u log2(n) ||a||_2 ||b||_2`` per entry (``abs_error`` accumulates its L1 sum,
which bounds its effect on delta); grid losses are computed in floating point, and ``slack``
bounds their total error.  :meth:`PrivacyLossDistribution.delta` adds all three.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from deniable.accounting._safety import MARGIN, TINY, UNIT, FloatArray, upper_root
from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "PrivacyLossDistribution",
    "check_grid",
    "compose_all",
    "grid_index",
    "identity_pld",
    "rr_pld",
]


_DIRECT_MAX = 20_000_000  # direct convolution when len(a) * len(b) is at most this
_MAX_POINTS = 2**26  # grid points of one discretised PLD (512 MB of doubles)


@dataclass(frozen=True, eq=False)
class PrivacyLossDistribution:
    """A privacy loss distribution on the grid ``step * (offset + i)``.

    ``probs[i]`` is the mass at loss ``step * (offset + i)``, ``inf_mass`` the mass at
    ``+inf``.  ``rounding`` is ``"up"`` (pessimistic: deltas are upper bounds), ``"down"``
    (optimistic: lower bounds) or ``"exact"`` (lattice; no discretisation).  Two PLDs
    compose only on the same grid step (else :class:`~deniable.exceptions.ParameterError`).
    """

    step: float
    offset: int
    probs: FloatArray
    inf_mass: float = 0.0
    rounding: str = "exact"
    slack: float = 0.0
    rel_error: float = 0.0
    abs_error: float = 0.0

    def __post_init__(self) -> None:
        v.positive("step", self.step)
        if self.step == math.inf:
            raise ParameterError(f"`step` must be in (0, inf), got {self.step}.")
        v.integer("offset", self.offset, minimum=-(2**62), maximum=2**62)
        if not isinstance(self.probs, np.ndarray) or self.probs.ndim != 1:
            raise ParameterTypeError(
                f"`probs` must be a 1-D numpy array of masses, got {type(self.probs).__name__}."
            )
        v.probability("inf_mass", self.inf_mass)
        v.choice("rounding", self.rounding, ("up", "down", "exact"))

    @property
    def losses(self) -> FloatArray:
        """The finite loss of each entry of ``probs``."""
        return self.step * (self.offset + np.arange(self.probs.size, dtype=float))

    @property
    def upper(self) -> bool:
        """Whether deltas are rounded up (``rounding`` is ``"up"`` or ``"exact"``)."""
        return self.rounding != "down"

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """The PLD of the composition: the convolution of the two."""
        v.instance("other", other, PrivacyLossDistribution, "a PrivacyLossDistribution")
        if not math.isclose(self.step, other.step, rel_tol=1e-12):
            raise ParameterError(
                f"`other` must be on this PLD's grid (step {self.step:g}) to compose, got a "
                f"PLD of step {other.step:g}; build both with the same `step`."
            )
        probs, rel, absolute = _convolve(self.probs, other.probs)
        rounding = self.rounding if other.rounding == "exact" else other.rounding
        return PrivacyLossDistribution(
            step=self.step,
            offset=self.offset + other.offset,
            probs=probs,
            inf_mass=min(1.0, self.inf_mass + other.inf_mass - self.inf_mass * other.inf_mass),
            rounding=rounding,
            slack=self.slack + other.slack,
            rel_error=self.rel_error + other.rel_error + rel,
            abs_error=self.abs_error + other.abs_error + absolute,
        )

    def self_compose(self, count: int) -> PrivacyLossDistribution:
        """The ``count``-fold composition, by repeated squaring."""
        n = v.integer("count", count, minimum=0)
        result = identity_pld(self.step, self.rounding)
        base = self
        while n:
            if n & 1:
                result = result.compose(base)
            n >>= 1
            if n:
                base = base.compose(base)
        return result

    def delta(self, epsilon: float) -> float:
        """``delta(epsilon)``: rounded up for an upper PLD, down for a lower one."""
        eps = v.positive("epsilon", epsilon, allow_zero=True, allow_inf=True)
        if eps == math.inf:
            return 0.0
        if self.upper:
            shifted = eps - self.slack
            mask = self.losses > shifted
            if not mask.any() and self.inf_mass == 0.0:
                return 0.0  # no loss above eps: delta is exactly 0
            core = float(np.sum(self.probs[mask] * -np.expm1(shifted - self.losses[mask])))
            total = (core + self.inf_mass) * (1 + self.rel_error + MARGIN) + self.abs_error
            return min(1.0, max(total, TINY))
        shifted = eps + self.slack
        mask = self.losses > shifted
        core = float(np.sum(self.probs[mask] * -np.expm1(shifted - self.losses[mask])))
        total = (core + self.inf_mass) * (1 - self.rel_error - MARGIN) - self.abs_error
        return min(1.0, max(total, 0.0))

    def epsilon(self, delta: float) -> float:
        """``epsilon(delta)``: the smallest epsilon whose delta is at most ``delta`` (upper
        end of the bisection bracket for an upper PLD, lower end for a lower one)."""
        d = v.probability("delta", delta, low_open=True, high_open=True)
        nonzero = np.flatnonzero(self.probs)
        top = float(self.losses[nonzero[-1]]) if nonzero.size else 0.0
        top = max(top, 0.0) + self.slack + 1e-12
        if self.delta(top) > d:
            return math.inf
        if self.delta(0.0) <= d:
            return 0.0
        hi = upper_root(self.delta, d, 0.0, top)
        if self.upper:
            return hi
        # lower bound: the bracket's lower end, where delta > d still holds
        return max(0.0, hi - max(1e-12 * hi, 1e-300))

    def mass(self) -> float:
        """Total mass, finite plus infinite (1 up to rounding)."""
        return float(self.probs.sum()) + self.inf_mass


def identity_pld(step: float, rounding: str) -> PrivacyLossDistribution:
    return PrivacyLossDistribution(step, 0, np.ones(1), rounding=rounding)


def _convolve(a: FloatArray, b: FloatArray) -> tuple[FloatArray, float, float]:
    """Convolution of two non-negative arrays with (relative, absolute) error bounds."""
    from scipy import signal

    if a.size < b.size:
        a, b = b, a
    nz = np.flatnonzero(b)
    n_out = a.size + b.size - 1
    if nz.size <= 64:
        out = np.zeros(n_out)
        for j in nz:
            out[j : j + a.size] += b[j] * a
        return out, (nz.size + 1) * UNIT, a.size * nz.size * TINY
    if a.size * b.size <= _DIRECT_MAX:
        return np.convolve(a, b), (b.size + 1) * UNIT, a.size * b.size * TINY
    out = signal.fftconvolve(a, b)
    # FFT error: ||error||_2 <~ C log2(n) u min(||a||_2 ||b||_1, ||a||_1 ||b||_2) (Higham 2002,
    # sec. 24.1), C = 16 taken generously; the L1 error (which bounds the effect on delta) is
    # at most sqrt(n) times that.
    norm = min(float(np.linalg.norm(a)) * float(b.sum()), float(a.sum()) * float(np.linalg.norm(b)))
    l1 = math.sqrt(n_out) * 16 * UNIT * math.log2(n_out) * norm
    return np.maximum(out, 0.0), 0.0, l1


def compose_all(parts: list[PrivacyLossDistribution]) -> PrivacyLossDistribution:
    """Compose many PLDs: one after another onto the densest when that is cheap (only exact
    non-negative sums), otherwise pairwise smallest-first (FFT for large pairs)."""
    if not parts:
        raise ParameterError("`parts` must hold at least one PLD to compose, got none.")
    parts = sorted(parts, key=lambda p: -int(np.count_nonzero(p.probs)))
    width = sum(p.probs.size for p in parts)
    cost = width * sum(int(np.count_nonzero(p.probs)) for p in parts[1:])
    if cost <= 400_000_000:
        out = parts[0]
        for p in parts[1:]:
            out = out.compose(p)
        return out
    heap = [(p.probs.size, i, p) for i, p in enumerate(parts)]
    heapq.heapify(heap)
    counter = len(parts)
    while len(heap) > 1:
        _, _, a = heapq.heappop(heap)
        _, _, b = heapq.heappop(heap)
        c = a.compose(b)
        heapq.heappush(heap, (c.probs.size, counter, c))
        counter += 1
    return heap[0][2]


def check_grid(span: float, step: float, what: str) -> None:
    """Refuse a grid of more than ``_MAX_POINTS`` points (it could not be held in memory)."""
    points = span / step
    if not points <= _MAX_POINTS:
        raise ParameterError(
            f"`step` must be at least {span / _MAX_POINTS:.6g} for {what} spanning losses of "
            f"width {span:.6g} (at most {_MAX_POINTS} grid points), got {step:g}."
        )


def grid_index(loss: float, step: float, rounding: str) -> int:
    q = loss / step
    if rounding == "down":
        return math.floor(q)
    if rounding == "up":
        return math.ceil(q)
    return round(q)


#: Largest ``count`` of a binary randomized-response PLD (it holds at least
#: ``2 count + 1`` points).
MAX_PLD_COUNT = 10**6
#: Largest ``count`` of a k-ary (k > 2) randomized-response PLD (a mixture over the number of
#: non-zero losses: time quadratic in the count, ~1 s at the limit).
MAX_KARY_PLD_COUNT = 3000


def rr_pld(
    epsilon: float,
    *,
    k: int = 2,
    count: int = 1,
    step: float | None = None,
    rounding: str = "up",
) -> PrivacyLossDistribution:
    """The PLD of ``count`` uses of k-ary randomized response at ``epsilon``.

    With ``step=None`` the grid is ``step = epsilon`` and the PLD is exact.  ``count`` is
    composed in closed form: for binary RR the number ``j`` of ``+eps`` losses is
    Binomial(count, e^eps/(1+e^eps)); for k-ary the number ``m`` of non-zero losses is
    Binomial(count, (e^eps+1)/Z) and, given ``m``, ``j ~ Binomial(m, e^eps/(e^eps+1))``.

    >>> pld = rr_pld(1.0, count=3)
    >>> exact = (1 - math.exp(-2)) / (1 + math.exp(-1)) ** 3  # only "all three +1" counts
    >>> exact <= pld.delta(1.0) <= exact * (1 + 1e-9)
    True
    """
    from scipy import stats

    eps = v.positive("epsilon", epsilon, allow_zero=True, allow_inf=True)
    kk = v.integer("k", k, minimum=2, maximum=2**1000, why="k - 1 must be a double")
    top = MAX_PLD_COUNT if kk == 2 else MAX_KARY_PLD_COUNT
    why = "a point per loss value" if kk == 2 else "k-ary: time quadratic in the count"
    c = v.integer("count", count, minimum=0, maximum=top, why=why)
    v.choice("rounding", rounding, ("up", "down", "exact"))
    if step is None:
        h = eps if 0 < eps < math.inf else 1.0
        mode = "exact"
    else:
        h = v.positive("step", step)
        mode = rounding
    if c == 0 or eps == 0.0:
        return identity_pld(h, mode)
    if eps == math.inf:
        # the true answer is reported with probability 1: loss +inf surely
        return PrivacyLossDistribution(h, 0, np.zeros(1), inf_mass=1.0, rounding=mode)
    if mode != "exact":
        check_grid(2 * c * eps, h, "a randomized-response PLD")
    i_plus = grid_index(eps, h, mode)
    i_minus = grid_index(-eps, h, mode)
    slack = c * 4 * UNIT * eps  # floating error of the grid losses
    if mode == "exact":
        slack += c * abs(i_plus * h - eps)  # distance of eps from its lattice point
    width = i_plus - i_minus
    em = math.exp(-eps)
    p_plus = 1.0 / (1.0 + (kk - 1) * em)
    if kk == 2:
        probs = np.zeros(c * width + 1)  # width >= 1 whenever 0 < eps < inf
        probs[::width] = stats.binom.pmf(np.arange(c + 1), c, p_plus)
        return PrivacyLossDistribution(
            h,
            c * i_minus,
            probs,
            rounding=mode,
            slack=slack,
            rel_error=64 * UNIT,
            abs_error=(c + 1) * TINY,
        )
    # k-ary: mixture over m = number of non-zero losses
    s = (1.0 + em) * p_plus  # P(loss != 0) = (e^eps + 1) / Z
    r = 1.0 / (1.0 + em)  # P(+eps | loss != 0)
    weights = stats.binom.pmf(np.arange(c + 1), c, s)
    probs = np.zeros(c * width + 1)
    base = c * i_minus
    for m in np.flatnonzero(weights):
        j = np.arange(m + 1)
        # distinct indices for distinct j (width >= 1), so plain fancy-index addition is safe
        probs[m * i_minus - base + j * width] += weights[m] * stats.binom.pmf(j, m, r)
    return PrivacyLossDistribution(
        h,
        base,
        probs,
        rounding=mode,
        slack=slack,
        rel_error=(c + 130) * UNIT,
        abs_error=(c + 1) ** 2 * TINY,
    )
