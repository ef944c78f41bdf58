"""Composition of pure-DP mechanisms (randomized response): closed-form bounds and the exact
optimum.

For ``n`` uses of mechanisms that are ``eps_i``-DP (``counts`` repeat an epsilon):

* basic: ``sum eps_i`` (Dwork, McSherry, Nissim & Smith 2006);
* advanced: ``sqrt(2 ln(1/delta) sum eps_i^2) + sum eps_i (e^eps_i - 1)``, reported as the
  minimum with basic (Dwork, Rothblum & Vadhan 2010, Thm III.3; with equal epsilons
  ``sqrt(2k ln(1/delta)) eps + k eps (e^eps - 1)``);
* KOV: ``min{sum eps_i, S + sqrt(2 Q ln(e + sqrt(Q)/delta)), S + sqrt(2 Q ln(1/delta))}`` with
  ``S = sum eps_i (e^eps_i - 1)/(e^eps_i + 1)``, ``Q = sum eps_i^2`` (Kairouz, Oh & Viswanath
  2015, Thm 3.4 for equal and Thm 3.5 for different epsilons);
* the exact optimum: the hockey-stick divergence of the k-fold product of binary randomized
  response pairs, which every eps-DP mechanism is a post-processing of (Kairouz, Oh &
  Viswanath 2015, Thm 3.3; Murtagh & Vadhan 2016).  With equal epsilons the number ``j`` of
  ``+eps`` losses is Binomial(k, e^eps/(1+e^eps)) and

      delta(eps') = sum_{j : (2j - k) eps > eps'} C(k, j) p^j q^(k-j) (1 - e^{eps' - (2j - k) eps})

  computed here in log space (k up to 10^5 and beyond).  Different epsilons go through the
  privacy loss distribution (``_pld``).

Proof note: ``proofs/optimal_composition.md`` (the claim, KOV 2015 Thm 3.3, the tests).

Argument order, the same in every composition function: the per-use privacy parameter(s)
first (``epsilons``, or one ``epsilon``), then the target (``delta``, or ``target_epsilon``
for a delta), then the repetitions as a keyword (``counts=`` per epsilon, ``count=`` for
one epsilon).
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import reduce
from typing import Any

import numpy as np

from deniable.accounting._rdp import check_delta, check_epsilon
from deniable.accounting._safety import MARGIN, UNIT, exp_up, expm1_or_inf, up, upper_root
from deniable.common import format_delta, format_epsilon, to_jsonable
from deniable.common import validation as v
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.results import Result, Table

__all__ = [
    "CompositionRow",
    "CompositionTable",
    "advanced_composition",
    "basic_composition",
    "common_lattice",
    "kov_composition",
    "optimal_rr_delta",
    "optimal_rr_epsilon",
    "sequence",
]

_MAX_DOUBLE = Fraction(sys.float_info.max)
_MAX_LATTICE = 2**23  # points of a composed exact lattice PLD
#: Largest ``count`` of :func:`optimal_rr_delta` / :func:`optimal_rr_epsilon`: the exact sum
#: has ``count + 1`` binomial terms, and the bisection evaluates it ~60 times (~2 s here).
MAX_EXACT_COUNT = 10**6


def sequence(name: str, value: Any, what: str | None = None) -> list[Any]:
    """``value`` as a list, or :class:`~deniable.exceptions.ParameterTypeError` naming
    ``name`` (and ``what`` it must hold; numbers by default)."""
    if isinstance(value, str | bytes):
        kind = "numbers" if what is None else f"a sequence of {what}"
        raise ParameterTypeError(f"`{name}` must be {kind}, got {type(value).__name__} {value!r}.")
    try:
        return list(value)
    except TypeError:
        kind = "a number or a sequence of numbers" if what is None else f"a sequence of {what}"
        raise ParameterTypeError(f"`{name}` must be {kind}, got {type(value).__name__}.") from None


def _pairs(epsilons: Any, counts: Any) -> tuple[list[float], list[int]]:
    if isinstance(epsilons, numbers.Real):
        epsilons = [epsilons]
    eps = [check_epsilon(e, "epsilons") for e in sequence("epsilons", epsilons)]
    if counts is None:
        cnt = [1] * len(eps)
    else:
        if isinstance(counts, numbers.Real):
            counts = [counts] * len(eps)
        cnt = [v.integer("counts", c, minimum=0) for c in sequence("counts", counts)]
        if len(cnt) != len(eps):
            raise ParameterError(
                f"`counts` must have one value per epsilon ({len(eps)}), got {len(cnt)}."
            )
    keep = [(e, c) for e, c in zip(eps, cnt, strict=True) if c > 0 and e > 0]
    return [e for e, _ in keep], [c for _, c in keep]


def basic_composition(epsilons: Sequence[float] | float, *, counts: Any = None) -> float:
    """``sum counts_i * epsilons_i``, rounded up; ``inf`` if any epsilon is, or if the sum
    exceeds the largest double.

    The sum is exact (rational arithmetic) and then rounded up to a double.

    >>> basic_composition([0.5] * 10), basic_composition([1e308, 1e308])
    (5.0, inf)
    """
    eps, cnt = _pairs(epsilons, counts)
    if any(e == math.inf for e in eps):
        return math.inf
    exact = sum((Fraction(e) * c for e, c in zip(eps, cnt, strict=True)), Fraction(0))
    if exact > _MAX_DOUBLE:
        return math.inf  # the true sum overflows a double
    out = float(exact)
    return math.nextafter(out, math.inf) if Fraction(out) < exact else out


def _with_basic(
    epsilons: Any, delta: float, counts: Any
) -> tuple[float, list[float], list[int], float]:
    """The checked ``delta``, the (epsilon, count) pairs and their basic composition."""
    d = check_delta(delta)
    eps, cnt = _pairs(epsilons, counts)
    return d, eps, cnt, basic_composition(eps, counts=cnt)


def advanced_composition(
    epsilons: Sequence[float] | float, delta: float, *, counts: Any = None
) -> float:
    """Dwork–Rothblum–Vadhan advanced composition, reported as the minimum with basic.

    For a large epsilon (``e^eps`` beyond the largest double, eps > 709.78) the DRV bound is
    ``inf`` and the minimum is the basic sum.

    >>> e = 0.1; k = 100; d = 1e-6
    >>> drv = math.sqrt(2 * k * math.log(1 / d)) * e + k * e * math.expm1(e)
    >>> math.isclose(advanced_composition([e], d, counts=[k]), drv, rel_tol=1e-9)
    True
    """
    d, eps, cnt, basic = _with_basic(epsilons, delta, counts)
    if basic == math.inf:
        return math.inf
    root = _root_sum_squares(eps, cnt)
    # e^eps - 1 overflows for eps > 709.78: the bound is then inf (and basic is reported)
    drift = _count_weighted_sum(cnt, [e * expm1_or_inf(e) for e in eps])
    return min(basic, up(math.sqrt(2 * -math.log(d)) * root + drift))


def kov_composition(
    epsilons: Sequence[float] | float, delta: float, *, counts: Any = None
) -> float:
    """Kairouz–Oh–Viswanath (2015) Thm 3.4/3.5 approximation of the optimal composition.

    >>> e = 0.1; k = 100; d = 1e-6; s = k * e * math.tanh(e / 2)
    >>> third = s + e * math.sqrt(2 * k * math.log(1 / d))
    >>> math.isclose(kov_composition([e], d, counts=[k]), third, rel_tol=1e-9)
    True
    """
    d, eps, cnt, basic = _with_basic(epsilons, delta, counts)
    if basic == math.inf:
        return math.inf
    s = _count_weighted_sum(cnt, [e * math.tanh(e / 2) for e in eps])
    root = _root_sum_squares(eps, cnt)  # sqrt(Q), Q = sum eps_i^2
    second = s + math.sqrt(2 * math.log(math.e + root / d)) * root
    third = s + math.sqrt(2 * -math.log(d)) * root
    return min(basic, up(second), up(third))


def _root_sum_squares(eps: list[float], cnt: list[int]) -> float:
    """``sqrt(sum c_i eps_i^2)``, scaled by the largest epsilon so that the squares neither
    underflow (``eps = 1e-200``: a positive result, not 0) nor overflow (``inf`` only when
    the true value does); a few ulps, inside the ``MARGIN`` that :func:`up` adds."""
    top = max(eps, default=0.0)
    if top == 0.0:
        return 0.0
    total = _count_weighted_sum(cnt, [(e / top) ** 2 for e in eps], sqrt=True)
    return top * total


def _count_weighted_sum(cnt: list[int], terms: list[float], *, sqrt: bool = False) -> float:
    """``sum c_i t_i`` (or its square root) for counts of any size (beyond the largest
    double too): the counts are scaled by the largest before they meet a float, and a sum
    beyond the largest double is ``inf``."""
    top = max(cnt, default=0)
    if top == 0:
        return 0.0
    try:
        inner = math.fsum((c / top) * t for c, t in zip(cnt, terms, strict=True))
    except OverflowError:  # the partial sums leave the doubles: the sum is that large
        return math.inf
    power = 0.5 if sqrt else 1.0
    if top < 2**1000:
        return math.sqrt(inner) * math.sqrt(float(top)) if sqrt else inner * float(top)
    if inner == 0.0:
        return 0.0
    # a count beyond the doubles: through logs (a few ulps; the callers round up by MARGIN)
    log_total = power * (math.log(inner) + math.log(top))
    return math.exp(log_total) if log_total < 709.0 else math.inf


_EXACT_WHY = "an exact sum of count + 1 binomial terms; basic, advanced and kov take any count"


def optimal_rr_delta(epsilon: float, target_epsilon: float, *, count: int = 1) -> float:
    """Exact ``delta(target_epsilon)`` of ``count`` uses of binary RR at ``epsilon`` (the
    optimal composition of ``count`` eps-DP mechanisms), summed over binomials in log space.

    One use: ``delta(eps') = max(0, (e^eps - e^eps') / (1 + e^eps))``.

    >>> e, t = 1.0, 0.5
    >>> math.isclose(optimal_rr_delta(e, t), (math.exp(e) - math.exp(t)) / (1 + math.exp(e)),
    ...              rel_tol=1e-9)
    True
    """
    from scipy import special

    eps = check_epsilon(epsilon)
    c = v.integer("count", count, minimum=0, maximum=MAX_EXACT_COUNT, why=_EXACT_WHY)
    t = check_epsilon(target_epsilon, "target_epsilon")
    if c == 0 or eps == 0.0 or t == math.inf:
        return 0.0
    if eps == math.inf:
        return 1.0
    top = basic_composition(eps, counts=c)
    if t >= top:
        return 0.0  # no outcome has a loss above the (exact, rounded-up) maximum
    if top == math.inf:
        return 1.0  # the largest loss is beyond every double: only the vacuous bound is safe
    j = np.arange(c + 1, dtype=float)
    loss = (2 * j - c) * eps
    shifted = t - 4 * UNIT * c * eps  # the float losses are within 4 u c eps of the true ones
    mask = loss > shifted
    if not mask.any():
        return 0.0
    log_p = -math.log1p(math.exp(-eps))
    log_q = -eps + log_p
    lg = special.gammaln
    log_pmf = lg(c + 1) - lg(j + 1) - lg(c - j + 1) + j * log_p + (c - j) * log_q
    terms = log_pmf[mask] + np.log(-np.expm1(shifted - loss[mask]))
    log_delta = float(special.logsumexp(terms))
    # gammaln differences lose ~u * gammaln(c + 1) absolutely: push the log up by 64x that
    err = 64 * UNIT * (3 * float(lg(c + 1)) + c * (abs(log_p) + abs(log_q)) + 2 * c * eps)
    return exp_up(log_delta, err / MARGIN)


def optimal_rr_epsilon(epsilon: float, delta: float, *, count: int = 1) -> float:
    """Exact ``epsilon(delta)`` of ``count`` uses of binary RR at ``epsilon``: bisection on
    :func:`optimal_rr_delta`, returning the upper end of the bracket.

    One use: ``epsilon(delta) = ln(e^eps - delta (1 + e^eps))`` (the root of the one-use
    formula of :func:`optimal_rr_delta`; 0 when that is negative).

    >>> round(optimal_rr_epsilon(1.0, 0.1), 6), round(math.log(math.e - 0.1 * (1 + math.e)), 6)
    (0.852905, 0.852905)
    >>> round(optimal_rr_epsilon(0.1, 1e-6, count=1000), 4)
    19.3447
    """
    eps = check_epsilon(epsilon)
    c = v.integer("count", count, minimum=0, maximum=MAX_EXACT_COUNT, why=_EXACT_WHY)
    d = check_delta(delta)
    if c == 0 or eps == 0.0:
        return 0.0
    if eps == math.inf:
        return math.inf
    top = basic_composition(eps, counts=c)
    if top == math.inf:
        return math.inf  # the count-fold loss overflows a double
    return upper_root(lambda t: optimal_rr_delta(eps, t, count=c), d, 0.0, top)


def common_lattice(
    epsilons: Sequence[float], *, counts: Sequence[int] | None = None
) -> float | None:
    """The largest ``g`` with every epsilon an integer multiple of it (each epsilon read as the
    decimal/rational with denominator <= 10^6 that it is within 4 ulps of), or ``None`` when
    there is none or the composed lattice (each epsilon used ``counts[i]`` times, once by
    default) would exceed 2^23 points.

    >>> common_lattice([0.5, 0.25, 1.0])
    0.25
    >>> common_lattice([math.log(3)]) is None
    True
    """
    eps = [check_epsilon(e, "epsilons") for e in sequence("epsilons", epsilons)]
    cnt = [1] * len(eps) if counts is None else sequence("counts", counts)
    if len(cnt) != len(eps):
        raise ParameterError(
            f"`counts` must have one value per epsilon ({len(eps)}), got {len(cnt)}."
        )
    cnt = [v.integer("counts", c, minimum=0) for c in cnt]
    if any(e == math.inf for e in eps):
        return None  # an infinite loss is on no lattice
    fracs = []
    for e in eps:
        f = Fraction(e).limit_denominator(10**6)
        if abs(float(f) - e) > 4 * 2.0**-53 * e:
            return None
        fracs.append(f)
    if not fracs:
        return None
    lcm = reduce(math.lcm, (f.denominator for f in fracs), 1)
    nums = [int(f * lcm) for f in fracs]
    g = reduce(math.gcd, nums, 0)
    if g == 0:
        return None  # every epsilon is 0: no loss, no lattice to speak of
    width = sum(2 * c * (n // g) for n, c in zip(nums, cnt, strict=True))
    if width > _MAX_LATTICE:
        return None
    return float(Fraction(g, lcm))


@dataclass(frozen=True)
class CompositionRow:
    """One method's total epsilon at the table's delta."""

    method: str
    epsilon: float
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "epsilon": self.epsilon, "note": self.note}


@dataclass(frozen=True)
class CompositionTable(Result):
    """Total epsilon at one ``delta`` under each composition method, side by side.

    Prints as a table (:meth:`table`); an infinite epsilon is printed as ``∞``, never as a
    number.  A table made by :func:`~deniable.accounting.compose_questions` also records
    the questionnaire: ``epsilons``, ``counts``, ``k``, ``method`` and
    ``optimal_is_exact``.
    """

    delta: float
    rows: tuple[CompositionRow, ...]
    description: str = ""
    epsilons: tuple[float, ...] = ()
    counts: tuple[int, ...] = ()
    k: int | None = None
    method: str | None = None
    optimal_is_exact: bool | None = None

    def __getitem__(self, method: str) -> float:
        for row in self.rows:
            if row.method == method:
                return row.epsilon
        raise KeyError(method)

    def to_dicts(self) -> list[dict[str, Any]]:
        return [row.to_dict() for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: the description, delta, one dict per method (``rows``) and
        ``epsilon`` (method -> total epsilon); for a questionnaire also its epsilons,
        counts, ``k``, number of questions, method and ``optimal_is_exact``."""
        out: dict[str, Any] = {"description": self.description}
        if self.method is not None:
            same = len(set(self.counts)) == 1
            out.update(
                epsilons=self.epsilons, count=self.counts[0] if same else self.counts,
                counts=self.counts, k=self.k, questions=sum(self.counts),
            )  # fmt: skip
        out["delta"] = self.delta
        if self.method is not None:
            out.update(method=self.method, optimal_is_exact=self.optimal_is_exact)
        out["rows"] = self.to_dicts()
        out["epsilon"] = {r.method: r.epsilon for r in self.rows}
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """One row per method: the total epsilon (an upper bound) and a note."""
        where = f"{self.description}, " if self.description else ""
        k = f"k = {self.k}, " if self.k is not None else ""
        return Table(
            ("method", "total ε", "note"),
            tuple((r.method, format_epsilon(r.epsilon), r.note) for r in self.rows),
            title=f"{where}{k}δ = {format_delta(self.delta)}",
            notes=("Every value is an upper bound on the true total ε (never below it).",),
            align="lrl",
        )
