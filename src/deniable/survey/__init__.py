"""Survey data: read report files (streaming CSV and Parquet), estimate from columns of
reports (overall, by group, two-group designs with their group column), and whole-survey
reports (table, JSON, HTML with a forest plot).

pandas and pyarrow (the ``[data]`` extra) are imported only when a function needs them.
May import every layer below it (plotting, estimation, designs, results, common).
"""

from __future__ import annotations

from deniable.survey._analysis import (
    GROUPED_COLUMNS,
    TWO_GROUP_COLUMNS,
    Analysis,
    GroupedAnalysis,
    analyze,
    analyze_file,
    grouped,
)
from deniable.survey._readers import read_reports, require_pandas, write_reports
from deniable.survey._report import SurveyReport, survey_report, survey_report_file

__all__ = [
    "GROUPED_COLUMNS",
    "TWO_GROUP_COLUMNS",
    "Analysis",
    "GroupedAnalysis",
    "SurveyReport",
    "analyze",
    "analyze_file",
    "grouped",
    "read_reports",
    "require_pandas",
    "survey_report",
    "survey_report_file",
    "write_reports",
]
