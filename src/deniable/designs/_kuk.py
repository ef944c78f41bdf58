"""Kuk's card design (Kuk 1990), with one or several draws."""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import _validation as v
from deniable.designs._base import _SCALAR, BinaryDesign, channel_epsilon
from deniable.designs._channel import DenseChannel
from deniable.designs._from_epsilon import design_for_epsilon, expit
from deniable.designs._tally import Tally
from deniable.exceptions import ParameterError
from deniable.randomness import CHUNK, _python_words, random_words, resolve_rng
from deniable.results import Estimate

__all__ = ["MAX_DRAWS", "Kuk"]

_TOP53 = np.uint64(11)

#: How the MLE's SE is computed; it has no n - 1 version, so its ``se_unbiased`` is NaN.
SE_MLE = "observed information at the MLE; no n - 1 version"

#: The most cards a respondent may draw.
MAX_DRAWS = 1000

#: Every entry of the channel must stay at least this (the smallest normal float): a smaller
#: binomial probability would lose precision or underflow to 0, and the channel would state an
#: infinite epsilon while the design's is finite.
_SMALLEST = sys.float_info.min


def _max_draws(theta1: float, theta2: float) -> int:
    """The most draws whose channel entries all stay normal floats (``MAX_DRAWS`` at most).

    The smallest entry of ``Binom(k, theta)`` is ``min(theta, 1 - theta)^k`` (at ``r = 0``
    or ``r = k``); decks with ``theta`` 0 or 1 have exact zeros instead, which are allowed.
    """
    logs = [math.log(min(t, 1 - t)) for t in (theta1, theta2) if 0 < t < 1]
    if not logs:
        return MAX_DRAWS
    return max(1, min(MAX_DRAWS, math.floor(math.log(_SMALLEST) / min(logs))))


