"""The design contract: an exact channel, its epsilon, a randomizer, a tally, an estimator.

Every design is a frozen dataclass whose channel ``P[report | truth]`` (columns sum to 1)
determines everything else.  Binary designs need only ``p_yes_given_1`` and
``p_yes_given_0``; this module derives the randomizer, the tally, the estimator with
both standard-error conventions and its intervals, and the exact variance from them.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs._binary_estimate import binary_estimate
from deniable.designs._channel import Channel, DenseChannel, matrix_epsilon
from deniable.designs._kernels import binary_reports
from deniable.designs._mechanism import MechanismBase, one_answer
from deniable.designs._tally import Tally
from deniable.exceptions import DataError, ParameterError
from deniable.randomness import binary_thresholds, python_words, resolve_rng
from deniable.results import Estimate

# Tally (_tally) and binary_estimate (_binary_estimate) are re-exported from here.
__all__ = ["BinaryDesign", "Design", "Tally", "binary_estimate", "channel_epsilon"]

# _SCALAR (the types of one answer on the randomizers' scalar fast path) is re-exported
# from _mechanism for the modules that import it from here.
_TWO53 = 1 << 53


def channel_epsilon(channel: Channel | npt.ArrayLike) -> float:
    """Exact epsilon of a channel ``P[report, truth]`` under replace-one neighbouring.

    ``max over reports r and truths x, x' of ln(P[r | x] / P[r | x'])``; ``math.inf`` when a
    report has probability 0 under one truth and not under another (it reveals the answer).
    ``channel`` is a :class:`~deniable.designs.Channel` (a symmetric k-ary channel in O(1))
    or a matrix.
    """
    if isinstance(channel, Channel):
        return channel.epsilon
    return matrix_epsilon(channel)


def _no_category(design: Design, category: Any) -> None:
    if category is not None:
        raise ParameterError(
            f"`category` applies to design 'categorical' only, got {category!r} for design "
            f"{design.name!r}."
        )


class Design(MechanismBase, ABC):
    """Base of every design: a channel, its exact epsilon, randomize, tally, estimate.

    Every design satisfies the :class:`~deniable.designs.Mechanism` protocol: ``name``,
    ``key`` (its identity, which its tallies carry), ``epsilon``, ``channel`` (an operator,
    :class:`~deniable.designs.Channel`), ``randomize(values, rng=...)``,
    ``tally(reports)`` and ``estimate(tally)``.  What follows from the parameters alike for
    every mechanism (``key``, ``parameters()``, ``bind``, ``tally_counts``, ``describe()``,
    pickling) comes from :class:`~deniable.designs.MechanismBase`.
    """

    _noun: ClassVar[str] = "design"

    @property
    @abstractmethod
    def channel(self) -> Channel:
        """``P[report, truth]`` as an operator (``np.asarray(channel)``: the matrix; rows
        are reports, columns truths; columns sum to 1)."""

    @property
    @abstractmethod
    def epsilon(self) -> float:
        """Exact epsilon (``math.inf`` when some report reveals the answer)."""

    @property
    @abstractmethod
    def implemented_channel(self) -> Channel:
        """The channel the randomizer realises exactly from its integer thresholds.

        Thresholds are rounded toward privacy, so ``channel_epsilon(implemented_channel)``
        never exceeds :attr:`epsilon`; the estimators use :attr:`channel` (the difference is
        below ``2**-52`` per entry).
        """

    @property
    def n_reports(self) -> int:
        """Number of distinct report values (the length of the tally)."""
        return int(self.channel.n_cells)

    @property
    def _tally_cells(self) -> int:
        return self.n_reports

    @property
    def n_truths(self) -> int:
        """Number of distinct inputs of :meth:`randomize`."""
        k = self.channel.n_truths
        assert k is not None
        return int(k)

    @property
    def n_groups(self) -> int:
        """Randomization groups whose label is part of the report (1; 2 for the two-group
        designs, whose data carry a group column beside the answer)."""
        return 1

    @property
    def report_labels(self) -> tuple[str, ...]:
        """A label for each report value (each cell of the tally)."""
        return tuple(str(r) for r in range(self.n_reports))

    def _spec_algorithm(self) -> tuple[str, int, dict[str, Any]]:
        """``(algorithm, words per report, thresholds)`` of the design's question spec
        (``designs._spec_algorithms.spec_algorithm``; ``docs/specs.md``)."""
        raise ParameterError(f"mechanism {self.name!r} has no question-spec algorithm.")

    def binary_count(self, category: int | None = None) -> tuple[float, float] | None:
        """``(P(counted | carrier), P(counted | not))``: the report probabilities of one
        binary count of reports that is sufficient for the prevalence, or ``None`` when no
        single count is (the whole tally is needed, e.g. Kuk's red count over several draws).

        A binary design counts its "yes" reports (``category`` must be ``None``); the k-ary
        design counts the reports of ``category`` (required), whose prevalence is tested.
        Power, sample size and the exact binomial test read this instead of asking what
        kind of design they were given.

        >>> from deniable.designs import Categorical, Kuk, Warner
        >>> Warner(0.7).binary_count()
        (0.7, 0.30000000000000004)
        >>> [round(x, 12) for x in Categorical(k=3, p_truthful=0.4).binary_count(category=2)]
        [0.6, 0.2]
        >>> Kuk(0.7, 0.3, draws=2).binary_count() is None
        True
        """
        _no_category(self, category)
        if self.n_groups != 1 or self.n_truths != 2:
            raise ParameterError(
                f"design {self.name!r} must have a binary true answer and one group for a "
                f"binary count, got {self.n_truths} true answers in {self.n_groups} groups."
            )
        return None

    @abstractmethod
    def randomize(self, truth: npt.ArrayLike, *, rng: Any = None) -> npt.NDArray[np.integer[Any]]:
        """Randomize true answers into reports (CSPRNG unless ``rng`` is given)."""

    @abstractmethod
    def estimate(self, data: Any = None) -> Any:
        """Estimate from reports or a :class:`Tally` (an unbound tally of the right length is
        bound; a tally of another mechanism is refused)."""

    def encode(
        self, answers: npt.ArrayLike, groups: npt.ArrayLike | None = None
    ) -> npt.NDArray[np.integer[Any]]:
        """Reports from data held in columns: the column of randomized answers (and, for a
        two-group design, the column of groups), as ``tally`` counts them."""
        if groups is not None:
            raise DataError(
                f"design {self.name!r} has one group: give the reports alone, got `groups`."
            )
        return v.reports_array("reports", answers, categories=self.n_reports)


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

    _takes_yes_n: ClassVar[bool] = True

    @property
    def n_reports(self) -> int:
        return 2

    @property
    def n_truths(self) -> int:
        return 2

    def _spec_algorithm(self) -> tuple[str, int, dict[str, Any]]:
        return "bernoulli-count/1", 1, {"yes": list(self.thresholds())}

    def binary_count(self, category: int | None = None) -> tuple[float, float] | None:
        """``(P(yes | 1), P(yes | 0))``: the count of yes reports is sufficient
        (:meth:`Design.binary_count`)."""
        _no_category(self, category)
        if self.p_yes_given_1 == self.p_yes_given_0:
            raise ParameterError(
                f"`design` must have P(yes | 1) != P(yes | 0), got {self.p_yes_given_1} for both."
            )
        return self.p_yes_given_1, self.p_yes_given_0

    def _tally_of_yes(self, yes: Any, n: Any) -> Tally:
        return self.bind(Tally.binary(yes, n))

    def _channel_fields(self) -> dict[str, Any]:
        return {"p_yes_given_1": self.p_yes_given_1, "p_yes_given_0": self.p_yes_given_0}

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
    def channel(self) -> DenseChannel:
        return DenseChannel(self._bit_channel())

    @property
    def report_labels(self) -> tuple[str, ...]:
        return ("no", "yes")

    @property
    def epsilon(self) -> float:
        # eps = max(|ln(P1/P0)|, |ln((1-P1)/(1-P0))|): worst-case likelihood ratio of one report
        return channel_epsilon(self.channel)

    def thresholds(self) -> tuple[int, int]:
        """Integer thresholds ``(t0, t1)``: a report is "yes" iff ``word >> 11 < t[truth]``.

        Rounded toward privacy (:func:`~deniable.randomness.binary_thresholds`), so the
        implemented channel's epsilon never exceeds :attr:`epsilon`.  Computed once per
        design (at construction, which checks them) and cached.
        """
        return self._thresholds

    @cached_property
    def _thresholds(self) -> tuple[int, int]:
        # cached in the instance's __dict__ (not a dataclass field: no effect on eq, hash,
        # repr or parameters); every design is immutable, so the thresholds cannot go stale
        #
        # Proof note (threshold rounding toward privacy, docs/architecture.md#proof-notes).
        # Claim: the implemented channel's epsilon, computed as the stated one is, is at most
        # the stated epsilon, and for Binary (a ratio bound L = exp_lower_bound(eps) < e^eps)
        # both implemented likelihood ratios are at most e^eps exactly.  Argument: start
        # from binary_thresholds (ratios at most the stated float channel's, exactly); each
        # step moves the two thresholds one unit toward each other, which lowers both ratios
        # t_hi / t_lo and (2**53 - t_lo) / (2**53 - t_hi); stop at the first pair that meets
        # the float comparison and, with L, the integer inequalities t_hi <= L t_lo and
        # 2**53 - t_lo <= L (2**53 - t_hi); the guard stops before the thresholds cross
        # (raise, never clip).  Checked by tests/test_implemented_epsilon.py::
        # test_binary_mechanism_realises_at_most_its_epsilon and ::test_binary_designs_
        # realise_at_most_their_stated_channel (sweeps of epsilon, exact Fractions).
        p1, p0 = self.p_yes_given_1, self.p_yes_given_0
        t0, t1 = binary_thresholds(p1, p0)
        target = min(self._report_epsilon(), channel_epsilon(self._bit_channel()))
        if not math.isfinite(target):
            return t0, t1
        # float rounding of the stated probabilities (e.g. 1 - p for p near 1) can still leave
        # the implemented ratio above e^eps: move the thresholds toward each other until the
        # implemented epsilon, computed the same way as the stated one, is not larger, and
        # (for a design whose epsilon is its parameter: Binary) both likelihood ratios in
        # exact integer arithmetic are at most e^eps (tests/test_implemented_epsilon.py)
        bound = self._ratio_bound()
        for _ in range(1 << 16):
            q0, q1 = t0 / 2.0**53, t1 / 2.0**53
            lo, hi = min(t0, t1), max(t0, t1)
            exact = bound is None or (
                lo > 0 and hi <= bound * lo and _TWO53 - lo <= bound * (_TWO53 - hi)
            )
            if exact and channel_epsilon([[1 - q0, 1 - q1], [q0, q1]]) <= target:
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

    def _ratio_bound(self) -> Fraction | None:
        """A proven bound on ``e^eps`` that the implemented likelihood ratios must meet in
        exact arithmetic, or None.  None for designs whose epsilon is derived from their
        stated probabilities (the thresholds are rounded toward privacy from them, so the
        implemented ratios are at most the stated ones exactly); a design whose epsilon is
        its parameter (Binary) gives ``exp_lower_bound(epsilon)``, since its float
        probabilities ``e^eps / (1 + e^eps)`` may themselves round past ``e^eps``."""
        return None

    @property
    def implemented_channel(self) -> DenseChannel:
        """The channel the randomizer realises exactly (thresholds over ``2**53``)."""
        t0, t1 = self._thresholds
        p0, p1 = t0 / 2.0**53, t1 / 2.0**53
        return DenseChannel([[1 - p0, 1 - p1], [p0, p1]])

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
        One answer given as a Python ``int`` or ``bool`` takes a scalar path (Python
        integers, the threshold selected arithmetically): the same word, the same report,
        the same 1-element array.
        """
        if one_answer(truth, 2):
            # one answer (a Python int or bool): one word as a Python int, the threshold of
            # the answer's column selected by arithmetic, t0 + x (t1 - t0), then one
            # comparison -- no branch on the answer (both answers run the same statements),
            # and the same word and report as the array path (tests/test_fast_paths.py)
            (word,) = python_words(rng, 1)
            t0, t1 = self._thresholds
            return np.array([(word >> 11) < t0 + truth * (t1 - t0)], dtype=np.uint8)
        x = v.reports_array("truth", truth, categories=2)
        t0, t1 = self._thresholds
        out, _ = binary_reports(x, resolve_rng(rng), t0, t1, count=False)
        return out

    def randomize_and_tally(
        self, truth: npt.ArrayLike, /, *, rng: Any = None
    ) -> tuple[npt.NDArray[np.uint8], Tally]:
        """``randomize`` and ``tally`` in one pass: the same reports from the same words,
        and the count of "yes" reports taken block by block as they are made."""
        if one_answer(truth, 2):
            return super().randomize_and_tally(truth, rng=rng)
        x = v.reports_array("truth", truth, categories=2)
        t0, t1 = self._thresholds
        out, yes = binary_reports(x, resolve_rng(rng), t0, t1, count=True)
        counts = np.array([x.size - yes, yes], dtype=np.int64)
        return out, self.bind(Tally(counts))

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
