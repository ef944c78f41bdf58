"""Robustness statements for every estimate of a survey: how many fake respondents would move
it by ``shift`` (:func:`deniable.estimation.manipulation_robustness`; the formulas are in
docs/robustness.md).  A pure function of the survey and its tallies, like
:mod:`deniable.service.analysis.estimates`, so the JSON endpoint and the dashboard agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.designs import Tally
from deniable.estimation import manipulation_robustness
from deniable.exceptions import ParameterError
from deniable.survey import Survey

__all__ = ["DEFAULT_SHIFT", "robustness"]

#: The shift stated unless another is asked for.
DEFAULT_SHIFT = 0.05


def robustness(
    survey: Survey, tallies: Mapping[str, Tally], *, shift: float = DEFAULT_SHIFT
) -> dict[str, Any]:
    """Per question: ``n``, and per estimated share (a binary question's prevalence of the
    answer of its second label; a categorical question's every category) the estimate and
    the fake respondents needed to move it up or down by ``shift`` when they choose their
    answers (``input``) or their reports (``output``); ``null`` counts for a question
    without reports, and ``fakes: null`` where no number of fakes suffices."""
    s = v.real("shift", shift)
    if not 0 < s <= 1:
        raise ParameterError(f"`shift` must be in (0, 1] (a move of an estimated share), got {s}.")
    questions = []
    for q in survey.questions:
        d = q.design
        tally = tallies.get(q.id)
        n = 0 if tally is None else int(d.bind(tally).n)
        entry: dict[str, Any] = {"id": q.id, "text": q.text, "design": d.name, "n": n}
        if q.two_group:  # the statements are for one-group designs
            entry["shares"] = []
            entry["notes"] = ["not computed for a two-group design (one-group designs only)"]
            questions.append(entry)
            continue
        labels = list(q.labels) if d.n_truths > 2 else [q.labels[1]]
        if n == 0 or tally is None:
            entry["shares"] = [{"label": label, "estimate": None} for label in labels]
            entry["notes"] = ["no reports yet"]
        else:
            r = manipulation_robustness(d, tally, shift=s, labels=labels)
            entry["shares"] = r.to_dict()["shares"]
            entry["notes"] = []
        questions.append(entry)
    out: dict[str, Any] = to_jsonable(
        {
            "survey": survey.id,
            "shift": s,
            "questions": questions,
            "method": "input: fake respondents choose their answers and randomize them (the "
            "expected shift); output: they choose their reports (the largest shift); m fakes "
            "move a share by D m / (n + m) (docs/robustness.md; Cheu, Smith & Ullman 2021; "
            "Cao, Jia & Gong 2021)",
        }
    )
    return out
