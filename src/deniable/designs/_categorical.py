"""k-category forced response / generalized randomized response (k-ary RR)."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs._base import Design
from deniable.designs._channel import Channel, DenseChannel, SymmetricChannel
from deniable.designs._counting import ValueCounter
from deniable.designs._frequency import MAX_DENSE_K, FrequencyEstimate
from deniable.designs._from_epsilon import design_for_epsilon
from deniable.designs._kernels import keep_or_forced_reports
from deniable.designs._mechanism import one_answer
from deniable.designs._tally import Tally
from deniable.exceptions import ParameterError, ParameterTypeError
from deniable.randomness import CHUNK, probability_threshold, python_words, resolve_rng

__all__ = ["MAX_DENSE_K", "Categorical", "CategoricalEstimate"]

_TWO53_INT = 1 << 53

#: The estimate of the categorical design: the one frequency estimate of every frequency
#: oracle (this name is kept as an alias of :class:`~deniable.designs.FrequencyEstimate`).
CategoricalEstimate = FrequencyEstimate

# MAX_DENSE_K (from _frequency): the largest ``k`` whose dense ``k x k`` channel and
# covariance are built (128 MB of doubles); the design itself (randomizer, estimator,
# epsilon) works up to ``k = 2**24``.


def _check_dense(k: int) -> None:
    if k > MAX_DENSE_K:
        raise ParameterError(
            f"`k` must be an integer in [2, {MAX_DENSE_K}] for the dense channel (a k x k "
            f"matrix; the design itself works up to 2**24 categories), got {k}."
        )


@dataclass(frozen=True)
class Categorical(Design):
    """k-category forced response: with probability ``p_truthful`` report the true category,
    otherwise a category drawn from ``forced`` (uniform over all ``k`` when omitted).

    Channel ``P = t * I + (1 - t) * forced 1^T`` with ``t = p_truthful``.  For report ``r``:
    ``P(r | r) / P(r | x != r) = (t + (1 - t) f_r) / ((1 - t) f_r)``, so
    ``epsilon = ln(1 + t / ((1 - t) min_r f_r))``, infinite if some ``f_r = 0``.

    With uniform forcing this is k-ary randomized response / generalized RR
    (Warner 1971; Kairouz, Oh & Viswanath 2016): :meth:`from_epsilon` picks
    ``p_truthful = (e^eps - 1) / (e^eps + k - 1)`` so that the true category is reported
    with probability ``e^eps / (e^eps + k - 1)``.

    The estimator inverts the channel: ``pi_hat = (lambda_hat - (1 - t) f) / t``
    with covariance ``(diag(lambda) - lambda lambda^T) / (n t^2)``; each category is also
    the binary design "report j or not" and gets exact intervals from it.

    >>> d = Categorical.from_epsilon(1.0, k=4)
    >>> round(d.epsilon, 12)
    1.0
    """

    k: int
    p_truthful: float
    forced: tuple[float, ...] | None = field(default=None)
    name: ClassVar[str] = "categorical"

    def __post_init__(self) -> None:
        k = v.integer("k", self.k, minimum=2, maximum=1 << 24)
        object.__setattr__(self, "k", k)
        t = v.probability("p_truthful", self.p_truthful, low_open=True)
        object.__setattr__(self, "p_truthful", v.realizable("p_truthful", t))
        if self.forced is not None:
            if isinstance(self.forced, str | bytes) or not hasattr(self.forced, "__iter__"):
                raise ParameterTypeError(
                    f"`forced` must be a sequence of k = {k} probabilities, got "
                    f"{type(self.forced).__name__} {self.forced!r}."
                )
            f = tuple(
                v.realizable(f"forced[{i}]", v.probability(f"forced[{i}]", x))
                for i, x in enumerate(self.forced)
            )
            if len(f) != k:
                raise ParameterError(f"`forced` must have k = {k} entries, got {len(f)}.")
            if abs(math.fsum(f) - 1) > 1e-9:
                raise ParameterError(f"`forced` must sum to 1, got {math.fsum(f)}.")
            object.__setattr__(self, "forced", f)

    @classmethod
    def from_epsilon(cls, epsilon: float, k: int) -> Categorical:
        """k-ary RR at ``epsilon``: ``p_truthful = (e^eps - 1) / (e^eps + k - 1)``.

        ``p_truthful`` is the float with the largest epsilon not above the request (near 1
        floats are ``2**-53`` apart, so a large epsilon is matched only that finely).  The
        largest epsilon is ``ln(1 + k (2**53 - 1))`` (``p_truthful = 1 - 2**-53``); above it,
        or below the smallest (``p_truthful = 2**-53``), ``ParameterError`` names
        ``epsilon``.  Never returns ``p_truthful = 1`` (epsilon infinite).
        """
        eps = v.positive("epsilon", epsilon)
        k = v.integer("k", k, minimum=2, maximum=1 << 24)

        def closed_form(e: float) -> float:
            # (e^eps - 1) / (e^eps + k - 1) = (1 - e^-eps) / (1 + (k - 1) e^-eps): no overflow
            return -math.expm1(-e) / (1 + (k - 1) * math.exp(-e))

        return design_for_epsilon(
            lambda t: cls(k=k, p_truthful=t), eps, closed_form(eps), neutral=0.0, extreme=1.0,
            fallback=closed_form(1.0), context=f"{cls.name!r} with k = {k}",
        )  # fmt: skip

    @property
    def n_reports(self) -> int:
        return self.k

    @property
    def n_truths(self) -> int:
        return self.k

    def _channel_fields(self) -> dict[str, Any]:
        # the channel's diagonal P(report = the true category), without the k x k matrix
        return {"p_report_true": self.p_truthful + (1 - self.p_truthful) * self.forced_distribution}

    @property
    def forced_distribution(self) -> npt.NDArray[np.float64]:
        """The forced distribution ``f`` (uniform when not given): a new array each time."""
        return self._forced_array.copy()

    # What a design needs on every call is computed once and cached in the instance's
    # __dict__ (functools.cached_property: not dataclass fields, so eq, hash, repr and
    # parameters() are unchanged; the design is immutable, so nothing goes stale).

    @cached_property
    def _forced_array(self) -> npt.NDArray[np.float64]:
        """The forced distribution, read-only (shared by the estimators)."""
        if self.forced is None:
            f = np.full(self.k, 1 / self.k)
        else:
            f = np.asarray(self.forced, dtype=float)
        f.setflags(write=False)
        return f

    @cached_property
    def _uniform(self) -> bool:
        return self.forced is None or all(f == self.forced[0] for f in self.forced)

    @property
    def channel(self) -> Channel:
        """The channel ``t I + (1 - t) forced 1^T`` (``t = p_truthful``): k-ary randomized
        response (:class:`~deniable.designs.SymmetricChannel`, two numbers, any ``k``) when
        the forced distribution is uniform, else the dense ``k x k`` matrix (``k`` at most
        ``MAX_DENSE_K``)."""
        if self._uniform:
            f0 = 1 / self.k if self.forced is None else self.forced[0]
            q = (1 - self.p_truthful) * f0
            return SymmetricChannel(self.k, self.p_truthful + q, q)
        _check_dense(self.k)
        f = self.forced_distribution
        return DenseChannel(self.p_truthful * np.eye(self.k) + (1 - self.p_truthful) * f[:, None])

    @property
    def report_labels(self) -> tuple[str, ...]:
        return tuple(str(j) for j in range(self.k))

    def _spec_algorithm(self) -> tuple[str, int, dict[str, Any]]:
        keep, cumulative = self.thresholds()
        return "keep-or-forced/1", 2, {"keep": keep, "forced": cumulative}

    def binary_count(self, category: int | None = None) -> tuple[float, float]:
        """``(P(j | j), P(j | not j))`` for ``j = category`` (required): the count of
        reports ``j`` is sufficient for the prevalence of category ``j``
        (:meth:`Design.binary_count`)."""
        if category is None:
            raise ParameterError(
                f"`category` must be given for design 'categorical' (an integer in "
                f"[0, {self.k - 1}]: the category whose prevalence is tested), got None."
            )
        j = v.integer("category", category, minimum=0, maximum=self.k - 1)
        p0 = (1 - self.p_truthful) * float(self._forced_array[j])
        return p0 + self.p_truthful, p0  # "report j or not": P(j | j), P(j | not j)

    @property
    def epsilon(self) -> float:
        # eps = ln(1 + t / ((1 - t) min f)), t = p_truthful: report r is likeliest from answer r
        fmin = 1 / self.k if self.forced is None else min(self.forced)
        if self.p_truthful == 1 or fmin == 0:
            return math.inf
        return math.log1p(self.p_truthful / ((1 - self.p_truthful) * fmin))

    def _forced_counts(self) -> tuple[list[int] | None, list[int], int]:
        """(cumulative thresholds or None, outcome count per category, outcomes in all)."""
        cum, counts, total = self._forced_plan
        return None if cum is None else list(cum), list(counts), total

    @cached_property
    def _forced_plan(self) -> tuple[tuple[int, ...] | None, tuple[int, ...], int]:
        if self.forced is None:
            if self.k & (self.k - 1) == 0:
                return None, (1,) * self.k, self.k
            b = 64 - self.k.bit_length()  # uniform_below uses b bits: counts floor/ceil(2^b/k)
            edges = [-(-(j * (1 << b)) // self.k) for j in range(self.k + 1)]
            return None, tuple(edges[j + 1] - edges[j] for j in range(self.k)), 1 << b
        cum = [probability_threshold(min(c, 1.0)) for c in np.cumsum(self.forced)[:-1]]
        edges = [0, *cum, 1 << 53]
        return tuple(cum), tuple(edges[j + 1] - edges[j] for j in range(self.k)), 1 << 53

    def thresholds(self) -> tuple[int, list[int] | None]:
        """``(keep, cumulative)``: keep the answer iff ``word >> 11 < keep``; the forced
        category from ``cumulative`` thresholds (``None``: uniform, multiply-shift).

        ``keep`` is rounded down far enough that the implemented channel's epsilon,
        computed from the forced outcome counts actually realised, never exceeds
        :attr:`epsilon`: ``keep' / (1 - keep') <= t / (1 - t) * f'_min / f_min`` with
        ``t = p_truthful``.
        Computed once per design and cached (``cumulative`` is a new list each call).
        """
        keep, cum = self._thresholds
        return keep, None if cum is None else list(cum)

    @cached_property
    def _implemented_forced_min(self) -> Fraction:
        """The smallest probability of a forced category as implemented (O(1) for uniform
        forcing: ``uniform_below``'s ``floor(2**b / k) / 2**b`` when k is no power of 2)."""
        if self.forced is None:
            if self.k & (self.k - 1) == 0:
                return Fraction(1, self.k)
            b = 64 - self.k.bit_length()  # uniform_below's resolution when k is no power of 2
            return Fraction((1 << b) // self.k, 1 << b)
        _, counts, total = self._forced_plan
        return Fraction(min(counts), total)

    @property
    def implemented_epsilon(self) -> float:
        """The epsilon of the channel the integer thresholds realise, in O(1) (no dense
        matrix, so any ``k``): ``ln(1 + keep / ((2**53 - keep) f'_min))`` with ``f'_min`` the
        smallest implemented forced probability; at most :attr:`epsilon`."""
        keep, _ = self._thresholds
        if math.isinf(self.epsilon) or keep >= _TWO53_INT:
            return math.inf
        f_min = self._implemented_forced_min
        if f_min == 0:
            return math.inf
        # keep / (2**53 - keep) <= t / (1 - t) * f'_min / f_min holds exactly (_thresholds),
        # so the realised ratio is at most the stated one; the float log1p can land an ulp
        # above it, so state the proven bound
        return min(math.log1p(keep / ((_TWO53_INT - keep) * float(f_min))), self.epsilon)

    # Proof note (threshold rounding toward privacy, docs/architecture.md#proof-notes).
    # Claim: the implemented worst likelihood ratio, 1 + keep / ((2**53 - keep) f'_min)
    # (report r from answer r against any other answer; f' the forced probabilities the
    # draw realises), is at most the stated 1 + t / ((1 - t) f_min), exactly, and the
    # implemented epsilon computed from it in floats is at most `epsilon`.  Argument: with
    # rho = t / (1 - t) * min(1, f'_min / f_min) in Fractions, keep = floor(2**53 rho / (1 +
    # rho)) gives keep / (2**53 - keep) <= rho (x / (2**53 - x) increases in x), hence keep /
    # ((2**53 - keep) f'_min) <= t / ((1 - t) f_min); f'_min is counted exactly from the
    # multiply-shift draw (floor(2**b / k) of 2**b outcomes) or the cumulative thresholds;
    # the loop then lowers keep while the float log1p exceeds the float `epsilon`.  Checked
    # by tests/test_implemented_epsilon.py::test_k_ary_randomized_response_realises_at_most_
    # its_epsilon (k from 2 to 2**20, a sweep of epsilon) and ::test_local_hashing_states_
    # its_implemented_epsilon_past_the_dense_limit.
    @cached_property
    def _thresholds(self) -> tuple[int, tuple[int, ...] | None]:
        if self.forced is None:
            cum = None
            f_min = Fraction(1, self.k)
            f_impl_min = self._implemented_forced_min
        else:
            cum, counts, total = self._forced_plan
            if self.p_truthful == 1 or min(self.forced) == 0:
                return probability_threshold(self.p_truthful), cum  # epsilon is infinite anyway
            f_min = Fraction(min(self.forced))
            f_impl_min = Fraction(min(counts), total)
        if self.p_truthful == 1:
            return 1 << 53, cum
        t = Fraction(self.p_truthful)
        ratio = t / (1 - t) * min(Fraction(1), f_impl_min / f_min)
        keep = probability_threshold(ratio / (1 + ratio), "down")
        # guard against float rounding in the stated epsilon: same formula, implemented values
        fmin = float(f_impl_min)
        while keep > 0 and math.log1p(keep / ((2.0**53 - keep) * fmin)) > self.epsilon:
            keep -= 1
        return keep, cum

    @cached_property
    def _plan(self) -> _Plan:
        keep, cum = self._thresholds
        dtype = np.uint16 if self.k <= 1 << 16 else np.uint32
        cum_array = None if cum is None else np.array(cum, dtype=np.uint64)
        if cum is not None:
            shift = mul = 0
        elif self.k & (self.k - 1) == 0:  # the top log2(k) bits
            shift, mul = 64 - (self.k.bit_length() - 1), 0
        else:  # multiply-shift on the top b bits
            shift, mul = 64 - self.k.bit_length(), self.k
        return _Plan(keep, cum, cum_array, dtype, shift, mul)

    @property
    def implemented_channel(self) -> Channel:
        """The channel realised by the integer thresholds (see :meth:`thresholds`):
        symmetric when every forced category has the same number of outcomes."""
        keep, _ = self._thresholds
        _, counts, total = self._forced_plan
        t = keep / 2.0**53
        if all(c == counts[0] for c in counts):
            q = (1 - t) * (counts[0] / total)
            return SymmetricChannel(self.k, t + q, q)
        _check_dense(self.k)
        f = np.asarray(counts, dtype=float) / total
        return DenseChannel(t * np.eye(self.k) + (1 - t) * f[:, None])

    def randomize(self, truth: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.integer[Any]]:
        """Randomize categories ``0..k-1``; two 64-bit words per report whatever the answer.

        In each block of ``m`` reports the first ``m`` words decide "keep the answer"
        (``(w >> 11) < keep``, ``keep`` from :meth:`thresholds`) and the next ``m`` draw the
        forced category
        (:func:`~deniable.randomness.uniform_below`, or the cumulative thresholds of
        ``forced``).  The report is selected arithmetically, ``other + keep * (x - other)``
        in wrapping unsigned arithmetic, so no step depends on the answer.  One answer
        given as a Python ``int`` or ``bool`` takes a scalar path (Python integers, the same
        two words and the same report, a 1-element array).
        """
        plan = self._plan
        if one_answer(truth, self.k):
            # one answer (a Python int or bool): its two words as Python ints, in the order
            # of the array path (keep word, then category word); the forced category from
            # the category word alone, and the report selected arithmetically,
            # other + keep (x - other) -- no branch on the answer
            keep_word, category_word = python_words(rng, 2)
            kept = (keep_word >> 11) < plan.keep
            forced = plan.category(category_word)
            return np.array([forced + kept * (truth - forced)], dtype=plan.dtype)
        x = v.reports_array("truth", truth, categories=self.k)
        out = keep_or_forced_reports(x, resolve_rng(rng), plan, self.k)
        return out

    def randomize_and_tally(
        self, truth: npt.ArrayLike, /, *, rng: Any = None
    ) -> tuple[npt.NDArray[np.integer[Any]], Tally]:
        """``randomize`` and ``tally`` in one pass: the same reports from the same words,
        counted without validating them again: as they are made by the compiled kernel
        (``DENIABLE_KERNEL``, numba), else four at a time for ``k <= 16`` or a ``bincount``
        of each group of blocks while it is in cache (above ``k = 2**16``, and for one
        answer, ``randomize`` then ``tally``)."""
        if one_answer(truth, self.k) or self.k > CHUNK:
            return super().randomize_and_tally(truth, rng=rng)
        x = v.reports_array("truth", truth, categories=self.k)
        counter = ValueCounter(self.k)
        out = keep_or_forced_reports(x, resolve_rng(rng), self._plan, self.k, counter)
        return out, self.bind(Tally(counter.counts()))

    def estimate(self, data: Any = None) -> FrequencyEstimate:
        """Estimate the share of each category from reports or a :class:`Tally`: a
        :class:`~deniable.designs.FrequencyEstimate` (the frequency oracles' estimate) with
        the unbiased shares ``(lambda - (1 - t) f) / t``, their MLE on the simplex
        (:attr:`~deniable.designs.FrequencyEstimate.bounded`), both variance conventions,
        the covariance, and each category as the binary design "report j or not"."""
        tally = self._as_tally(data)
        t = self.p_truthful
        if self._uniform:  # one q for every category: k-ary randomized response
            q: float | npt.NDArray[np.float64] = (1 - t) * self._forced_array[0].item()
        else:
            q = (1 - t) * self._forced_array
        lam = tally.counts / tally.n
        return FrequencyEstimate.from_counts(
            self, tally, tally.counts, tally.n, t + q, q, slope=t,
            bounded=_simplex_mle(self, lam), label="share", exclusive=True,
        )  # fmt: skip


@dataclass(frozen=True)
class _Plan:
    """What :meth:`Categorical.randomize` needs on every call (computed once per design)."""

    keep: int  # keep the answer iff word >> 11 < keep
    cum: tuple[int, ...] | None  # cumulative thresholds of a non-uniform forced distribution
    cum_array: npt.NDArray[np.uint64] | None  # the same as an array (None: uniform)
    dtype: type[np.unsignedinteger[Any]]  # of the reports
    # uniform forcing: category = word >> shift when mul = 0 (k a power of two), else the
    # multiply-shift ((word >> (64 - shift)) * mul) >> shift
    shift: int
    mul: int

    def category(self, word: int) -> int:
        """The forced category of one word, as the array path draws it
        (:func:`~deniable.randomness.uniform_below` or the cumulative thresholds)."""
        if self.cum is not None:
            return bisect.bisect_right(self.cum, word >> 11)
        if self.mul == 0:
            return word >> self.shift
        return ((word >> (64 - self.shift)) * self.mul) >> self.shift


def _simplex_mle(design: Categorical, lam: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """MLE of the category shares on the probability simplex, in closed form.

    With ``b = (1 - t) f`` the log-likelihood ``sum_r lam_r ln(t pi_r + b_r)`` is concave and
    separable, so its KKT conditions give ``pi_r = max(0, lam_r / mu - b_r / t)`` with ``mu``
    fixed by ``sum pi = 1`` ("water-filling", as in projecting onto the simplex).  Category
    ``r`` is active iff ``mu < tau_r = t lam_r / b_r``; adding categories in decreasing order
    of ``tau``, ``mu_A = t sum_A lam / (t + sum_A b)`` is a weighted mediant of the previous
    ``mu`` and the new ``tau``, so the active set is the longest prefix with ``tau > mu_A``.
    Inside the simplex every category is active, ``mu = t``, and this is the unbiased estimate.
    """
    t = design.p_truthful
    b = (1 - t) * design._forced_array
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(b > 0, t * lam / b, np.where(lam > 0, np.inf, 0.0))
    order = np.argsort(-tau, kind="stable")
    mu_prefix = t * np.cumsum(lam[order]) / (t + np.cumsum(b[order]))
    active = int(np.count_nonzero(tau[order] > mu_prefix))
    mu = float(mu_prefix[active - 1])
    pi = np.maximum(lam / mu - b / t, 0.0)
    return np.asarray(pi / pi.sum(), dtype=np.float64)
