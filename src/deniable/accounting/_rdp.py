"""Renyi DP: the curves of randomized response and the Laplace mechanism, and conversion of a
Renyi curve (or an :class:`RDP` grid) to ``(epsilon, delta)``, rounded toward safety.

References
----------
* Mironov (2017), "Renyi differential privacy", Prop. 3 (RDP -> (eps, delta)), Table II
  (Laplace mechanism).
* Steinke (2024), "Tight RDP & zCDP bounds from pure DP": the RR curve bounds every eps-DP
  mechanism.
* Canonne, Kamath & Steinke (2020), "The discrete Gaussian for differential privacy",
  Prop. 12 (improved conversion); also Asoodeh et al. (2021), Balle et al. (2020).

The Renyi curves (``rr_rdp``, ``pure_to_rdp``, ``laplace_rdp``, and the accountant's
``rdp_curve``) are vectorized over the order: a scalar order (a Python or numpy number, or a
0-d array) gives a Python ``float``, an array of orders gives a numpy array of the same
shape.  ``RDP.from_curve`` turns a curve into an :class:`RDP` measure.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting._measures import RDP, ApproxDP, PureDP
from deniable.accounting._safety import MARGIN, exp_up, half_square_up_array
from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError

__all__ = [
    "laplace_rdp",
    "pure_to_rdp",
    "rdp_curve_delta",
    "rdp_curve_epsilon",
    "rdp_delta",
    "rdp_epsilon",
    "rdp_to_approx",
    "rr_rdp",
]

FloatArray = npt.NDArray[np.float64]
Curve = Callable[[FloatArray], FloatArray]
_METHODS = ("improved", "classic")
# alpha - 1 on a log grid from 1e-9 to 1e9: the continuous minimisation starts from it.
_T_GRID = np.logspace(-9.0, 9.0, 433)
# Below this a divergence computed in floating point has lost relative precision (its terms
# are subnormal or underflowed): the closed-form upper bound alpha eps^2 / 2 is used instead.
_TINY_DIVERGENCE = 2.0**-960
_LOG_TINY = -sys.float_info.max  # log delta of a positive delta that underflows: exp -> TINY


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """An epsilon in ``[0, inf]``."""
    return v.positive(name, value, allow_zero=True, allow_inf=True)


def check_delta(value: Any, name: str = "delta") -> float:
    """A target delta in ``(0, 1)``."""
    return v.probability(name, value, low_open=True, high_open=True)


def pure_epsilon(value: Any) -> float:
    """The epsilon of a :class:`PureDP` guarantee, or a checked epsilon in ``[0, inf]``."""
    return value.epsilon if isinstance(value, PureDP) else check_epsilon(value)


def alpha_array(alpha: Any) -> FloatArray:
    """Orders as a float array, each checked to be in ``(1, inf]``."""
    if isinstance(alpha, str | bytes):
        raise ParameterTypeError(f"`alpha` must be a number or an array of numbers, got {alpha!r}.")
    try:
        arr = np.atleast_1d(np.asarray(alpha, dtype=float))
    except (TypeError, ValueError):
        raise ParameterTypeError(
            f"`alpha` must be a number or an array of numbers, got {type(alpha).__name__} "
            f"{alpha!r}."
        ) from None
    if arr.size and (np.isnan(arr).any() or not np.all(arr > 1)):
        bad = arr[~(arr > 1)][0]
        raise ParameterError(f"`alpha` must be in (1, inf], got {bad}.")
    return arr


def scalar_or_array(arr: FloatArray, like: Any) -> Any:
    """``float`` for a scalar ``like`` (Python or numpy number, 0-d array), else ``arr``
    (of ``like``'s shape)."""
    return float(arr.reshape(-1)[0]) if np.ndim(like) == 0 else arr.reshape(np.shape(like))


def rr_rdp(epsilon: float, alpha: Any, *, k: int = 2) -> Any:
    """Renyi divergence of order ``alpha`` between k-ary randomized response on two different
    inputs: ``(1/(alpha-1)) ln((e^{alpha eps} + e^{(1-alpha) eps} + k - 2) / (e^eps + k - 1))``.

    k-ary RR reports the truth with probability ``e^eps / (e^eps + k - 1)`` and each other
    category with ``1 / (e^eps + k - 1)``; the sum over outputs of ``P^alpha Q^(1-alpha)`` has
    one term ``e^{alpha eps}`` (the true answer under ``x``), one ``e^{(1-alpha) eps}`` (the true
    answer under ``x'``) and ``k - 2`` ones.  For ``k = 2`` this is the tight pure-DP curve.
    Evaluated without cancellation as ``log1p(A sinh(x) + 2 B sinh^2(x/2)) / (alpha - 1)`` with
    ``x = (alpha-1) eps``; vectorized over ``alpha`` (in ``(1, inf]``): a scalar order gives a
    ``float``, an array of orders an array of the same shape.

    Never below the true value: where the divergence is too small for floating point (below
    ``2^-960``, e.g. ``eps = 1e-200``) the upper bound ``min(eps, alpha eps^2 / 2)`` (sharp
    zCDP, Steinke 2024; ``eps tanh(eps/2) <= eps^2 / 2``) is returned, computed in scaled
    arithmetic: positive, the smallest positive double at worst.

    >>> p = math.exp(1) / (1 + math.exp(1)); q = 1 - p
    >>> math.isclose(rr_rdp(1.0, 3.0), math.log(p**3 * q**-2 + q**3 * p**-2) / 2, rel_tol=1e-9)
    True
    """
    eps = check_epsilon(epsilon)
    kk = v.integer("k", k, minimum=2, maximum=2**1000, why="k - 1 must be a double")
    alphas = alpha_array(alpha)
    return scalar_or_array(_rr_rdp(eps, alphas, kk), alpha)


def pure_to_rdp(epsilon: float | PureDP, alpha: Any) -> Any:
    """The tight Renyi curve of ``epsilon``-DP (a float or a :class:`PureDP`): binary RR's,
    ``(1/(alpha-1)) ln((e^{alpha eps} + e^eps e^{-alpha eps}) / (e^eps + 1))`` (Steinke 2024).

    A curve, like :func:`rr_rdp`: a scalar order gives a ``float``, an array an array;
    ``RDP.from_curve(lambda a: pure_to_rdp(eps, a), alphas)`` gives the :class:`RDP` measure.

    >>> pure_to_rdp(1.0, math.inf), pure_to_rdp(PureDP(1.0), [2.0, math.inf]).tolist()[1]
    (1.0, 1.0)
    """
    return rr_rdp(pure_epsilon(epsilon), alpha, k=2)


def _rr_rdp(eps: float, alphas: FloatArray, k: int) -> FloatArray:
    out = np.empty_like(alphas)
    if eps == 0.0:
        out[:] = 0.0
        return out
    if eps == math.inf:
        out[:] = math.inf
        return out
    finite = np.isfinite(alphas)
    out[~finite] = eps
    t = alphas[finite] - 1.0
    em = math.exp(-eps)
    denom = 1.0 + (k - 1) * em
    a_coef = -math.expm1(-eps) / denom  # P(true) - P(other true)
    b_coef = (1.0 + em) / denom  # P(true) + P(other true)
    res = np.empty_like(t)
    with np.errstate(over="ignore", under="ignore"):
        x = t * eps  # inf for a huge eps and order: the large branch then gives eps
        small = x <= 700.0
        xs = x[small]
        f = a_coef * np.sinh(xs) + b_coef * 2.0 * np.sinh(xs / 2.0) ** 2
        res[small] = np.log1p(f) / t[small]
        xl = x[~small]
        ln_pp = -math.log1p((k - 1) * em)
        res[~small] = (xl + ln_pp + np.log1p(em * (np.exp(-2 * xl) + (k - 2) * np.exp(-xl)))) / t[
            ~small
        ]
    out[finite] = _tiny_fallback(np.minimum(res * (1.0 + MARGIN), eps), eps, alphas[finite])
    return out


def _tiny_fallback(vals: FloatArray, eps: float, alphas: FloatArray) -> FloatArray:
    """Replace divergences below ``_TINY_DIVERGENCE`` (no relative precision left) by the
    upper bound ``min(eps, alpha eps^2 / 2)`` of every eps-DP pair, rounded up."""
    lost = vals < _TINY_DIVERGENCE
    if lost.any():
        vals = vals.copy()
        vals[lost] = np.minimum(half_square_up_array(eps, alphas[lost]), eps)
    return vals


def laplace_rdp(epsilon: float, alpha: Any) -> Any:
    """Renyi divergence of the Laplace mechanism with ``epsilon = sensitivity / scale``
    (Mironov 2017, Table II):
    ``(1/(alpha-1)) ln(alpha/(2alpha-1) e^{(alpha-1) eps} + (alpha-1)/(2alpha-1) e^{-alpha eps})``.
    Tiny values are bounded as in :func:`rr_rdp` (the Laplace pair is eps-DP).

    >>> laplace_rdp(1.0, math.inf)
    1.0
    """
    eps = check_epsilon(epsilon)
    alphas = alpha_array(alpha)
    out = np.empty_like(alphas)
    if eps in (0.0, math.inf):
        out[:] = eps
        return scalar_or_array(out, alpha)
    finite = np.isfinite(alphas)
    out[~finite] = eps
    t = alphas[finite] - 1.0
    res = np.empty_like(t)
    with np.errstate(over="ignore", under="ignore"):
        x = t * eps
        small = x <= 700.0
        ts, xs = t[small], x[small]
        # S - 1 = [(t+1) expm1(t eps) + t expm1(-(t+1) eps)] / (2t+1): the two terms cancel
        # to first order, so the rounding bound MARGIN * (|first| + |second|) is added first.
        first = (ts + 1) * np.expm1(xs)
        second = ts * np.expm1(-(ts + 1) * eps)
        s1 = (first + second + MARGIN * (np.abs(first) + np.abs(second))) / (2 * ts + 1)
        res[small] = np.log1p(np.maximum(s1, 0.0)) / ts
        tl, xl = t[~small], x[~small]
        lse = np.logaddexp(
            np.log((tl + 1) / (2 * tl + 1)) + xl, np.log(tl / (2 * tl + 1)) - xl - eps
        )
        res[~small] = lse / tl
    out[finite] = _tiny_fallback(np.minimum(res * (1.0 + MARGIN), eps), eps, alphas[finite])
    return scalar_or_array(out, alpha)


# ---------------------------------------------------------------- RDP -> (eps, delta)
def _min_over_alpha(objective: Callable[[FloatArray], FloatArray]) -> float:
    """Minimise an upward-rounded bound over a continuous order ``alpha > 1``.

    Any order gives a valid bound, so an inexact minimiser only loosens it.  Grid search over
    ``alpha - 1`` in ``[1e-9, 1e9]`` (log scale) refined by bounded Brent on ``log(alpha-1)``.
    """
    from scipy import optimize

    alphas = 1.0 + _T_GRID
    # a huge curve (rho = 1e300) overflows at large orders: inf is a valid (vacuous) bound
    with np.errstate(over="ignore", invalid="ignore"):
        raw = objective(alphas)
    vals = np.nan_to_num(raw, nan=math.inf, posinf=math.inf, neginf=-math.inf)
    i = int(np.argmin(vals))
    best = float(vals[i])
    if not math.isfinite(best):
        return best
    lo = math.log(_T_GRID[max(i - 1, 0)])
    hi = math.log(_T_GRID[min(i + 1, _T_GRID.size - 1)])

    def scalar(u: float) -> float:
        with np.errstate(over="ignore", invalid="ignore"):
            val = float(objective(np.array([1.0 + math.exp(u)]))[0])
        return val if math.isfinite(val) else 1e308

    res = optimize.minimize_scalar(
        scalar, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}
    )
    return min(best, float(scalar(float(res.x))))


