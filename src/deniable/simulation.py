"""Seeded simulation of a survey: a synthetic population, its reports, and the estimate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable import _validation as v
from deniable._estimate import Estimate
from deniable.designs import Categorical, CategoricalEstimate, Design
from deniable.exceptions import ParameterError
from deniable.randomness import resolve_rng

__all__ = ["Simulation", "simulate"]


@dataclass(frozen=True)
class Simulation:
    """One simulated survey: true answers, randomized reports and the estimate from them."""

    design: Design
    truth: npt.NDArray[np.integer[Any]] = field(repr=False)
    reports: npt.NDArray[np.integer[Any]] = field(repr=False)
    estimate: Estimate | CategoricalEstimate
    seed: int | None

    @property
    def n(self) -> int:
        return int(self.truth.size)

    @property
    def true_share(self) -> float | npt.NDArray[np.float64]:
        """The realised share of carriers (of each category for categorical designs)."""
        if isinstance(self.design, Categorical):
            return np.bincount(self.truth, minlength=self.design.k) / self.n
        return float(np.count_nonzero(self.truth)) / self.n


def simulate(
    design: Design,
    n: int,
    prevalence: float | npt.ArrayLike,
    *,
    seed: int | None = None,
) -> Simulation:
    """Draw ``n`` true answers (iid with ``prevalence``), randomize them, and estimate.

    ``prevalence`` is a probability for binary designs and a probability vector of length
    ``k`` for :class:`~deniable.Categorical`.  One seed drives both the population and the
    randomization (``seed=None`` draws fresh entropy; the result is then not reproducible).

    >>> from deniable import TwoCoin
    >>> sim = simulate(TwoCoin(), 10_000, 0.3, seed=1)
    >>> abs(sim.estimate.value - sim.true_share) < 4 * sim.estimate.se
    True
    """
    n = v.integer("n", n, minimum=1)
    gen = resolve_rng(np.random.SeedSequence().entropy if seed is None else seed)
    assert isinstance(gen, np.random.Generator)
    if isinstance(design, Categorical):
        probs = np.asarray(prevalence, dtype=float)
        if probs.shape != (design.k,) or np.any(probs < 0) or abs(probs.sum() - 1) > 1e-9:
            raise ParameterError(
                f"`prevalence` must be a probability vector of length k = {design.k}, got {prevalence!r}."
            )
        truth: npt.NDArray[np.integer[Any]] = gen.choice(design.k, size=n, p=probs)
    else:
        pi = v.probability("prevalence", prevalence)
        truth = (gen.random(n) < pi).view(np.uint8)
    reports = design.randomize(truth, rng=gen)
    return Simulation(design, truth, reports, design.estimate(reports), seed)  # type: ignore[attr-defined]
