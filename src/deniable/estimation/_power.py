"""Power and the minimal sample size of tests of a prevalence measured by randomized response.

A binary design reports "yes" with probability ``P1`` for a carrier and ``P0`` for a
non-carrier, so with prevalence ``pi`` the report probability is
``lambda = P0 + pi (P1 - P0)`` and the unbiased estimator ``(lambda_hat - P0) / (P1 - P0)``
has the standard error

    SE(pi) = s(pi) / sqrt(n),    s(pi)^2 = lambda (1 - lambda) / (P1 - P0)^2

(Warner 1965).  ``s(pi)^2`` is the inverse Fisher information of one report; for designs
with more than two reports (Kuk with ``draws > 1``) it is ``1 / I(pi)`` with
``I(pi) = sum_r (P(r|1) - P(r|0))^2 / P(r)`` over the report values ``r``, the variance of
the efficient estimator (the MLE).

Tests (``alternative`` names H1 in terms of the prevalence):

* one sample, ``H0: pi = pi0`` against ``pi1`` with ``Delta = pi1 - pi0``,
  ``SE0 = s(pi0)/sqrt(n)``, ``SE1 = s(pi1)/sqrt(n)``;
* two samples (treatment ``a`` of size ``n_a``, control ``b`` of size ``n_b``, the same
  design in both), testing the difference ``pi_a - pi_b``, ``SE1^2 = s(pi_a)^2/n_a +
  s(pi_b)^2/n_b``, and two ways to state H0:

  - *pooled* (give ``control`` only): ``H0: pi_a = pi_b``, with the null SE at the pooled
    prevalence ``pi_bar = (n_a pi_a + n_b pi_b) / (n_a + n_b)``,
    ``SE0^2 = s(pi_bar)^2 (1/n_a + 1/n_b)``, ``Delta = pi_a - pi_b`` (Fleiss, Levin & Paik
    2003, ch. 4);
  - *stated* (give ``control`` and ``null`` and/or ``null_control``): the null prevalences
    ``pi_a0 = null`` and ``pi_b0 = null_control`` of each group are given (the one left out
    equals the other), ``H0: pi_a - pi_b = pi_a0 - pi_b0``, ``SE0^2 = s(pi_a0)^2/n_a +
    s(pi_b0)^2/n_b``, ``Delta = (pi_a - pi_b) - (pi_a0 - pi_b0)``.  This is R's rr
    ``power.rr.test(type = "two.sample")`` (Blair, Imai & Zhou 2015): ``prespT.null`` and
    ``prespC.null`` are ``null`` and ``null_control``, ``prespT.null`` defaulting to
    ``prespC.null`` there too; rr takes ``n`` in each group.

The Wald test rejects when ``(pi_hat - pi0) / SE0`` exceeds ``z_(1-alpha)`` (``greater``),
falls below ``-z_(1-alpha)`` (``less``), or leaves ``[-z_(1-alpha/2), z_(1-alpha/2)]``
(``two-sided``); with ``pi_hat`` normal around the truth with ``SE1`` its power is

    greater:    Phi((Delta - z_(1-alpha) SE0) / SE1)
    less:       Phi((-Delta - z_(1-alpha) SE0) / SE1)
    two-sided:  Phi((Delta - z_(1-alpha/2) SE0) / SE1) + Phi((-Delta - z_(1-alpha/2) SE0) / SE1)

(Lachin 1981; Fleiss, Levin & Paik 2003, ch. 4, for the pooled two-sample form).  The exact
one-sample test instead rejects when the number of "yes" reports falls in a critical region
of ``Binomial(n, lambda0)`` (:func:`power` with ``method="exact"``).

Two-group designs (``unrelated-unknown`` and the other designs with a second group to
estimate a nuisance parameter): respondents are assigned to group 1 with probability
``share``, and ``s(pi)^2 = n Var(pi_hat)`` at the expected group sizes
``(share n, (1 - share) n)`` is the design's ``prevalence_variance``: the inverse of the
full Fisher information of both groups with the nuisance *estimated* (the efficient
variance).  The naive variance with the nuisance taken as known
(``prevalence_variance_known``) is smaller; its power is reported beside the efficient one
(``power_known``) to show what not knowing the nuisance costs.  R's rr (``power.rr.test``,
designs ``unrelated-unknown``/``forced-unknown``) also inverts a Fisher information, but
only the prevalence's own entry: that is the naive figure.

References
----------
S. L. Warner (1965), Randomized response, JASA 60(309), 63-69.
G. Blair, K. Imai & Y.-Y. Zhou (2015), Design and analysis of the randomized response
technique, JASA 110(511), 1304-1319 (R package rr, ``power.rr.test``).
J. M. Lachin (1981), Introduction to sample size determination and power analysis for
clinical trials, Controlled Clinical Trials 2(2), 93-113.
J. L. Fleiss, B. Levin & M. C. Paik (2003), Statistical Methods for Rates and Proportions,
3rd ed., Wiley.
M. R. Chernick & C. Y. Liu (2002), The saw-toothed behavior of power versus sample size and
software solutions, The American Statistician 56(2), 149-155 (exact binomial power).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Design
from deniable.estimation._power_exact import randomized_power_bound
from deniable.estimation._power_model import (
    FloatArray,
    PowerTest,
    control_size,
    make_test,
)
from deniable.estimation._power_results import PowerResult, SampleSizeResult
from deniable.exceptions import ParameterError

__all__ = [
    "MAX_SCAN",
    "power",
    "power_curve",
    "sample_size",
    "unit_variance",
]

#: Largest n an exhaustive scan visits by default (exact test, non-integer ``ratio``).
MAX_SCAN = 10**7
#: Largest sample size of :func:`power` (the exact test counts with 64-bit integers).
MAX_N = 2**62
_CHUNK = 1 << 14


def unit_variance(
    design: Design,
    prevalence: float,
    *,
    category: int | None = None,
    share: float | None = None,
    nuisance: Mapping[str, float] | None = None,
) -> float:
    """``s(pi)^2``: ``n`` times the variance of the prevalence estimator at ``prevalence``.

    Binary reports: ``lambda (1 - lambda) / (P1 - P0)^2``.  Kuk with ``draws > 1``: the
    inverse Fisher information ``1 / sum_r (P(r|1) - P(r|0))^2 / P(r)`` of the red count
    (the MLE's variance; the moment estimator's is larger, see ``Kuk.variance``).
    Categorical: the binary design "report ``category`` or not" (``P1 - P0 = p_truthful``).
    Two-group designs: the efficient variance with the nuisance estimated (module
    docstring), a share ``share`` (default 1/2) in group 1.

    >>> from deniable import Warner
    >>> from deniable.estimation import unit_variance
    >>> round(unit_variance(Warner(0.7), 0.5), 6)     # 0.25 / 0.4^2
    1.5625
    """
    t = make_test(
        design, prevalence, prevalence, None, "two-sided", 0.05, "normal", category, share, nuisance
    )
    return float(t.var(np.array(t.prevalence)))


def _test(
    design: Any,
    prevalence: Any,
    null: Any,
    control: Any,
    null_control: Any,
    alternative: Any,
    alpha: Any,
    method: Any,
    category: Any,
    share: Any,
    nuisance: Any,
) -> PowerTest:
    return make_test(
        design, prevalence, null, control, alternative, alpha, method, category, share,
        nuisance, null_control,
    )  # fmt: skip


def power(
    design: Design,
    n: int,
    prevalence: float,
    null: float | None = None,
    *,
    control: float | None = None,
    n_control: int | None = None,
    null_control: float | None = None,
    alternative: str = "two-sided",
    alpha: float = 0.05,
    method: str = "normal",
    category: int | None = None,
    share: float | None = None,
    nuisance: Mapping[str, float] | None = None,
) -> PowerResult:
    """Power of a test of the prevalence at sample size ``n``.

    One sample (give ``null``): ``H0: pi = null`` when the true prevalence is ``prevalence``.
    Two samples (give ``control``): ``n`` respondents with prevalence ``prevalence`` against
    ``n_control`` (default ``n``) with prevalence ``control``.  ``H0``: equal prevalences
    with the pooled null SE; or, given ``null`` and/or ``null_control`` (the stated null
    prevalences of the treatment and control groups, R's rr convention),
    ``pi_a - pi_b = null - null_control`` with each group's SE at its null prevalence.
    Formulas in the module docstring.

    Parameters
    ----------
    design : Design
        A one-group design (binary; Kuk with any number of draws; categorical with
        ``category``), or a two-group design (with ``share`` and ``nuisance``).
    n : int
        The sample size (>= 1; the treatment group's for two samples).
    prevalence : float
        The true prevalence in [0, 1] (of the treatment group for two samples).
    null : float, optional
        The prevalence under H0 (one-sample test); with ``control``, the treatment group's
        stated null prevalence (default ``null_control``).
    control, n_control : float, int, optional
        The control group's prevalence and size (two-sample test).
    null_control : float, optional
        With ``control``: the control group's stated null prevalence (default ``null``).
        Without ``null`` and ``null_control`` the two-sample test is the pooled one.
    alternative : {"two-sided", "greater", "less"}
        H1: the prevalence differs from / is above / is below ``null`` (or ``control``).
    alpha : float
        The significance level, in (0, 1).
    method : {"normal", "exact"}
        ``normal``: the Wald test, power from the normal approximation.  ``exact`` (one
        sample, one binomial count): the exact binomial test of the yes count; the result
        carries its ``critical_region`` and attained ``size`` (<= alpha).
    category : int, optional
        Categorical designs only: the category whose prevalence is tested.
    share : float, optional
        Two-group designs only: the probability of assignment to group 1 (default 1/2).
    nuisance : mapping, optional
        Two-group designs only: the true values of the other parameters (the same under H0
        and H1), e.g. ``{"q": 0.3}``; those with a default may be left out.

    Examples
    --------
    >>> from deniable import Warner, power
    >>> r = power(Warner(0.7), 1000, 0.6, null=0.5, alternative="greater")
    >>> round(r.power, 4), round(r.se_null, 6), round(r.se_alternative, 6)
    (0.8127, 0.039528, 0.039402)
    >>> pooled = power(Warner(0.7), 1000, 0.3, control=0.2)
    >>> stated = power(Warner(0.7), 1000, 0.3, control=0.2, null_control=0.2)
    >>> pooled.null_hypothesis, round(pooled.power, 4)
    ('pooled', 0.4466)
    >>> stated.null_hypothesis, round(stated.power, 4)
    ('stated', 0.4538)
    """
    t = _test(
        design, prevalence, null, control, null_control, alternative, alpha, method, category,
        share, nuisance,
    )  # fmt: skip
    size = v.integer("n", n, minimum=1, maximum=MAX_N, why="counts are 64-bit integers")
    if control is None:
        if n_control is not None:
            raise ParameterError(
                f"`n_control` applies to a two-sample test (give `control`), got {n_control!r}."
            )
        return t.result(size, None)
    nb = (
        size
        if n_control is None
        else v.integer(
            "n_control", n_control, minimum=1, maximum=MAX_N, why="counts are 64-bit integers"
        )
    )
    return t.result(size, nb)


def power_curve(
    design: Design,
    n: npt.ArrayLike,
    prevalence: float,
    null: float | None = None,
    *,
    control: float | None = None,
    null_control: float | None = None,
    ratio: float = 1.0,
    alternative: str = "two-sided",
    alpha: float = 0.05,
    method: str = "normal",
    category: int | None = None,
    share: float | None = None,
    nuisance: Mapping[str, float] | None = None,
    known: bool = False,
) -> FloatArray:
    """Power at every sample size in ``n`` (vectorized); two samples have
    ``n_control = ceil(ratio * n)``; ``known``: the naive power of a two-group design.
    Other parameters as in :func:`power`.

    >>> from deniable import Warner
    >>> from deniable.estimation import power_curve
    >>> power_curve(Warner(0.7), [10, 100, 1000], 0.6, null=0.5).round(3)
    array([0.057, 0.125, 0.716])
    """
    t = _test(
        design, prevalence, null, control, null_control, alternative, alpha, method, category,
        share, nuisance,
    )  # fmt: skip
    ns = np.asarray(n)
    if ns.ndim != 1 or (ns.size and (ns.dtype.kind not in "iu" or ns.min() < 1)):
        raise ParameterError(f"`n` must be a 1-D array of integers >= 1, got {ns.tolist()!r}.")
    if known and not t.two_group:
        raise ParameterError(
            f"`known` applies to two-group designs only, got True for design {design.name!r}."
        )
    k = v.positive("ratio", ratio) if control is not None else 1.0
    return t.power(ns, control_size(ns, k), known)


def _bisect(f: Callable[[int], float], target: float, hi: int) -> int:
    """Least ``n`` in ``[1, hi]`` with ``f(n) >= target``, given ``f`` nondecreasing and
    ``f(hi) >= target``."""
    lo = 0  # invariant: f(lo) < target (f(0) read as 0), f(hi) >= target
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if f(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def _scan(f: Callable[[Any], FloatArray], target: float, start: int, max_n: int) -> int | None:
    """Least ``n`` in ``[start, max_n]`` with ``f(n) >= target`` (vectorized, in blocks)."""
    while start <= max_n:
        ns = np.arange(start, min(start + _CHUNK, max_n + 1), dtype=np.int64)
        hit = np.flatnonzero(f(ns) >= target)
        if hit.size:
            return int(ns[hit[0]])
        start += _CHUNK
    return None


def sample_size(
    design: Design,
    power: float,
    prevalence: float,
    null: float | None = None,
    *,
    control: float | None = None,
    null_control: float | None = None,
    ratio: float = 1.0,
    alternative: str = "two-sided",
    alpha: float = 0.05,
    method: str = "normal",
    category: int | None = None,
    share: float | None = None,
    nuisance: Mapping[str, float] | None = None,
    max_n: int = MAX_SCAN,
) -> SampleSizeResult:
    """The minimal ``n`` whose power reaches ``power``: ``power(n) >= power > power(n - 1)``.

    Two samples: ``n`` treated respondents and ``n_control = ceil(ratio * n)`` controls.
    Other parameters as in :func:`power`; ``max_n`` bounds the scans described below.
    Two-group designs: ``n`` is the total over both groups, and ``n_known`` the minimal
    ``n`` if the nuisance were known (the naive figure, shown beside the efficient one).

    Why the result is minimal.  *Normal approximation, sizes proportional to* ``n`` (one
    sample; two samples with an integer ``ratio`` ``k``, whose pooled null
    ``(pi_a + k pi_b) / (1 + k)`` does not depend on ``n``): ``SE0 = sigma0 / sqrt(n)``
    and ``SE1 = sigma1 / sqrt(n)`` with ``sigma0, sigma1`` constant.  One-sided, the power
    ``Phi((sqrt(n) Delta - z sigma0) / sigma1)`` (``Delta > 0`` toward H1) increases with
    ``n`` (two-group designs: expected group sizes ``share n`` and ``(1 - share) n``).
    Two-sided, with ``t = sqrt(n) |Delta| / sigma1`` and ``a = z sigma0 / sigma1``,
    the power ``Phi(t - a) + Phi(-t - a)`` has derivative ``phi(t - a) - phi(t + a) >= 0``
    in ``t`` because ``|t - a| <= t + a`` for ``t, a >= 0``.  So ``{n : power(n) >=
    target}`` is an up-set, and bisection on the integers (bracketed by the one-tail bound
    ``ceil(((z sigma0 + z_target sigma1) / |Delta|)^2)``) returns its least element.
    *Non-integer ratio*: rounding the control size breaks the proportionality, so every
    ``n`` from 1 is evaluated (``search="scan"``).  *Exact test*: its power is saw-toothed
    in ``n``; it is bounded above by the randomized Neyman-Pearson test's power, which is
    nondecreasing in ``n`` (see ``randomized_power_bound``), so the sizes where that bound
    is below the target are skipped and every ``n`` from there on is evaluated.  The
    exact answer may have ``power(n + 1) < target`` (Chernick & Liu 2002).

    R's rr (``power.rr.test``) instead returns the first ``n`` whose power is within 0.01
    of the target, which can be smaller than the minimal ``n`` and fall short of the target.

    >>> from deniable import Custom, sample_size
    >>> direct = Custom(1.0, 0.0)          # no randomization: the classic z-test
    >>> r = sample_size(direct, 0.8, 0.6, null=0.5, alternative="greater")
    >>> r.n       # ceil(((1.6449 * 0.5 + 0.8416 * sqrt(0.24)) / 0.1)^2)
    153
    >>> round(r.power, 4), round(r.power_previous, 4)
    (0.8013, 0.7989)
    """
    t = _test(
        design, prevalence, null, control, null_control, alternative, alpha, method, category,
        share, nuisance,
    )  # fmt: skip
    target = v.probability("power", power, low_open=True, high_open=True)
    limit = v.integer(
        "max_n", max_n, minimum=1, maximum=MAX_SCAN * 10, why="the scan's time grows with max_n"
    )
    base = "null" if control is None else "control"
    if t.stated:
        base = "control` + (`null` - `null_control`)"
    if t.delta == 0:
        raise ParameterError(
            f"`prevalence` must differ from `{base}` to find a sample size (the power stays "
            f"at alpha), got {t.prevalence} for both."
        )
    if (t.alternative == "greater") == (t.delta < 0) and t.alternative != "two-sided":
        rel = "above" if t.alternative == "greater" else "below"
        raise ParameterError(
            f"`prevalence` must be {rel} `{base}` for alternative={t.alternative!r} (the "
            f"power falls to 0 as n grows), got {t.prevalence} and {t.prevalence - t.delta}."
        )
    k = v.positive("ratio", ratio) if control is not None else 1.0
    n, search = _least_n(t, k, target, limit, known=False)
    n_known = _least_n(t, k, target, limit, known=True)[0] if t.two_group else None
    previous = None if n == 1 else float(t.power([n - 1], control_size(n - 1, k))[0])
    nb = None if control is None else int(control_size(n, k))
    return SampleSizeResult(t.result(n, nb), target, previous, search, n_known)


def _least_n(t: PowerTest, k: float, target: float, limit: int, known: bool) -> tuple[int, str]:
    """The least ``n`` reaching ``target`` and how it was found (``sample_size``)."""

    def f(ns: Any) -> FloatArray:
        return t.power(ns, control_size(ns, k), known)

    if t.method == "normal" and float(k).is_integer():
        hi = _bracket(t, k, target, f, known)
        return _bisect(lambda m: float(f(np.array([m]))[0]), target, hi), "bisection"
    start = _exact_start(t, target, limit) if t.method == "exact" else 1
    found = _scan(f, target, start, limit)
    if found is None:
        raise ParameterError(
            f"`max_n` must be larger: no n <= {limit} reaches power {target} with "
            f"method={t.method!r}, got max_n={limit}."
        )
    return found, "scan"


def _exact_start(t: PowerTest, target: float, limit: int) -> int:
    """Least ``n`` where the monotone randomized-test bound reaches ``target``: no smaller
    ``n`` can reach it with the exact test.  A ``1e-9`` slack absorbs float wobble."""
    lam0, lam1, tail = t.exact_setup()

    def g(m: int) -> float:
        return float(randomized_power_bound([m], lam0, lam1, tail, t.alpha)[0])

    goal = target - 1e-9
    hi = 1
    while g(hi) < goal:
        if hi > limit:
            return limit + 1  # the scan then finds nothing and reports max_n
        hi *= 2
    return _bisect(g, goal, hi)


def _bracket(
    t: PowerTest, k: float, target: float, f: Callable[[Any], FloatArray], known: bool
) -> int:
    """An ``n`` whose power reaches ``target``: the one-tail normal bound, doubled while
    float rounding leaves it short."""
    from scipy import stats

    z = float(stats.norm.isf(t.alpha if t.alternative != "two-sided" else t.alpha / 2))
    zb = float(stats.norm.ppf(target))

    def s2(pi: float) -> float:
        return float(t.var(np.array(pi), known))

    if t.control is None:
        assert t.null is not None
        s0, s1 = math.sqrt(s2(t.null)), math.sqrt(s2(t.prevalence))
    else:
        if t.stated:
            assert t.null is not None and t.null_control is not None
            s0 = math.sqrt(s2(t.null) + s2(t.null_control) / k)
        else:
            pooled = (t.prevalence + k * t.control) / (1 + k)
            s0 = math.sqrt(s2(pooled) * (1 + 1 / k))
        s1 = math.sqrt(s2(t.prevalence) + s2(t.control) / k)
    root = (z * s0 + zb * s1) / abs(t.delta)
    hi = max(1, math.ceil(root * root)) if 0 < root * root <= 10**15 else 1
    if root * root > 10**15:  # (with a difference of 5e-324, root is inf)
        hi = 10**15 + 1
    while hi <= 10**15:
        if float(f(np.array([hi]))[0]) >= target:
            return hi
        hi *= 2
    raise ParameterError(
        f"`prevalence` is too close to `{'null' if t.control is None else 'control'}`: the "
        f"sample size for power {target} exceeds 10**15 (difference {abs(t.delta)})."
    )
