"""The distribution of the epsilon each respondent has spent, beside the survey's cap: a
JSON-ready dict made from the store's totals and the survey's own budget
(:meth:`~deniable.survey.Survey.budget`, its ``to_dict()``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.exceptions import DataError
from deniable.service.analysis.estimates import NO_BOUND
from deniable.survey import Survey

__all__ = ["DEFAULT_BINS", "budget"]

#: Bins of the budget histogram unless stated.
DEFAULT_BINS = 20


def budget(survey: Survey, spent: npt.ArrayLike, *, bins: int = DEFAULT_BINS) -> dict[str, Any]:
    """The distribution of the epsilon each respondent has spent, beside the cap.

    ``values``: every distinct amount spent with the number of respondents who spent it
    (amounts are sums of question epsilons, so there are few); ``histogram``: ``bins``
    equal bins over ``[0, max(cap, most spent)]`` (the last bin closed, so a respondent
    exactly at the cap counts in it); the cap, the survey's total by basic composition and
    each question's epsilon (an unbounded two-group question: ``"inf"``, ``unbounded``
    and ``guarantee``; it is outside the cap and the total, and charges nothing).
    """
    nb = v.integer("bins", bins, minimum=1, maximum=1000)
    arr = np.asarray(spent, dtype=np.float64).reshape(-1)
    if arr.size and not np.all(np.isfinite(arr) & (arr >= 0)):
        raise DataError("`spent` must hold finite non-negative amounts of epsilon.")
    plan = survey.budget().to_dict()
    top = max(survey.cap, float(arr.max()) if arr.size else 0.0)
    counts, edges = np.histogram(arr, bins=nb, range=(0.0, top))
    values, how_many = np.unique(arr, return_counts=True)
    n = int(arr.size)
    out = {
        "survey": survey.id,
        "cap": survey.cap,
        "total": plan["basic"],
        # an unbounded (two-group) question is outside the cap and the total
        "questions": [
            {
                "id": q.id,
                "epsilon": q.epsilon,
                **({"unbounded": True, "guarantee": NO_BOUND} if q.unbounded else {}),
            }
            for q in survey.questions
        ],
        "respondents": n,
        "mean": float(arr.mean()) if n else None,
        "median": float(np.median(arr)) if n else None,
        "max": float(arr.max()) if n else None,
        "at_cap": int(np.sum(arr >= survey.cap)),
        "values": [
            {"spent": float(x), "respondents": int(c)}
            for x, c in zip(values.tolist(), how_many.tolist(), strict=True)
        ],
        "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]},
    }
    result: dict[str, Any] = to_jsonable(out)
    return result