def _eps_terms(
    alphas: FloatArray, curve_vals: FloatArray, log_inv_delta: float, method: str
) -> FloatArray:
    """epsilon(delta) at each order, rounded up; ``alpha = inf`` gives the curve value."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = alphas - 1.0
        term1 = log_inv_delta / t
        if method == "classic":
            total = curve_vals + term1
            scale = np.abs(curve_vals) + np.abs(term1)
        else:
            term2 = np.log1p(-1.0 / alphas)
            term3 = -np.log(alphas) / t
            total = curve_vals + term1 + term2 + term3
            scale = np.abs(curve_vals) + np.abs(term1) + np.abs(term2) + np.abs(term3)
        out = total + MARGIN * scale
    out = np.where(np.isinf(alphas), curve_vals, out)
    out = np.where(np.isinf(curve_vals), math.inf, out)
    return out


def _log_delta_terms(
    alphas: FloatArray, curve_vals: FloatArray, eps: float, method: str
) -> FloatArray:
    """log delta(eps) at each order, rounded up; ``alpha = inf`` gives 0 or -inf.

    At a finite order the bound is positive: a log that overflows to ``-inf`` (a huge
    ``eps``) is returned as ``-max double``, whose exponential rounds up to the smallest
    positive double, never to 0.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = alphas - 1.0
        term1 = t * (curve_vals - eps)
        if method == "classic":
            total, scale = term1, np.abs(term1) + t * (np.abs(curve_vals) + eps)
        else:
            term2 = alphas * np.log1p(-1.0 / alphas)
            term3 = -np.log(t)
            total = term1 + term2 + term3
            scale = t * (np.abs(curve_vals) + eps) + np.abs(term2) + np.abs(term3)
        out = total + MARGIN * (scale + 1.0)
    out = np.nan_to_num(out, nan=math.inf, posinf=math.inf, neginf=_LOG_TINY)
    at_inf = np.where(curve_vals <= eps, -math.inf, math.inf)
    out = np.where(np.isinf(alphas), at_inf, out)
    out = np.where(np.isinf(curve_vals), math.inf, out)
    return np.minimum(out, 0.0)