@dataclass(frozen=True)
class Kuk(BinaryDesign):
    """Kuk (1990): carriers draw from a deck whose red share is ``theta1``, non-carriers from
    one with red share ``theta2``; they draw ``draws`` cards with replacement and report the
    number of red cards (with one draw: "red" = 1).

    Channel: ``P(r | 1) = Binom(r; k, theta1)``, ``P(r | 0) = Binom(r; k, theta2)``.
    ``epsilon = k * max(|ln(theta1 / theta2)|, |ln((1 - theta1) / (1 - theta2))|)``: the
    likelihood ratio of ``r`` red cards is ``(theta1/theta2)^r ((1-theta1)/(1-theta2))^(k-r)``,
    extreme at ``r = 0`` or ``r = k``, so ``k`` draws compose exactly.

    With ``k > 1`` the moment estimator uses the mean red share and its empirical variance;
    the bounded estimate (and ``estimate(..., method="mle")``) maximises the binomial-mixture
    likelihood of the full count distribution over [0, 1], with the observed-information SE.

    ``draws`` is at most 1000 (``MAX_DRAWS``), and at most the number that keeps every
    channel entry a normal float: ``min(theta, 1 - theta)^k >= 2.2e-308`` for both decks
    (e.g. 307 draws for decks 0.9 / 0.1).  More would make the channel's smallest
    probabilities underflow to 0, and its epsilon infinite while the design's is finite.
    """

    theta1: float
    theta2: float
    draws: int = 1
    name: ClassVar[str] = "kuk"

    def __post_init__(self) -> None:
        t1 = v.probability("theta1", self.theta1)
        t2 = v.probability("theta2", self.theta2)
        if t1 == t2:
            raise ParameterError(
                f"`theta1` and `theta2` must differ (equal decks carry no information), got {t1}."
            )
        object.__setattr__(self, "theta1", v.realizable("theta1", t1))
        object.__setattr__(self, "theta2", v.realizable("theta2", t2))
        k = v.integer("draws", self.draws, minimum=1, maximum=MAX_DRAWS)
        top = _max_draws(t1, t2)
        if k > top:
            raise ParameterError(
                f"`draws` must be an integer in [1, {top}] for theta1 = {t1!r}, theta2 = "
                f"{t2!r} (with more draws P(r red cards | answer) falls below the smallest "
                f"normal float, 2.2e-308, and the channel would state a wrong epsilon), got {k}."
            )
        object.__setattr__(self, "draws", k)
        self._check_channel()

    @classmethod
    def from_epsilon(cls, epsilon: float, draws: int = 1) -> Kuk:
        """Symmetric decks ``theta1 = 1 - theta2 = e^(eps/k) / (1 + e^(eps/k))``: ``epsilon``
        over ``k = draws`` draws, never above it.

        ``theta1`` is the float with the largest epsilon not above the request (near 1 floats
        are ``2**-53`` apart, so a large per-draw epsilon is matched only that finely).  The
        largest epsilon is ``k ln(2**53 - 1)`` (``theta2 = 2**-53``), less when the channel's
        smallest entries ``theta2^k`` would underflow; a request above it raises
        ``ParameterError`` naming ``epsilon``.
        """
        eps = v.positive("epsilon", epsilon)
        k = v.integer("draws", draws, minimum=1, maximum=MAX_DRAWS)
        return design_for_epsilon(
            lambda t: cls(t, 1 - t, k), eps, expit(eps / k), neutral=0.5, extreme=1.0,
            fallback=expit(1.0 / k), context=f"{cls.name!r} with draws = {k}",
        )  # fmt: skip

    @property
    def p_yes_given_1(self) -> float:
        """P(a drawn card is red | carrier) (one draw)."""
        return self.theta1

    @property
    def p_yes_given_0(self) -> float:
        return self.theta2

    @property
    def n_reports(self) -> int:
        return self.draws + 1

    @property
    def channel(self) -> DenseChannel:
        return DenseChannel(self._binomial_matrix())

    def _binomial_matrix(self) -> npt.NDArray[np.float64]:
        from scipy import stats

        r = np.arange(self.draws + 1)
        return np.column_stack(
            [
                stats.binom.pmf(r, self.draws, self.theta2),
                stats.binom.pmf(r, self.draws, self.theta1),
            ]
        )

    @property
    def report_labels(self) -> tuple[str, ...]:
        if self.draws == 1:
            return ("no", "yes")
        return tuple(f"{r} red" for r in range(self.draws + 1))

    def _report_epsilon(self) -> float:
        # one draw: eps_1 = max(|ln(t1/t2)|, |ln((1-t1)/(1-t2))|); the k draws compose to k eps_1
        return channel_epsilon([[1 - self.theta2, 1 - self.theta1], [self.theta2, self.theta1]])

    @property
    def implemented_channel(self) -> DenseChannel:
        """Binomial channel of the per-draw probabilities the randomizer realises."""
        t0, t1 = (t / 2.0**53 for t in self._thresholds)
        k = self.draws
        cols = [
            [math.comb(k, r) * p**r * (1 - p) ** (k - r) for r in range(k + 1)] for p in (t0, t1)
        ]
        return DenseChannel(np.array(cols, dtype=float).T)

    @property
    def epsilon(self) -> float:
        # eps = k * max(|ln(t1/t2)|, |ln((1-t1)/(1-t2))|): extreme reports are all-red / no red
        one = channel_epsilon([[1 - self.theta2, 1 - self.theta1], [self.theta2, self.theta1]])
        return self.draws * one if math.isfinite(one) else math.inf

    def variance(self, prevalence: float, n: int, *, population: str = "iid") -> float:
        """Exact variance of the moment estimator (mean red share) at a true ``prevalence``.

        With ``R`` the red count of one respondent, ``Var(pi_hat) = Var(R) / (n k^2 d^2)``,
        ``d = theta1 - theta2``.  ``iid``: ``Var(R) = k E[theta (1 - theta)] + k^2 pi (1 - pi)
        d^2`` (binomial within a deck, plus the mixing over decks).  ``fixed`` (``K = pi n``
        carriers): ``(K theta1 (1 - theta1) + (n - K) theta2 (1 - theta2)) / (n^2 k d^2)``.
        One draw gives the :class:`BinaryDesign` formulas.
        """
        base = super().variance(prevalence, n, population=population)  # validates the inputs
        k = self.draws
        if k == 1:
            return base
        if population == "fixed":
            return base / k
        pi, t1, t2 = float(prevalence), self.theta1, self.theta2
        d2 = (t1 - t2) ** 2
        within = pi * t1 * (1 - t1) + (1 - pi) * t2 * (1 - t2)
        return (k * within + k * k * pi * (1 - pi) * d2) / (int(n) * k * k * d2)

    def relative_efficiency(self, prevalence: float) -> float:
        """``Var(direct) / Var(this design)``, iid sampling: ``pi (1 - pi) / (n Var(pi_hat))``."""
        pi = v.probability("prevalence", prevalence)
        return pi * (1 - pi) / self.variance(pi, 1)

    def randomize(self, truth: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.uint8]:
        """Report the number of red cards in ``draws`` draws (``draws`` words per report)."""
        t0, t1 = self._thresholds
        if truth.__class__ in _SCALAR and 0 <= truth <= 1:
            # one answer (a Python int or bool): the deck's threshold selected by arithmetic,
            # t0 + x (t1 - t0), then one comparison per draw, one word each, drawn one call
            # at a time as the array path draws them -- no branch on the answer
            t = t0 + truth * (t1 - t0)
            red = sum((_python_words(rng, 1)[0] >> 11) < t for _ in range(self.draws))
            return np.array([red], dtype=np.uint8 if self.draws < 256 else np.uint16)
        x = v.reports_array("truth", truth, categories=2)
        gen = resolve_rng(rng)
        table = np.array((t0, t1), dtype=np.uint64)
        dtype = np.uint8 if self.draws < 256 else np.uint16
        out = np.zeros(x.size, dtype=dtype)
        for start in range(0, x.size, CHUNK):
            stop = min(start + CHUNK, x.size)
            thr = table[x[start:stop]]
            block = out[start:stop]
            for _ in range(self.draws):
                np.add(block, (random_words(gen, stop - start) >> _TOP53) < thr, out=block)
        return out  # type: ignore[return-value]

    def estimate(
        self,
        data: Any = None,
        *,
        yes: int | None = None,
        n: int | None = None,
        method: str = "moment",
    ) -> Estimate:
        """Estimate the prevalence.

        One draw: as every binary design.  ``k > 1`` draws: ``data`` is reports (red counts)
        or a :class:`Tally` of counts ``c_0..c_k``; ``method="moment"`` gives
        ``(mean(R)/k - theta2) / (theta1 - theta2)`` with SE from the empirical variance of
        ``R``, and as its ``bounded`` value the bounded MLE of the binomial mixture (with
        several draws that is not the clipped moment estimate); ``method="mle"`` gives that
        MLE with its observed-information SE and a likelihood-ratio interval.  The
        observed-information SE has no ``n - 1`` version: the MLE's ``se_unbiased`` is NaN.
        """
        v.choice("method", method, ("moment", "mle"))
        if self.draws == 1:
            if method == "mle":
                base = super().estimate(data, yes=yes, n=n)
                return _mle_from_counts(self, self._as_tally(data, yes, n), base)
            return super().estimate(data, yes=yes, n=n)
        if yes is not None or n is not None:
            raise ParameterError(
                f"Kuk with draws = {self.draws} needs the counts of red cards (a Tally or "
                "reports), not `yes` and `n`."
            )
        tally = self._as_tally(data, None, None)
        moment = _moment_from_counts(self, tally)
        mle = _mle_from_counts(self, tally, moment)
        return dataclasses.replace(moment, bounded=mle.value) if method == "moment" else mle


