"""L-GRR (Arcolezi et al. 2022): k-ary randomized response as the permanent and again as
the instantaneous response of a two-round memoized oracle (``deniable.oracles.
_longitudinal``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Categorical
from deniable.oracles._base import check_k, open_probability
from deniable.oracles._longitudinal import LongitudinalOracle, fit_both
from deniable.randomness import random_words, uniform_below

__all__ = ["LGRR"]


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

        return fit_both(build, eps_inf, eps_1)

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
