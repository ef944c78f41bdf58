"""Streams of ordered values: the range mechanisms (HierarchicalHistogram, HaarHRR) and
Square Wave as a stream's oracle, their specs (``deniable.range-spec/1``,
``deniable.square-wave-spec/1``) and the answers of a tally: one UTC day's, or the pooled
tally of the page's days (:func:`deniable.distributed.aggregate_stream`, counted in this
process).

**What an estimate lists**, by the stream's answer settings
(:class:`~deniable.service.analysis._stream_answers.AnswerSettings`: the spec's
``answers.quantiles`` and ``answers.ranges``, by default the quartiles and, for a range
stream, the domain's quarters):

* a range stream (values ``0 .. D - 1``): each quantile of the consistent estimate, with
  its interval from the CDF's pointwise band at the page's level
  (:data:`deniable.oracles.QUANTILE_METHOD`), then the share of each range ``[a, b]``,
  with its plug-in SE and the normal interval ``share -+ z SE``;
* a Square Wave stream (numbers in ``[lower, upper]``): the unbiased moment mean with its
  SE and Wald interval, then the quantiles, the share of each range (``F(b) - F(a)``) and
  the mean of the EMS-smoothed distribution (Li et al. 2020), without intervals: their
  intervals need a parametric bootstrap (a refit per replicate), too slow for a page load;
  ``deniable telemetry aggregate --quantile`` gives them.
"""

from __future__ import annotations

from typing import Any

from deniable.exceptions import DataError
from deniable.oracles import HaarHRR, HierarchicalHistogram, SquareWave
from deniable.service.analysis._stream_answers import QUARTILES, AnswerSettings, quarters

__all__ = ["QUARTILES", "is_range", "quarters", "range_day"]


def is_range(oracle: Any) -> bool:
    """Whether ``oracle`` is a range mechanism or Square Wave (a stream of ordered values)."""
    return isinstance(oracle, HierarchicalHistogram | HaarHRR | SquareWave)


def _defaults(mechanism: Any) -> AnswerSettings:
    if isinstance(mechanism, SquareWave):
        return AnswerSettings("square-wave")
    return AnswerSettings("range", ranges=tuple(quarters(mechanism.domain)))


def range_day(
    mechanism: Any, tally: Any, level: float, settings: AnswerSettings | None = None
) -> dict[str, Any]:
    """The answers (module docstring) of a tally (a day's, or several days' pooled) at
    ``settings`` (the defaults when None): ``{"n", "answers": [{"answer", "value", "se",
    "ci"}, ...], "kind", "level"}``, ``se`` and ``ci`` None where the page gives none."""
    chosen = settings or _defaults(mechanism)
    if isinstance(mechanism, SquareWave):
        return _wave_day(mechanism, tally, level, chosen)
    est = mechanism.estimate(tally)
    answers = []
    for q in chosen.quantiles:
        quant = est.quantile(q, level)
        answers.append({"answer": f"{q:g}-quantile", "value": quant.value, "se": None,
                        "ci": [quant.interval.low, quant.interval.high]})  # fmt: skip
    for lo, hi in chosen.ranges:
        share = est.range(int(lo), int(hi))
        interval = share.ci(level)
        answers.append({"answer": f"share of [{lo:g}, {hi:g}]", "value": share.value,
                        "se": share.se, "ci": [interval.low, interval.high]})  # fmt: skip
    return {"n": est.n, "kind": "range", "level": level, "answers": answers}


def _wave_day(
    mechanism: SquareWave, tally: Any, level: float, chosen: AnswerSettings
) -> dict[str, Any]:
    if int(tally.counts[: mechanism.transition.shape[0]].sum()) == 0:  # pragma: no cover
        raise DataError("a Square Wave day without reports has no estimate.")
    est = mechanism.estimate(tally)
    mean = est.moment_mean
    interval = mean.ci(level)
    answers: list[dict[str, Any]] = [
        {"answer": "mean (moment, unbiased)", "value": mean.value, "se": mean.se,
         "ci": [interval.low, interval.high]},
    ]  # fmt: skip
    if chosen.quantiles:
        values = est.quantile_value(list(chosen.quantiles))
        for q, x in zip(chosen.quantiles, values, strict=True):
            answers.append({"answer": f"{q:g}-quantile (EMS)", "value": float(x), "se": None,
                            "ci": None})  # fmt: skip
    for lo, hi in chosen.ranges:
        low, high = est.cdf([lo, hi])
        answers.append({"answer": f"share of [{lo:g}, {hi:g}] (EMS)",
                        "value": float(high - low), "se": None, "ci": None})  # fmt: skip
    answers.append({"answer": "mean (EMS)", "value": est.mean_value, "se": None, "ci": None})
    return {"n": est.n, "kind": "square-wave", "level": level, "answers": answers}