def rdp_curve_epsilon(curve: Curve, delta: float, method: str = "improved") -> float:
    """``epsilon(delta)`` from a Renyi curve, minimised over a continuous order.

    ``curve`` maps an array of orders ``alpha > 1`` to upward-rounded divergences.
    ``method="improved"``: ``eps = min_alpha eps(alpha) + ln(1/delta)/(alpha-1)
    + ln(1 - 1/alpha) - ln(alpha)/(alpha-1)`` (Canonne, Kamath & Steinke 2020, Prop. 12);
    ``"classic"``: ``eps(alpha) + ln(1/delta)/(alpha-1)`` (Mironov 2017, Prop. 3).
    A negative minimum means ``(0, delta)`` holds and 0 is returned.

    >>> round(rdp_curve_epsilon(lambda a: 0.5 * a, 1e-6, method="classic"), 4)
    5.7565
    """
    d = check_delta(delta)
    v.choice("method", method, _METHODS)
    log_inv = -math.log(d)
    best = _min_over_alpha(lambda a: _eps_terms(a, curve(a), log_inv, method))
    return max(0.0, best)


def rdp_curve_delta(curve: Curve, epsilon: float, method: str = "improved") -> float:
    """``delta(epsilon)`` from a Renyi curve, minimised over a continuous order:
    ``"improved"``: ``exp((alpha-1)(eps(alpha) - eps)) (1 - 1/alpha)^alpha / (alpha - 1)``
    (Canonne, Kamath & Steinke 2020, Prop. 12); ``"classic"``:
    ``exp((alpha-1)(eps(alpha) - eps))`` (Mironov 2017).  Capped at 1 (vacuous)."""
    eps = check_epsilon(epsilon)
    v.choice("method", method, _METHODS)
    if eps == math.inf:
        return 0.0
    best = _min_over_alpha(lambda a: _log_delta_terms(a, curve(a), eps, method))
    return exp_up(best)


