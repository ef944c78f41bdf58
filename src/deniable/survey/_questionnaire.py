"""Survey files: a versioned questionnaire of question specs with a per-respondent epsilon cap.

A survey file (YAML or JSON, schema ``deniable.survey/1``) names the survey, its questions
(wording, answer labels and a design: a full question spec, or a mechanism with its
parameters, or a mechanism with a target epsilon), the most epsilon one respondent may
spend (``cap``, pure epsilon by basic composition, as the budget ledger enforces it), the
``delta`` at which the tighter (epsilon, delta) total is reported, the open and close
dates, and how respondents come (``anonymous`` tokens issued on first visit, or single-use
``invitation`` tokens).  :func:`load_survey` reads and checks one; every refusal names the
field (``questions[2].design.epsilon``).  :meth:`Survey.budget` says what each question
costs, the respondent's total by basic and by optimal composition, and whether the cap
holds (``docs/surveys.md``).

A two-group design (``unrelated-unknown``, ``cdm``, ``cdm-symmetric``, ``sld``) has
epsilon = inf: a question may carry one only with the explicit acknowledgement
``unbounded: true``, and is then outside the cap (its answers have no bounded guarantee);
the survey service assigns each respondent's randomization group.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from deniable.common import load_json, load_yaml
from deniable.designs import (
    DESIGNS,
    TWO_GROUP_DESIGNS,
    Design,
    QuestionSpec,
    design_from_spec,
    spec_of,
)
from deniable.exceptions import DataError, DeniableError, ParameterError
from deniable.survey._budget import SurveyBudget, survey_budget
from deniable.survey._fields import (
    SURVEY_SCHEMA,
    _check_keys,
    _check_schema,
    _delta,
    _ident,
    _positive,
    _text,
    _when,
    _where,
)
from deniable.survey._survey_weighting import SurveyWeighting, survey_weighting

__all__ = [
    "SURVEY_SCHEMA",
    "Survey",
    "SurveyQuestion",
    "demo_survey",
    "demo_survey_text",
    "load_survey",
    "loads_survey",
]

#: Survey ids the service needs for pages of its own (``/dashboard/login``, ``/logout``).
RESERVED_IDS = ("login", "logout")
_TOP = {
    "schema",
    "id",
    "version",
    "title",
    "description",
    "cap",
    "delta",
    "opens",
    "closes",
    "respondents",
    "questions",
    "weighting",
}
_REQUIRED = {"schema", "id", "title", "cap", "questions"}
_QUESTION = {"id", "text", "labels", "design", "unbounded", "unrelated"}
_RESPONDENTS = ("anonymous", "invitation")
#: The most answers a survey question may have (a categorical design's k).
MAX_ANSWERS = 1024


@dataclass(frozen=True)
class SurveyQuestion:
    """One question of a survey: its id, wording, answer labels and design.

    ``unbounded`` is the survey file's acknowledgement that the design's epsilon is
    infinite (a two-group design): the question is outside the cap and its answers have
    no bounded guarantee.  It is true exactly for the two-group designs.  ``unrelated``:
    the wording of the unrelated question of an ``unrelated-unknown`` design (its answer is
    asked on the respondent's device and enters only the randomization), else ``None``.
    """

    id: str
    text: str
    labels: tuple[str, ...]
    design: Design
    unbounded: bool = False
    unrelated: str | None = None

    @property
    def epsilon(self) -> float:
        """The design's exact epsilon: finite, or ``inf`` for an ``unbounded`` question."""
        return self.design.epsilon

    @property
    def two_group(self) -> bool:
        """Whether the design splits the respondents into two randomization groups."""
        return self.design.n_groups == 2

    @property
    def group_column(self) -> str:
        """The export's column of this question's randomization groups (1 or 2)."""
        return f"{self.id}_group"

    @property
    def spec(self) -> QuestionSpec:
        """The question spec (design, wording and labels) a client randomizes from."""
        return spec_of(self.design, text=self.text, labels=self.labels)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "text": self.text,
            "labels": list(self.labels),
            "design": self.spec.to_dict(),
        }
        if self.unbounded:
            out["unbounded"] = True
        if self.unrelated is not None:
            out["unrelated"] = self.unrelated
        return out


