"""Two-round memoized longitudinal frequency oracles (Arcolezi, Couchot, Al Moussawi,
Palamidessi & Xiao 2022, "Improving the utility of locally differentially private protocols
for longitudinal and multidimensional frequency estimates"): the common part (L-GRR is in
``_longitudinal_grr``, the unary ones in ``_longitudinal_unary``).

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
(basic composition; :meth:`~LongitudinalOracle.longitudinal_epsilon`) against value
sequences with the same pattern of changes.  The pattern (which rounds share a value) is
not protected: the reports show when the value changed, and between sequences of
different patterns only ``r epsilon_irr`` holds.

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

from abc import abstractmethod
from collections.abc import Callable
from functools import cached_property
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from deniable.accounting import MemoAccess, respondent_keys
from deniable.common import validation as v
from deniable.designs import mechanism_key
from deniable.exceptions import ParameterError, ParameterTypeError, PrivacyError
from deniable.oracles._base import FrequencyOracle, check_k
from deniable.randomness import resolve_rng

__all__ = ["LongitudinalOracle", "check_epsilons", "fit_below", "fit_both"]

_O = TypeVar("_O", bound="LongitudinalOracle")

#: The memo question of chunk ``c`` of the PRR of value ``v`` (one namespace for every
#: longitudinal oracle, so that a device never holds two PRRs of one value).
_QUESTION = "longitudinal/prr/{value}/{chunk}"
#: The device-level pin shared by every longitudinal oracle (LOLOHA too): one memo report
#: per device (always 0) whose mechanism is the ``permanent_key`` of the stage the device's
#: PRRs were drawn by.  Asked first, before any PRR, by every memoized call.
_PIN = "longitudinal/permanent"

# Proof note (the longitudinal epsilon of memoization, docs/architecture.md#proof-notes).
# Claim: a device reporting value x in any number of rounds loses at most `epsilon` (the
# PRR's), r rounds at most min(epsilon, r epsilon_1), against another constant sequence
# (and d values, min(d epsilon, r epsilon_1), against sequences of the same change
# pattern only: tests/test_loloha.py enumerates a counterexample across patterns).
# Argument: every report is the IRR of the one PRR of x with fresh coins (post-processing
# of the PRR), and each report alone is the composed channel P_irr @ P_prr (basic
# composition of the r reports).  The PRR is
# drawn once per (device, value): the memo question names the value only and each stored
# chunk carries `permanent_key` (the PRR's family and parameters).  And a device holds the
# PRRs of ONE permanent stage, whatever the oracle and the value: every memoized call of
# every longitudinal oracle (L-GRR, L-SUE, L-OUE, L-OSUE and LOLOHA, whose PRRs live under
# other questions) first get-or-creates the device's pin `_PIN` with its
# `permanent_key`, atomically (the MemoStore's rule), before it draws any PRR; a device
# pinned to another stage is refused (PrivacyError naming the stage it holds) and nothing
# is stored.  So no device pays a permanent epsilon twice for one value through two
# families (LOLOHA's PRR of H(x) and L-GRR's of x), and the per-device bound
# min(d epsilon, r epsilon_1) is of the one stage the device holds.  Two stages racing for
# a new device are decided at the pin: the loser is refused before it draws.  A pin
# without PRRs (a crash after it) only refuses more.  Checked by tests/test_longitudinal.py
# ::test_a_device_replays_its_prr_across_rounds_and_restarts, ::test_another_permanent_
# stage_is_refused, tests/test_longitudinal_pin.py (both orders, in memory; the SQL store
# in tests/service/test_memo_devices.py) and the enumerations of ::test_three_epsilons_
# are_exact_and_tight.


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


def fit_both(at: Callable[[float, float], _O], eps_inf: float, eps_1: float) -> _O:
    """``at(e_inf, e_1)`` (an oracle built for those epsilons) whose ``epsilon`` is at most
    ``eps_inf`` and ``epsilon_1`` at most ``eps_1``: :func:`fit_below` on ``eps_inf`` first
    (at the requested ``eps_1``), then on ``eps_1`` at the ``e_inf`` found."""
    e_inf, _ = fit_below(lambda e: at(e, eps_1), eps_inf, lambda o: o.epsilon)
    out: _O = fit_below(lambda e: at(e_inf, e), eps_1, lambda o: o.epsilon_1)[1]
    return out


def _groups(
    x: npt.NDArray[np.integer[Any]], bound: int | None = None
) -> list[tuple[int, npt.NDArray[np.intp]]]:
    """``(value, rows)`` of each distinct value of ``x`` (values ascending, the rows of a
    value ascending, as ``np.flatnonzero(x == value)``): one stable argsort (a radix sort
    of 16-bit values, linear time) instead of a pass over ``x`` per value.  ``bound``: the
    caller's word that every value is in ``[0, bound)`` (checked values), so that values
    under ``2**16`` need no pass for their range, and are cut by their counts."""
    if not x.size:
        return []
    if bound is not None and bound <= 1 << 16:
        # a radix sort: one pass of 8-bit digits for k <= 256, two for 16-bit values
        order = np.argsort(x.astype(np.uint8 if bound <= 256 else np.uint16), kind="stable")
        counts = np.bincount(x, minlength=bound)
        present = np.flatnonzero(counts)
        ends = np.cumsum(counts)[present]
        cut = zip(present.tolist(), (ends - counts[present]).tolist(), ends.tolist(), strict=True)
        return [(v, order[a:b]) for v, a, b in cut]
    small = int(x.min()) >= 0 and int(x.max()) < 1 << 16
    order = np.argsort(x.astype(np.uint16) if small else x, kind="stable")
    srt = x[order]
    cuts = np.flatnonzero(srt[1:] != srt[:-1]) + 1
    starts = [0, *cuts.tolist()]
    return [(int(srt[a]), order[a:b]) for a, b in zip(starts, [*starts[1:], x.size], strict=True)]


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

    def _epsilon_per_report(self) -> float:
        """What one report costs a device against any change of its values
        (:func:`~deniable.oracles.report_epsilon`): ``epsilon_irr``, the
        instantaneous channel's epsilon over every kept permanent response (not
        ``epsilon_1``: module docstring of ``_report_epsilon``)."""
        return float(self.epsilon_irr)

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
        """Reports: a fresh IRR of each PRR (in the form :meth:`_from_chunks` gives)."""

    @abstractmethod
    def _prr_chunk(self, value: int, n: int, chunk: int, gen: Any) -> npt.NDArray[np.int64]:
        """Chunk ``chunk`` of ``n`` fresh PRRs of ``value``."""

    @abstractmethod
    def _from_chunks(self, chunks: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """PRRs from their ``(n, chunks)`` memo reports, in the form :meth:`_irr` takes."""

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
        ``values`` distinct values: ``min(values eps_inf, rounds eps_1)`` (module doc),
        against value sequences with the same pattern of changes (the same rounds share a
        value).  The pattern is not protected: memoized reports show when the value
        changed; between sequences of different patterns only ``rounds * epsilon_irr``
        holds (docs/telemetry.md, "What the bound is against").

        >>> from deniable.oracles import LGRR
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
        the same).  A device keeps the PRRs of one permanent stage for all its values,
        across every longitudinal oracle (LOLOHA too): a device holding PRRs of another
        stage is refused with :class:`~deniable.exceptions.PrivacyError` naming it, and
        nothing is stored.
        """
        x = self._values(values)
        gen = resolve_rng(rng)
        if memo is None:
            if devices is not None:
                raise ParameterError("`devices` needs `memo` (where the devices' PRRs are kept).")
            return self._first(x, gen)
        if not isinstance(memo, MemoAccess):
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
        self._pin(keys, memo)
        # chunk c of every row in one contiguous row of `by_chunk` (a 1-D scatter a value,
        # not a 2-D one); its transpose is the (rows, chunks) array _from_chunks takes
        by_chunk = np.zeros((self._chunks, x.size), dtype=np.int64)
        for value, rows in _groups(x, self.k):
            sub = keys[rows]
            for c in range(self._chunks):

                def create(new: npt.NDArray[np.bool_], value: int = value, c: int = c) -> Any:
                    return self._prr_chunk(value, int(np.count_nonzero(new)), c, gen)

                question = _QUESTION.format(value=value, chunk=c)
                try:
                    got = memo.get_or_create(question, sub, create, mechanism=self.permanent_key)
                except PrivacyError as exc:
                    raise PrivacyError(
                        f"{self.name}: {exc}  (a device's PRR of a value is defined by the "
                        "PRR's family and parameters; the IRR may change, any other change "
                        "would draw a second PRR.)"
                    ) from exc
                by_chunk[c][rows] = np.asarray(got, dtype=np.int64)
        return self._from_chunks(by_chunk.T)

    def _pin(self, keys: npt.NDArray[Any], memo: Any) -> None:
        """Pin the devices ``keys`` to this oracle's permanent stage (one atomic
        get-or-create of ``_PIN``, the proof note), or refuse them all."""

        def create(new: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
            return np.zeros(int(np.count_nonzero(new)), dtype=np.int64)

        try:
            memo.get_or_create(_PIN, keys, create, mechanism=self.permanent_key)
        except PrivacyError as exc:
            raise PrivacyError(
                f"{self.name}: {exc}  (Here the question is the pin every longitudinal oracle "
                "shares: a device keeps the PRRs of one permanent stage for all its values, "
                "whatever the oracle (L-GRR, L-SUE, L-OUE, L-OSUE, LOLOHA).  Report it with the "
                "family and PRR parameters it holds (the IRR may change), or under a new "
                "device key; any other stage would draw a second PRR.)"
            ) from exc
