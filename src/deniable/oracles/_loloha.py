"""LOLOHA, longitudinal local hashing (Arcolezi, Pinzón, Palamidessi & Gambs, "Frequency
estimation of evolving data under local differential privacy", EDBT 2023): a two-round
memoized oracle (``deniable.oracles._longitudinal``) over a hashed domain.

A device draws a hash ``H`` of the multiply-add-shift family into ``g`` buckets once (the
seeds ``a``, ``b`` of OLH's hash, ``docs/specs.md``) and keeps it.  A value ``x`` is hashed
to ``h = H(x)``; the permanent response (PRR) is ``g``-ary randomized response of ``h``
(``p1``), drawn once per (device, hashed value) and kept; every report is ``(a, b, y)``, ``y``
a fresh ``g``-ary randomized response of the PRR (``p2``).  The server counts, for each
value ``v``, the reports with ``H(v) = y``, as for OLH.

Privacy (a device's hash is independent of its values, so it is given the hash):

* ``epsilon`` (``eps_inf``) ``= ln(p1 / q1)``, ``q1 = (1 - p1) / (g - 1)``: the PRR's.  Every
  report of values of one hashed value is a post-processing of one PRR;
* ``epsilon_1 = ln(p_s / q_s)``, ``p_s = p1 p2 + (g - 1) q1 q2``, ``q_s = (1 - p_s) / (g -
  1)``: one report, the composed ``g``-ary channel (values of another bucket are told apart
  at most by it, values of one bucket not at all);
* ``epsilon_irr = ln(p2 / q2)``.

A device whose values took ``tau`` distinct *hashed* values keeps ``tau <= g`` PRRs.
Between two value sequences in the same *pattern* (the same rounds share a hashed value)
the reports' likelihood ratio is a product of one ratio per PRR, each at most
``e^eps_inf``: ``r`` reports lose at most ``min(tau eps_inf, r eps_1) <= g eps_inf``
(:meth:`LOLOHA.longitudinal_epsilon`; Arcolezi et al. 2023 state the ``g eps_inf``
bound).  The pattern itself is not protected by the PRRs: a device replays one PRR while its
hashed value stays and draws another when it moves, so reports show *when* the value moved
(as RAPPOR's, Erlingsson et al. 2014).  Between sequences in different patterns only ``r
eps_irr`` holds (the IRRs are applied report by report to some PRRs), which exceeds ``g
eps_inf`` when the IRR is close to the identity (``eps_1`` close to ``eps_inf``).
``tests/test_loloha.py`` checks all three on the exact joint law of every bucket sequence
for small ``g``.

A report supports its device's value with ``p_s`` and another value with ``c p_s + (1 - c)
q_s``, ``c`` the hash family's collision probability (about ``1 / g``), so the estimate and
both variances are :class:`~deniable.oracles.FrequencyOracle`'s at those.  Because
``from_epsilon`` solves the composed channel exactly (as :class:`~deniable.oracles.LGRR`
does), that variance depends on ``eps_1`` and ``g`` only, and is least near ``g = e^eps_1 +
1`` (OLH's choice at ``eps_1``; the paper's optimal ``g`` solves its own closed form for
``p2``, which leaves out the paths through a third bucket).  ``g = 2`` (the paper's
BiLOLOHA) has the smallest longitudinal bound, ``2 eps_inf``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import mechanism_key
from deniable.exceptions import ParameterError, PrivacyError
from deniable.oracles._base import check_k
from deniable.oracles._hashing import OLH, collision_probability
from deniable.oracles._longitudinal import LongitudinalOracle, check_epsilons
from deniable.oracles._longitudinal_grr import LGRR
from deniable.randomness import random_words

__all__ = ["LOLOHA"]

_32 = np.uint64(32)
#: The memo questions of a device's hash seeds (32 bits each: ``a`` low, ``a`` high, ``b``
#: low, ``b`` high) and of the PRR of a hashed value.
_SEED = "loloha/seed/{part}"
_PRR = "loloha/prr/{bucket}"
#: What every memo report of a seed carries (the seeds do not depend on ``g``).
_SEED_KEY = mechanism_key("loloha-seed", {"family": "multiply-add-shift/1"})

# Proof note (one permanent stage per device, docs/architecture.md#proof-notes).
# Claim: a device never holds PRRs of two permanent stages, so it never pays a permanent
# epsilon twice for one value and min(tau eps_inf, r eps_1) is of the stage it holds.
# Argument: the PRRs live under `loloha/prr/<bucket>`, not under L-GRR's questions, so the
# per-question rule of the MemoStore alone would let a device hold a LOLOHA PRR of H(x) and
# an L-GRR PRR of x, or LOLOHA PRRs of two `g` (other buckets of the same values).  Every
# memoized call therefore first pins the device (`LongitudinalOracle._pin`: the question
# `longitudinal/permanent`, shared by every longitudinal oracle, with `permanent_key`), in
# one atomic get-or-create before seeds or PRRs are touched: a device pinned to another
# stage is refused (PrivacyError naming it), nothing stored.  The seeds carry no value
# (the hash is independent of it) and are shared by every `g`.  Checked by
# tests/test_loloha.py::test_another_permanent_stage_is_refused and
# tests/test_longitudinal_pin.py.


def _hash(a: Any, b: Any, x: Any, g: int) -> npt.NDArray[np.uint64]:
    """OLH's bucket ``((a x + b) mod 2**64 >> 32) g >> 32``."""
    xx = np.asarray(x).astype(np.uint64)
    return np.asarray(((a * xx + b) >> _32) * np.uint64(g) >> _32, dtype=np.uint64)