def rdp_epsilon(rdp: RDP, delta: float, method: str = "improved") -> float:
    """``epsilon(delta)`` of an :class:`RDP` grid guarantee: the minimum over its orders of the
    conversion in :func:`rdp_curve_epsilon`.

    >>> rdp_epsilon(RDP((2.0, math.inf), (0.1, 3.0)), 0.01, method="classic")
    3.0
    """
    d = check_delta(delta)
    v.choice("method", method, _METHODS)
    if not isinstance(rdp, RDP):
        raise ParameterError(f"`rdp` must be an RDP guarantee, got {rdp!r}.")
    alphas = np.array(rdp.alphas, dtype=float)
    vals = _eps_terms(alphas, np.array(rdp.epsilons, dtype=float), -math.log(d), method)
    return max(0.0, float(np.min(vals)))


def rdp_delta(rdp: RDP, epsilon: float, method: str = "improved") -> float:
    """``delta(epsilon)`` of an :class:`RDP` grid guarantee (minimum over its orders)."""
    eps = check_epsilon(epsilon)
    v.choice("method", method, _METHODS)
    if not isinstance(rdp, RDP):
        raise ParameterError(f"`rdp` must be an RDP guarantee, got {rdp!r}.")
    if eps == math.inf:
        return 0.0
    alphas = np.array(rdp.alphas, dtype=float)
    vals = _log_delta_terms(alphas, np.array(rdp.epsilons, dtype=float), eps, method)
    return exp_up(float(np.min(vals)))


def rdp_to_approx(
    rdp: RDP,
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    method: str = "improved",
) -> ApproxDP:
    """An ``(epsilon, delta)`` guarantee from an RDP grid, given exactly one of the two."""
    return to_approx(
        lambda d: rdp_epsilon(rdp, d, method), lambda e: rdp_delta(rdp, e, method), delta, epsilon
    )


def to_approx(
    eps_of: Callable[[float], float],
    delta_of: Callable[[float], float],
    delta: float | None,
    epsilon: float | None,
) -> ApproxDP:
    if (delta is None) == (epsilon is None):
        raise ParameterError(
            f"exactly one of `delta` and `epsilon` must be given, got delta={delta!r}, "
            f"epsilon={epsilon!r}."
        )
    if delta is not None:
        return ApproxDP(eps_of(delta), delta)
    assert epsilon is not None
    dval = delta_of(epsilon)
    if dval >= 1.0:
        raise PrivacyError(
            f"no guarantee with delta < 1 at `epsilon` = {epsilon}: the bound is vacuous."
        )
    return ApproxDP(epsilon, dval)
