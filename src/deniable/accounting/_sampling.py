"""Amplification by subsampling: closed forms, Renyi curves and loss distributions.

Proof note: ``proofs/subsampling.md`` (the claims, their theorems and the tests).

* Pure and approximate DP (Balle, Barthe & Gaboardi 2018): an ``(eps, delta)``-DP mechanism
  run on a secret Poisson sample of rate ``q`` is ``(ln(1 + q (e^eps - 1)), q delta)``-DP
  under add/remove (their Thm 8); on a secret sample of ``m`` of ``n`` records drawn without
  replacement it is the same with ``q = m / n`` under replacement (their Thm 9).
* Renyi DP of the Poisson-sampled Gaussian (Mironov, Talwar & Zhang 2019, Sec. 3.3): at an
  integer order ``a``, ``D_a = ln(A_a) / (a - 1)`` with
  ``A_a = sum_k C(a, k) (1 - q)^(a - k) q^k exp((k^2 - k) mu^2 / 2)``, the removal direction,
  which bounds the addition direction.  Summed here as
  ``A_a - 1 = sum_{k >= 2} C(a, k) (1 - q)^(a - k) q^k expm1((k^2 - k) mu^2 / 2)``, every term
  non-negative (no cancellation).
* Renyi DP of any mechanism sampled without replacement (Wang, Balle & Kasiviswanathan 2019,
  Thm 9, with its ``min{2, (e^eps(inf) - 1)^j}`` factors taken as 2): from the base curve
  ``eps(j)`` at the integer orders ``2 .. a``.
* Non-integer orders use the next integer: ``D_alpha`` grows with ``alpha``.
* The loss distribution of the Poisson-sampled Gaussian in each direction
  (:func:`sampled_gaussian_pld`), from the mixture's CDF, losses rounded up (or down), the
  tails beyond 12 standard deviations sent to ``+inf`` (up) or dropped (down).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from deniable.accounting._measures import ApproxDP
from deniable.accounting._pairs import log_mix
from deniable.accounting._pld import PrivacyLossDistribution, check_grid, grid_index
from deniable.accounting._safety import MARGIN, UNIT, FloatArray, half_square_up, up
from deniable.common import validation as v

__all__ = [
    "MAX_SAMPLED_ORDER",
    "amplified_epsilon",
    "compose_truncated",
    "poisson_amplification",
    "poisson_gaussian_rdp",
    "sampled_gaussian_pld",
    "without_replacement_amplification",
    "wor_rdp",
]

#: Largest integer order at which a sampled Renyi curve is summed (``a + 1`` terms); beyond
#: it the curve is ``inf`` (a valid, vacuous bound: the conversion picks a smaller order).
MAX_SAMPLED_ORDER = 4096
_Z = 12.0  # standard deviations kept by the sampled Gaussian PLD; Phi(-12) = 1.8e-33


def amplified_epsilon(epsilon: float, rate: float) -> float:
    """``ln(1 + rate (e^epsilon - 1))`` rounded up: the pure epsilon of an ``epsilon``-DP
    mechanism on a secret sample that holds a given record with probability ``rate``."""
    if rate == 0.0 or epsilon == 0.0:
        return 0.0
    if epsilon == math.inf:
        return math.inf
    return up(float(log_mix(np.array([epsilon]), rate)[0]))


def poisson_amplification(epsilon: float, delta: float = 0.0, *, probability: float) -> ApproxDP:
    """The guarantee of an ``(epsilon, delta)``-DP mechanism run on a secret Poisson sample
    of rate ``probability``: ``(ln(1 + q (e^eps - 1)), q delta)`` under add/remove (Balle,
    Barthe & Gaboardi 2018, Thm 8), rounded up.

    >>> g = poisson_amplification(1.0, 1e-6, probability=0.01)
    >>> round(g.epsilon, 6), float(f"{g.delta:.6g}")
    (0.017037, 1e-08)
    """
    eps = v.positive("epsilon", epsilon, allow_zero=True, allow_inf=True)
    dlt = v.probability("delta", delta, high_open=True)
    q = v.probability("probability", probability)
    return ApproxDP(amplified_epsilon(eps, q), min(up(q * dlt), dlt))


def without_replacement_amplification(
    epsilon: float, delta: float = 0.0, *, population: int, sample_size: int
) -> ApproxDP:
    """The guarantee of an ``(epsilon, delta)``-DP mechanism run on ``sample_size`` records
    drawn without replacement from ``population``, which ones secret:
    ``(ln(1 + g (e^eps - 1)), g delta)`` with ``g = sample_size / population``, under
    replacement (Balle, Barthe & Gaboardi 2018, Thm 9), rounded up.

    >>> round(without_replacement_amplification(1.0, population=1000, sample_size=10).epsilon, 6)
    0.017037
    """
    eps = v.positive("epsilon", epsilon, allow_zero=True, allow_inf=True)
    dlt = v.probability("delta", delta, high_open=True)
    n = v.integer("population", population, minimum=1)
    m = v.integer(
        "sample_size",
        sample_size,
        minimum=0,
        maximum=n,
        why="a sample without replacement is part of the population",
    )
    g = m / n
    return ApproxDP(amplified_epsilon(eps, g), min(up(g * dlt), dlt))


def _log_comb(a: int, k: npt.NDArray[np.float64]) -> FloatArray:
    from scipy import special

    lg = special.gammaln
    out: FloatArray = lg(a + 1.0) - lg(k + 1.0) - lg(a - k + 1.0)
    return out


def _integer_orders(alphas: FloatArray) -> tuple[FloatArray, FloatArray]:
    """For each order, the integer order whose value bounds it (``ceil``, at least 2), and
    the sorted distinct ones at most :data:`MAX_SAMPLED_ORDER`."""
    ints = np.where(np.isfinite(alphas), np.maximum(np.ceil(alphas), 2.0), math.inf)
    todo = np.unique(ints[ints <= MAX_SAMPLED_ORDER])
    return ints, todo


def _spread(ints: FloatArray, todo: FloatArray, values: list[float]) -> FloatArray:
    out = np.full(ints.shape, math.inf)
    for a, val in zip(todo, values, strict=True):
        out[ints == a] = val
    return out


def poisson_gaussian_rdp(mu: float, rate: float, alphas: FloatArray) -> FloatArray:
    """Renyi curve of the Poisson-sampled Gaussian mechanism (``mu = sensitivity / sigma``)
    at each order, rounded up (module docstring; Mironov, Talwar & Zhang 2019)."""
    from scipy import special

    if rate == 0.0 or mu == 0.0:
        return np.zeros_like(alphas)
    if mu == math.inf:
        return np.full(alphas.shape, math.inf)
    if rate == 1.0:
        gauss: FloatArray = alphas * half_square_up(mu) * (1 + MARGIN)
        return gauss
    ints, todo = _integer_orders(alphas)
    m2 = mu * mu
    log_q, log_1mq = math.log(rate), math.log1p(-rate)
    values = []
    for a_f in todo:
        a = int(a_f)
        k = np.arange(2, a + 1, dtype=float)
        x = k * (k - 1) * m2 / 2
        with np.errstate(over="ignore"):
            log_em1 = x + np.log(-np.expm1(-x))  # ln(e^x - 1), stable for every x > 0
            terms = _log_comb(a, k) + (a - k) * log_1mq + k * log_q + log_em1
        big_l = float(special.logsumexp(terms))
        lg = float(special.gammaln(a + 1.0))
        err = 64 * UNIT * (3 * lg + a * (abs(log_q) + abs(log_1mq)) + float(x[-1]) + 1)
        log_a = float(np.logaddexp(0.0, big_l + err))
        values.append(up(log_a / (a - 1)) if math.isfinite(log_a) else math.inf)
    return _spread(ints, todo, values)


def wor_rdp(base: FloatArray, rate: float, alphas: FloatArray) -> FloatArray:
    """Renyi curve of a mechanism sampled without replacement (fraction ``rate``) from its
    curve ``base[j]`` at the integer orders ``j = 0 .. MAX_SAMPLED_ORDER`` (entries 0 and 1
    unused): Wang, Balle & Kasiviswanathan (2019), Thm 9, rounded up."""
    from scipy import special

    if rate == 0.0:
        return np.zeros_like(alphas)
    ints, todo = _integer_orders(alphas)
    log_g = math.log(rate)
    e2 = float(base[2])
    # j = 2: gamma^2 C(a, 2) min{4 (e^eps(2) - 1), 2 e^eps(2)}
    with np.errstate(over="ignore", divide="ignore"):
        two = min(
            math.log(4.0) + e2 + math.log(-math.expm1(-e2)) if e2 > 0 else -math.inf,
            math.log(2.0) + e2,
        )
    values = []
    for a_f in todo:
        a = int(a_f)
        j = np.arange(2, a + 1, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            rest = math.log(2.0) + (j - 1) * base[2 : a + 1]
            rest[0] = two
            terms = j * log_g + _log_comb(a, j) + rest
        if np.isnan(terms).any() or np.isposinf(terms).any():
            values.append(math.inf)
            continue
        big_l = float(special.logsumexp(terms))
        lg = float(special.gammaln(a + 1.0))
        scale = 3 * lg + a * abs(log_g) + float(np.max(np.abs(rest))) + 1
        log_a = float(np.logaddexp(0.0, big_l + 64 * UNIT * scale))
        values.append(up(log_a / (a - 1)))
    return _spread(ints, todo, values)


# ------------------------------------------------------------------ loss distributions
def _interval(a: FloatArray, b: FloatArray) -> FloatArray:
    """``Phi(b) - Phi(a)`` for ``a <= b``, from the side where the values are small."""
    from scipy import special

    upper = a >= 0
    out: FloatArray = np.where(
        upper, special.ndtr(-a) - special.ndtr(-b), special.ndtr(b) - special.ndtr(a)
    )
    return np.maximum(out, 0.0)


def _x_of(m: FloatArray, mu: float, rate: float) -> FloatArray:
    """The ``x`` with ``log_mix(mu x - mu^2 / 2, rate) = m`` (``-inf`` where
    ``m <= ln(1 - rate)``)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        small = m < 700.0
        inner = np.where(
            small,
            np.log(np.expm1(np.minimum(m, 700.0)) + rate),
            m + np.log1p(-(1 - rate) * np.exp(-m)),
        )
        x = (inner - math.log(rate) + mu * mu / 2) / mu
    return np.where(m <= math.log1p(-rate), -math.inf, x)