@dataclass(frozen=True)
class Survey:
    """A checked survey: build it with :func:`load_survey` / :func:`loads_survey` /
    :meth:`from_dict`; :meth:`to_dict` writes it back with every question's full spec.

    ``closed_at`` is not part of the file: the survey service sets it when the operator
    closes the survey (``deniable survey close``), and the survey takes no answers from then
    on, whatever ``closes`` says.  ``weighting``: the population margins the service rakes
    to (:class:`~deniable.survey.SurveyWeighting`), or ``None``.
    """

    id: str
    title: str
    cap: float
    questions: tuple[SurveyQuestion, ...]
    version: int = 1
    description: str = ""
    delta: float = 1e-6
    opens: datetime | None = None
    closes: datetime | None = None
    respondents: str = "anonymous"
    closed_at: datetime | None = None
    weighting: SurveyWeighting | None = None

    def question(self, question_id: str) -> SurveyQuestion:
        """The question with this id (a DataError naming the known ids otherwise)."""
        for q in self.questions:
            if q.id == question_id:
                return q
        known = ", ".join(repr(q.id) for q in self.questions)
        raise DataError(
            f"survey {self.id!r} has no question {question_id!r} (its questions: {known})."
        )

    def is_open(self, at: datetime | None = None) -> bool:
        """Whether the survey takes answers at ``at`` (default: now, UTC)."""
        now = at or datetime.now(UTC)
        if self.opens is not None and now < self.opens:
            return False
        if self.closed_at is not None and now >= self.closed_at:
            return False
        return self.closes is None or now < self.closes

    def budget(self) -> SurveyBudget:
        """Each question's epsilon, the totals and whether the cap holds; an ``unbounded``
        question (epsilon inf) is outside the cap and the totals."""
        return survey_budget(
            self.cap,
            self.delta,
            [q.id for q in self.questions],
            [q.epsilon for q in self.questions],
            [q.unbounded for q in self.questions],
        )

    def to_dict(self) -> dict[str, Any]:
        """The survey as plain data (schema ``deniable.survey/1``), every design as its
        full question spec, so that it reads back to an equal survey."""
        out: dict[str, Any] = {
            "schema": SURVEY_SCHEMA,
            "id": self.id,
            "version": self.version,
            "title": self.title,
            "description": self.description,
            "cap": self.cap,
            "delta": self.delta,
            "opens": None if self.opens is None else self.opens.isoformat(),
            "closes": None if self.closes is None else self.closes.isoformat(),
            "respondents": self.respondents,
            "questions": [q.to_dict() for q in self.questions],
        }
        if self.weighting is not None:  # absent when not given: older definitions unchanged
            out["weighting"] = self.weighting.to_dict()
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Any) -> Survey:
        """Check a survey read from a file (see the module docstring); every refusal is a
        :class:`~deniable.exceptions.ParameterError` naming the field."""
        if not isinstance(data, Mapping):
            raise _where("(top level)", f"must be a mapping, got {type(data).__name__}.")
        _check_keys("(top level)", data, _TOP, _REQUIRED)
        _check_schema(data["schema"])
        sid = _ident("id", data["id"])
        if sid in RESERVED_IDS:  # the service's dashboard has pages of these names
            raise _where(
                "id",
                f"must not be one of {', '.join(RESERVED_IDS)} (the survey service's "
                f"dashboard uses them: /dashboard/{sid}), got {sid!r}.",
            )
        version = data.get("version", 1)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise _where("version", f"must be a whole number >= 1, got {version!r}.")
        title = _text("title", data["title"])
        description = _text("description", data.get("description", ""), empty=True)
        cap = _positive("cap", data["cap"])
        delta = _delta(data.get("delta", 1e-6))
        opens = _when("opens", data.get("opens"))
        closes = _when("closes", data.get("closes"))
        if opens is not None and closes is not None and not opens < closes:
            raise _where("closes", f"must be after `opens` ({opens.isoformat()}), got "
                         f"{closes.isoformat()}.")  # fmt: skip
        respondents = data.get("respondents", "anonymous")
        if respondents not in _RESPONDENTS:
            raise _where("respondents", f"must be one of {', '.join(_RESPONDENTS)}, got "
                         f"{respondents!r}.")  # fmt: skip
        raw = data["questions"]
        if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
            raise _where("questions", "must be a non-empty list of questions.")
        questions = tuple(_question(f"questions[{i}]", q) for i, q in enumerate(raw))
        seen: set[str] = set()
        for i, q in enumerate(questions):
            if q.id in seen:
                raise _where(f"questions[{i}].id", f"must be unique, got {q.id!r} twice.")
            seen.add(q.id)
        groups = {q.group_column: q.id for q in questions if q.two_group}
        for i, q in enumerate(questions):
            if q.id in groups:  # the export's group column of a two-group question
                raise _where(f"questions[{i}].id", f"must differ from {q.id!r}, the export's "
                             f"column of the groups of question {groups[q.id]!r}.")  # fmt: skip
        weighting = survey_weighting(data.get("weighting"), questions=seen, respondents=respondents)
        return cls(
            id=sid,
            title=title,
            cap=cap,
            questions=questions,
            version=version,
            description=description,
            delta=delta,
            opens=opens,
            closes=closes,
            respondents=respondents,
            weighting=weighting,
        )


