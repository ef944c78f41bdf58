"""Survey files and survey data: questionnaires of question specs with a per-respondent
epsilon cap (``deniable.survey/1`` files); report files read in streaming batches (CSV and
Parquet); estimates from columns of reports (overall, by group, two-group designs with their
group column); whole-survey reports (table, JSON, HTML with a forest plot); under a
sample design (weights, strata, PSUs, replicate weights: :class:`DesignColumns`) the
design-based estimate beside the unweighted one; weights raked or post-stratified to
population margins (:func:`weight_frame`).

pandas and pyarrow (the ``[data]`` extra) are imported only when a function needs them.
May import every layer below it (plotting, estimation, designs, results, common).
"""

from __future__ import annotations

from deniable.survey._analysis import Analysis, analyze, grouped
from deniable.survey._analysis_file import analyze_file
from deniable.survey._budget import OUTSIDE_CAP, SurveyBudget
from deniable.survey._compare import DesignSummary
from deniable.survey._files import CSV_SUFFIXES
from deniable.survey._grouped import (
    CATEGORY_COLUMNS,
    GROUPED_COLUMNS,
    TWO_GROUP_COLUMNS,
    GroupedAnalysis,
)
from deniable.survey._questionnaire import (
    SURVEY_SCHEMA,
    Survey,
    SurveyQuestion,
    demo_survey,
    demo_survey_text,
    load_survey,
    loads_survey,
)
from deniable.survey._readers import (
    read_frame,
    read_reports,
    require_pandas,
    write_reports,
)
from deniable.survey._report import SurveyReport, survey_report, survey_report_file
from deniable.survey._sample import DesignColumns
from deniable.survey._survey_weighting import SurveyWeighting
from deniable.survey._tally_file import tally_reports_file
from deniable.survey._weights import (
    WEIGHT_METHODS,
    Margins,
    Weighting,
    read_margins,
    weight_frame,
)

__all__ = [
    "CATEGORY_COLUMNS",
    "CSV_SUFFIXES",
    "GROUPED_COLUMNS",
    "OUTSIDE_CAP",
    "SURVEY_SCHEMA",
    "TWO_GROUP_COLUMNS",
    "WEIGHT_METHODS",
    "Analysis",
    "DesignColumns",
    "DesignSummary",
    "GroupedAnalysis",
    "Margins",
    "Survey",
    "SurveyBudget",
    "SurveyQuestion",
    "SurveyReport",
    "SurveyWeighting",
    "Weighting",
    "analyze",
    "analyze_file",
    "demo_survey",
    "demo_survey_text",
    "grouped",
    "load_survey",
    "loads_survey",
    "read_frame",
    "read_margins",
    "read_reports",
    "require_pandas",
    "survey_report",
    "survey_report_file",
    "tally_reports_file",
    "weight_frame",
    "write_reports",
]
