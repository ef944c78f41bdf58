"""Streams of ordered values: the range mechanisms (HierarchicalHistogram, HaarHRR) and
Square Wave as a stream's oracle, their specs (``deniable.range-spec/1``,
``deniable.square-wave-spec/1``) and each UTC day's answers.

**What a day shows.**  Every day is estimated from that day's reports only (its tally,
counted in this process by :func:`deniable.distributed.aggregate_stream`):

* a range stream (values ``0 .. D - 1``): the quartiles (:data:`QUARTILES`) of the
  consistent estimate, each with its interval from the CDF's pointwise band at the page's
  level (:data:`deniable.oracles.QUANTILE_METHOD`), then the share of each of the domain's
  quarters ``[0, D/4 - 1]``, ... (:func:`quarters`: ``min(4, D)`` ranges of nearly equal
  width), each with its plug-in SE and the normal interval ``share -+ z SE``;
* a Square Wave stream (numbers in ``[lower, upper]``): the unbiased moment mean with its
  SE and Wald interval, then the quartiles and the mean of the EMS-smoothed distribution
  (Li et al. 2020), without intervals: their intervals need a parametric bootstrap (a
  refit per replicate), too slow for a page load; ``deniable telemetry aggregate
  --quantile`` gives them.
"""

from __future__ import annotations

from typing import Any

from deniable.exceptions import DataError
from deniable.oracles import HaarHRR, HierarchicalHistogram, SquareWave

__all__ = ["QUARTILES", "is_range", "quarters", "range_day"]

#: The quantiles a range or Square Wave day lists.
QUARTILES = (0.25, 0.5, 0.75)


def is_range(oracle: Any) -> bool:
    """Whether ``oracle`` is a range mechanism or Square Wave (a stream of ordered values)."""
    return isinstance(oracle, HierarchicalHistogram | HaarHRR | SquareWave)


def quarters(domain: int) -> list[tuple[int, int]]:
    """The fixed ranges a range day lists: ``min(4, D)`` consecutive ranges covering ``0 ..
    D - 1``, range ``i`` starting at ``floor(i D / 4)``.

    >>> quarters(16), quarters(9), quarters(2)
    ([(0, 3), (4, 7), (8, 11), (12, 15)], [(0, 1), (2, 3), (4, 5), (6, 8)], [(0, 0), (1, 1)])
    """
    parts = min(4, domain)
    starts = [i * domain // parts for i in range(parts)] + [domain]
    return [(starts[i], starts[i + 1] - 1) for i in range(parts)]


def range_day(mechanism: Any, tally: Any, level: float) -> dict[str, Any]:
    """One day's answers (module docstring) from the day's tally: ``{"n", "answers":
    [{"answer", "value", "se", "ci"}, ...], "kind", "level"}``, ``se`` and ``ci`` None where
    the page gives none."""
    if isinstance(mechanism, SquareWave):
        return _wave_day(mechanism, tally, level)
    est = mechanism.estimate(tally)
    answers = []
    for q in QUARTILES:
        quant = est.quantile(q, level)
        answers.append({"answer": f"{q:g}-quantile", "value": quant.value, "se": None,
                        "ci": [quant.interval.low, quant.interval.high]})  # fmt: skip
    for lo, hi in quarters(mechanism.domain):
        share = est.range(lo, hi)
        interval = share.ci(level)
        answers.append({"answer": f"share of [{lo}, {hi}]", "value": share.value,
                        "se": share.se, "ci": [interval.low, interval.high]})  # fmt: skip
    return {"n": est.n, "kind": "range", "level": level, "answers": answers}


def _wave_day(mechanism: SquareWave, tally: Any, level: float) -> dict[str, Any]:
    if int(tally.counts[: mechanism.transition.shape[0]].sum()) == 0:  # pragma: no cover
        raise DataError("a Square Wave day without reports has no estimate.")
    est = mechanism.estimate(tally)
    mean = est.moment_mean
    interval = mean.ci(level)
    answers: list[dict[str, Any]] = [
        {"answer": "mean (moment, unbiased)", "value": mean.value, "se": mean.se,
         "ci": [interval.low, interval.high]},
    ]  # fmt: skip
    for q, x in zip(QUARTILES, est.quantile_value(list(QUARTILES)), strict=True):
        answers.append({"answer": f"{q:g}-quantile (EMS)", "value": float(x), "se": None,
                        "ci": None})  # fmt: skip
    answers.append({"answer": "mean (EMS)", "value": est.mean_value, "se": None, "ci": None})
    return {"n": est.n, "kind": "square-wave", "level": level, "answers": answers}