def _question(path: str, data: Any) -> SurveyQuestion:
    if not isinstance(data, Mapping):
        raise _where(path, f"must be a mapping, got {type(data).__name__}.")
    _check_keys(path, data, _QUESTION, {"id", "text", "design"})
    qid = _ident(f"{path}.id", data["id"])
    text = _text(f"{path}.text", data["text"])
    unbounded = data.get("unbounded", False)
    if not isinstance(unbounded, bool):
        raise _where(f"{path}.unbounded", f"must be true or false, got {unbounded!r}.")
    design = _design(f"{path}.design", data["design"], unbounded=unbounded)
    # a two-group design's truths are respondent types; its answers are yes and no
    answers = 2 if design.n_groups == 2 else design.n_truths
    if answers > MAX_ANSWERS:  # labels, thresholds and a page of choices: all O(answers)
        raise _where(f"{path}.design", f"has {answers:,} answers ({design.name}); a survey "
                     f"question may have at most {MAX_ANSWERS:,}, each a label a respondent "
                     "reads.")  # fmt: skip
    default = ("no", "yes") if answers == 2 else tuple(str(j) for j in range(answers))
    raw = data.get("labels", default)
    if (
        not isinstance(raw, Sequence)
        or isinstance(raw, str)
        or not all(isinstance(x, str) and x.strip() for x in raw)
    ):
        raise _where(f"{path}.labels", f"must be a list of non-empty strings, got {raw!r}.")
    labels = tuple(raw)
    if len(labels) != answers:
        raise _where(f"{path}.labels", f"must have {answers} labels (one per answer of design "
                     f"{design.name!r}), got {len(labels)}.")  # fmt: skip
    if len(set(labels)) != len(labels):
        raise _where(f"{path}.labels", f"must be distinct, got {list(labels)!r}.")
    # Greenberg's unrelated question: the respondent's device asks it (docs/surveys.md)
    needs = design.name == "unrelated-unknown"
    unrelated = data.get("unrelated")
    if needs and unrelated is None:
        raise _where(f"{path}.unrelated", "must give the unrelated question's wording for "
                     "design 'unrelated-unknown' (the respondent's device asks it; its answer "
                     "enters only the randomization).")  # fmt: skip
    if not needs and unrelated is not None:
        raise _where(f"{path}.unrelated", "is only for design 'unrelated-unknown', got "
                     f"design {design.name!r}.")  # fmt: skip
    if unrelated is not None:
        unrelated = _text(f"{path}.unrelated", unrelated)
    return SurveyQuestion(qid, text, labels, design, unbounded, unrelated)


