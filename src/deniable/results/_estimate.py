"""Result objects and binomial intervals (a leaf: imports only numpy/scipy and the leaves).

An :class:`Estimate` carries the unbiased moment estimate, the bounded maximum-likelihood
estimate, standard errors in both conventions and the intervals the design supports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_number, to_jsonable
from deniable.common import validation as v
from deniable.exceptions import ParameterError
from deniable.results._interval import ConfidenceInterval
from deniable.results._table import Result, Table

__all__ = [
    "Estimate",
    "beta_quantile_bounds",
    "binomial_interval",
    "information_note",
    "map_interval",
    "normal_quantile",
    "t_quantile",
]

Interval = tuple[float, float]
IntervalFn = Callable[[float], Interval]
NotesFn = Callable[[float], tuple[str, ...]]

#: The level at which :attr:`Estimate.notes` are stated (the default of every interval).
DEFAULT_LEVEL = 0.95

SE_PLUG_IN = "plug-in: divides by n"


def normal_quantile(level: float) -> float:
    """Two-sided standard normal quantile ``z`` with ``P(|Z| <= z) = level``."""
    from scipy import stats

    return float(stats.norm.ppf(0.5 + v.level(level) / 2))


def t_quantile(level: float, df: float) -> float:
    """Two-sided Student t quantile at ``level`` with ``df`` degrees of freedom (NaN for
    ``df < 1``)."""
    from scipy import stats

    lvl = v.level(level)
    if not df >= 1:
        return math.nan
    return float(stats.t.ppf(0.5 + lvl / 2, df))


def beta_quantile_bounds(
    counts: npt.ArrayLike, n: int, tail: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Clopper & Pearson (1934) bounds for ``lambda`` from ``c`` of ``n``, each one-sided at
    error ``tail``, vectorized over ``counts`` (inputs are not validated):
    ``lower = Beta^-1(tail; c, n - c + 1)`` (0 when ``c = 0``) and
    ``upper = Beta^-1(1 - tail; c + 1, n - c)`` (1 when ``c = n``).

    >>> lo, hi = beta_quantile_bounds([0, 10], 10, 0.05)
    >>> float(lo[0]), round(float(hi[0]), 4), round(float(lo[1]), 4), float(hi[1])
    (0.0, 0.2589, 0.7411, 1.0)
    """
    from scipy import stats

    c = np.asarray(counts, dtype=np.float64)
    nf = float(n)
    lo = np.zeros_like(c)
    hi = np.ones_like(c)
    pos = c > 0
    lo[pos] = stats.beta.ppf(tail, c[pos], nf - c[pos] + 1)
    below = c < nf
    hi[below] = stats.beta.ppf(1 - tail, c[below] + 1, nf - c[below])
    for i in np.flatnonzero(np.isnan(lo) & pos):  # scipy gives up on huge counts
        lo[i] = _beta_quantile(tail, c[i], nf - c[i] + 1, upper=False)
    for i in np.flatnonzero(np.isnan(hi) & below):
        hi[i] = _beta_quantile(1 - tail, c[i] + 1, nf - c[i], upper=True)
    return lo, hi


def _beta_quantile(q: float, a: float, b: float, *, upper: bool) -> float:
    """``Beta^-1(q; a, b)`` by bisection on the regularized incomplete beta function, for
    the huge ``a``, ``b`` (counts beyond ~1e15) where ``scipy.stats.beta.ppf`` returns NaN.
    The bracket's outer end is returned (``upper``: its top), so the interval only widens.
    ``betainc`` is NaN exactly at the mean ``a / (a + b)``, where the cdf is about 1/2."""
    from scipy import special

    left, right = 0.0, 1.0
    for _ in range(2000):
        mid = (left + right) / 2
        if mid in (left, right):
            break
        cdf = float(special.betainc(a, b, mid))
        if math.isnan(cdf):
            cdf = 0.5
        if cdf < q:
            left = mid
        else:
            right = mid
    return right if upper else left


def binomial_interval(yes: int, n: int, level: float, method: str) -> ConfidenceInterval:
    """Two-sided interval for a binomial proportion ``lambda`` from ``yes`` of ``n``.

    ``exact``: Clopper & Pearson (1934), from beta quantiles; never below nominal coverage.
    ``wilson``: Wilson (1927) score interval.
    """
    alpha = 1 - v.level(level)
    if method == "exact":
        lo, hi = beta_quantile_bounds([yes], n, alpha / 2)
        return ConfidenceInterval(float(lo[0]), float(hi[0]))
    if method == "wilson":
        z = normal_quantile(level)
        phat = yes / n
        denom = 1 + z * z / n
        centre = (phat + z * z / (2 * n)) / denom
        half = z * math.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / denom
        return ConfidenceInterval(max(0.0, centre - half), min(1.0, centre + half))
    raise ParameterError(f"`method` must be one of 'exact', 'wilson', got {method!r}.")


