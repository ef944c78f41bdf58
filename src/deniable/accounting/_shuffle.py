"""Privacy amplification by shuffling: n respondents, each answering with an ``epsilon0``-LDP
randomizer (e.g. randomized response), whose reports are shuffled before release.

Two bounds on the central (epsilon, delta) of the shuffled reports, both from Feldman,
McMillan & Talwar (2021), "Hiding Among the Clones: A Simple and Nearly Optimal Analysis of
Privacy Amplification by Shuffling", FOCS 2021, arXiv:2012.12803:

* the closed form of their Theorem 3.1, valid for
  ``epsilon0 <= ln(n / (16 ln(2/delta)))``;
* their numerical bound: the exact hockey-stick divergence of the two "clone" distributions
  their reduction ends with (Sec. 4 and App. E), bisected on epsilon.

The clone reduction: each of the other ``n - 1`` respondents is, with probability
``e^(-epsilon0)``, a *clone* whose report looks like the target's report on one of the two
neighbouring inputs (each with probability 1/2).  With ``C ~ Bin(n - 1, e^(-epsilon0))``
clones, ``A ~ Bin(C, 1/2)`` of them of the first kind and ``alpha = e^eps0 / (1 + e^eps0)``,
the shuffled output is a post-processing of the count of first-kind reports,

    P = A + Bernoulli(1 - alpha)     versus     Q = A + Bernoulli(alpha)

(``C`` itself is observed).  So ``delta(eps) <= E_C[D_{e^eps}(P_C || Q_C)]``, which is computed
here exactly, term by term, with scipy's binomial pmf and cdf.

Both bounds are capped at ``epsilon0``: the shuffled reports are a post-processing of the
local reports, which are already ``epsilon0``-DP (with ``delta = 0``) for a change of one
respondent's answer, so shuffling never hurts.

Proof note: ``proofs/shuffle.md`` (the claims, their theorems, the tests).

Argument order, as in the composition functions: the local ``epsilon0`` first, then the
target (``delta``, or ``epsilon`` for a delta), then the number of respondents as the
keyword ``n=`` (``shuffle_epsilon_numerical(1.0, 1e-6, n=100_000)``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.accounting._measures import ApproxDP
from deniable.accounting._safety import exp_or_inf, expm1_or_inf
from deniable.common import format_delta, format_epsilon, to_jsonable
from deniable.common import validation as v
from deniable.common.validation import fmt_limit
from deniable.exceptions import ParameterError
from deniable.results import Result, Table

__all__ = [
    "ShuffleTable",
    "shuffle_closed_form_limit",
    "shuffle_delta_numerical",
    "shuffle_epsilon_closed_form",
    "shuffle_epsilon_numerical",
    "shuffle_epsilon_table",
    "shuffle_guarantee",
]


#: Largest ``n`` of the numerical bound: its window of clone counts grows like ``sqrt(n)``
#: and the bisection sums over it ~40 times (about 2.5 s at the limit, 20 s at 10**9).
MAX_NUMERICAL_N = 10**8
_NUMERICAL_WHY = "the numerical bound's work grows like sqrt(n); the closed form takes any n"


def _check_numerical_n(n: Any) -> int:
    return v.integer("n", n, minimum=1, maximum=MAX_NUMERICAL_N, why=_NUMERICAL_WHY)


def _check(epsilon0: Any, n: Any, delta: Any) -> tuple[float, int, float]:
    eps0 = v.positive("epsilon0", epsilon0)
    size = v.integer("n", n, minimum=1, maximum=10**300, why="the formulas use doubles")
    dlt = v.probability("delta", delta, low_open=True, high_open=True)
    return eps0, size, dlt


def shuffle_closed_form_limit(delta: float, *, n: int) -> float:
    """The largest local ``epsilon0`` that the closed form of Feldman, McMillan & Talwar
    (2021), Theorem 3.1, covers for ``n`` shuffled reports at ``delta``:
    ``ln(n / (16 ln(2 / delta)))`` (at most 0, or ``-inf``, when ``n <= 16 ln(2 / delta)``:
    no ``epsilon0 > 0`` qualifies).  :func:`shuffle_epsilon_closed_form` refuses an
    ``epsilon0`` above it, and the command line states it in its refusal.

    >>> round(shuffle_closed_form_limit(1e-6, n=100_000), 4)
    6.0656
    >>> shuffle_closed_form_limit(1e-6, n=100) < 0
    True
    """
    dlt = v.probability("delta", delta, low_open=True, high_open=True)
    size = v.integer("n", n, minimum=1, maximum=10**300, why="the formulas use doubles")
    return _closed_form_limit(size, dlt)


def _closed_form_limit(n: int, delta: float) -> float:
    ratio = n / (16 * math.log(2 / delta))  # 0 when 2 / delta overflows (delta = 5e-324)
    return math.log(ratio) if ratio > 0 else -math.inf


def shuffle_epsilon_closed_form(epsilon0: float, delta: float, *, n: int) -> float:
    """Central epsilon of ``n`` shuffled ``epsilon0``-LDP reports, closed form.

    Feldman, McMillan & Talwar (2021), Theorem 3.1 (arXiv:2012.12803, FOCS 2021 version):
    for ``epsilon0 <= ln(n / (16 ln(2/delta)))`` the shuffled reports are (eps, delta)-DP with

        eps = ln(1 + (e^eps0 - 1)/(e^eps0 + 1) * (8 sqrt(e^eps0 ln(4/delta)) / sqrt(n)
                                                  + 8 e^eps0 / n)).

    Outside that range this raises :class:`~deniable.exceptions.ParameterError` rather than
    return a bound the theorem does not give.  The result is rounded up by 1e-12 relative and
    capped at ``epsilon0`` (shuffling never hurts).

    >>> round(shuffle_epsilon_closed_form(1.0, 1e-6, n=100_000), 4)
    0.0726
    """
    eps0, size, dlt = _check(epsilon0, n, delta)
    limit = _closed_form_limit(size, dlt)
    if eps0 > limit:
        if limit <= 0:
            raise ParameterError(
                f"`n` must exceed 16 ln(2/delta) = {16 * math.log(2 / dlt):.4g} for the "
                f"closed form (Feldman-McMillan-Talwar 2021, Thm. 3.1), got {size}."
            )
        raise ParameterError(
            f"`epsilon0` must be in (0, ln(n / (16 ln(2/delta)))] = (0, {limit:.6g}] for "
            f"n={size}, delta={dlt:g} (Feldman-McMillan-Talwar 2021, Thm. 3.1), got {eps0}; "
            "use shuffle_epsilon_numerical."
        )
    e0 = math.exp(eps0)
    # eps = ln(1 + tanh(eps0/2) (8 sqrt(e^eps0 ln(4/delta) / n) + 8 e^eps0 / n))
    inner = 8 * math.sqrt(e0 * math.log(4 / dlt)) / math.sqrt(size) + 8 * e0 / size
    eps = math.log1p(math.tanh(eps0 / 2) * inner)
    # rounded up by 1e-12 relative: far above the few-ulp rounding error of the formula
    return min(eps * (1 + 1e-12), eps0)


def _relative_error(c: Any) -> Any:
    """Slack covering the relative error of scipy's binomial pmf and cdf at size ``c``.

    Against exact integer arithmetic, ``scipy.stats.binom.pmf`` / ``cdf`` (Boost) were off by
    at most ~3e-18 c relative for c up to 3e6 (2e-13 at c = 1e5, 9e-12 at 3e6); this charges
    1e-12 + 1e-16 c, more than thirty times that.  (``binom.logpmf`` is much worse, ~1e-9 at
    c = 1e6, through cancelling log-gammas, and is not used.)  Values that underflow to 0
    are below 1e-300 and do not matter.
    """
    return 1e-12 + 1e-16 * c


@dataclass(frozen=True)
class _Clones:
    """The law of the clone count ``C ~ Bin(n - 1, e^(-eps0))`` on a window of values, and the
    mass outside the window (charged in full by :meth:`delta`)."""

    eps0: float
    c: npt.NDArray[np.int64]
    pc: npt.NDArray[np.float64]
    outside: float
    slack: float

    @classmethod
    def build(cls, eps0: float, n: int, tail: float) -> _Clones:
        from scipy import stats

        m, q = n - 1, math.exp(-eps0)
        if m == 0:
            return cls(eps0, np.zeros(1, dtype=np.int64), np.ones(1), 0.0, 0.0)
        # Bernstein: P(C - mu >= t) <= exp(-t^2 / (2 (var + t/3))); lower tail without t/3.
        mu, var, big_l = m * q, m * q * (1 - q), math.log(1 / tail)
        t_up = big_l / 3 + math.sqrt((big_l / 3) ** 2 + 2 * var * big_l)
        t_down = math.sqrt(2 * var * big_l)
        lo = max(math.floor(mu - t_down) - 1, 0)
        hi = min(math.ceil(mu + t_up) + 1, m)
        c = np.arange(lo, hi + 1, dtype=np.int64)
        outside = float(stats.binom.cdf(lo - 1, m, q) + stats.binom.sf(hi, m, q))
        pc = np.asarray(stats.binom.pmf(c, m, q), dtype=np.float64)
        return cls(eps0, c, pc, outside, _relative_error(m))

    def delta(self, eps: float) -> float:
        """Upper bound on ``E_C[D_{e^eps}(P_C || Q_C)]`` for the clone pair (module docstring).

        Given ``C = c`` and ``b``, ``F`` the pmf and cdf of ``Bin(c, 1/2)``:
        ``P(k) - e^eps Q(k) = A1 b(k) - A2 b(k - 1)`` with ``A1 = alpha - e^eps (1 - alpha)``
        and ``A2 = e^eps alpha - (1 - alpha)``.  The likelihood ratio falls with k, so the
        positive part is ``k <= K_c = ceil((c + 1) A1 / (A1 + A2)) - 1``, and telescoping
        gives ``D_c = A1 b(K_c) - (e^eps - 1) F(K_c - 1)``.  Rounding can misplace ``K_c`` by
        one only where the boundary term is ~1e-16 of ``A1 b(K_c)``; that, and the rounding
        of the pmf and cdf, is covered by a slack of :func:`_relative_error` times the
        two terms.  The mass of
        C outside the window is charged at the largest possible ``D_c``, the total variation
        ``2 alpha - 1``.  ``P`` and ``Q`` are mirror images
        (``k -> c + 1 - k``), so one direction suffices.
        """
        from scipy import stats

        eps0 = self.eps0
        if eps >= eps0:
            return 0.0  # the likelihood ratio never exceeds e^eps0
        tv = math.tanh(eps0 / 2)  # 2 alpha - 1
        # A1 = alpha - e^eps beta = (1 - e^(eps - eps0)) / (1 + e^-eps0) (beta = 1 - alpha =
        # e^-eps0 / (1 + e^-eps0)): no cancellation, and no overflow however large eps0 is
        a1 = -math.expm1(eps - eps0) / (1 + math.exp(-eps0))
        ee = exp_or_inf(eps)
        share = a1 / tv / (1 + ee)  # A1 / (A1 + A2); 0 when e^eps overflows
        c = self.c
        # share > 0 (A1 > 0 as eps < eps0), so K >= 0 even where share underflows to 0
        k = np.maximum(np.ceil((c + 1) * share).astype(np.int64) - 1, 0)
        pos = self.pc * stats.binom.pmf(k, c, 0.5) * a1
        cdf = self.pc * stats.binom.cdf(k - 1, c, 0.5)
        # (e^eps - 1) F(K - 1): 0 where F(K - 1) = 0 (K = 0), even if e^eps overflows
        with np.errstate(over="ignore", invalid="ignore"):
            neg = np.where(cdf > 0, cdf * expm1_or_inf(eps), 0.0)
        terms = np.maximum(pos - neg, 0.0) + _relative_error(c) * (pos + neg)
        return float(np.sum(terms) * (1 + self.slack) + self.outside * tv)


def shuffle_delta_numerical(epsilon0: float, epsilon: float, *, n: int) -> float:
    """Upper bound on the ``delta`` at which ``n`` shuffled ``epsilon0``-LDP reports are
    (``epsilon``, delta)-DP: the exact clone hockey stick (module docstring), rounded up.

    >>> shuffle_delta_numerical(1.0, 1.0, n=1)
    0.0
    """
    eps0 = v.positive("epsilon0", epsilon0)
    size = _check_numerical_n(n)
    eps = v.positive("epsilon", epsilon, allow_zero=True)
    if math.exp(-eps0) == 1.0:  # eps0 below double resolution: only the LDP bound is safe
        return 0.0 if eps >= eps0 else 1.0
    return min(_Clones.build(eps0, size, 1e-30).delta(eps), 1.0)


def shuffle_epsilon_numerical(
    epsilon0: float, delta: float, *, n: int, tolerance: float = 1e-6
) -> float:
    """Central epsilon of ``n`` shuffled ``epsilon0``-LDP reports: the numerical bound of
    Feldman, McMillan & Talwar (2021, Sec. 4, App. E).

    Bisects on epsilon for the smallest value whose clone hockey stick
    (:func:`shuffle_delta_numerical`) is at most ``delta``, and returns the upper end of the
    final bracket (never an epsilon whose delta was not verified), to within ``tolerance``
    relative.  Valid for every ``n >= 1`` and ``epsilon0 > 0``; never above ``epsilon0``, and
    never above the closed form where that applies.

    >>> round(shuffle_epsilon_numerical(1.0, 1e-6, n=100_000), 4)
    0.0153
    """
    eps0, size, dlt = _check(epsilon0, n, delta)
    size = _check_numerical_n(size)
    tol = v.positive("tolerance", tolerance)
    if math.exp(-eps0) == 1.0:  # eps0 below double resolution: shuffling gives eps <= eps0
        return eps0
    # (the mass outside the window is charged in full, so a floor on the tail stays safe)
    clones = _Clones.build(eps0, size, tail=max(min(1e-18, dlt * 1e-6), 1e-300))

    def ok(eps: float) -> bool:
        return clones.delta(eps) <= dlt

    hi = eps0  # delta(eps0) = 0: the likelihood ratio never exceeds e^eps0
    if eps0 <= _closed_form_limit(size, dlt):
        cf = shuffle_epsilon_closed_form(eps0, dlt, n=size)
        if ok(cf):
            hi = cf
    lo = 0.0
    if ok(lo):
        return 0.0
    while hi - lo > tol * hi:
        mid = lo + (hi - lo) / 2  # (lo + hi) / 2 overflows near the largest double
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def shuffle_guarantee(
    epsilon0: float, delta: float, *, n: int, method: str = "numerical"
) -> ApproxDP:
    """The central guarantee ``ApproxDP(epsilon, delta)`` of ``n`` shuffled ``epsilon0``-LDP
    reports, by ``method="numerical"`` (default, tighter, any n) or ``"closed_form"``.

    ``epsilon`` is a float computed by bisection, so the digits past the ``tolerance`` of
    :func:`shuffle_epsilon_numerical` (1e-6 relative) carry no meaning.

    >>> shuffle_guarantee(1.0, 1e-6, n=10_000)
    ApproxDP(epsilon=0.0530053, delta=1e-06)
    """
    v.choice("method", method, ("numerical", "closed_form"))
    if method == "closed_form":
        return ApproxDP(shuffle_epsilon_closed_form(epsilon0, delta, n=n), delta)
    return ApproxDP(shuffle_epsilon_numerical(epsilon0, delta, n=n), delta)


@dataclass(frozen=True)
class ShuffleTable(Result):
    """Central epsilon of shuffled ``epsilon0``-LDP reports for a grid of ``n``.

    ``closed_form[i]`` is ``None`` where Theorem 3.1 does not apply
    (``epsilon0 > ln(n / (16 ln(2/delta)))``) or was not asked for; ``numerical[i]`` is
    ``None`` where it was not computed (``method="closed-form"``, or ``n`` above
    ``MAX_NUMERICAL_N`` (10^8) with ``method="both"``).  ``method`` says which bounds were
    asked for: ``both``, ``numerical`` or ``closed-form``.
    """

    epsilon0: float
    delta: float
    n: tuple[int, ...]
    closed_form: tuple[float | None, ...]
    numerical: tuple[float | None, ...]
    method: str = "both"

    def rows(self) -> list[dict[str, float | int | None]]:
        """One dict per ``n``: ``{"n", "closed_form", "numerical"}``."""
        return [
            {"n": size, "closed_form": cf, "numerical": num}
            for size, cf, num in zip(self.n, self.closed_form, self.numerical, strict=True)
        ]

    @property
    def _columns(self) -> tuple[str, ...]:
        return tuple(c for c, skip in (("closed_form", "numerical"), ("numerical", "closed-form"))
                     if self.method != skip)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON dict: ``epsilon0``, ``delta``, ``method`` and ``rows`` (``n`` and the
        bounds asked for; ``null`` where a bound does not apply)."""
        rows = [{"n": r["n"], **{c: r[c] for c in self._columns}} for r in self.rows()]
        result: dict[str, Any] = to_jsonable(
            {"epsilon0": self.epsilon0, "delta": self.delta, "method": self.method, "rows": rows}
        )
        return result

    def table(self) -> Table:
        """One row per ``n``: the central epsilon by each bound (``-`` where it does not
        apply)."""
        cols = self._columns
        rows = [(f"{r['n']:,}", *(_cell(r[c]) for c in cols)) for r in self.rows()]
        return Table(
            ("n", *(c.replace("_", " ") + " ε" for c in cols)),
            tuple(rows),
            title=(
                f"Shuffled reports, ε0 = {self.epsilon0:g} each: central ε at "
                f"δ = {format_delta(self.delta)}"
            ),
            notes=(
                "Feldman, McMillan & Talwar 2021: Thm. 3.1 (closed form; '-' where it does not "
                "apply) and the numerical clone bound ('-' for n above "
                f"{fmt_limit(MAX_NUMERICAL_N)}, where it would take too long). Never above ε0.",
            ),
            align="r" * (len(cols) + 1),
        )