def sampled_gaussian_pld(
    mu: float, rate: float, *, direction: str, step: float, rounding: str
) -> PrivacyLossDistribution:
    """The loss distribution of the Poisson-sampled Gaussian mechanism (``0 < rate < 1``,
    ``0 < mu < inf``) when a record is removed (``(1-q) N(0,1) + q N(mu,1)`` against
    ``N(0,1)``) or added (the reverse), on the grid ``step Z``: losses rounded ``"up"`` (the
    upper tail beyond 12 standard deviations at ``+inf``) or ``"down"`` (tails dropped)."""
    shift = mu * mu / 2
    if direction == "remove":
        x_lo, x_hi = -_Z, mu + _Z
        l_lo = float(log_mix(np.array([mu * x_lo - shift]), rate)[0])
        l_hi = float(log_mix(np.array([mu * x_hi - shift]), rate)[0])
    else:
        x_lo, x_hi = -_Z, _Z  # loss falls as x rises
        l_lo = -float(log_mix(np.array([mu * x_hi - shift]), rate)[0])
        l_hi = -math.log1p(-rate)  # the supremum, approached as x -> -inf
    check_grid(l_hi - l_lo, step, "a sampled Gaussian PLD")
    i_lo, i_hi = grid_index(l_lo, step, rounding), grid_index(l_hi, step, rounding)
    idx = np.arange(i_lo, i_hi + 1)
    edges = step * np.arange(i_lo - 1, i_hi + 2, dtype=float)  # grid points i_lo-1 .. i_hi+1

    def mass(a_loss: FloatArray, b_loss: FloatArray) -> FloatArray:
        """P(loss in (a, b]) under the first distribution of the direction."""
        if direction == "remove":
            xa, xb = _x_of(a_loss, mu, rate), _x_of(b_loss, mu, rate)
            return (1 - rate) * _interval(xa, xb) + rate * _interval(xa - mu, xb - mu)
        # loss <= l  <=>  x >= x_of(-l): P(loss in (a, b]) = Phi(x_of(-a)) - Phi(x_of(-b))
        return _interval(_x_of(-b_loss, mu, rate), _x_of(-a_loss, mu, rate))

    inf_mass = 0.0
    if rounding == "up":  # (i-1)h, ih] -> ih; everything below i_lo h -> i_lo h
        lower = np.concatenate([[-math.inf], edges[1:-2]])
        probs = mass(lower, edges[1:-1])
        if direction == "remove":
            inf_mass = float(mass(edges[-2:-1], np.array([math.inf]))[0])
    else:  # [ih, (i+1)h) -> ih; the tails dropped
        probs = mass(edges[1:-1], edges[2:])
    top = max(abs(l_lo), abs(l_hi), 1.0)
    return PrivacyLossDistribution(
        step,
        int(idx[0]),
        probs,
        inf_mass=min(inf_mass, 1.0),
        rounding=rounding,
        slack=64 * UNIT * top * (1 + mu * (mu + _Z)),
        rel_error=64 * UNIT,
        abs_error=probs.size * 4 * UNIT,
    )