def map_interval(interval: Interval, offset: float, slope: float) -> ConfidenceInterval:
    """Map an interval for ``lambda`` to ``(lambda - offset) / slope``, clipped to [0, 1]."""
    a = (interval[0] - offset) / slope
    b = (interval[1] - offset) / slope
    lo, hi = (a, b) if a <= b else (b, a)
    return ConfidenceInterval(min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0))


@dataclass(frozen=True)
class MappedBinomialInterval:
    """An interval for ``(lambda - offset) / slope`` from a binomial interval for ``lambda``
    (``yes`` of ``n``, method ``exact`` or ``wilson``), clipped to [0, 1].

    A picklable callable ``level -> (lo, hi)``: an :class:`Estimate` stores the data of its
    intervals, not closures, so it crosses process boundaries."""

    yes: int
    n: int
    offset: float
    slope: float
    method: str

    def __call__(self, level: float) -> Interval:
        return map_interval(binomial_interval(self.yes, self.n, level, self.method),
                            self.offset, self.slope)  # fmt: skip


@dataclass(frozen=True)
class OutsideChannelNotes:
    """A note when the exact or Wilson interval for ``lambda`` lies wholly outside
    ``[min(P0, P1), max(P0, P1)]``, the shares of "yes" the design can produce: the mapped
    prevalence interval is then clipped to a single point, ``[0, 0]`` or ``[1, 1]``.

    A picklable callable ``level -> notes`` (see :class:`MappedBinomialInterval`)."""

    p1: float
    p0: float
    yes: int
    n: int

    def __call__(self, level: float) -> tuple[str, ...]:
        p1, p0, yes, n = self.p1, self.p0, self.yes, self.n
        lo_p, hi_p = min(p0, p1), max(p0, p1)
        lam = yes / n
        if lo_p <= lam <= hi_p:  # the intervals contain lambda_hat: nothing to say
            return ()
        below = lam < lo_p
        edge = lo_p if below else hi_p
        which = ("0" if p0 < p1 else "1") if below else ("1" if p0 < p1 else "0")
        methods = []
        for method in ("exact", "wilson"):
            a, b = binomial_interval(yes, n, level, method)
            if (b < lo_p) if below else (a > hi_p):
                methods.append(method)
        if not methods:
            return ()
        point = map_interval((edge, edge), p0, p1 - p0)[0]
        plural = len(methods) > 1
        return (
            f"the {level:.0%} {' and '.join(methods)} interval{'s' if plural else ''} for the "
            f"share of yes reports lie{'' if plural else 's'} {'below' if below else 'above'} "
            f"P(yes|{which}) = {edge:.6g}: the data are unlikely under this design (check the "
            "design parameters or non-compliance); the prevalence interval"
            f"{'s are' if plural else ' is'} clipped to [{point:g}, {point:g}].",
        )


def information_note(slope: float, n: int) -> tuple[str, ...]:
    """A note when ``n`` reports through a channel whose report probabilities differ by
    ``slope`` between the answers (``P1 - P0``; ``p - q`` for a frequency oracle) carry less
    information than one direct answer: ``4 n slope^2 < 1``.

    The largest moment-estimate SE is then ``1 / (2 |slope| sqrt(n)) > 1``, wider than the
    whole of ``[0, 1]``: a design within a few float ulps of uninformative (e.g. ``Warner(0.5
    + 1e-16)``) prints an SE of ``10**14`` and estimates far outside ``[0, 1]``.  The note
    says so and points at the interval that stays honest (the exact one, mapped into
    ``[0, 1]``); the numbers themselves stay as computed (they are the unbiased ones).

    >>> information_note(0.5, 100)
    ()
    >>> print(information_note(2.0**-52, 100)[0])  # doctest: +ELLIPSIS
    the design is nearly uninformative: P1 - P0 = 2.2e-16, so these 100 reports carry the ...
    """
    s = abs(float(slope))
    if n < 1 or 4 * n * s * s >= 1:
        return ()
    worst = math.inf if s == 0 else 1 / (2 * s * math.sqrt(n))
    return (
        f"the design is nearly uninformative: P1 - P0 = {s:.2g}, so these {n} reports carry "
        f"the information of {n * s * s:.2g} direct answers; the moment estimate and its SE "
        f"(up to {worst:.3g}) say nothing: read the exact interval, which stays in [0, 1], "
        "or use a design farther from P1 = P0.",
    )


