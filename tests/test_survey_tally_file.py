"""deniable.survey.tally_reports_file: the tally of one column of reports in a file (what
`deniable estimate --reports` prints), counted by hand on small files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from deniable.designs import Categorical, Kuk, Warner
from deniable.exceptions import DataError
from deniable.survey import tally_reports_file


def test_a_bare_list_counts_every_line_and_the_missing_ones(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_text("1\n0\n1\n\n1\ntrue\n")
    tally, missing = tally_reports_file(str(path), Warner(0.7))
    assert tally.counts.tolist() == [1, 4] and missing == 1  # "true" is a yes
    assert tally.mechanism == Warner(0.7).key  # bound to the design


def test_a_column_by_name_in_csv_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame({"id": [1, 2, 3, 4, 5], "red": [0, 2, 2, 1, None]})
    csv, parquet = tmp_path / "r.csv", tmp_path / "r.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet)
    kuk = Kuk(0.7, 0.3, draws=2)  # reports 0..2 red cards
    for path in (csv, parquet):
        tally, missing = tally_reports_file(str(path), kuk, column="red")
        assert tally.counts.tolist() == [1, 1, 2] and missing == 1, path
    with pytest.raises(DataError, match=r"has 2 columns \('id', 'red'\): name one with column"):
        tally_reports_file(str(parquet), kuk)
    with pytest.raises(DataError, match="`--column` must be one of the header"):
        tally_reports_file(str(csv), kuk, column="nope", option="--column")


def test_bad_and_missing_reports(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("answer\n0\n3\n")
    with pytest.raises(DataError, match="answer"):
        tally_reports_file(str(path), Categorical(k=3, p_truthful=0.5), column="answer")
    path.write_text("answer\n1\n\n")
    with pytest.raises(DataError):
        tally_reports_file(str(path), Warner(0.7), column="answer", missing="error")
    path.write_text("answer\n\n\n")
    with pytest.raises(DataError, match=r"holds no reports \(2 rows, all missing\)"):
        tally_reports_file(str(path), Warner(0.7), column="answer")