def truncate(pld: PrivacyLossDistribution, tail: float) -> PrivacyLossDistribution:
    """``pld`` without the mass of its tails (on each side at most ``tail`` plus a
    thousandth of the PLD's bound on its rounding and FFT error, ``abs_error``: entries at
    the level of FFT noise say nothing): for an upper PLD the upper tail moves to ``+inf``
    and the lower tail onto the first point kept (losses only rise); for a lower PLD both
    are dropped (masses only fall)."""
    tail += 1e-3 * pld.abs_error
    probs = pld.probs
    cum_lo = np.cumsum(probs)
    cum_hi = np.cumsum(probs[::-1])
    first = int(np.searchsorted(cum_lo, tail, side="right"))
    cut = int(np.searchsorted(cum_hi, tail, side="right"))
    last = probs.size - cut
    if first >= last:
        return pld
    kept = probs[first:last].copy()
    inf_mass = pld.inf_mass
    if pld.upper:
        kept[0] += float(cum_lo[first - 1]) if first else 0.0
        inf_mass = min(1.0, inf_mass + (float(cum_hi[cut - 1]) if cut else 0.0))
    return PrivacyLossDistribution(
        pld.step,
        pld.offset + first,
        kept,
        inf_mass=inf_mass,
        rounding=pld.rounding,
        slack=pld.slack,
        rel_error=pld.rel_error,
        abs_error=pld.abs_error,
    )


def compose_truncated(
    pld: PrivacyLossDistribution, count: int, tail: float = 1e-30
) -> PrivacyLossDistribution:
    """The ``count``-fold composition of ``pld`` by repeated squaring, each product
    truncated (:func:`truncate`): the arrays stay as wide as the mass, not the support."""
    result = PrivacyLossDistribution(pld.step, 0, np.ones(1), rounding=pld.rounding)
    base, n = truncate(pld, tail), count
    while n:
        if n & 1:
            result = truncate(result.compose(base), tail)
        n >>= 1
        if n:
            base = truncate(base.compose(base), tail)
    return result
