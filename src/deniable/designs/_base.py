"""The design contract: an exact channel, its epsilon, a randomizer, a tally, an estimator.

Every design is a frozen dataclass whose channel ``P[report | truth]`` (columns sum to 1)
determines everything else.  Binary designs need only ``p_yes_given_1`` and
``p_yes_given_0``; this module derives the randomizer, the tally, the estimator with
both standard-error conventions and its intervals, and the exact variance from them.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import fields
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import _validation as v
from deniable.designs._tally import Tally
from deniable.exceptions import DataError, ParameterError
from deniable.randomness import (
    CHUNK,
    binary_thresholds,
    random_words,
    resolve_rng,
    words_below,
)
from deniable.results import Estimate, binomial_interval, map_interval

# Tally (_tally) is re-exported from here.
__all__ = ["BinaryDesign", "Design", "Tally", "binary_estimate", "channel_epsilon"]


def channel_epsilon(channel: npt.ArrayLike) -> float:
    """Exact epsilon of a channel ``P[report, truth]`` under replace-one neighbouring.

    ``max over reports r and truths x, x' of ln(P[r | x] / P[r | x'])``; ``math.inf`` when a
    report has probability 0 under one truth and not under another (it reveals the answer).
    """
    p = np.asarray(channel, dtype=float)
    eps = 0.0
    for row in p:
        hi, lo = float(row.max()), float(row.min())
        if hi == 0.0:
            continue
        if lo == 0.0:
            return math.inf
        eps = max(eps, math.log(hi / lo))
    return eps


class Design(ABC):
    """Base of every design: a channel, its exact epsilon, randomize, tally, estimate."""

    #: Name used by the CLI and the registry.
    name: ClassVar[str]

    @property
    @abstractmethod
    def channel(self) -> npt.NDArray[np.float64]:
        """``P[report, truth]``: rows are reports, columns truths; columns sum to 1."""

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """Exact epsilon (``math.inf`` when some report reveals the answer)."""

    @property
    @abstractmethod
    def implemented_channel(self) -> npt.NDArray[np.float64]:
        """The channel the randomizer realises exactly from its integer thresholds.

        Thresholds are rounded toward privacy, so ``channel_epsilon(implemented_channel)``
        never exceeds :attr:`epsilon`; the estimators use :attr:`channel` (the difference is
        below ``2**-52`` per entry).
        """

    @property
    def n_reports(self) -> int:
        """Number of distinct report values."""
        return int(self.channel.shape[0])

    @property
    def n_truths(self) -> int:
        """Number of distinct true answers."""
        return int(self.channel.shape[1])

    @abstractmethod
    def randomize(self, truth: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.integer[Any]]:
        """Randomize true answers into reports (CSPRNG unless ``rng`` is given)."""

    def tally(self, reports: npt.ArrayLike) -> Tally:
        """Count reports into a mergeable :class:`Tally`."""
        return Tally.from_reports(reports, self.n_reports)

    def parameters(self) -> dict[str, Any]:
        """The design's parameters by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    def _as_tally(self, data: Any, yes: Any, n: Any) -> Tally:
        if data is None:
            if yes is None or n is None:
                raise DataError("give either reports / a Tally, or both `yes` and `n`.")
            return Tally.binary(yes, n)
        if yes is not None or n is not None:
            raise DataError("give either reports / a Tally, or `yes` and `n`, not both.")
        if isinstance(data, Tally):
            if len(data.counts) != self.n_reports:
                raise DataError(
                    f"the tally has {len(data.counts)} report values, the design "
                    f"{self.name!r} has {self.n_reports}."
                )
            tally = data
        else:
            tally = self.tally(data)
        if tally.n == 0:
            raise DataError("`n` must be at least 1, got 0 reports.")
        return tally


