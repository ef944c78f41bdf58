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

Only one-group designs are accepted: a two-group design needs each respondent's
randomization group, which a questionnaire does not carry yet.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from deniable.accounting import add_up, compare_composition
from deniable.common import load_json, load_yaml, validation
from deniable.designs import (
    DESIGNS,
    TWO_GROUP_DESIGNS,
    Design,
    QuestionSpec,
    design_from_spec,
    spec_of,
)
from deniable.exceptions import DataError, DeniableError, ParameterError
from deniable.results import Result, Table
from deniable.survey._survey_weighting import SurveyWeighting, survey_weighting

__all__ = [
    "SURVEY_SCHEMA",
    "Survey",
    "SurveyBudget",
    "SurveyQuestion",
    "demo_survey",
    "demo_survey_text",
    "load_survey",
    "loads_survey",
]

#: The schema of survey files this version reads and writes.
SURVEY_SCHEMA = "deniable.survey/1"
_SCHEMA_RE = re.compile(r"deniable\.survey/(\d+)")
_ID_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
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
_QUESTION = {"id", "text", "labels", "design"}
_RESPONDENTS = ("anonymous", "invitation")
#: The most answers a survey question may have (a categorical design's k).
MAX_ANSWERS = 1024


def _where(path: str, message: str) -> ParameterError:
    return ParameterError(f"survey field `{path}` {message}")


@dataclass(frozen=True)
class SurveyQuestion:
    """One question of a survey: its id, wording, answer labels and design."""

    id: str
    text: str
    labels: tuple[str, ...]
    design: Design

    @property
    def epsilon(self) -> float:
        """The design's exact epsilon (finite: infinite designs are refused)."""
        return self.design.epsilon

    @property
    def spec(self) -> QuestionSpec:
        """The question spec (design, wording and labels) a client randomizes from."""
        return spec_of(self.design, text=self.text, labels=self.labels)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "labels": list(self.labels),
            "design": self.spec.to_dict(),
        }