def _moment_from_counts(design: Kuk, tally: Tally) -> Estimate:
    k = design.draws
    c = np.asarray(tally.counts, dtype=float)
    n = int(c.sum())
    r = np.arange(k + 1)
    mean = float((c * r).sum() / n)
    ss = float((c * (r - mean) ** 2).sum())
    slope = design.theta1 - design.theta2
    lam = mean / k
    value = (lam - design.theta2) / slope
    se = math.sqrt(ss / n / n) / (k * abs(slope))
    se_unb = math.sqrt(ss / (n - 1) / n) / (k * abs(slope)) if n > 1 else math.nan
    return Estimate(
        value=value,
        bounded=min(max(value, 0.0), 1.0),
        se=se,
        se_unbiased=se_unb,
        n=n,
        method="moment",
        lambda_hat=lam,
        se_convention="plug-in: empirical variance of the red count, divides by n",
        lambda_label="red share of cards",
    )


def _mle_from_counts(design: Kuk, tally: Tally, moment: Estimate) -> Estimate:
    from scipy import optimize

    ch = design._binomial_matrix()
    b1, b0 = ch[:, 1], ch[:, 0]
    c = np.asarray(tally.counts, dtype=float)
    used = c > 0
    lik = _MixtureLikelihood(c[used], b1[used], b0[used])
    n = int(lik.counts.sum())

    res = optimize.minimize_scalar(
        lambda p: -lik(p), bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12}
    )
    pi_hat = float(res.x)
    # endpoints: the bounded optimiser stops just inside; compare with the boundary values
    for edge in (0.0, 1.0):
        if lik(edge) >= lik(pi_hat):
            pi_hat = edge
    mix = pi_hat * lik.b1 + (1 - pi_hat) * lik.b0
    info = float((lik.counts * (lik.b1 - lik.b0) ** 2 / mix**2).sum())
    se = 1 / math.sqrt(info) if info > 0 else math.inf

    return Estimate(
        value=pi_hat,
        bounded=pi_hat,
        se=se,
        se_unbiased=math.nan,  # the observed-information SE has no n - 1 version
        n=n,
        method="mle",
        lambda_hat=moment.lambda_hat,
        lambda_label=moment.lambda_label,
        se_convention=SE_MLE,
        intervals={"likelihood": _LikelihoodInterval(lik, pi_hat)},
    )