def _design(path: str, data: Any, *, unbounded: bool = False) -> Design:
    if not isinstance(data, Mapping):
        raise _where(path, "must be a question spec or a mapping with `mechanism` and "
                     f"`parameters` or `epsilon`, got {data!r}.")  # fmt: skip
    raw_name = data.get("mechanism")
    name = raw_name if isinstance(raw_name, str) else repr(raw_name)
    where = path.rsplit(".", 1)[0]  # the question
    if name in TWO_GROUP_DESIGNS and not unbounded:
        raise _where(f"{where}.unbounded", f"must be true for the two-group design {name!r}: "
                     "its epsilon is inf (a report can reveal the answer), so no cap bounds "
                     "it; `unbounded: true` acknowledges that its answers have no bounded "
                     "guarantee and puts the question outside the cap.")  # fmt: skip
    if name not in DESIGNS and name not in TWO_GROUP_DESIGNS:
        known = ", ".join([*DESIGNS, *TWO_GROUP_DESIGNS])
        raise _where(f"{path}.mechanism", f"must be one of {known}, got {raw_name!r}.")
    try:
        if "schema" in data:  # a full question spec: every implied field is checked
            design = design_from_spec(dict(data))
        else:
            _check_keys(path, data, {"mechanism", "parameters", "epsilon"}, {"mechanism"})
            params = data.get("parameters") or {}
            if not isinstance(params, Mapping):
                raise _where(f"{path}.parameters", f"must be a mapping, got {params!r}.")
            cls = DESIGNS[name] if name in DESIGNS else TWO_GROUP_DESIGNS[name]
            if "epsilon" in data:
                eps = _positive(f"{path}.epsilon", data["epsilon"])
                from_epsilon = getattr(cls, "from_epsilon", None)
                if from_epsilon is None:
                    raise _where(f"{path}.epsilon", f"cannot be used with design {name!r} (it "
                                 "has no from_epsilon): give its parameters.")  # fmt: skip
                design = from_epsilon(eps, **dict(params))
            else:
                from deniable.designs import make_design

                design = make_design(name, dict(params))
    except ParameterError as exc:
        if str(exc).startswith("survey field"):
            raise
        raise _where(path, f"is not a valid design: {exc}") from None
    except (DeniableError, TypeError) as exc:
        raise _where(path, f"is not a valid design: {exc}") from None
    if unbounded and design.n_groups != 2:  # a label that would mislead
        raise _where(f"{where}.unbounded", "may be true only for a two-group design ("
                     f"{', '.join(TWO_GROUP_DESIGNS)}), got design {design.name!r}"
                     + ("" if math.isinf(design.epsilon) else
                        f" (epsilon = {design.epsilon:.6g}: it has a bounded guarantee)")
                     + ".")  # fmt: skip
    if math.isinf(design.epsilon) and design.n_groups != 2:
        raise _where(path, f"is design {design!r} with epsilon = inf (a report can reveal the "
                     "answer): no finite cap admits it.")  # fmt: skip
    return design


# --------------------------------------------------------------------------- reading


def loads_survey(text: str | bytes, *, format: str = "auto", source: str | None = None) -> Survey:
    """A survey from the text of a file: ``format`` is ``"json"``, ``"yaml"`` or
    ``"auto"`` (JSON if the text starts with ``{``, else YAML); ``source`` names the text in
    errors (default "the survey file").  Read by the one strict loader of each format: a key
    given twice, nesting deeper than 64 levels, an integer of more than 40 digits are
    refused, naming the place."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DataError(f"a survey file must be UTF-8 text (byte {exc.start}).") from None
    if format not in ("auto", "json", "yaml"):
        raise ParameterError(f"`format` must be one of auto, json, yaml, got {format!r}.")
    kind = format if format != "auto" else ("json" if text.lstrip().startswith("{") else "yaml")
    where = "the survey file" if source is None else source
    data = load_json(text, source=where) if kind == "json" else load_yaml(text, source=where)
    return Survey.from_dict(data)


def load_survey(path: str | Path) -> Survey:
    """Read and check the survey file at ``path`` (``.json``, ``.yaml`` or ``.yml``)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read survey file {str(p)!r}: {exc.strerror or exc}.") from None
    suffix = p.suffix.lower()
    kind = "json" if suffix == ".json" else "yaml" if suffix in (".yaml", ".yml") else "auto"
    return loads_survey(raw, format=kind, source=f"survey file {str(p)!r}")


def demo_survey_text() -> str:
    """The text of the demo survey file (YAML) shipped with deniable."""
    return resources.files("deniable.survey").joinpath("demo_survey.yaml").read_text("utf-8")


def demo_survey() -> Survey:
    """The demo survey: the classic workplace question with two coins ("Are you happy at
    work?"), a yes/no question at epsilon 1 and a four-category question at epsilon 1.

    >>> survey = demo_survey()
    >>> [q.id for q in survey.questions]
    ['happy', 'harassment', 'hours']
    >>> survey.budget().cap_holds
    True
    """
    return loads_survey(demo_survey_text(), format="yaml")