def _too_many_buckets(g: Any, k: int) -> ParameterError:
    """The error of a ``g`` above ``k`` (as given), for the constructor and ``from_epsilon``."""
    return ParameterError(
        f"`g` (the hashed domain) must be between 2 and k = {k} (no more buckets than "
        f"values), got {g!r}."
    )


@dataclass(frozen=True)
class LOLOHA(LongitudinalOracle):
    """LOLOHA (module doc): a hash into ``g`` buckets (``2 <= g <= k``) kept per device,
    L-GRR over the buckets (``p1``, ``p2`` in ``(1/g, 1)``, as
    :class:`~deniable.oracles.LGRR`'s).  A report is ``(a, b, y)``, an ``(n, 3)`` uint64
    array as OLH's.

    >>> o = LOLOHA.from_epsilon(2.0, 100, eps_1=1.0, g=4)
    >>> round(o.epsilon, 9), round(o.epsilon_1, 9), o.g
    (2.0, 1.0, 4)
    >>> round(o.longitudinal_epsilon(values=10), 9)    # at most g = 4 PRRs: 4 eps_inf
    8.0
    """

    k: int
    g: int
    p1: float
    p2: float
    name: ClassVar[str] = "loloha"
    _family: ClassVar[str] = "loloha"
    max_k: ClassVar[int] = 1 << 24

    def __post_init__(self) -> None:
        k = check_k(self.k, self.max_k)
        object.__setattr__(self, "k", k)
        if isinstance(self.g, int) and not isinstance(self.g, bool) and self.g > k:
            raise _too_many_buckets(self.g, k)
        object.__setattr__(self, "g", v.integer("g", self.g, minimum=2, maximum=k))
        grr = LGRR(self.g, self.p1, self.p2)  # checks p1 and p2 in (1/g, 1)
        object.__setattr__(self, "p1", grr.p1)
        object.__setattr__(self, "p2", grr.p2)

    @cached_property
    def _grr(self) -> LGRR:
        """L-GRR over the buckets: the PRR and IRR of the hashed value."""
        return LGRR(self.g, self.p1, self.p2)

    @cached_property
    def _decoder(self) -> OLH:
        """OLH over the same hash family and buckets: its reports and support test."""
        return OLH(self.k, self.g, 0.5)

    # ---- privacy

    @property
    def probabilities(self) -> tuple[float, float, float, float]:
        return self._grr.probabilities

    def _support(self) -> tuple[float, float]:
        ps, qs = self._grr._support()  # the composed g-ary channel
        c = float(collision_probability(self.g))
        return ps, c * ps + (1 - c) * qs  # another value: its bucket collides, or not

    @property
    def epsilon(self) -> float:
        return self._grr.epsilon  # the PRR's: ln(p1 / q1)

    @property
    def epsilon_1(self) -> float:
        return self._grr.epsilon_1  # the composed channel over the buckets

    @property
    def epsilon_irr(self) -> float:
        return self._grr.epsilon_irr

    @property
    def implemented_epsilon(self) -> float:
        return self._grr.implemented_epsilon

    def longitudinal_epsilon(self, rounds: int | None = None, *, values: int = 1) -> float:
        """The epsilon of ``rounds`` reports (all, if ``None``) of a device whose *hashed*
        values took ``values`` distinct values, against sequences in the same pattern
        (module doc): ``min(min(values, g) eps_inf, rounds eps_1)`` (a count of raw values
        bounds the hashed ones; at most ``g eps_inf``)."""
        d = v.integer("values", values, minimum=1)
        return super().longitudinal_epsilon(rounds, values=min(d, self.g))

    @classmethod
    def from_epsilon(
        cls, eps_inf: float, k: int, *, eps_1: float | None = None, g: int | None = None
    ) -> LOLOHA:
        """LOLOHA with ``epsilon = eps_inf`` and first-report epsilon ``eps_1`` (default
        ``eps_inf / 2``), both at most the request, ``p1 = e^eps_inf / (e^eps_inf + g -
        1)`` and ``p2`` solving the composed channel (:class:`~deniable.oracles.LGRR`), over
        ``g`` buckets (default: ``floor`` or ``ceil`` of ``e^eps_1 + 1``, whichever has the
        smaller variance, at most ``k``)."""
        e_inf, e_1 = check_epsilons(eps_inf, eps_1)
        kk = check_k(k, cls.max_k)
        if g is not None:
            gg = v.integer("g", g, minimum=2)
            if gg > kk:
                raise _too_many_buckets(g, kk)
            return cls._at(e_inf, e_1, kk, gg)
        ideal = math.exp(min(e_1, 30.0)) + 1
        candidates = sorted({min(max(2, int(f(ideal))), kk) for f in (math.floor, math.ceil)})
        built = [cls._at(e_inf, e_1, kk, c) for c in candidates]
        return min(built, key=lambda o: o.variance_at_zero)

    @classmethod
    def _at(cls, eps_inf: float, eps_1: float, k: int, g: int) -> LOLOHA:
        grr = LGRR.from_epsilon(eps_inf, g, eps_1=eps_1)
        return cls(k, g, grr.p1, grr.p2)

    @classmethod
    def _fit(cls, eps_inf: float, eps_1: float, k: int) -> Any:
        return cls.from_epsilon(eps_inf, k, eps_1=eps_1)  # pragma: no cover - not reached

    @property
    def variance_at_zero(self) -> float:
        """The variance of one report's estimate of a value of frequency 0: ``q (1 - q) /
        (p - q)^2`` (divide by ``n``)."""
        p, q = self._support()
        return q * (1 - q) / (p - q) ** 2

    # ---- randomize

    @property
    def words_per_report(self) -> int:
        return 6

    @property
    def n_reports(self) -> int:
        return self.g

    def _first(self, x: npt.NDArray[np.integer[Any]], gen: Any) -> npt.NDArray[Any]:
        # words of a report: a, b, then the PRR's keep and bucket words, the IRR's
        words = random_words(gen, 6 * x.size).reshape(x.size, 6)
        a, b = words[:, 0], words[:, 1]
        prr = self._grr._round(_hash(a, b, x, self.g), words[:, 2], words[:, 3], 0)
        y = self._grr._round(prr, words[:, 4], words[:, 5], 1)
        return np.stack([a, b, y.astype(np.uint64)], axis=1)

    def _irr(self, prr: npt.NDArray[Any], gen: Any) -> npt.NDArray[Any]:
        out = prr.copy()  # the seeds kept; the bucket: L-GRR's IRR of the PRR's bucket
        out[:, 2] = self._grr._irr(prr[:, 2].astype(np.int64), gen).astype(np.uint64)
        return out

    def seeds(self, memo: Any, keys: npt.NDArray[Any], gen: Any) -> npt.NDArray[np.uint64]:
        """The ``(n, 2)`` hash seeds ``(a, b)`` of the devices ``keys``: drawn the first
        time and kept in ``memo`` (32-bit parts), the same for every ``g``; words are drawn
        from ``gen`` only for devices without seeds (with none, ``gen`` may be ``None``)."""
        parts = np.zeros((keys.size, 4), dtype=np.uint64)
        for part in range(4):

            def create(new: npt.NDArray[np.bool_]) -> Any:
                n = int(np.count_nonzero(new))
                if not n:  # every seed kept: no word drawn (``gen`` may be None)
                    return np.zeros(0, dtype=np.int64)
                return (random_words(gen, n) >> _32).astype(np.int64)

            got = memo.get_or_create(_SEED.format(part=part), keys, create, mechanism=_SEED_KEY)
            parts[:, part] = np.asarray(got, dtype=np.int64).astype(np.uint64)
        a = parts[:, 0] | (parts[:, 1] << _32)
        b = parts[:, 2] | (parts[:, 3] << _32)
        return np.stack([a, b], axis=1)

    def hashed(self, values: npt.ArrayLike, seeds: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The bucket of each value under its device's ``seeds`` (``(n, 2)``, as
        :meth:`seeds` gives them): what a PRR is kept for."""
        x = self._values(values)
        s = np.asarray(seeds, dtype=np.uint64).reshape(-1, 2)
        if s.shape[0] != x.size:
            raise ParameterError(
                f"`seeds` must have one row per value ({x.size}), got {s.shape[0]}."
            )
        return _hash(s[:, 0], s[:, 1], x, self.g).astype(np.int64)

    def _memoized(
        self, x: npt.NDArray[np.integer[Any]], keys: npt.NDArray[Any], memo: Any, gen: Any
    ) -> npt.NDArray[Any]:
        self._pin(keys, memo)  # one stage per device, shared with L-GRR and the unary ones
        seeds = self.seeds(memo, keys, gen)
        h = self.hashed(x, seeds)
        prr = np.zeros(x.size, dtype=np.int64)
        try:
            for bucket in np.unique(h).tolist():  # one pass per distinct hashed value
                rows = np.flatnonzero(h == bucket)

                def create(new: npt.NDArray[np.bool_], bucket: int = bucket) -> Any:
                    return self._prr_chunk(bucket, int(np.count_nonzero(new)), 0, gen)

                got = memo.get_or_create(
                    _PRR.format(bucket=bucket), keys[rows], create, mechanism=self.permanent_key
                )
                prr[rows] = np.asarray(got, dtype=np.int64)
        except PrivacyError as exc:
            raise PrivacyError(
                f"{self.name}: {exc}  (a device's PRRs are defined by g and p1; the IRR may "
                "change, any other change would draw a second PRR of its values.)"
            ) from exc
        return np.stack([seeds[:, 0], seeds[:, 1], prr.astype(np.uint64)], axis=1)

    @property
    def _chunks(self) -> int:
        return 1

    def _prr_chunk(self, value: int, n: int, chunk: int, gen: Any) -> npt.NDArray[np.int64]:
        return self._grr._prr_chunk(value, n, chunk, gen)

    def _from_chunks(self, chunks: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        return chunks[:, 0]  # pragma: no cover - _memoized is LOLOHA's own

    def _permanent_parameters(self) -> dict[str, Any]:
        return {"g": self.g, "p_truthful": self._grr._designs[0].p_truthful}

    # ---- tally

    def _support_counts(self, reports: Any) -> tuple[npt.NDArray[np.int64], int]:
        return self._decoder._support_counts(reports)

    def _supports(self, reports: Any, value: int) -> npt.NDArray[np.bool_]:
        return self._decoder._supports(reports, value)

    def _check_reports(self, reports: Any) -> None:
        self._decoder._reports(reports)

    def _spec(self) -> tuple[str, int, dict[str, Any]]:
        _, _, keeps = self._grr._spec()  # L-GRR's over the buckets: keep_1, keep_2
        return "loloha/1", 6, {**keeps, "buckets": self.g}
