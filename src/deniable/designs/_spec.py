"""Question specs: a versioned JSON description of a question that a server, a browser or a
file can hold, complete enough to randomize an answer without ``deniable``.

A spec names the mechanism and its exact parameters, and states what they imply: the key
tallies carry, the numbers of truth and report values, the randomizer's algorithm
(``_spec_algorithms``), the integer thresholds it compares random words with, the number
of 64-bit words one report consumes, and epsilon.  Reading a spec (``_spec_read``)
recomputes every implied field from the parameters and refuses a spec whose fields do not
match (a tampered threshold, a finite epsilon for an infinite one), a newer schema, or an
unknown or missing field, naming the field.  ``docs/specs.md`` states each algorithm
exactly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from deniable.common import validation as v
from deniable.designs._base import Design
from deniable.designs._identity import exact_value
from deniable.designs._registry import make_design
from deniable.designs._spec_algorithms import (
    SPEC_SCHEMA,
    LatentInput,
    json_ints,
    latent_input,
    spec_algorithm,
)
from deniable.designs._spec_read import check_fields, check_implied, check_labels, loads
from deniable.designs._twogroup import TwoGroupDesign
from deniable.exceptions import ParameterTypeError

__all__ = ["QuestionSpec", "design_from_spec", "spec_of"]


@dataclass(frozen=True)
class QuestionSpec:
    """A question: a registered design with optional wording, as versioned JSON.

    Every other field is computed from the design, so a spec object is consistent by
    construction; :meth:`from_dict` checks a spec read from a file against them.

    Fields of :meth:`to_dict` (schema ``deniable.question/1``, ``docs/specs.md``):
    ``schema``, ``mechanism`` (registry name), ``parameters`` (exact: a float as the
    fraction ``"p/q"`` it is), ``key`` (the identity tallies carry), ``truths`` and
    ``reports`` (numbers of values), ``algorithm``, ``words_per_report``, ``thresholds``
    (integers compared with ``word >> 11``), ``epsilon`` (a number, or ``"inf"``), for
    two-group designs ``latent`` (the respondent-type table), and optionally ``text`` and
    ``labels`` (one per true answer: :attr:`answers`).  ``key`` equals the design's
    :attr:`~deniable.designs.Design.key`.

    >>> from deniable.designs import Warner
    >>> spec = spec_of(Warner(0.75), text="Have you ever cheated?", labels=("no", "yes"))
    >>> spec.thresholds
    {'yes': [2251799813685248, 6755399441055744]}
    >>> QuestionSpec.from_json(spec.to_json()) == spec
    True
    """

    design: Design
    text: str | None = None
    labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        v.instance("design", self.design, Design, "a deniable design")
        spec_algorithm(self.design)  # refuses an unregistered design
        if self.text is not None and (not isinstance(self.text, str) or not self.text.strip()):
            raise ParameterTypeError(f"`text` must be a non-empty string, got {self.text!r}.")
        if self.labels is not None:
            labels = check_labels(self.labels, self.answers)
            object.__setattr__(self, "labels", labels)

    # ---- the implied fields

    @property
    def schema(self) -> str:
        """The schema identifier, ``deniable.question/1``."""
        return SPEC_SCHEMA

    @property
    def mechanism(self) -> str:
        """The design's registry name."""
        return self.design.name

    @property
    def parameters(self) -> dict[str, Any]:
        """The design's parameters with every number exact (``0.75`` -> ``"3/4"``)."""
        return {k: exact_value(x) for k, x in self.design.parameters().items()}

    @property
    def key(self) -> str:
        """The mechanism's identity: name and exact parameters (as tallies carry it)."""
        return self.design.key

    @property
    def truths(self) -> int:
        """Number of input values of the randomizer: true answers, or for a two-group
        design respondent types (:attr:`latent`)."""
        return self.design.n_truths

    @property
    def answers(self) -> int:
        """Number of true answers, what :attr:`labels` label: :attr:`truths`, or 2 for a
        two-group design (whose inputs are respondent types built from a 0/1 answer)."""
        return 2 if self.design.n_groups == 2 else self.design.n_truths

    @property
    def reports(self) -> int:
        """Number of report values."""
        return self.design.n_reports

    @property
    def algorithm(self) -> str:
        """The randomizer algorithm: ``bernoulli-count/1``, ``keep-or-forced/1`` or
        ``two-group/2`` (``docs/specs.md``)."""
        return spec_algorithm(self.design)[0]

    @property
    def words_per_report(self) -> int:
        """64-bit words one report consumes, whatever the answer (for ``two-group/2`` the
        group word and the answer word; one word fewer when the group is given)."""
        return spec_algorithm(self.design)[1]

    @property
    def thresholds(self) -> dict[str, Any]:
        """The integer thresholds of :attr:`algorithm` (``docs/specs.md``)."""
        return spec_algorithm(self.design)[2]

    @property
    def epsilon(self) -> float:
        """The design's exact epsilon (``math.inf`` when a report reveals the answer)."""
        return float(self.design.epsilon)

    @property
    def latent(self) -> LatentInput | None:
        """The respondent-type table of a two-group design (how the truth and the latent
        indicator give the randomizer's input); ``None`` for a one-group design."""
        if self.design.n_groups == 2:
            return latent_input(cast(TwoGroupDesign, self.design))
        return None

    # ---- JSON

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON values (strict JSON: an infinite epsilon is ``"inf"``)."""
        algorithm, words, thresholds = spec_algorithm(self.design)
        out: dict[str, Any] = {
            "schema": SPEC_SCHEMA,
            "mechanism": self.mechanism,
            "parameters": self.parameters,
            "key": self.key,
            "truths": self.truths,
            "reports": self.reports,
            "algorithm": algorithm,
            "words_per_report": words,
            "thresholds": json_ints(thresholds),
            "epsilon": "inf" if math.isinf(self.epsilon) else self.epsilon,
        }
        latent = self.latent
        if latent is not None:
            out["latent"] = latent.to_dict()
        if self.text is not None:
            out["text"] = self.text
        if self.labels is not None:
            out["labels"] = list(self.labels)
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """:meth:`to_dict` as JSON text (no NaN or Infinity)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QuestionSpec:
        """Read a spec, checking every field against what its parameters give.

        Raises :class:`~deniable.exceptions.ParameterError` for an unknown or newer
        ``schema``, an unknown ``mechanism`` or parameters out of range (the design's own
        message); :class:`~deniable.exceptions.DataError` for a missing or unknown field or
        an implied field (``key``, ``thresholds``, ...) that does not match the parameters;
        :class:`~deniable.exceptions.PrivacyError` for an ``epsilon`` below the true one
        (a finite one for an infinite-epsilon design included).  Parameters may be written
        in any form :func:`~deniable.designs.make_design` reads (``"3/4"``, ``"0.75"``,
        ``0.75``); the spec read holds them exactly.
        """
        name = check_fields(data)
        labels = data.get("labels")
        spec = cls(
            make_design(name, data["parameters"]),
            text=data.get("text"),
            labels=None if labels is None else tuple(labels),
        )
        check_implied(spec.to_dict(), spec.epsilon, data)
        return spec

    @classmethod
    def from_json(cls, text: str | bytes) -> QuestionSpec:
        """Read a spec from JSON text (strict: no NaN, no Infinity, no duplicate keys)."""
        return cls.from_dict(loads(text))


def spec_of(
    design: Design, *, text: str | None = None, labels: Sequence[str] | None = None
) -> QuestionSpec:
    """The question spec of a registered design, with optional wording and answer labels.

    >>> from deniable.designs import Mangat
    >>> spec_of(Mangat(0.75)).to_dict()["epsilon"]
    'inf'
    """
    return QuestionSpec(design, text=text, labels=None if labels is None else tuple(labels))


def design_from_spec(spec: QuestionSpec | Mapping[str, Any] | str | bytes) -> Design:
    """The design a spec describes: a :class:`QuestionSpec`, its dict, or its JSON text
    (checked as :meth:`QuestionSpec.from_dict` checks it).

    >>> from deniable.designs import Warner
    >>> design_from_spec(spec_of(Warner(0.75)).to_dict())
    Warner(p=0.75)
    """
    if isinstance(spec, QuestionSpec):
        return spec.design
    if isinstance(spec, str | bytes):
        return QuestionSpec.from_json(spec).design
    return QuestionSpec.from_dict(spec).design
