"""The reports, tally and result of the Sequence Fragment Puzzle (:class:`~deniable.oracles.SFP`):
the strings found, their frequencies from the whole-string sketch with both standard errors
and intervals, the thresholds that decided each stage and the epsilon of each device."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterTypeError
from deniable.oracles._sketch import SE_SKETCH, SE_SKETCH_FIXED
from deniable.results import ConfidenceInterval, Result, Table, normal_quantile

__all__ = ["SFPReports", "SFPResult", "SFPTally"]


@dataclass(frozen=True)
class SFPReports:
    """A batch of SFP reports: each device's fragment position (``positions``, int64, in the
    clear: drawn independently of its string), its report to the fragment sketch
    (``fragments``) and its report to the whole-string sketch (``words``): ``SketchReports``
    for CMS, an int64 array for HCMS."""

    positions: npt.NDArray[np.int64]
    fragments: Any
    words: Any

    def __len__(self) -> int:
        return int(np.asarray(self.positions).size)

    def __getitem__(self, index: Any) -> SFPReports:
        """The reports of ``index`` (a slice, indices or a mask)."""
        return SFPReports(
            np.asarray(self.positions)[index], self.fragments[index], self.words[index]
        )


@dataclass(frozen=True)
class SFPTally:
    """The tally of SFP reports: one fragment-sketch tally per position (``fragments``) and
    the whole-string sketch's tally (``words``), bound to the SFP's ``key``.  Tallies add
    across batches of the same SFP (``a + b``, position by position)."""

    fragments: tuple[Tally, ...]
    words: Tally
    key: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "fragments", tuple(self.fragments))
        if not all(isinstance(t, Tally) for t in (*self.fragments, self.words)):
            raise ParameterTypeError("`fragments` and `words` must be Tally objects.")
        if not isinstance(self.key, str):
            raise ParameterTypeError(f"`key` must be a str, got {type(self.key).__name__}.")

    def __add__(self, other: object) -> SFPTally:
        if not isinstance(other, SFPTally):
            return NotImplemented
        if other.key != self.key:
            raise DataError(
                f"SFP tallies must come from the same SFP to add, got {self.key} and {other.key}."
            )
        if len(other.fragments) != len(self.fragments):
            raise DataError(
                f"an SFP tally must have {len(self.fragments)} positions to add to this one, "
                f"got {len(other.fragments)}."
            )
        pairs = zip(self.fragments, other.fragments, strict=True)
        return SFPTally(tuple(a + b for a, b in pairs), self.words + other.words, self.key)


@dataclass(frozen=True)
class SFPResult(Result):
    """The strings the Sequence Fragment Puzzle found (most frequent first).

    ``frequencies`` are the unbiased estimates of the whole-string sketch (a share of all
    ``n`` devices), ``se`` and ``se_fixed`` their standard errors (devices sampled from a
    population; the fixed population of the ``n`` devices: ``SketchEstimate``'s
    conventions).  ``fragment_thresholds`` is the estimated frequency a (fragment, puzzle)
    record had to reach at each position, ``fragments_kept`` how many did, ``candidates``
    the strings assembled and estimated, ``trimmed`` the puzzle values whose cartesian
    product was cut to ``max_candidates``, ``word_threshold`` what a candidate had to reach.
    ``epsilon`` is each device's total (``fragment_epsilon + word_epsilon``).

    The estimate of a string in the list also selected it, so near ``word_threshold`` it is
    biased upward (the winner's curse); the interval does not correct for that.
    """

    strings: tuple[str, ...]
    frequencies: tuple[float, ...]
    se: tuple[float, ...]
    se_fixed: tuple[float, ...]
    n: int
    epsilon: float
    fragment_epsilon: float
    word_epsilon: float
    alpha: float
    fragment_thresholds: tuple[float, ...]
    fragments_kept: tuple[int, ...]
    candidates: int
    trimmed: int
    word_threshold: float
    level: float = 0.95
    key: str = field(default="sfp", repr=False)

    def intervals(self, *, fixed: bool = False) -> tuple[ConfidenceInterval, ...]:
        """Normal intervals ``f -/+ z se`` at ``level`` (``se_fixed`` when ``fixed``)."""
        z = normal_quantile(self.level)
        ses = self.se_fixed if fixed else self.se
        return tuple(
            ConfidenceInterval(f - z * s, f + z * s)
            for f, s in zip(self.frequencies, ses, strict=True)
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the strings with estimates and intervals, the thresholds, epsilon."""
        return {
            "mechanism": self.key,
            "method": "sequence-fragment-puzzle",
            "epsilon_per_device": self.epsilon,
            "fragment_epsilon": self.fragment_epsilon,
            "word_epsilon": self.word_epsilon,
            "n": self.n,
            "alpha": self.alpha,
            "level": self.level,
            "se_convention": SE_SKETCH,
            "se_fixed_convention": SE_SKETCH_FIXED,
            "fragment_thresholds": [to_jsonable(t) for t in self.fragment_thresholds],
            "fragments_kept": list(self.fragments_kept),
            "candidates": self.candidates,
            "trimmed": self.trimmed,
            "word_threshold": to_jsonable(self.word_threshold),
            "heavy_hitters": [
                {
                    "string": s,
                    "frequency": to_jsonable(f),
                    "se": to_jsonable(e),
                    "se_fixed": to_jsonable(ef),
                    "ci": [to_jsonable(ci.low), to_jsonable(ci.high)],
                }
                for s, f, e, ef, ci in zip(
                    self.strings,
                    self.frequencies,
                    self.se,
                    self.se_fixed,
                    self.intervals(),
                    strict=True,
                )
            ],
        }

    def table(self) -> Table:
        """The strings (frequency, SE, interval) with the stages as a section."""
        rows = tuple(
            (s, f, e, ci.format())
            for s, f, e, ci in zip(
                self.strings, self.frequencies, self.se, self.intervals(), strict=True
            )
        )
        stages = Table(
            ("stage", "threshold", "kept"),
            (
                *(
                    (f"fragments at position {i}", t, k)
                    for i, (t, k) in enumerate(
                        zip(self.fragment_thresholds, self.fragments_kept, strict=True)
                    )
                ),
                ("whole strings", self.word_threshold, len(self.strings)),
            ),
            title="stages",
            notes=(
                f"{self.candidates} candidate strings assembled; {self.trimmed} puzzle "
                "values trimmed to max_candidates",
            ),
        )
        return Table(
            ("string", "frequency", "SE", f"{self.level:.0%} CI"),
            rows,
            title=f"sequence fragment puzzle: {len(rows)} strings of n = {self.n} devices",
            notes=(
                f"epsilon per device = {self.epsilon:.6g} (fragment sketch "
                f"{self.fragment_epsilon:.6g} + whole-string sketch {self.word_epsilon:.6g})",
                f"each stage: P(a record or string of frequency 0 kept) <= alpha = "
                f"{self.alpha:g} (normal approximation, Bonferroni)",
                f"SE {SE_SKETCH}",
            ),
            sections=(stages,),
        )
