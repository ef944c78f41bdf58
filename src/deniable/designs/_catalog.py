"""The catalogue of designs (:func:`design_catalog`, what ``deniable designs`` prints): each
registered design's parameters, an example setting, its channel there and its epsilon."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.common import format_epsilon, format_number, to_jsonable
from deniable.designs._base import Design
from deniable.designs._registry import DESIGNS, TWO_GROUP_DESIGNS, design_parameters, make_design
from deniable.results import Result, Table

__all__ = ["EXAMPLES", "DesignCatalog", "design_catalog"]

#: An example parameterisation per design (defaults fill the rest).
EXAMPLES: dict[str, dict[str, str]] = {
    "warner": {"p": "0.75"},
    "mirrored": {"p": "0.75"},
    "two-coin": {},
    "biased-coin": {"q": "0.25"},
    "binary": {"epsilon": "1"},
    "forced": {"forced_yes": "0.25", "forced_no": "0.25"},
    "unrelated": {"p": "0.7", "q": "0.5"},
    "kuk": {"theta1": "0.7", "theta2": "0.3"},
    "mangat": {"p": "0.7"},
    "crosswise": {"p": "0.25"},
    "triangular": {"p": "0.25"},
    "custom": {"p_yes_given_1": "0.8", "p_yes_given_0": "0.3"},
    "categorical": {"k": "4", "p_truthful": "0.5"},
    "unrelated-unknown": {"p1": "0.7", "p2": "0.3"},
    "cdm": {"forced_yes1": "0.2", "forced_yes2": "0.6"},
    "cdm-symmetric": {
        "forced_yes1": "0.1",
        "forced_no1": "0.1",
        "forced_yes2": "0.3",
        "forced_no2": "0.1",
    },
    "sld": {"p1": "2/12", "p2": "10/12"},
}


def _example(name: str) -> Design | None:
    try:
        return make_design(name, EXAMPLES.get(name, {}))
    except (ValueError, TypeError):  # a design registered without an example here
        return None


def _parameter_lines(name: str) -> str:
    """One parameter a line: ``p=0.75`` (example value) or ``draws=1*`` (default)."""
    example = EXAMPLES.get(name, {})
    parts = []
    for pname, p in design_parameters(name).items():
        if pname in example:
            parts.append(f"{pname}={example[pname]}")
        elif p.default is inspect.Parameter.empty:
            parts.append(pname)
        else:
            parts.append(f"{pname}={p.default}*")
    return "\n".join(parts) or "(none)"


def _entry(name: str, cls: type[Design]) -> dict[str, Any]:
    params = design_parameters(name)
    row: dict[str, Any] = {
        "name": name,
        "summary": (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " "),
        "parameters": {
            k: (None if p.default is inspect.Parameter.empty else p.default)
            for k, p in params.items()
        },
        "required": [k for k, p in params.items() if p.default is inspect.Parameter.empty],
        "example": EXAMPLES.get(name, {}),
    }
    d = _example(name)
    if d is not None:
        described = d.describe()
        row["example_parameters"] = described.pop("parameters")
        described.pop("design")
        row.update(described)
    return row


@dataclass(frozen=True)
class DesignCatalog(Result):
    """Every registered design at its example setting (:func:`design_catalog`).

    ``designs`` and ``two_group_designs`` hold one dict per design: ``name``, ``summary``,
    ``parameters`` (each parameter's default, ``None`` where it has none), ``required``,
    ``example`` (the example setting as written), ``example_parameters`` and the fields of
    :meth:`~deniable.designs.Design.describe` (channel and epsilon) there; two-group designs
    add ``groups`` (2) and ``estimates`` (the parameters they estimate).
    """

    designs: tuple[dict[str, Any], ...]
    two_group_designs: tuple[dict[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = to_jsonable(
            {"designs": self.designs, "two_group_designs": self.two_group_designs}
        )
        return result

    def table(self) -> Table:
        """One row per design: example parameters, ``P(yes|1)``, ``P(yes|0)`` and ε; then
        the two-group designs with what they estimate."""
        rows = []
        for row in self.designs:
            p1 = p0 = "-"
            d = _example(row["name"])
            if "p_yes_given_1" in row:
                p1, p0 = format_number(row["p_yes_given_1"]), format_number(row["p_yes_given_0"])
            elif d is not None and "p_report_true" in row:  # P(true category), P(one other)
                ch = np.asarray(d.channel)
                p1, p0 = f"{format_number(float(ch[0, 0]))}†", f"{format_number(float(ch[1, 0]))}†"
            eps = "-" if d is None else format_epsilon(d.epsilon)
            rows.append((row["name"], _parameter_lines(row["name"]), p1, p0, eps))
        two = []
        for row in self.two_group_designs:
            d = _example(row["name"])
            eps = "-" if d is None else format_epsilon(d.epsilon)
            two.append((row["name"], _parameter_lines(row["name"]),
                        "\n".join(row.get("estimates", [])), eps))  # fmt: skip
        two_group = Table(
            ("design", "parameters (example)", "estimates", "ε"),
            tuple(two),
            title="Two-group designs (respondents split at random into groups 1 and 2)",
            notes=(
                "Estimate with --yes Y1,Y2 --n N1,N2.  ε counts every kind of respondent (a "
                "cheater, a lying carrier, the answer to the unrelated question): all are ∞.",
            ),
            align="lllr",
        )
        return Table(
            ("design", "parameters (example)", "P(yes|1)", "P(yes|0)", "ε"),
            tuple(rows),
            title="Designs: channel and ε at the example setting",
            notes=(
                "* a default value.  † categorical: P(report = the true category), P(report = "
                "one given other category).",
                "∞: some report can only come from one answer (no finite guarantee).  kuk: per "
                "card drawn; with d draws ε is d times larger.",
            ),
            sections=(two_group,),
            align="llrrr",
        )


def design_catalog() -> DesignCatalog:
    """Every registered design (:data:`DESIGNS`, :data:`TWO_GROUP_DESIGNS`) at its example
    setting: parameters, channel and epsilon.

    >>> cat = design_catalog()
    >>> warner = cat.designs[0]
    >>> warner["name"], warner["example"], warner["p_yes_given_1"], round(warner["epsilon"], 4)
    ('warner', {'p': '0.75'}, 0.75, 1.0986)
    """
    designs = tuple(_entry(name, cls) for name, cls in DESIGNS.items())
    two = []
    for name, cls in TWO_GROUP_DESIGNS.items():
        row = _entry(name, cls)
        row["groups"] = 2
        row["estimates"] = list(getattr(cls, "estimated", ()))
        two.append(row)
    return DesignCatalog(designs, tuple(two))