def _cell(x: float | int | None) -> str:
    return "-" if x is None else format_epsilon(x)


def shuffle_epsilon_table(
    epsilon0: float,
    delta: float,
    *,
    n: Sequence[int] | npt.ArrayLike,
    method: str = "both",
    tolerance: float = 1e-6,
) -> ShuffleTable:
    """The bounds for each ``n`` in a grid: ``method="both"`` (the closed form, ``None``
    outside its range, and the numerical bound, ``None`` above ``MAX_NUMERICAL_N`` (10^8)),
    ``"numerical"`` or ``"closed-form"``.

    >>> table = shuffle_epsilon_table(2.0, 1e-6, n=[1_000, 100_000])
    >>> print(table)  # doctest: +NORMALIZE_WHITESPACE
    Shuffled reports, ε0 = 2 each: central ε at δ = 1e-06
          n  closed form ε  numerical ε
    -------  -------------  -----------
      1,000              -       0.5455
    100,000         0.1862       0.0450
    Feldman, McMillan & Talwar 2021: Thm. 3.1 (closed form; '-' where it does not apply) and
    the numerical clone bound ('-' for n above 10**8, where it would take too long). Never
    above ε0.
    """
    ns = tuple(_check(1.0, x, 0.5)[1] for x in np.atleast_1d(np.asarray(n, dtype=object)).tolist())
    eps0, _, dlt = _check(epsilon0, 1, delta)
    m = v.choice("method", method, ("both", "numerical", "closed-form"))
    closed: list[float | None] = []
    numerical: list[float | None] = []
    for size in ns:
        ok = m != "numerical" and eps0 <= _closed_form_limit(size, dlt)
        closed.append(shuffle_epsilon_closed_form(eps0, dlt, n=size) if ok else None)
        big = m == "both" and size > MAX_NUMERICAL_N
        numerical.append(
            None if m == "closed-form" or big
            else shuffle_epsilon_numerical(eps0, dlt, n=size, tolerance=tolerance)
        )  # fmt: skip
    return ShuffleTable(eps0, dlt, ns, tuple(closed), tuple(numerical), m)
