"""What post-processing does to bias and error: a seeded simulation of an oracle on a known
population, the raw unbiased estimates beside each consistent one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError
from deniable.oracles._consistency import (
    clip_and_normalize,
    maximum_likelihood,
    project_to_simplex,
)
from deniable.results import Result, Table

__all__ = ["METHODS", "PostProcessingStudy", "post_processing_study"]

FloatArray = npt.NDArray[np.float64]

#: The methods compared, in order: the raw unbiased estimate and the three consistent ones.
METHODS = ("raw (unbiased)", "clip and normalize", "simplex projection", "maximum likelihood")


@dataclass(frozen=True)
class PostProcessingStudy(Result):
    """Per method (:data:`METHODS`) and category: the ``bias`` (mean estimate minus the
    true frequency) and the root mean squared error ``rmse``, over ``repeats`` seeded
    randomizations of the same ``n`` values (``truth`` their frequencies)."""

    oracle: Any
    n: int
    repeats: int
    seed: int
    truth: FloatArray = field(repr=False)
    bias: dict[str, FloatArray] = field(repr=False)
    rmse: dict[str, FloatArray] = field(repr=False)

    def table(self) -> Table:
        """One row per method: total squared bias, total mean squared error (sums over the
        categories) and the largest absolute bias of a category."""
        rows = tuple(
            (m, float(np.sum(self.bias[m] ** 2)), float(np.sum(self.rmse[m] ** 2)),
             float(np.max(np.abs(self.bias[m]))))
            for m in METHODS
        )  # fmt: skip
        return Table(
            ("method", "sum of bias^2", "sum of MSE", "max |bias|"),
            rows,
            title=(
                f"post-processing of {self.oracle.name} (k = {self.truth.size}, epsilon = "
                f"{self.oracle.epsilon:.4g}), n = {self.n}, {self.repeats} runs (seed "
                f"{self.seed})"
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the setting, the truth, and per method the bias and RMSE lists."""
        return {
            "oracle": self.oracle.key,
            "n": self.n,
            "repeats": self.repeats,
            "seed": self.seed,
            "truth": self.truth.tolist(),
            "bias": {m: self.bias[m].tolist() for m in METHODS},
            "rmse": {m: self.rmse[m].tolist() for m in METHODS},
        }


def post_processing_study(
    oracle: Any, frequencies: npt.ArrayLike, n: int, *, repeats: int = 200, seed: int = 0
) -> PostProcessingStudy:
    """Randomize the same ``n`` values (``frequencies`` times ``n`` of each, rounded) with
    ``oracle`` ``repeats`` times (seeded), estimate, post-process each estimate by every
    method of :data:`METHODS` (maximum likelihood at ``tol = 1e-8``) and return the bias
    and RMSE of each method per category.

    >>> from deniable.oracles import OUE
    >>> study = post_processing_study(OUE.from_epsilon(1.0, k=4), [0.7, 0.2, 0.1, 0.0], 500,
    ...                               repeats=50, seed=1)
    >>> bool(abs(study.bias["raw (unbiased)"]).max() < 0.03)   # unbiased: bias is noise
    True
    >>> bool(study.bias["clip and normalize"][3] > 0)     # the empty category: pushed up
    True
    """
    size = v.integer("n", n, minimum=1)
    reps = v.integer("repeats", repeats, minimum=2)
    k = int(oracle.channel.n_truths)
    pi = np.asarray(frequencies, dtype=np.float64)
    if pi.shape != (k,) or np.any(pi < 0) or not math.isclose(pi.sum(), 1.0, abs_tol=1e-9):
        raise DataError(
            f"`frequencies` must be {k} non-negative numbers that sum to 1, got {pi.tolist()}."
        )
    counts = np.floor(pi * size).astype(np.int64)
    order = np.argsort(-(pi * size - counts), kind="stable")
    counts[order[: size - int(counts.sum())]] += 1  # largest remainders
    values = np.repeat(np.arange(k), counts)
    truth = counts / size
    gen = np.random.default_rng(seed)
    runs = {m: np.empty((reps, k)) for m in METHODS}
    for r in range(reps):
        _, tally = oracle.randomize_and_tally(values, rng=gen)  # one pass where it can
        est = oracle.estimate(tally)
        runs[METHODS[0]][r] = est.values
        runs[METHODS[1]][r] = clip_and_normalize(est).values
        runs[METHODS[2]][r] = project_to_simplex(est).values
        runs[METHODS[3]][r] = maximum_likelihood(est, tol=1e-8).values
    bias = {m: runs[m].mean(axis=0) - truth for m in METHODS}
    rmse = {m: np.sqrt(np.mean((runs[m] - truth) ** 2, axis=0)) for m in METHODS}
    return PostProcessingStudy(oracle, size, reps, int(seed), truth, bias, rmse)
