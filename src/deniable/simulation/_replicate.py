"""The replication loop and the Monte Carlo figures shared by the one-group and the
two-group halves of :func:`~deniable.simulation.simulation_study`."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

__all__ = ["MomentFigures", "draw_counts", "moment_figures"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def draw_counts(
    gen: np.random.Generator,
    reps: int,
    block: int,
    method: str,
    progress: Callable[[int, int], None] | None,
    binomial: Callable[[int], Any],
    survey: Callable[[int], Any],
) -> IntArray:
    """The "yes" counts of ``reps`` replicated surveys, one row each, drawn ``block``
    replications at a time: ``binomial(m)`` gives ``m`` replications' counts at once
    (``method="binomial"``); otherwise ``survey(seed)`` gives one replication's counts,
    simulated respondent by respondent, from a seed drawn from ``gen``.

    ``progress(done, reps)`` is called after each block, and with ``method="respondents"``
    also after each replication within a block."""
    blocks = []
    for start in range(0, reps, block):
        m = min(block, reps - start)
        if method == "binomial":
            blocks.append(np.asarray(binomial(m), dtype=np.int64))
        else:
            rows = []
            for j, sd in enumerate(gen.integers(0, 2**63, size=m)):
                rows.append(survey(int(sd)))
                if progress is not None and j + 1 < m:
                    progress(start + j + 1, reps)
            blocks.append(np.asarray(rows, dtype=np.int64))
        if progress is not None:
            progress(start + m, reps)
    return np.concatenate(blocks)


class MomentFigures(TypedDict):
    """The Monte Carlo figures of one estimate against its ``truth``."""

    bias: float
    empirical_se: float
    mean_se: float
    rmse: float
    coverage_wald: float


def moment_figures(est: FloatArray, se: FloatArray, truth: float, z: float) -> MomentFigures:
    """Bias, empirical SE (``ddof=1``), mean estimated SE, RMSE and the coverage of the
    Wald interval ``est ± z se`` over the replications ``est`` (with SEs ``se``)."""
    return MomentFigures(
        bias=float(est.mean() - truth),
        empirical_se=float(est.std(ddof=1)),
        mean_se=float(se.mean()),
        rmse=float(math.sqrt(np.mean((est - truth) ** 2))),
        coverage_wald=float(np.mean(np.abs(est - truth) <= z * se)),
    )