@dataclass(frozen=True)
class Estimate(Result):
    """An estimate of one prevalence (or other parameter) with its errors and intervals.

    Attributes
    ----------
    value : the unbiased moment estimate (may leave [0, 1]).
    bounded : the maximum-likelihood estimate restricted to [0, 1].
    se : standard error, plug-in convention (divides by ``n``); printed by default.
    se_unbiased : standard error, unbiased convention (divides by ``n - 1``).
    n : number of reports.
    method : how ``value`` was computed (``moment``, ``mle``).
    parameter : what is estimated (``prevalence`` unless stated).
    lambda_hat : observed share of "yes" reports, where that applies.
    lambda_label : what ``lambda_hat`` is, as printed (``share of yes reports``; Kuk's
        several draws: ``red share of cards``).
    level_notes : remarks that depend on the interval level (e.g. an interval for the share
        of "yes" reports outside what the design can produce); see :attr:`notes` and
        :meth:`notes_at`.
    remarks : remarks that hold at every level (e.g. :func:`information_note`).
    """

    value: float
    bounded: float
    se: float
    se_unbiased: float
    n: int
    method: str = "moment"
    parameter: str = "prevalence"
    lambda_hat: float | None = None
    se_convention: str = SE_PLUG_IN
    intervals: Mapping[str, Callable[[float], Interval]] = field(
        default_factory=dict, repr=False, compare=False
    )
    level_notes: NotesFn | None = field(default=None, repr=False, compare=False)
    lambda_label: str = field(default="share of yes reports", repr=False, compare=False)
    remarks: tuple[str, ...] = field(default=(), repr=False, compare=False)

    # ``intervals`` and ``level_notes`` are picklable callables holding their data
    # (MappedBinomialInterval, OutsideChannelNotes, ...), never closures, so an Estimate
    # pickles and crosses process boundaries.

    @property
    def notes(self) -> tuple[str, ...]:
        """Remarks on the data at the default level 0.95 (empty for ordinary data).

        E.g. when the exact interval for the share of "yes" reports lies below
        ``P(yes | 0)``: the prevalence interval is then clipped to ``[0, 0]``, and the note
        says the data are unlikely under the design.  :meth:`notes_at` gives them at another
        level; :meth:`to_dict` and :meth:`table` print them at theirs.
        """
        return self.notes_at(DEFAULT_LEVEL)

    def notes_at(self, level: float = DEFAULT_LEVEL) -> tuple[str, ...]:
        """The remarks on the data with intervals at ``level``."""
        lvl = v.level(level)
        return (() if self.level_notes is None else self.level_notes(lvl)) + self.remarks

    @property
    def interval_methods(self) -> tuple[str, ...]:
        """Interval methods this estimate supports (``wald`` always)."""
        return ("wald", *self.intervals)

    def ci(self, level: float = 0.95, method: str = "wald") -> ConfidenceInterval:
        """Two-sided confidence interval at ``level``, a :class:`ConfidenceInterval`.

        ``wald``: ``value +- z * se`` (plug-in SE), not clipped. Others (``exact``,
        ``wilson``, ``likelihood``, where offered) respect [0, 1].
        """
        lvl = v.level(level)
        if method == "wald":
            z = normal_quantile(lvl)
            return ConfidenceInterval(self.value - z * self.se, self.value + z * self.se)
        if method not in self.intervals:
            v.choice("method", method, self.interval_methods)
        return ConfidenceInterval(*self.intervals[method](lvl))

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain-JSON dict: numbers stay numbers, infinities and NaN become strings."""
        out: dict[str, Any] = {
            "parameter": self.parameter,
            "method": self.method,
            "n": self.n,
            "estimate": self.value,
            "estimate_bounded": self.bounded,
            "se": self.se,
            "se_unbiased": self.se_unbiased,
            "se_convention": self.se_convention,
            "level": level,
        }
        if self.lambda_hat is not None:
            out["lambda_hat"] = self.lambda_hat
        for m in self.interval_methods:
            out[f"ci_{m}"] = self.ci(level, m)
        out["notes"] = list(self.notes_at(level))
        result: dict[str, Any] = to_jsonable(out)
        return result

    def rows(self, level: float = 0.95) -> list[tuple[str, str]]:
        """The labelled values of :meth:`table`: the share of "yes" reports, the estimates,
        both SEs, every interval and the notes."""
        rows = []
        if self.lambda_hat is not None:
            rows.append((self.lambda_label, format_number(self.lambda_hat, 6)))
        if self.method == "moment":
            rows.append(("estimate (unbiased moment)", format_number(self.value, 6)))
            rows.append(("estimate (bounded MLE, in [0, 1])", format_number(self.bounded, 6)))
        else:
            rows.append((f"estimate ({self.method})", format_number(self.value, 6)))
        rows.append((f"SE ({self.se_convention})", format_number(self.se, 6)))
        if self.method == "mle" and math.isnan(self.se_unbiased):
            unbiased = "n/a (the MLE's observed-information SE has no n − 1 version)"
        else:
            unbiased = format_number(self.se_unbiased, 6)
        rows.append(("SE (unbiased: divides by n - 1)", unbiased))
        for m in self.interval_methods:
            rows.append((f"{level:.0%} CI ({m})", self.ci(level, m).format(6)))
        rows.extend(("note", text) for text in self.notes_at(level))
        return rows

    def table(self, level: float = 0.95) -> Table:
        """The estimate for people: both estimates, both SEs, the intervals at ``level``."""
        return Table.pairs(
            self.rows(level), title=f"Estimate of the {self.parameter} from {self.n} reports"
        )