@dataclass(frozen=True)
class SurveyBudget(Result):
    """What a survey costs one respondent.

    ``epsilons`` per question; ``basic`` the sum of all of them, rounded upward as the
    ledger adds them (what the cap is compared with); ``optimal`` the exact optimal
    composition at ``delta`` (an (epsilon, delta) statement, never above ``basic``);
    ``answerable`` per question, whether a respondent asked the questions in order, each one
    skipped that would pass the cap, gets to answer it.
    """

    cap: float
    delta: float
    question_ids: tuple[str, ...]
    epsilons: tuple[float, ...]
    basic: float
    optimal: float
    answerable: tuple[bool, ...]

    @property
    def cap_holds(self) -> bool:
        """True when a respondent can answer every question within the cap."""
        return all(self.answerable)

    def table(self) -> Table:
        rows = []
        running = 0.0
        for qid, eps, ok in zip(self.question_ids, self.epsilons, self.answerable, strict=True):
            if ok:
                running = float(add_up(running, eps))
            rows.append((qid, eps, running, "yes" if ok else "no (skipped: past the cap)"))
        verdict = (
            f"the cap {self.cap:g} holds: every respondent can answer every question"
            if self.cap_holds
            else f"the cap {self.cap:g} does not hold: the questions marked 'no' are not shown "
            "to a respondent who answered the ones before"
        )
        return Table(
            ("question", "epsilon", "spent after it", "asked"),
            tuple(rows),
            title=(
                f"total epsilon {self.basic:.6g} by basic composition (what the cap is "
                f"compared with), {self.optimal:.6g} at delta = {self.delta:g} by optimal "
                "composition"
            ),
            notes=(verdict,),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "cap": self.cap,
            "delta": self.delta,
            "questions": [
                {"id": q, "epsilon": e, "answerable": a}
                for q, e, a in zip(self.question_ids, self.epsilons, self.answerable, strict=True)
            ],
            "basic": self.basic,
            "optimal": self.optimal,
            "cap_holds": self.cap_holds,
        }


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
        """Each question's epsilon, the totals and whether the cap holds."""
        eps = tuple(q.epsilon for q in self.questions)
        basic = 0.0
        for e in eps:
            basic = float(add_up(basic, e))
        spent = 0.0
        answerable = []
        for e in eps:
            after = float(add_up(spent, e))
            ok = after <= self.cap
            answerable.append(ok)
            if ok:
                spent = after
        optimal = float(compare_composition(list(eps), self.delta)["optimal"])
        return SurveyBudget(
            self.cap,
            self.delta,
            tuple(q.id for q in self.questions),
            eps,
            basic,
            min(optimal, basic),
            tuple(answerable),
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


# --------------------------------------------------------------------------- fields


def _check_keys(path: str, data: Mapping[str, Any], allowed: set[str], required: set[str]) -> None:
    extra = sorted(set(map(str, data)) - allowed)
    if extra:
        raise _where(f"{path}", f"has unknown field(s) {', '.join(map(repr, extra))} (allowed: "
                     f"{', '.join(sorted(allowed))}).")  # fmt: skip
    missing = sorted(required - set(data))
    if missing:
        raise _where(f"{path}", f"lacks the required field(s) {', '.join(map(repr, missing))}.")


def _check_schema(value: Any) -> None:
    m = _SCHEMA_RE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        raise _where("schema", f"must be {SURVEY_SCHEMA!r}, got {value!r}.")
    if int(m.group(1)) > 1:
        raise _where("schema", f"is {value!r}, newer than this version of deniable reads "
                     f"({SURVEY_SCHEMA!r}): upgrade deniable.")  # fmt: skip


def _ident(path: str, value: Any) -> str:
    if not isinstance(value, str) or not _ID_RE.fullmatch(value):
        raise _where(path, "must be 1 to 64 lowercase letters, digits, '-' or '_', starting "
                     f"with a letter or digit, got {value!r}.")  # fmt: skip
    return value


def _text(path: str, value: Any, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise _where(path, f"must be {'a' if empty else 'a non-empty'} string, got {value!r}.")
    return value


def _number(path: str, value: Any) -> float:
    if isinstance(value, bool):
        raise _where(path, f"must be a number, got {value!r}.")
    if isinstance(value, int | float):
        x = float(value)
    elif isinstance(value, str):
        try:
            exact = validation.exact_number(value)
            x = float(exact)
        except OverflowError:  # beyond every double ("1e400"): refused below with the range
            x = math.inf if exact > 0 else -math.inf
        except (ValueError, ZeroDivisionError):
            try:
                x = float(value)  # "inf", "-inf", "nan": refused below with the range
            except ValueError:
                raise _where(
                    path, f"must be a number (e.g. 3, 2.5 or 5/2), got {value!r}."
                ) from None
    else:
        raise _where(path, f"must be a number, got {type(value).__name__} {value!r}.")
    if math.isnan(x):
        raise _where(path, "must be a number, got NaN.")
    return x


def _positive(path: str, value: Any) -> float:
    x = _number(path, value)
    if not 0 < x < math.inf:
        raise _where(path, f"must be in (0, inf) (a finite epsilon cap), got {value!r}.")
    return x


def _delta(value: Any) -> float:
    x = _number("delta", value)
    if not 0 < x < 1:
        raise _where("delta", f"must be in (0, 1), got {value!r}.")
    return x


def _when(path: str, value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip())
        except ValueError:
            raise _where(path, "must be an ISO 8601 date or date-time (e.g. "
                         f"2026-12-01T09:00:00+00:00), got {value!r}.") from None  # fmt: skip
    else:
        raise _where(path, f"must be an ISO 8601 date-time or null, got {value!r}.")
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # a date-time without a zone is read as UTC
    return when


def _question(path: str, data: Any) -> SurveyQuestion:
    if not isinstance(data, Mapping):
        raise _where(path, f"must be a mapping, got {type(data).__name__}.")
    _check_keys(path, data, _QUESTION, {"id", "text", "design"})
    qid = _ident(f"{path}.id", data["id"])
    text = _text(f"{path}.text", data["text"])
    design = _design(f"{path}.design", data["design"])
    answers = design.n_truths
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
    return SurveyQuestion(qid, text, labels, design)


def _design(path: str, data: Any) -> Design:
    if not isinstance(data, Mapping):
        raise _where(path, "must be a question spec or a mapping with `mechanism` and "
                     f"`parameters` or `epsilon`, got {data!r}.")  # fmt: skip
    raw_name = data.get("mechanism")
    name = raw_name if isinstance(raw_name, str) else repr(raw_name)
    if name in TWO_GROUP_DESIGNS:
        raise _where(f"{path}.mechanism", f"is the two-group design {name!r}: survey files "
                     "take one-group designs (a two-group design needs each respondent's "
                     f"randomization group), one of {', '.join(DESIGNS)}.")  # fmt: skip
    if name not in DESIGNS:
        raise _where(f"{path}.mechanism", f"must be one of {', '.join(DESIGNS)}, got {raw_name!r}.")
    try:
        if "schema" in data:  # a full question spec: every implied field is checked
            design = design_from_spec(dict(data))
        else:
            _check_keys(path, data, {"mechanism", "parameters", "epsilon"}, {"mechanism"})
            params = data.get("parameters") or {}
            if not isinstance(params, Mapping):
                raise _where(f"{path}.parameters", f"must be a mapping, got {params!r}.")
            cls = DESIGNS[name]
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
    if math.isinf(design.epsilon):
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
