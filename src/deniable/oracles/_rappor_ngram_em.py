"""The joint distribution of a pair of n-gram positions by maximum likelihood (step 2 of
``deniable.oracles._rappor_ngram_decode``; Fanti, Pihur & Erlingsson 2016, sec. 4.1).

With ``P_dab = P(r1_d | a) P(r2_d | b)`` and ``den_d(pi) = sum_ab pi_ab P_dab``, the
log-likelihood ``L(pi) = sum_d ln den_d(pi)`` is concave on the simplex.  Its gradient is
``D g``, ``g_ab = mean_d P_dab / den_d``, with ``sum_ab pi_ab g_ab = 1``; by concavity, for
the maximum ``pi*``,

    (L(pi*) - L(pi)) / D <= sum_ab pi*_ab g_ab - 1 <= max_ab g_ab - 1 =: gap(pi),

a bound on the distance to the maximum computable at any ``pi`` (the duality gap of the
simplex constraint).  It is the stopping rule, and a point with ``gap <= 1e-12`` is
*certified*.

1. **EM accelerated by SQUAREM** (Varadhan & Roland 2008) from uniform: an EM step is ``pi
   <- pi g``; a cycle takes two, extrapolates along them with SQUAREM's step length,
   shortened toward the plain double step until no cell falls below a tenth of its value
   (every iterate stays positive, so EM's multiplicative update can still raise any cell:
   no cell is ever set to exactly 0 by rounding), and keeps one EM step from the
   extrapolation if its likelihood is not below that of the first EM step, else the plain
   double step; until ``gap <= c`` for ``c`` = 1e-3, then 1e-4, 1e-5, 1e-6 in turn (at
   most 2000 cycles in all), each time handing over to step 2, and going on only if step
   2 does not certify.
2. **Newton on the support** (at most 400 cells): the cells with ``g_ab - 1 > -s``, for
   ``s = sqrt(c)`` then ``s = 1e-4`` (a cell with ``pi_ab (1 - g_ab) > c`` contradicts
   ``gap <= c``, so only cells below ``c / s`` are dropped) keep their values, the
   others are set to 0 and the maximum over the support's face is found by Newton's
   method with the equality ``sum pi = 1`` (the Hessian ``-mean_d P_d P_d' / den_d^2``),
   each step halved until the likelihood does not fall; a cell the full step would take
   to 0 or below leaves the support (set to 0: the maximum lies on a smaller face).  Its
   answer is kept only when certified by the gap over *every* cell (the dropped ones
   included: a cell set to 0 that should be positive has ``g_ab > 1`` and fails it); if
   no hand-over certifies, step 1's last iterate is returned.

At a certified point the per-device log-likelihood is within ``1e-12`` of its maximum, and
Newton's quadratic convergence puts the estimate within rounding of the maximizer where
the likelihood is strictly concave on the support's face: another summation order of the
same data moves it by rounding, not by a rounding-dependent choice of cells (the tests
bound it by ``1e-9``).  Where the likelihood is flat along the face (the maximizer is not
unique), or step 2 is skipped, the estimate is reproducible only to what the gap bounds.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["CERTIFIED", "gap", "joint_em"]

FloatArray = npt.NDArray[np.float64]

#: The gap of a certified maximum (per device, in log-likelihood).
CERTIFIED = 1e-12
#: SQUAREM hands over to Newton at each of these gaps in turn (at most ``_CYCLES`` cycles
#: in all); Newton's support is the cells with ``g - 1 > -sqrt(gap)``, then those with
#: ``g - 1 > -_SUPPORT``, at most ``_NEWTON_CELLS`` of them.
_LADDER = (1e-3, 1e-4, 1e-5, 1e-6)
_SUPPORT = 1e-4
_CYCLES = 2000
_NEWTON_CELLS = 400
_NEWTON_STEPS = 30
#: An extrapolation may shrink a cell to this share of its value, not below.
_FLOOR = 0.1
#: Columns from which the row sums are numpy's own (its pairwise blocks start at 8).
_ROW_SUM = 8
#: Devices per block of the Hessian's product.
_BLOCK = 1 << 13


class _Pair:
    """The likelihoods of a pair's reports, ``P1`` (``D x A1``) and ``P2`` (``D x A2``),
    each row scaled by its largest entry (a constant factor of ``den_d``: ``g`` unchanged)."""

    def __init__(self, l1: FloatArray, l2: FloatArray) -> None:
        self.p1 = np.exp(l1 - l1.max(axis=1, keepdims=True))
        self.p2 = np.exp(l2 - l2.max(axis=1, keepdims=True))
        self.d = self.p1.shape[0]

    def den(self, pi: FloatArray) -> FloatArray:
        """``den_d``: the row sums of ``(P1 pi) * P2``, added column by column when short
        (numpy's reduction over short rows is slow)."""
        joint = (self.p1 @ pi) * self.p2
        if joint.shape[1] >= _ROW_SUM:
            return np.asarray(joint.sum(axis=1))
        cols = np.asfortranarray(joint)
        out = cols[:, 0].copy()
        for b in range(1, joint.shape[1]):
            out += cols[:, b]
        return out

    def grad(self, pi: FloatArray) -> tuple[FloatArray, float]:
        """``(g, L(pi))``."""
        den = self.den(pi)
        return (self.p1 / den[:, None]).T @ self.p2 / self.d, float(np.log(den).sum())

    def hessian(self, pi: FloatArray, cells: npt.NDArray[np.intp]) -> FloatArray:
        """``mean_d P_d P_d' / den_d^2`` over ``cells`` (flat indices of ``pi``)."""
        a, b = np.divmod(cells, pi.shape[1])
        den = self.den(pi)
        out = np.zeros((cells.size, cells.size))
        for start in range(0, self.d, _BLOCK):
            sl = slice(start, start + _BLOCK)
            q = self.p1[sl][:, a] * self.p2[sl][:, b] / den[sl, None]
            out += q.T @ q
        return np.asarray(out / self.d, dtype=np.float64)


def _squarem(
    pair: _Pair, pi: FloatArray, g: FloatArray, stop: float, cycles: int
) -> tuple[FloatArray, FloatArray, int]:
    """Step 1 of the module docstring from ``pi`` (``g`` its gradient) until ``gap <=
    stop`` or ``cycles`` cycles: ``(pi, g, cycles left)``."""
    while cycles > 0:
        if float(g.max()) - 1 <= stop:
            break
        cycles -= 1
        one = pi * g
        g_one, ll_one = pair.grad(one)
        two = one * g_one
        r, w = one - pi, two - 2 * one + pi
        new = two
        ww = float((w * w).sum())
        if ww > 0:
            a = min(-1.0, -math.sqrt(float((r * r).sum()) / ww))
            jump = pi - 2 * a * r + a * a * w
            while a < -1 and not bool((jump >= _FLOOR * pi).all()):
                a = (a - 1) / 2 if a < -1 - 1e-6 else -1.0
                jump = pi - 2 * a * r + a * a * w
            if a < -1:
                jump = jump / jump.sum()
                g_jump, ll_jump = pair.grad(jump)
                if ll_jump >= ll_one:
                    new = jump * g_jump
        pi = new
        g, _ = pair.grad(pi)
    return pi, g, cycles


def _newton(pair: _Pair, pi: FloatArray, g: FloatArray, support: float) -> FloatArray | None:
    """Step 2 of the module docstring: the certified maximum, or None."""
    cells = np.flatnonzero(g.reshape(-1) - 1 > -support)
    if not 0 < cells.size <= _NEWTON_CELLS:
        return None
    flat = np.zeros(pi.size)
    flat[cells] = pi.reshape(-1)[cells]
    pi = (flat / flat.sum()).reshape(pi.shape)
    g, ll = pair.grad(pi)
    k = cells.size
    for _ in range(_NEWTON_STEPS):
        if float(g.max()) - 1 <= CERTIFIED:
            return pi
        kkt = np.zeros((k + 1, k + 1))
        kkt[:k, :k] = pair.hessian(pi, cells)
        kkt[:k, k] = kkt[k, :k] = 1.0
        try:
            dx = np.linalg.solve(kkt, np.append(g.reshape(-1)[cells], 0.0))[:k]
        except np.linalg.LinAlgError:
            return None
        full = pi.reshape(-1)[cells] + dx
        if not bool((full > 0).all()):  # the face is smaller: drop the blocking cells
            flat = pi.reshape(-1).copy()
            flat[cells[full <= 0]] = 0.0
            cells, k = cells[full > 0], int((full > 0).sum())
            if not k:
                return None
            pi = (flat / flat.sum()).reshape(pi.shape)
            g, ll = pair.grad(pi)
            continue
        t = 1.0
        while True:
            trial = pi.reshape(-1).copy()
            trial[cells] += t * dx
            if bool((trial[cells] > 0).all()):
                g_t, ll_t = pair.grad(trial.reshape(pi.shape))
                if ll_t >= ll:
                    break
            t /= 2
            if t < 1e-10:
                return None
        pi, g, ll = trial.reshape(pi.shape), g_t, ll_t
    return pi if float(g.max()) - 1 <= CERTIFIED else None


def joint_em(l1: FloatArray, l2: FloatArray) -> FloatArray:
    """The maximum-likelihood joint distribution (``A1 x A2``) of a pair from the
    log-likelihoods ``l1`` (``D x A1``), ``l2`` (``D x A2``) of its two reports, by the
    module docstring's two steps."""
    pair = _Pair(l1, l2)
    k1, k2 = l1.shape[1], l2.shape[1]
    pi = np.full((k1, k2), 1 / (k1 * k2))
    g, _ = pair.grad(pi)
    cycles = _CYCLES
    for stop in _LADDER:
        pi, g, cycles = _squarem(pair, pi, g, stop, cycles)
        for support in sorted({math.sqrt(stop), _SUPPORT}, reverse=True):
            polished = _newton(pair, pi, g, support)
            if polished is not None:
                return np.asarray(polished, dtype=np.float64)
    return np.asarray(pi, dtype=np.float64)


def gap(l1: FloatArray, l2: FloatArray, pi: FloatArray) -> float:
    """``max_ab g_ab - 1`` at ``pi``: the bound on ``(L(pi*) - L(pi)) / D``."""
    g, _ = _Pair(l1, l2).grad(pi)
    return float(g.max()) - 1