class BinaryDesign(Design):
    """A design with a binary true answer and a binary report ("yes" = 1).

    Subclasses define ``p_yes_given_1`` and ``p_yes_given_0``; everything else follows:

    * report probability ``lambda(pi) = P0 + pi (P1 - P0)``;
    * moment estimator ``pi_hat = (lambda_hat - P0) / (P1 - P0)`` (unbiased);
    * plug-in variance ``lambda_hat (1 - lambda_hat) / (n (P1 - P0)^2)``, unbiased with ``n - 1``;
    * bounded MLE ``clip(pi_hat, 0, 1)`` (the binomial likelihood is monotone in ``lambda``);
    * intervals for ``lambda`` (exact Clopper-Pearson, Wilson) mapped through the design.
    """

    @property
    @abstractmethod
    def p_yes_given_1(self) -> float:
        """P(report "yes" | true answer 1)."""

    @property
    @abstractmethod
    def p_yes_given_0(self) -> float:
        """P(report "yes" | true answer 0)."""

    @property
    def p_no_given_1(self) -> float:
        """P(report "no" | true answer 1): ``1 - P(yes | 1)``, computed without cancellation
        where the design can (a subclass overrides it when ``1 - p`` would round away a
        small complement)."""
        return 1 - self.p_yes_given_1

    @property
    def p_no_given_0(self) -> float:
        """P(report "no" | true answer 0) (see :attr:`p_no_given_1`)."""
        return 1 - self.p_yes_given_0

    @property
    def n_reports(self) -> int:
        return 2

    @property
    def n_truths(self) -> int:
        return 2

    def _parameter_text(self) -> str:
        return ", ".join(f"{k}={x!r}" for k, x in self.parameters().items())

    def _check_informative(self) -> None:
        """Reject a channel whose two columns are equal after float rounding."""
        if self.p_yes_given_1 == self.p_yes_given_0:
            raise ParameterError(
                f"design {self.name!r} with {self._parameter_text()}: P(yes | 1) = "
                f"P(yes | 0) = {self.p_yes_given_1!r} after rounding to floats; the reports "
                "would carry no information about the answer."
            )

    def _check_channel(self) -> None:
        """Validation every binary design runs at construction: the channel is informative
        after float rounding, and the randomizer can implement it at its ``2**-53``
        resolution (its thresholds do not collapse)."""
        self._check_informative()
        try:
            self.thresholds()
        except ParameterError as exc:
            raise ParameterError(
                f"design {self.name!r} with {self._parameter_text()}: {exc}"
            ) from None

    def _bit_channel(self) -> list[list[float]]:
        """The 2x2 channel of one randomized bit, ``[[P(no|0), P(no|1)], [P(yes|0), P(yes|1)]]``."""
        return [
            [self.p_no_given_0, self.p_no_given_1],
            [self.p_yes_given_0, self.p_yes_given_1],
        ]

    @property
    def channel(self) -> npt.NDArray[np.float64]:
        return np.array(self._bit_channel())

    @property
    def epsilon(self) -> float:
        # eps = max(|ln(P1/P0)|, |ln((1-P1)/(1-P0))|): worst-case likelihood ratio of one report
        return channel_epsilon(self.channel)

    def thresholds(self) -> tuple[int, int]:
        """Integer thresholds ``(t0, t1)``: a report is "yes" iff ``word >> 11 < t[truth]``.

        Rounded toward privacy (:func:`~deniable.randomness.binary_thresholds`), so the
        implemented channel's epsilon never exceeds :attr:`epsilon`.
        """
        p1, p0 = self.p_yes_given_1, self.p_yes_given_0
        t0, t1 = binary_thresholds(p1, p0)
        target = min(self._report_epsilon(), channel_epsilon(self._bit_channel()))
        if not math.isfinite(target):
            return t0, t1
        # float rounding of the stated probabilities (e.g. 1 - p for p near 1) can still leave
        # the implemented ratio above e^eps: move the thresholds toward each other until the
        # implemented epsilon, computed the same way as the stated one, is not larger
        for _ in range(1 << 16):
            q0, q1 = t0 / 2.0**53, t1 / 2.0**53
            if channel_epsilon([[1 - q0, 1 - q1], [q0, q1]]) <= target:
                return t0, t1
            t0, t1 = (t0 + 1, t1 - 1) if t1 > t0 else (t0 - 1, t1 + 1)
            if (t1 - t0) * (p1 - p0) <= 0:
                break
        raise ParameterError(  # pragma: no cover - needs probabilities within ~2**-37 of 0 or 1
            f"design {self.name!r}: cannot implement epsilon = {target} at the randomizer's "
            "resolution of 2**-53."
        )

    def _report_epsilon(self) -> float:
        """Epsilon of one randomized bit (the stated epsilon; per draw for Kuk)."""
        return self.epsilon

    @property
    def implemented_channel(self) -> npt.NDArray[np.float64]:
        """The channel the randomizer realises exactly (thresholds over ``2**53``)."""
        t0, t1 = self.thresholds()
        p0, p1 = t0 / 2.0**53, t1 / 2.0**53
        return np.array([[1 - p0, 1 - p1], [p0, p1]])

    def report_probability(self, prevalence: float) -> float:
        """``lambda = P0 + prevalence (P1 - P0)``: the probability of a "yes" report."""
        pi = v.probability("prevalence", prevalence)
        return self.p_yes_given_0 + pi * (self.p_yes_given_1 - self.p_yes_given_0)

    def randomize(self, truth: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint8]:
        """Randomize 0/1 answers into 0/1 reports, one 64-bit word per report.

        No branch on the answer: report ``i`` is ``(w_i >> 11) < t[x_i]`` with ``w_i`` a fresh
        word and ``t[x]`` the threshold of column ``x`` of the channel, so the randomness
        consumed is the same for every answer.  It is computed without indexing by the answer:
        with ``t_lo <= t_hi`` the two thresholds, a report is "yes" when ``w_i`` is below
        ``t_lo``, or below ``t_hi`` and ``x_i`` is the answer whose threshold is ``t_hi``.
        """
        x = v.reports_array("truth", truth, categories=2)
        gen = resolve_rng(rng)
        t0, t1 = self.thresholds()
        t_lo, t_hi = min(t0, t1), max(t0, t1)
        out = np.empty(x.size, dtype=np.uint8)
        size = min(CHUNK, x.size)
        lo = np.empty(size, dtype=np.bool_)
        # reports_array returns 0/1 uint8 as given (or a view of bools): readable as bools
        as_bool = x.dtype == np.uint8
        xb = np.empty(0 if as_bool else size, dtype=np.bool_)
        for start in range(0, x.size, CHUNK):
            stop = min(start + CHUNK, x.size)
            m = stop - start
            words = random_words(gen, m)
            rep = out[start:stop].view(np.bool_)
            if as_bool:
                xs = x[start:stop].view(np.bool_)
            else:
                xs = xb[:m]
                np.not_equal(x[start:stop], 0, out=xs)
            words_below(words, t_hi, out=rep)
            if t1 >= t0:
                np.logical_and(rep, xs, out=rep)  # below t_hi and the answer is 1
            else:
                np.greater(rep, xs, out=rep)  # below t_hi and the answer is 0
            np.logical_or(rep, words_below(words, t_lo, out=lo[:m]), out=rep)
            del words  # free this block's words before drawing the next
        return out

    def estimate(
        self, data: Any = None, *, yes: int | None = None, n: int | None = None
    ) -> Estimate:
        """Estimate the prevalence from reports, a :class:`Tally`, or ``yes`` and ``n``.

        Returns the unbiased moment estimate ``(lambda_hat - P0) / (P1 - P0)``, the bounded
        MLE, both SE conventions, and ``wald``, ``exact`` and ``wilson`` intervals.

        >>> from deniable import TwoCoin
        >>> est = TwoCoin().estimate(yes=400, n=1000)
        >>> round(est.value, 4), round(est.se, 4)
        (0.3, 0.031)
        """
        tally = self._as_tally(data, yes, n)
        return binary_estimate(self.p_yes_given_1, self.p_yes_given_0, tally.yes, tally.n)

    def variance(self, prevalence: float, n: int, *, population: str = "iid") -> float:
        """Exact variance of the moment estimator at a true ``prevalence``.

        ``iid``: respondents sampled independently, ``lambda (1 - lambda) / (n (P1 - P0)^2)``.
        ``fixed``: a fixed population of ``n`` with ``K = prevalence * n`` carriers (K must be
        an integer), only the randomization random:
        ``(K P1 (1 - P1) + (n - K) P0 (1 - P0)) / (n^2 (P1 - P0)^2)``.
        """
        pi = v.probability("prevalence", prevalence)
        n = v.integer("n", n, minimum=1)
        v.choice("population", population, ("iid", "fixed"))
        p1, p0 = self.p_yes_given_1, self.p_yes_given_0
        slope2 = (p1 - p0) ** 2
        if population == "iid":
            lam = p0 + pi * (p1 - p0)
            return lam * (1 - lam) / (n * slope2)
        k = pi * n
        if abs(k - round(k)) > 1e-9 * n:
            raise ParameterError(
                f"`prevalence` * `n` must be a whole number of carriers for population='fixed', "
                f"got {pi} * {n} = {k}."
            )
        k = round(k)
        return (k * p1 * (1 - p1) + (n - k) * p0 * (1 - p0)) / (n * n * slope2)

    def relative_efficiency(self, prevalence: float) -> float:
        """``Var(direct) / Var(this design)`` for iid sampling: 1 for direct questioning, < 1 here.

        ``pi (1 - pi) (P1 - P0)^2 / (lambda (1 - lambda))``; 0 at ``pi`` in {0, 1}.
        """
        pi = v.probability("prevalence", prevalence)
        lam = self.report_probability(pi)
        return pi * (1 - pi) * (self.p_yes_given_1 - self.p_yes_given_0) ** 2 / (lam * (1 - lam))


