"""The paths analyze / survey_report (a DataFrame) and analyze_file / survey_report_file (a
file) share: ``frame_analyses`` and ``read_counts``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from deniable import Mangat, Warner
from deniable.exceptions import DataError
from deniable.survey import DesignColumns, analyze
from deniable.survey._analysis import _plan, frame_analyses
from deniable.survey._analysis_file import read_counts
from deniable.survey._files import SurveyFile

DF = pd.DataFrame(
    {
        "a": [1, 0, 1, 1, 0, None, 0, 1],
        "b": [0, 0, 1, 0, 1, 1, 0, 0],
        "w": [1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0],
    }
)
QUESTIONS = [("a", Warner(0.75), None, 0.95), ("b", Mangat(0.5), None, 0.9)]


def test_frame_analyses_is_analyze_per_question() -> None:
    got, sample = frame_analyses(DF, QUESTIONS, None, "drop")
    assert sample is None
    for res, (column, design, _, level) in zip(got, QUESTIONS, strict=True):
        want = analyze(DF, column, design, level=level)
        assert (res.n, res.missing, res.estimate.value) == (
            want.n,
            want.missing,
            want.estimate.value,
        )


def test_frame_analyses_under_a_sample_design() -> None:
    got, sample = frame_analyses(DF, QUESTIONS, DesignColumns(weights="w"), "drop")
    assert sample is not None and sample.n == len(DF)
    want = analyze(DF, "a", Warner(0.75), weights="w")
    assert got[0].design_based is not None and want.design_based is not None
    assert got[0].design_based.value == want.design_based.value


def test_frame_analyses_checks_the_question_columns_first() -> None:
    with pytest.raises(DataError, match="`column`"):
        frame_analyses(DF, [("nope", Warner(0.75), None, 0.95)], DesignColumns(weights="x"), "drop")


@pytest.mark.parametrize("designed", [False, True])
def test_read_counts(tmp_path: Path, designed: bool) -> None:
    path = tmp_path / "s.csv"
    DF.to_csv(path, index=False)
    plans = [_plan(d, c, g, None, lambda r: f"data row {r}") for c, d, g, _ in QUESTIONS]
    spec = DesignColumns(weights="w") if designed else None
    with SurveyFile(path) as f:
        rows, frame, sample = read_counts(f, str(path), plans, spec, "drop")
    assert rows == len(DF)
    assert [p.counts.rows for p in plans] == [len(DF), len(DF)]
    if designed:
        assert frame is not None and list(frame.index) == list(range(1, len(DF) + 1))
        assert sample is not None and sample.n == len(DF)
    else:
        assert frame is None and sample is None
