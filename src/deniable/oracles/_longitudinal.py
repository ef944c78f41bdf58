"""Two-round memoized longitudinal frequency oracles (Arcolezi, Couchot, Al Moussawi,
Palamidessi & Xiao 2022, "Improving the utility of locally differentially private protocols
for longitudinal and multidimensional frequency estimates"): the common part, and L-GRR.

A device holding value ``x`` draws a *permanent* randomized response (PRR) of ``x`` once and
keeps it (memoization, Erlingsson, Pihur & Korolova 2014); every report is an
*instantaneous* randomized response (IRR) of the kept PRR, drawn afresh.  Three numbers state
the privacy of a device that keeps one value, each exact and each the epsilon of a channel:

* ``epsilon`` (``eps_inf``): the PRR's epsilon.  Every report of the value is a
  post-processing of the one PRR, so any number of reports loses at most this;
* :attr:`~LongitudinalOracle.epsilon_1`: the first report's epsilon, that of the composed
  channel ``P_irr @ P_prr`` from the value to one report (at most ``eps_inf``);
* :attr:`~LongitudinalOracle.epsilon_irr`: the IRR's epsilon over its inputs (every PRR
  output), what protects the kept PRR itself from one report.

``r`` reports of one value lose at most ``min(eps_inf, r eps_1)``; a device whose value
takes ``d`` distinct values keeps ``d`` PRRs and loses at most ``min(d eps_inf, r eps_1)``
(basic composition; :meth:`~LongitudinalOracle.longitudinal_epsilon`).

The composed channel of every oracle here is a "pure" one (Wang, Blocki, Li & Jha 2017): a
report supports the true value with probability ``p_s`` and each other value with ``q_s``,
``p_s - q_s = (p1 - q1)(p2 - q2)``, so the tally, the unbiased estimate and both variance
conventions are those of :class:`~deniable.oracles.FrequencyOracle` at ``(p_s, q_s)`` (the
paper's variance ``q_s (1 - q_s) / (n (p1 - q1)^2 (p2 - q2)^2)`` is its fixed-population
variance at a zero frequency).  Without a memo every report is a first report; with
``memo=`` (a :class:`~deniable.mechanisms.MemoStore`) and ``devices=`` the PRRs are kept and
replayed (:meth:`~LongitudinalOracle.randomize`).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.accounting import respondent_keys
from deniable.common import validation as v
from deniable.designs import Categorical, mechanism_key
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError
from deniable.oracles._base import FrequencyOracle, check_k, open_probability
from deniable.oracles._rappor_client import _MemoStore
from deniable.randomness import random_words, resolve_rng, uniform_below

__all__ = ["LGRR", "LongitudinalOracle"]

#: The memo question of chunk ``c`` of the PRR of value ``v`` (one namespace for every
#: longitudinal oracle, so that a device never holds two PRRs of one value).
_QUESTION = "longitudinal/prr/{value}/{chunk}"

# Proof note (the longitudinal epsilon of memoization, docs/architecture.md#proof-notes).
# Claim: a device reporting value x in any number of rounds loses at most `epsilon` (the
# PRR's), r rounds at most min(epsilon, r epsilon_1).  Argument: every report is the IRR of
# the one PRR of x with fresh coins (post-processing of the PRR), and each report alone is
# the composed channel P_irr @ P_prr (basic composition of the r reports).  The PRR is
# drawn once per (device, value): the memo question names the value only and each stored
# chunk carries `permanent_key` (the PRR's family and parameters), so another oracle, or
# this one with another PRR, is refused (PrivacyError) for a device holding one, never
# given a second PRR.  Checked by tests/test_longitudinal.py::test_a_device_replays_its_
# prr_across_rounds_and_restarts, ::test_another_permanent_stage_is_refused and the
# enumerations of ::test_three_epsilons_are_exact_and_tight.


def check_epsilons(eps_inf: Any, eps_1: Any) -> tuple[float, float]:
    """``(eps_inf, eps_1)``: finite and positive, ``eps_1 < eps_inf``; ``eps_1`` defaults
    to ``eps_inf / 2``."""
    e_inf = v.positive("eps_inf", eps_inf)
    e_1 = e_inf / 2 if eps_1 is None else v.positive("eps_1", eps_1)
    if not e_1 < e_inf:
        raise ParameterError(
            f"`eps_1` (the first report's epsilon) must be less than `eps_inf` = {e_inf!r} "
            f"(the bound over all reports, the permanent response's), got {eps_1!r}."
        )
    return e_inf, e_1


def fit_below(
    build: Callable[[float], Any], target: float, measure: Callable[[Any], float]
) -> tuple[float, Any]:
    """``(t, build(t))`` at the largest ``t <= target`` (lowered by a few ulps at most) whose
    ``measure`` is at most ``target``: float rounding never states more than was asked."""
    t = target
    for _ in range(64):
        out = build(t)
        if measure(out) <= target:
            return t, out
        t = t * (1 - 2**-50)
    raise ParameterError(f"no parameters realise epsilon {target!r}.")  # pragma: no cover


class LongitudinalOracle(FrequencyOracle):
    """Base of the two-round memoized oracles (module doc): a subclass gives the PRR and
    IRR probabilities, their draws and the chunks a PRR is kept in."""

    #: The PRR's family in :attr:`permanent_key` (oracles of one family share PRRs).
    _family: ClassVar[str]

    # ---- what a subclass gives

    @property
    @abstractmethod
    def probabilities(self) -> tuple[float, float, float, float]:
        """``(p1, q1, p2, q2)`` as the randomizer realises them: the PRR's and the IRR's
        probability of supporting the true value and one given other value."""

    @property
    @abstractmethod
    def epsilon_irr(self) -> float:
        """The IRR's epsilon over its inputs (every PRR output)."""

    @property
    @abstractmethod
    def _chunks(self) -> int:
        """Non-negative int64 memo reports a PRR is kept in."""

    @abstractmethod
    def _first(self, x: npt.NDArray[np.integer[Any]], gen: Any) -> npt.NDArray[Any]:
        """First reports of the values ``x``: a fresh PRR and IRR each, the words taken
        report by report (the PRR's, then the IRR's: ``words_per_report`` in all)."""

    @abstractmethod
    def _irr(self, prr: npt.NDArray[Any], gen: Any) -> npt.NDArray[Any]:
        """Reports: a fresh IRR of each PRR."""

    @abstractmethod
    def _prr_chunk(self, value: int, n: int, chunk: int, gen: Any) -> npt.NDArray[np.int64]:
        """Chunk ``chunk`` of ``n`` fresh PRRs of ``value``."""

    @abstractmethod
    def _from_chunks(self, chunks: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """PRRs from their ``(n, chunks)`` memo reports."""

    @abstractmethod
    def _permanent_parameters(self) -> dict[str, Any]:
        """What defines the PRR (the key its memo reports carry)."""

    # ---- privacy

    def _support(self) -> tuple[float, float]:
        p1, q1, p2, q2 = self.probabilities
        # a report supports j: through a PRR supporting j or not, then the IRR
        return p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2

    @property
    def epsilon_inf(self) -> float:
        """The bound over unlimited reports of one value: the PRR's epsilon (``epsilon``)."""
        return self.epsilon

    @property
    @abstractmethod
    def epsilon_1(self) -> float:
        """The first report's epsilon: the composed channel ``P_irr @ P_prr``'s."""

    def longitudinal_epsilon(self, rounds: int | None = None, *, values: int = 1) -> float:
        """The epsilon of ``rounds`` reports (all, if ``None``) of a device whose value took
        ``values`` distinct values: ``min(values eps_inf, rounds eps_1)`` (module doc).

        >>> o = LGRR.from_epsilon(2.0, 4, eps_1=0.5)
        >>> round(o.longitudinal_epsilon(3), 9), round(o.longitudinal_epsilon(), 9)
        (1.5, 2.0)
        """
        d = v.integer("values", values, minimum=1)
        bound = d * self.epsilon
        if rounds is None:
            return bound
        r = v.integer("rounds", rounds, minimum=0)
        return min(bound, r * self.epsilon_1)

    @property
    def implemented_epsilon(self) -> float:
        return self.epsilon  # every stated number is of the realised probabilities

    @cached_property
    def permanent_key(self) -> str:
        """The identity of the PRR, carried by every memo report of it: the family (GRR or
        unary encoding) and the PRR's parameters; the IRR may change, the PRR may not."""
        return mechanism_key(f"longitudinal-{self._family}-prr", self._permanent_parameters())

    @classmethod
    def from_epsilon(cls, eps_inf: float, k: int, *, eps_1: float | None = None) -> Any:
        """The oracle with ``epsilon = eps_inf`` and first-report epsilon ``eps_1`` (default
        ``eps_inf / 2``; ``eps_1 < eps_inf``), both at most the request (within a few ulps),
        the parameters of Arcolezi et al. 2022 (each subclass says which)."""
        e_inf, e_1 = check_epsilons(eps_inf, eps_1)
        kk = check_k(k, cls.max_k)
        return cls._fit(e_inf, e_1, kk)

    @classmethod
    @abstractmethod
    def _fit(cls, eps_inf: float, eps_1: float, k: int) -> Any:
        """The oracle at the checked request."""

    # ---- randomize

    def randomize(
        self,
        values: npt.ArrayLike,
        *,
        rng: Any = None,
        memo: Any = None,
        devices: Any = None,
    ) -> npt.NDArray[Any]:
        """One report per value (CSPRNG unless ``rng`` is given).

        Without ``memo`` each report is a first report: a fresh PRR through a fresh IRR.
        With ``memo`` (a :class:`~deniable.mechanisms.MemoStore`) ``devices`` gives each
        report's device (keys as :class:`~deniable.mechanisms.MemoizedRandomizer` takes
        them, each at most once a call): the PRR of a (device, value) is drawn the first
        time and kept in ``memo``, and replayed through a fresh IRR every later time (also
        by another oracle object over the same store, e.g. after a restart, if its PRR is
        the same; a device holding a PRR of another one is refused with
        :class:`~deniable.exceptions.PrivacyError`).
        """
        x = self._values(values)
        gen = resolve_rng(rng)
        if memo is None:
            if devices is not None:
                raise ParameterError("`devices` needs `memo` (where the devices' PRRs are kept).")
            return self._first(x, gen)
        if not isinstance(memo, _MemoStore):
            raise ParameterTypeError(
                "`memo` must be a MemoStore (e.g. deniable.mechanisms.InMemoryMemoStore()), "
                f"got {type(memo).__name__}."
            )
        if devices is None:
            raise ParameterError("`devices` must give each report's device when `memo` is given.")
        keys = respondent_keys(devices, unique=True, name="devices")
        if keys.size != x.size:
            raise ParameterError(
                f"`devices` must have one device per value ({x.size}), got {keys.size}."
            )
        return self._irr(self._memoized(x, keys, memo, gen), gen)

    def _memoized(
        self, x: npt.NDArray[np.integer[Any]], keys: npt.NDArray[Any], memo: Any, gen: Any
    ) -> npt.NDArray[Any]:
        chunks = np.zeros((x.size, self._chunks), dtype=np.int64)
        for value in np.unique(x).tolist():  # one pass per distinct value
            rows = np.flatnonzero(x == value)
            for c in range(self._chunks):

                def create(new: npt.NDArray[np.bool_], value: int = value, c: int = c) -> Any:
                    return self._prr_chunk(value, int(np.count_nonzero(new)), c, gen)

                question = _QUESTION.format(value=value, chunk=c)
                try:
                    got = memo.get_or_create(
                        question, keys[rows], create, mechanism=self.permanent_key
                    )
                except PrivacyError as exc:
                    raise PrivacyError(
                        f"{self.name}: {exc}  (a device's PRR of a value is defined by the "
                        "PRR's family and parameters; the IRR may change, any other change "
                        "would draw a second PRR.)"
                    ) from exc
                chunks[rows, c] = np.asarray(got, dtype=np.int64)
        return self._from_chunks(chunks)


def _grr_keep(k: int, p: float) -> float:
    """The keep probability of k-ary RR whose report is the value with probability ``p``."""
    return (k * p - 1) / (k - 1)


@dataclass(frozen=True)
class LGRR(LongitudinalOracle):
    """L-GRR: k-ary randomized response (GRR) as the PRR and again as the IRR.

    ``p1`` (``p2``) is the probability that the PRR (IRR) reports its input; another value
    is reported with ``q = (1 - p) / (k - 1)``.  Each round is the design
    :class:`~deniable.designs.Categorical` with ``p_truthful = (k p - 1) / (k - 1)``, drawn
    as it draws (a keep word and a category word a round), and every number stated is of
    those designs.  A report is the value ``0..k-1`` it supports.

    * ``epsilon = ln(p1 / q1)`` (the PRR's);
    * ``epsilon_1 = ln(p_s / q_s)``, ``p_s = p1 p2 + (k - 1) q1 q2``, ``q_s = (1 - p_s) /
      (k - 1)``: the composed channel is k-ary RR with ``p_s - q_s = (p1 - q1)(p2 - q2)``;
    * ``epsilon_irr = ln(p2 / q2)``.

    ``from_epsilon`` takes ``p1 = e^eps_inf / (e^eps_inf + k - 1)`` (Arcolezi et al.
    2022) and solves the composed channel exactly: ``p2 - q2 = D / (p1 - q1)`` with ``D =
    (e^eps_1 - 1) / (e^eps_1 + k - 1)``.  (The paper's closed form for ``p2`` solves ``p1 p2
    + q1 q2 = e^eps_1 (p1 q2 + q1 p2)``, which leaves out the ``k - 2`` paths through a third
    value: equal at ``k = 2``, and for ``k > 2`` its first report is more private than asked,
    e.g. 0.86 for ``eps_1 = 1`` at ``eps_inf = 2``, ``k = 5``, at a cost in variance.)

    >>> o = LGRR.from_epsilon(2.0, 5, eps_1=1.0)
    >>> round(o.epsilon, 9), round(o.epsilon_1, 9), round(o.epsilon_irr, 4)
    (2.0, 1.0, 1.6467)
    """

    k: int
    p1: float
    p2: float
    name: ClassVar[str] = "l-grr"
    _family: ClassVar[str] = "grr"
    max_k: ClassVar[int] = 1 << 24

    def __post_init__(self) -> None:
        k = check_k(self.k, self.max_k)
        object.__setattr__(self, "k", k)
        for name in ("p1", "p2"):
            p = open_probability(name, getattr(self, name), 1 / k, 1.0)
            object.__setattr__(self, name, p)

    @cached_property
    def _designs(self) -> tuple[Categorical, Categorical]:
        return (
            Categorical(self.k, _grr_keep(self.k, self.p1)),
            Categorical(self.k, _grr_keep(self.k, self.p2)),
        )

    @property
    def probabilities(self) -> tuple[float, float, float, float]:
        (t1, t2), k = (d.p_truthful for d in self._designs), self.k
        return t1 + (1 - t1) / k, (1 - t1) / k, t2 + (1 - t2) / k, (1 - t2) / k

    def _support(self) -> tuple[float, float]:
        p1, q1, p2, q2 = self.probabilities
        ps = p1 * p2 + (self.k - 1) * q1 * q2  # kept by both, or moved and moved back
        return ps, (1 - ps) / (self.k - 1)

    @property
    def epsilon(self) -> float:
        # eps_inf = ln(p1 / q1): the PRR, k-ary RR, of which every report is post-processing
        return self._designs[0].epsilon

    @property
    def epsilon_1(self) -> float:
        # eps_1 = ln(p_s / q_s): the composed channel is k-ary RR again
        ps, qs = self._support()
        return math.log(ps / qs)

    @property
    def epsilon_irr(self) -> float:
        # eps_irr = ln(p2 / q2): the IRR, k-ary RR of the PRR's value
        return self._designs[1].epsilon

    @property
    def implemented_epsilon(self) -> float:
        return self._designs[0].implemented_epsilon  # the PRR's thresholds (Categorical)

    @classmethod
    def _fit(cls, eps_inf: float, eps_1: float, k: int) -> LGRR:
        def build(e_inf: float, e_1: float) -> LGRR:
            p1 = 1 / (1 + (k - 1) * math.exp(-e_inf))  # e^eps / (e^eps + k - 1)
            q1 = (1 - p1) / (k - 1)
            d = -math.expm1(-e_1) / (1 + (k - 1) * math.exp(-e_1))  # (e^e1 - 1)/(e^e1 + k - 1)
            p2 = (1 + (k - 1) * d / (p1 - q1)) / k
            return cls(k, p1, p2)

        e_inf, _ = fit_below(lambda e: build(e, eps_1), eps_inf, lambda o: o.epsilon)
        _, out = fit_below(lambda e: build(e_inf, e), eps_1, lambda o: o.epsilon_1)
        return out  # type: ignore[no-any-return]

    @property
    def words_per_report(self) -> int:
        return 4

    @property
    def n_reports(self) -> int:
        return self.k

    @property
    def _chunks(self) -> int:
        return 1

    def _round(
        self, x: npt.NDArray[Any], keep_words: npt.NDArray[np.uint64],
        category_words: npt.NDArray[np.uint64], stage: int,
    ) -> npt.NDArray[np.int64]:  # fmt: skip
        """k-ary RR as the design ``Categorical`` draws it (``keep-or-forced/1``): keep
        ``x`` when ``keep_word >> 11 < keep``, else the uniform category of the other word."""
        keep = np.uint64(self._designs[stage].thresholds()[0])
        kept = (keep_words >> np.uint64(11)) < keep
        forced = uniform_below(category_words, self.k).astype(np.int64)
        return np.where(kept, x.astype(np.int64), forced)

    def _first(self, x: npt.NDArray[np.integer[Any]], gen: Any) -> npt.NDArray[Any]:
        words = random_words(gen, 4 * x.size).reshape(x.size, 4)
        prr = self._round(x, words[:, 0], words[:, 1], 0)
        return self._round(prr, words[:, 2], words[:, 3], 1)

    def _irr(self, prr: npt.NDArray[Any], gen: Any) -> npt.NDArray[Any]:
        words = random_words(gen, 2 * prr.shape[0]).reshape(-1, 2)
        return self._round(prr, words[:, 0], words[:, 1], 1)

    def _prr_chunk(self, value: int, n: int, chunk: int, gen: Any) -> npt.NDArray[np.int64]:
        if not n:
            return np.zeros(0, dtype=np.int64)
        words = random_words(gen, 2 * n).reshape(n, 2)
        return self._round(np.full(n, value), words[:, 0], words[:, 1], 0)

    def _from_chunks(self, chunks: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        return chunks[:, 0]

    def _permanent_parameters(self) -> dict[str, Any]:
        return {"k": self.k, "p_truthful": self._designs[0].p_truthful}

    def _checked(self, reports: Any) -> npt.NDArray[np.integer[Any]]:
        return v.reports_array("reports", reports, categories=self.k)

    def _support_counts(self, reports: Any) -> tuple[npt.NDArray[np.int64], int]:
        arr = self._checked(reports)
        return np.bincount(arr, minlength=self.k).astype(np.int64), int(arr.size)

    def _supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        return np.asarray(self._checked(reports) == value)

    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        prr, irr = (d.thresholds()[0] for d in self._designs)
        return "longitudinal-grr/1", self.words_per_report, {"keep_1": prr, "keep_2": irr}
