"""The result of RAPPOR's n-gram discovery (``deniable.oracles._rappor_ngram_decode``): the
strings found with frequencies, standard errors and intervals, and what each step decided."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.oracles._rappor_decode import RapporEstimate
from deniable.results import Result, Table, normal_quantile

__all__ = ["NgramDiscovery"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class NgramDiscovery(Result):
    """Strings discovered from n-gram reports (``deniable.oracles._rappor_ngram_decode``).

    Attributes
    ----------
    strings : the discovered strings, most frequent first (without full-string reports:
        every candidate, in the order found).
    values, se : their frequencies and standard errors (NaN without full-string reports).
    candidates : every candidate string (step 3).
    ngrams : the significant n-grams of each position (step 1).
    ngram_estimates : each position's decoded n-gram frequencies (a ``RapporEstimate``).
    estimate : the candidates decoded against the full-string reports (None without them).
    alpha : the family-wise level of steps 1 and 4.
    edge_threshold : the joint frequency that joins two n-grams (step 2).
    n : devices.
    """

    strings: tuple[str, ...]
    values: FloatArray = field(repr=False)
    se: FloatArray = field(repr=False)
    candidates: tuple[str, ...]
    ngrams: tuple[tuple[str, ...], ...]
    ngram_estimates: tuple[RapporEstimate, ...] = field(repr=False)
    estimate: RapporEstimate | None = field(repr=False)
    alpha: float
    edge_threshold: float
    n: int

    @property
    def ngram_threshold(self) -> float:
        """The per-n-gram level of step 1: ``alpha / (G K)``."""
        g = len(self.ngram_estimates)
        return self.alpha / (g * len(self.ngram_estimates[0].candidates))

    @property
    def string_threshold(self) -> float | None:
        """The per-candidate level of step 4: ``alpha / candidates`` (None without it)."""
        return None if self.estimate is None else self.estimate.threshold

    def ci(self, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
        """``(low, high)``: the Wald interval ``value -/+ z se`` of each discovered string."""
        z = normal_quantile(level)
        return self.values - z * self.se, self.values + z * self.se

    def table(self) -> Table:
        """The discovered strings: frequency, SE, interval at 95%."""
        low, high = self.ci(0.95)
        rows = tuple(
            (s, float(self.values[i]), float(self.se[i]), float(low[i]), float(high[i]))
            for i, s in enumerate(self.strings)
        )
        found = ", ".join(f"{j}: {len(g)}" for j, g in enumerate(self.ngrams))
        step4 = (
            f"strings: p-value < alpha / candidates = {self.string_threshold:.3g}"
            if self.estimate is not None
            else "no full-string reports: candidates without frequencies"
        )
        return Table(
            ("string", "frequency", "SE", "95% low", "95% high"),
            rows,
            title=f"RAPPOR n-grams: {len(self.strings)} strings of {len(self.candidates)} "
            f"candidates, n = {self.n}",
            notes=(
                f"significant n-grams by position ({found}): p-value < alpha / (G K) = "
                f"{self.ngram_threshold:.3g}",
                f"edges: joint frequency (EM) >= {self.edge_threshold:g}",
                step4,
            ),
        )

    def to_dict(self, level: float | None = None) -> dict[str, Any]:
        """Plain JSON: n, alpha, the thresholds, the n-grams, candidates and strings (with
        ``level``, each string's Wald interval ``ci_wald``)."""
        out: dict[str, Any] = {
            "n": self.n,
            "alpha": self.alpha,
            "ngram_threshold": self.ngram_threshold,
            "edge_threshold": self.edge_threshold,
            "string_threshold": self.string_threshold,
            "ngrams": [list(g) for g in self.ngrams],
            "candidates": list(self.candidates),
            "strings": [
                {"string": s, "frequency": to_jsonable(float(self.values[i])),
                 "se": to_jsonable(float(self.se[i]))}
                for i, s in enumerate(self.strings)
            ],
        }  # fmt: skip
        if level is not None:
            low, high = self.ci(level)
            out["level"] = float(level)
            for i, row in enumerate(out["strings"]):
                row["ci_wald"] = [to_jsonable(float(low[i])), to_jsonable(float(high[i]))]
        return out
