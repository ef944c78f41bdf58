"""Is the majority affected? A threshold decision on the count of randomized "yes" reports.

Reports come from a binary design with ``P1 = P(yes | 1)`` and ``P0 = P(yes | 0)``.  With a
share ``pi`` of carriers the expected share of "yes" reports is ``lambda = P0 + pi (P1 - P0)``,
so "``pi > 1/2``" is "``lambda > lambda_b``" with the *boundary* report probability
``lambda_b = (P0 + P1) / 2``.  The decision compares the number of "yes" reports with
``n lambda_b`` (not with ``n / 2``: that is right only for symmetric designs, ``P0 + P1 = 1``),
optionally moved by ``c`` standard deviations of the count at the boundary to make a
"majority" verdict stricter.

Direction.  When ``P1 > P0`` a "yes" points to a carrier and the rule is
``#yes > threshold``.  When ``P1 < P0`` (Warner or crosswise with ``p < 1/2``) a "no" points
to a carrier; the rule becomes ``#yes < threshold`` with the offset subtracted.  Internally
every computation works on ``M``, the number of *majority-indicating* reports ("yes" when
``P1 > P0``, "no" otherwise), whose per-report probabilities ``Q1 > Q0`` always increase
with the truth; the rule is always ``M > t_M``.

Error probabilities are exact: ``M ~ Binomial(n, lambda_M)`` for iid sampling, and
``M = Binomial(K, Q1) + Binomial(n - K, Q0)`` (independent) for a fixed population of ``n``
with ``K`` carriers, where only the randomization is random.

References
----------
S. L. Warner (1965), Randomized response: a survey technique for eliminating evasive answer
bias, JASA 60(309), 63-69 (the channel and ``lambda``).
C. Dwork & A. Roth (2014), The Algorithmic Foundations of Differential Privacy, sec. 3.2
(randomized response as an epsilon-DP mechanism).
W. Hoeffding (1963), Probability inequalities for sums of bounded random variables, JASA
58(301), 13-30 (the bound ``exp(-2 n (lambda - lambda_b)^2)`` on the error at ``c = 0``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from deniable.common import epsilon_note, format_number, format_parameters, to_jsonable
from deniable.common import validation as v
from deniable.designs import BinaryDesign
from deniable.estimation._majority_rule import (
    MajorityRule,
    checked_rule,
    tails_fixed_at,
    tails_iid_at,
)
from deniable.exceptions import ParameterError
from deniable.randomness import resolve_rng
from deniable.results import Result, Table

__all__ = [
    "MajorityDecision",
    "majority_decision",
    "simulate_majority",
]


#: Largest ``n`` of a fixed population (``true_yes``): the exact convolution of the two
#: binomials takes time and memory linear in ``n`` (about 0.3 s at the limit).
MAX_FIXED_N = 4 * 10**6
_FIXED_WHY = (
    "a fixed population is evaluated by an exact convolution, linear in n; give "
    "`prevalence` (iid sampling, any n) for larger n"
)
#: Largest number of simulated surveys (``trials``) of :func:`simulate_majority`.
MAX_TRIALS = 10**6
#: Largest ``n`` :func:`simulate_majority` draws binomial counts for (64-bit counts).
MAX_SIMULATED_N = 2**62


@dataclass(frozen=True)
class MajorityDecision(Result):
    """The decision "the majority carries A" and its exact error probabilities.

    Attributes
    ----------
    design : the binary design that produced the reports.
    n : number of reports.
    offset : ``c``, in standard deviations of the "yes" count at the boundary
        (``sqrt(n lambda_b (1 - lambda_b))``, ``lambda_b = (P0 + P1) / 2``).
    threshold : decide "majority" iff ``#yes > threshold`` (``P1 > P0``) or
        ``#yes < threshold`` (``P1 < P0``); see :attr:`decision_rule`.
    population : ``"iid"`` (respondents sampled independently, ``#yes ~ Bin(n, lambda)``)
        or ``"fixed"`` (a fixed population with ``K`` carriers,
        ``#yes = Bin(K, P1) + Bin(n - K, P0)``).
    prevalence : true share of carriers (``K / n`` for a fixed population).
    true_yes : ``K`` for a fixed population, else ``None``.
    report_probability : ``lambda = P0 + prevalence (P1 - P0)``, the mean share of "yes".
    p_decide_majority : exact probability of deciding "majority".
    is_majority : ``prevalence > 1/2`` (strict).
    error_probability : ``p_decide_majority`` if not a majority, else ``1 - p_decide_majority``
        (computed directly from the lower tail, not by subtraction).
    false_positive_rate : worst case over every non-majority truth.  The decision
        probability increases with the prevalence, so the worst case is the largest
        non-majority truth: prevalence exactly 1/2 for iid sampling, ``K = floor(n / 2)``
        for a fixed population.  It does not depend on the stated prevalence.
    false_negative_rate : probability of *not* deciding "majority".  If the stated truth is
        a majority, at that truth (then it equals ``error_probability``).  Otherwise at the
        smallest majority: ``K = floor(n / 2) + 1`` for a fixed population, and for iid
        sampling the prevalence ``(floor(n / 2) + 1) / n``, the smallest share a population
        of ``n`` can hold above 1/2 (the supremum over all prevalences just above 1/2 would
        be ``1 - false_positive_rate``, uninformative).  See
        :attr:`false_negative_prevalence`.
    simulated : with :meth:`simulate`, the share of ``trials`` simulated surveys (seed
        ``seed``) that decided "majority"; else ``None``.

    Notes
    -----
    :meth:`to_dict` also carries ``false_positive_prevalence`` and
    ``false_negative_prevalence``, the truths at which the two rates are evaluated.

    Examples
    --------
    >>> from deniable.designs import TwoCoin
    >>> d = majority_decision(TwoCoin(), 3, true_yes=2)   # 21/32 by enumeration
    >>> d.p_decide_majority, d.error_probability           # 21/32, 11/32
    (0.65625, 0.34375)
    """

    design: BinaryDesign
    n: int
    offset: float
    threshold: float
    population: str
    prevalence: float
    true_yes: int | None
    report_probability: float
    p_decide_majority: float
    is_majority: bool
    error_probability: float
    false_positive_rate: float
    false_negative_rate: float
    simulated: float | None = None
    trials: int | None = None
    seed: int | None = None

    @property
    def decision_rule(self) -> str:
        """The rule in words, e.g. ``"majority iff #yes > 55"``."""
        op = ">" if self.design.p_yes_given_1 > self.design.p_yes_given_0 else "<"
        return f"majority iff #yes {op} {self.threshold:.6g}"

    @property
    def false_positive_prevalence(self) -> float:
        """The truth at which :attr:`false_positive_rate` is evaluated."""
        return 0.5 if self.population == "iid" else (self.n // 2) / self.n

    @property
    def false_negative_prevalence(self) -> float:
        """The truth at which :attr:`false_negative_rate` is evaluated."""
        return self.prevalence if self.is_majority else (self.n // 2 + 1) / self.n

    def decide(self, yes: int) -> bool:
        """The verdict from ``yes`` observed "yes" reports among this decision's ``n``:
        ``True`` ("the majority carries A") iff the count passes :attr:`decision_rule`
        (the rule of :func:`decide_majority` at this design, ``n`` and offset; a count equal
        to the threshold is never a majority).

        >>> from deniable.designs import TwoCoin, Warner
        >>> d = majority_decision(TwoCoin(), 100, prevalence=0.6)
        >>> d.decide(51), d.decide(50)
        (True, False)
        >>> w = majority_decision(Warner(0.25), 100, prevalence=0.6)   # "no" points to A
        >>> w.decision_rule, w.decide(40), w.decide(60)
        ('majority iff #yes < 50', True, False)
        """
        count = v.integer("yes", yes, minimum=0, maximum=self.n)
        return bool(MajorityRule.of(self.design, self.n, self.offset).decides(count))

    def is_right(self, yes: int) -> bool:
        """Whether the verdict from ``yes`` "yes" reports (:meth:`decide`) is right about
        this decision's truth, :attr:`is_majority` (for a fixed population, ``true_yes``,
        the truth of the very respondents who reported).

        >>> from deniable.designs import TwoCoin
        >>> d = majority_decision(TwoCoin(), 100, true_yes=45)   # not a majority
        >>> d.is_right(48), d.is_right(53)
        (True, False)
        """
        return self.decide(yes) == self.is_majority

    def simulate(self, trials: int = 10_000, seed: int | None = None) -> MajorityDecision:
        """This decision with a seeded Monte Carlo check of :attr:`p_decide_majority`
        (:func:`simulate_majority` with the same truth and offset) in :attr:`simulated`.

        Without ``seed`` a fresh one is drawn and kept in :attr:`seed`, so the check can be
        repeated."""
        used = secrets.randbelow(2**32) if seed is None else v.integer("seed", seed, minimum=0)
        sim = simulate_majority(
            self.design, self.n, prevalence=None if self.true_yes is not None else self.prevalence,
            true_yes=self.true_yes, offset=self.offset, trials=trials, seed=used,
        )  # fmt: skip
        return replace(self, simulated=sim, trials=trials, seed=used)

    def to_dict(self) -> dict[str, Any]:
        """A plain-JSON dict: the decision, its exact probabilities and the design's
        epsilon (with :meth:`simulate`: ``simulated_p_decide_majority``, ``trials``,
        ``seed``)."""
        out: dict[str, Any] = {
            "design": self.design.name,
            "parameters": dict(self.design.parameters()),
            "n": self.n,
            "offset": self.offset,
            "threshold": self.threshold,
            "decision_rule": self.decision_rule,
            "population": self.population,
            "prevalence": self.prevalence,
            "true_yes": self.true_yes,
            "lambda": self.report_probability,
            "p_decide_majority": self.p_decide_majority,
            "is_majority": self.is_majority,
            "error_probability": self.error_probability,
            "false_positive_rate": self.false_positive_rate,
            "false_positive_prevalence": self.false_positive_prevalence,
            "false_negative_rate": self.false_negative_rate,
            "false_negative_prevalence": self.false_negative_prevalence,
            "epsilon": self.design.epsilon,
        }
        if self.simulated is not None:
            out.update(simulated_p_decide_majority=self.simulated, trials=self.trials,
                       seed=self.seed)  # fmt: skip
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The decision for people: the truth, the rule, its exact error probabilities and
        the two points where the error rates are evaluated."""
        if self.true_yes is not None:
            truth = f"K = {self.true_yes} carriers of {self.n} (fixed population)"
            fp_at = f"K = {self.n // 2}"
            fn_at = f"K = {self.true_yes}" if self.is_majority else f"K = {self.n // 2 + 1}"
        else:
            truth = f"prevalence {self.prevalence:.6g} (iid sampling)"
            fp_at = "prevalence 1/2"
            fn_at = f"prevalence {self.false_negative_prevalence:.6g}"
        truth += ": a majority" if self.is_majority else ": not a majority"
        if not self.is_majority:
            fn_at += ", the smallest majority"
        d = self.design
        rows = [
            ("design", f"{d.name} ({format_parameters(d.parameters())})"),
            ("ε", epsilon_note(d.epsilon)),
            ("n", str(self.n)),
            ("truth", truth),
            ("λ (mean share of yes reports)", format_number(self.report_probability, 6)),
            ("offset c (SDs)", f"{self.offset:g}"),
            ("threshold", f"{self.threshold:.6g}  ({self.decision_rule})"),
            ("P(decide majority)", format_number(self.p_decide_majority, 6)),
            ("error probability (exact)", format_number(self.error_probability, 6)),
            (f"false positive rate (at {fp_at}: the worst case)",
             format_number(self.false_positive_rate, 6)),
            (f"false negative rate (at {fn_at})", format_number(self.false_negative_rate, 6)),
        ]  # fmt: skip
        if self.simulated is not None:
            rows.append(
                (f"P(decide majority), simulated ({self.trials} trials, seed {self.seed})",
                 format_number(self.simulated, 6))
            )  # fmt: skip
        return Table.pairs(rows, title="Majority decision")


def _checked_truth(prevalence: Any, true_yes: Any) -> tuple[float | None, Any]:
    """The checked ``prevalence`` (or ``None``) and the ``true_yes`` given (checked against
    ``n`` by the caller, once ``n`` is checked)."""
    if (prevalence is None) == (true_yes is None):
        got = "both" if prevalence is not None else "neither"
        raise ParameterError(
            "give exactly one of `prevalence` (iid sampling) and `true_yes` (a fixed "
            f"population with that many carriers), got {got}."
        )
    return (None if prevalence is None else v.probability("prevalence", prevalence)), true_yes


def majority_decision(
    design: BinaryDesign,
    n: int,
    *,
    prevalence: float | None = None,
    true_yes: int | None = None,
    offset: float = 0.0,
) -> MajorityDecision:
    """Exact error probabilities of the majority decision from ``n`` randomized reports.

    Give exactly one of

    * ``prevalence`` -- iid sampling: each respondent carries A with probability ``pi``,
      so ``#yes ~ Binomial(n, lambda)``, ``lambda = P0 + pi (P1 - P0)``;
    * ``true_yes`` -- a fixed population of ``n`` with ``K`` carriers, only the
      randomization random: ``#yes = Bin(K, P1) + Bin(n - K, P0)``, whose tail is the
      convolution of the two binomials evaluated exactly (see :class:`MajorityDecision`).

    The rule is ``#yes > n (P0 + P1)/2 + c sqrt(n lambda_b (1 - lambda_b))`` for
    ``P1 > P0`` (mirrored for ``P1 < P0``, see :func:`majority_threshold`).  At ``c = 0``
    and iid sampling Hoeffding's inequality bounds the error by
    ``exp(-2 n (lambda - lambda_b)^2)``.  For iid sampling any ``n`` works: the binomial
    tails are regularized incomplete beta functions; where scipy cannot evaluate them
    (``n`` beyond ~1e15 with the threshold at the mean, or beyond ~1e150) the
    continuity-corrected normal approximation is used, within ``O(n^-1/2)`` of them.

    Parameters
    ----------
    design : BinaryDesign (Kuk only with ``draws = 1``).
    n : int >= 1, number of reports (at most ``MAX_FIXED_N`` = 4 * 10**6 with
        ``true_yes``; any size with ``prevalence``).
    prevalence : float in [0, 1], or ``None``.
    true_yes : int in [0, n], or ``None``.
    offset : float, ``c`` (finite).

    Examples
    --------
    >>> from deniable.designs import ForcedResponse
    >>> d = majority_decision(ForcedResponse(0.2, 0.1), 400, prevalence=0.6)
    >>> d.threshold, round(d.report_probability, 4)
    (220.0, 0.62)
    >>> round(d.error_probability, 4), round(d.false_positive_rate, 4)
    (0.0025, 0.4806)
    """
    pi, given_k = _checked_truth(prevalence, true_yes)
    if given_k is None:
        rule = checked_rule(design, n, offset)
        return _decision(rule, pi, None)
    rule = checked_rule(design, n, offset, max_n=MAX_FIXED_N, why=_FIXED_WHY)
    return _decision(rule, None, v.integer("true_yes", given_k, minimum=0, maximum=rule.n))


def _decision(rule: MajorityRule, pi: float | None, k: int | None) -> MajorityDecision:
    """The decision's error probabilities at a checked truth (``pi`` or ``k`` carriers)."""
    n, half = rule.n, rule.n // 2
    if k is not None:
        pi = k / n
        is_majority = 2 * k > n
        p_yes, p_no = tails_fixed_at(rule, k)
        fp = tails_fixed_at(rule, half)[0]
        fn = p_no if is_majority else tails_fixed_at(rule, half + 1)[1]
    else:
        assert pi is not None
        is_majority = pi > 0.5
        p_yes, p_no = tails_iid_at(rule, pi)
        fp = tails_iid_at(rule, 0.5)[0]
        fn = p_no if is_majority else tails_iid_at(rule, (half + 1) / n)[1]
    design = rule.design
    return MajorityDecision(
        design=design,
        n=n,
        offset=rule.offset,
        threshold=rule.threshold,
        population="fixed" if k is not None else "iid",
        prevalence=pi,
        true_yes=k,
        report_probability=design.p_yes_given_0
        + pi * (design.p_yes_given_1 - design.p_yes_given_0),
        p_decide_majority=p_yes,
        is_majority=is_majority,
        error_probability=p_no if is_majority else p_yes,
        false_positive_rate=fp,
        false_negative_rate=fn,
    )


def simulate_majority(
    design: BinaryDesign,
    n: int,
    *,
    prevalence: float | None = None,
    true_yes: int | None = None,
    offset: float = 0.0,
    trials: int = 10_000,
    seed: int | None = None,
) -> float:
    """Empirical probability of deciding "majority" over ``trials`` seeded surveys.

    Each trial draws the *counts* of a survey rather than individual reports (same
    distribution, O(trials) work whatever ``n``): the number of carriers
    ``K ~ Binomial(n, prevalence)`` for iid sampling (or the given ``true_yes``), then
    ``#yes = Binomial(K, P1) + Binomial(n - K, P0)``, then the rule of
    :func:`decide_majority`.  The two-stage draw checks the exact formulas independently
    of ``lambda``.  ``seed=None`` draws fresh entropy (not reproducible).

    >>> from deniable.designs import TwoCoin
    >>> exact = majority_decision(TwoCoin(), 101, prevalence=0.6).p_decide_majority
    >>> sim = simulate_majority(TwoCoin(), 101, prevalence=0.6, trials=20_000, seed=3)
    >>> abs(sim - exact) < 4 * (exact * (1 - exact) / 20_000) ** 0.5
    True
    """
    pi, given_k = _checked_truth(prevalence, true_yes)
    rule = checked_rule(
        design, n, offset, max_n=MAX_SIMULATED_N, why="counts are drawn as 64-bit integers"
    )
    k = None if given_k is None else v.integer("true_yes", given_k, minimum=0, maximum=rule.n)
    trials = v.integer(
        "trials", trials, minimum=1, maximum=MAX_TRIALS, why="time and memory linear in trials"
    )
    if seed is not None:
        seed = v.integer("seed", seed, minimum=0)
    gen = resolve_rng(np.random.SeedSequence().entropy if seed is None else seed)
    assert isinstance(gen, np.random.Generator)
    n, d = rule.n, rule.design
    if k is not None:
        carriers = np.full(trials, k, dtype=np.int64)
    else:
        assert pi is not None
        carriers = gen.binomial(n, pi, size=trials)
    yes = gen.binomial(carriers, d.p_yes_given_1) + gen.binomial(n - carriers, d.p_yes_given_0)
    return float(np.count_nonzero(rule.decides(yes))) / trials
