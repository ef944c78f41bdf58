"""Dominating pairs with finitely many outcomes, and what subsampling does to them.

A pair ``(P, Q)`` *dominates* a mechanism when no neighbouring pair of its outputs is easier
to tell apart (its hockey-stick divergence is at least theirs at every ``e^eps``); its
privacy loss distribution and Renyi divergence then bound the mechanism's, also under
composition.  The pairs here have a few outcomes each, stored as the masses ``p``, ``q``
and the loss ``ln(p / q)`` of each outcome (computed from the parameters, not from the
rounded masses):

* binary randomized response at ``eps``, ``uses`` times on one record: ``uses + 1``
  outcomes (the number ``j`` of answers favouring the truth, loss ``(2j - uses) eps``).  It
  dominates every ``eps``-DP mechanism (Kairouz, Oh & Viswanath 2015, Thm 3.3);
* k-ary randomized response once: three outcomes (losses ``+eps``, ``-eps``, ``0``);
* the ``(eps, delta)`` pair of Kairouz, Oh & Viswanath (2015): a fourth outcome of loss
  ``+inf`` and mass ``delta``; ``uses`` of it are binomial as above plus the outcome
  "some use hit the ``delta`` outcome", of mass ``1 - (1 - delta)^uses``;
* discrete Laplace noise of integer sensitivity ``s``: ``s + 1`` outcomes.

Subsampling (proof note ``proofs/subsampling.md``): with Poisson sampling of rate ``q`` and
a pair ``(P, Q)`` dominating the mechanism under add/remove, the sampled mechanism is
dominated by ``(q P + (1 - q) Q, Q)`` when a record is removed and by
``(Q, q P + (1 - q) Q)`` when one is added (Zhu, Dong & Wang 2022, Sec. 5; the losses are
``ln(1 + q (e^l - 1))`` and its negative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from deniable.accounting._pld import PrivacyLossDistribution, check_grid, grid_index
from deniable.accounting._safety import MARGIN, UNIT, FloatArray, up

__all__ = [
    "Pair",
    "approx_pair",
    "discrete_laplace_pair",
    "log_mix",
    "rr_pair",
]

#: Largest number of uses on one sample that a finite pair represents outcome by outcome.
MAX_PAIR_USES = 10**5


def log_mix(loss: FloatArray, rate: float) -> FloatArray:
    """``ln(rate e^loss + 1 - rate)`` elementwise, without overflow or cancellation: the
    loss of an outcome of ``(rate P + (1 - rate) Q, Q)`` whose loss under ``(P, Q)`` is
    ``loss`` (``+inf`` stays ``+inf``; ``-inf`` gives ``ln(1 - rate)``)."""
    out = np.empty_like(loss)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        small = loss < 700.0
        out[small] = np.log1p(rate * np.expm1(loss[small]))
        big = loss[~small]
        out[~small] = big + np.log(rate + (1 - rate) * np.exp(-big))
    return out


@dataclass(frozen=True)
class Pair:
    """A dominating pair on finitely many outcomes: masses ``p`` (the first distribution),
    ``q`` (the second) and the loss ``ln(p / q)`` of each outcome."""

    p: FloatArray
    q: FloatArray
    loss: FloatArray

    def remove(self, rate: float) -> Pair:
        """The pair of Poisson sampling at ``rate`` when a record is removed:
        ``(rate P + (1 - rate) Q, Q)``."""
        p = rate * self.p + (1 - rate) * self.q
        return Pair(p, self.q, log_mix(self.loss, rate))

    def add(self, rate: float) -> Pair:
        """The pair of Poisson sampling at ``rate`` when a record is added:
        ``(Q, rate P + (1 - rate) Q)``."""
        q = rate * self.p + (1 - rate) * self.q
        return Pair(self.q, q, -log_mix(self.loss, rate))

    @property
    def max_loss(self) -> float:
        """The largest loss of an outcome ``P`` can produce (the order-``inf`` divergence)."""
        live = self.p > 0
        return float(np.max(self.loss[live])) if live.any() else 0.0

    @property
    def min_loss(self) -> float:
        """The smallest finite loss of an outcome ``P`` can produce."""
        live = (self.p > 0) & np.isfinite(self.loss)
        return float(np.min(self.loss[live])) if live.any() else 0.0

    def pld(self, step: float, rounding: str) -> PrivacyLossDistribution:
        """The pair's privacy loss distribution on the grid ``step Z``: each loss rounded
        ``"up"`` (pessimistic) or ``"down"`` (optimistic) to a grid point, ``+inf`` kept
        apart."""
        live = self.p > 0
        loss, mass = self.loss[live], self.p[live]
        finite = np.isfinite(loss)
        inf_mass = float(mass[~finite].sum())
        loss, mass = loss[finite], mass[finite]
        if loss.size == 0:
            return PrivacyLossDistribution(
                step, 0, np.zeros(1), inf_mass=inf_mass, rounding=rounding
            )
        top = float(np.max(np.abs(loss)))
        check_grid(float(loss.max() - loss.min()), step, "a sampled or finite-pair PLD")
        idx = np.array([grid_index(float(x), step, rounding) for x in loss], dtype=np.int64)
        lo = int(idx.min())
        probs = np.zeros(int(idx.max()) - lo + 1)
        np.add.at(probs, idx - lo, mass)
        return PrivacyLossDistribution(
            step,
            lo,
            probs,
            inf_mass=inf_mass,
            rounding=rounding,
            slack=16 * UNIT * top,  # the losses are within a few ulps of the true ones
            rel_error=(loss.size + 16) * UNIT,
        )

    def renyi(self, alphas: FloatArray) -> FloatArray:
        """``D_alpha(P || Q)`` at each order (``alpha > 1``, ``inf`` allowed), rounded up.

        ``D_alpha = ln(sum_i p_i e^((alpha - 1) l_i)) / (alpha - 1)``; the sum minus one is
        formed as ``sum_i p_i expm1((alpha - 1) l_i)`` (no cancellation against the 1), and
        its rounding error, bounded term by term, is added before the logarithm.  Never above
        the largest loss (``D_alpha`` grows with ``alpha`` to ``D_inf = max l``).
        """
        live = self.p > 0
        p, loss = self.p[live], self.loss[live]
        top = up(self.max_loss) if np.isfinite(self.max_loss) else math.inf
        out = np.empty_like(alphas)
        out[np.isinf(alphas)] = top
        fin = np.isfinite(alphas)
        if top == math.inf:
            out[fin] = math.inf
            return out
        t = alphas[fin] - 1.0
        tl = np.outer(t, loss)
        with np.errstate(over="ignore", invalid="ignore"):
            em1 = np.expm1(tl)
            core = em1 @ p
            err = (np.abs(em1) @ p) * (8 * UNIT) + (np.exp(tl) * (1 + np.abs(tl))) @ p * (16 * UNIT)
            val = np.log1p(np.maximum(core + err, 0.0)) / t
            big = ~np.isfinite(val)
            if big.any():  # e^((alpha - 1) l) overflows: through logs
                lse = np.log(p)[None, :] + tl[big]
                m = lse.max(axis=1)
                val[big] = (m + np.log(np.exp(lse - m[:, None]).sum(axis=1))) / t[big]
        out[fin] = np.minimum(val * (1 + MARGIN) + MARGIN * np.abs(val), top)
        return out


def rr_pair(epsilon: float, *, k: int = 2, uses: int = 1) -> Pair:
    """The pair of k-ary randomized response at ``epsilon``: once with ``k > 2``, three
    outcomes; else ``uses`` times binomially (binary RR, which dominates k-ary RR at the same
    ``epsilon``).

    >>> pair = rr_pair(1.0, uses=2)
    >>> pair.loss.tolist(), round(float(pair.p.sum()), 12)
    ([-2.0, 0.0, 2.0], 1.0)
    """
    em = math.exp(-epsilon)
    if k > 2 and uses == 1:
        z = 1.0 + (k - 1) * em  # Z e^-eps: the masses scaled by e^-eps
        p = np.array([1.0, em, (k - 2) * em]) / z
        q = np.array([em, 1.0, (k - 2) * em]) / z
        return Pair(p, q, np.array([epsilon, -epsilon, 0.0]))
    return _binomial(1.0 / (1.0 + em), epsilon, uses, 0.0)


def approx_pair(epsilon: float, delta: float, *, uses: int = 1) -> Pair:
    """The ``(epsilon, delta)`` pair of Kairouz, Oh & Viswanath (2015), ``uses`` times.

    >>> pair = approx_pair(1.0, 0.01)
    >>> pair.loss.tolist()[-2], float(pair.p[-2])
    (inf, 0.01)
    """
    p_hit = -math.expm1(uses * math.log1p(-delta)) if delta > 0 else 0.0
    return _binomial(1.0 / (1.0 + math.exp(-epsilon)), epsilon, uses, p_hit)


def _binomial(p_plus: float, epsilon: float, uses: int, p_hit: float) -> Pair:
    """``uses`` independent ``+-epsilon`` losses (``+`` with ``p_plus`` under P, with
    ``1 - p_plus`` under Q) conditioned on no hit, plus a hit outcome of mass ``p_hit`` under
    P (loss ``+inf``) and under Q (loss ``-inf``)."""
    from scipy import stats

    j = np.arange(uses + 1)
    keep = 1.0 - p_hit
    p = keep * stats.binom.pmf(j, uses, p_plus)
    q = keep * stats.binom.pmf(j, uses, 1.0 - p_plus)
    loss = (2.0 * j - uses) * epsilon
    if p_hit > 0:
        p = np.concatenate([p, [p_hit, 0.0]])
        q = np.concatenate([q, [0.0, p_hit]])
        loss = np.concatenate([loss, [math.inf, -math.inf]])
    f64 = np.float64
    return Pair(np.asarray(p, dtype=f64), np.asarray(q, dtype=f64), np.asarray(loss, dtype=f64))


def discrete_laplace_pair(scale: float, sensitivity: int) -> Pair:
    """The pair of discrete Laplace noise (``P(z) ∝ e^(-|z|/scale)``) on a query of integer
    ``sensitivity`` ``s``: outputs grouped by loss, ``z <= 0`` (loss ``s/scale``),
    ``0 < z < s`` (loss ``(s - 2z)/scale``), ``z >= s`` (loss ``-s/scale``).

    >>> pair = discrete_laplace_pair(1.0, 1)
    >>> pair.loss.tolist(), round(float(pair.p.sum()), 12)
    ([1.0, -1.0], 1.0)
    """
    a = 1.0 / scale
    r = math.exp(-a)
    s = sensitivity
    # P = DLap(0): P(z) = (1 - r)/(1 + r) r^|z|; Q = DLap(s): Q(z) = P(z - s)
    c = -math.expm1(-a) / (1 + r)
    tail = 1.0 / -math.expm1(-a)  # sum_{j >= 0} r^j
    z = np.arange(1, s)
    # z <= 0: P = c * tail; Q = c * r^s * tail.  z >= s: P = c * r^s * tail; Q = c * tail
    p = np.concatenate([[c * tail], c * r**z, [c * r**s * tail]])
    q = np.concatenate([[c * r**s * tail], c * r ** (s - z), [c * tail]])
    loss = np.concatenate([[s * a], (s - 2.0 * z) * a, [-s * a]])
    return Pair(p, q, loss)