@dataclasses.dataclass(frozen=True, eq=False)
class _MixtureLikelihood:
    """``pi -> sum_r c_r ln(pi b1_r + (1 - pi) b0_r)``: the binomial-mixture log-likelihood
    of the red-card counts (only the observed counts)."""

    counts: npt.NDArray[np.float64]
    b1: npt.NDArray[np.float64]
    b0: npt.NDArray[np.float64]

    def __call__(self, pi: float) -> float:
        with np.errstate(divide="ignore"):  # a report impossible at this pi: log 0 = -inf
            return float((self.counts * np.log(pi * self.b1 + (1 - pi) * self.b0)).sum())


@dataclasses.dataclass(frozen=True, eq=False)
class _LikelihoodInterval:
    """The likelihood-ratio interval ``{pi : 2 (l(pi_hat) - l(pi)) <= chi2_1(level)}`` (a
    picklable callable ``level -> (lo, hi)``)."""

    loglik: _MixtureLikelihood
    pi_hat: float

    def __call__(self, level: float) -> tuple[float, float]:
        from scipy import optimize, stats

        pi_hat = self.pi_hat
        cut = self.loglik(pi_hat) - float(stats.chi2.ppf(level, 1)) / 2

        def f(p: float) -> float:
            return self.loglik(p) - cut

        lo = 0.0 if f(0.0) >= 0 else float(optimize.brentq(f, 0.0, pi_hat, xtol=1e-12))
        hi = 1.0 if f(1.0) >= 0 else float(optimize.brentq(f, pi_hat, 1.0, xtol=1e-12))
        return lo, hi