def binary_estimate(
    p1: float, p0: float, yes: int, n: int, parameter: str = "prevalence"
) -> Estimate:
    """The moment estimate and its intervals for a binary channel (see :class:`BinaryDesign`)."""
    slope = p1 - p0
    lam = yes / n
    value = (lam - p0) / slope
    var_core = lam * (1 - lam) / (slope * slope)
    se = math.sqrt(var_core / n)
    se_unbiased = math.sqrt(var_core / (n - 1)) if n > 1 else math.nan
    bounded = min(max(value, 0.0), 1.0)

    def exact(level: float) -> tuple[float, float]:
        return map_interval(binomial_interval(yes, n, level, "exact"), p0, slope)

    def wilson(level: float) -> tuple[float, float]:
        return map_interval(binomial_interval(yes, n, level, "wilson"), p0, slope)

    def notes(level: float) -> tuple[str, ...]:
        return _outside_channel_notes(p1, p0, yes, n, level)

    return Estimate(
        value=value,
        bounded=bounded,
        se=se,
        se_unbiased=se_unbiased,
        n=n,
        method="moment",
        parameter=parameter,
        lambda_hat=lam,
        intervals={"exact": exact, "wilson": wilson},
        level_notes=notes,
    )


def _outside_channel_notes(p1: float, p0: float, yes: int, n: int, level: float) -> tuple[str, ...]:
    """A note when the exact or Wilson interval for ``lambda`` lies wholly outside
    ``[min(P0, P1), max(P0, P1)]``, the shares of "yes" the design can produce: the mapped
    prevalence interval is then clipped to a single point, ``[0, 0]`` or ``[1, 1]``."""
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


def as_float_tuple(name: str, values: Sequence[Any]) -> tuple[float, ...]:
    """Validate a sequence of probabilities."""
    return tuple(v.probability(f"{name}[{i}]", x) for i, x in enumerate(values))
