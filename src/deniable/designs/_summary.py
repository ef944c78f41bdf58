"""An estimate with the design and the data it came from: :class:`DesignEstimate`, what
``deniable estimate`` and ``deniable analyze`` print."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from deniable.common import epsilon_note, format_parameters, format_probabilities, to_jsonable
from deniable.designs._base import Design
from deniable.designs._tally import Tally
from deniable.results import Result, Table

__all__ = ["DesignEstimate"]


@dataclass(frozen=True)
class DesignEstimate(Result):
    """An estimate beside the design and the data it came from.

    Attributes
    ----------
    design : the design.
    tally : the counts of the reports.
    estimate : what ``design.estimate(tally)`` returned (an :class:`~deniable.Estimate`, a
        :class:`~deniable.designs.FrequencyEstimate` or a
        :class:`~deniable.designs.TwoGroupEstimate`: anything with ``table(level)`` and
        ``to_dict(level)``).
    level : the level of the intervals.
    missing : reports (two-group designs: reports or groups) left out as missing, when the
        data came from a file; ``None`` otherwise.
    source : where the data came from, e.g. ``{"file": ..., "column": ...}``: the first row
        of the table and extra fields of :meth:`to_dict`.
    """

    design: Design
    tally: Tally
    estimate: Any
    level: float = 0.95
    missing: int | None = None
    source: Mapping[str, Any] = field(default_factory=dict)

    @property
    def _two_groups(self) -> bool:
        return self.design.n_groups == 2

    def to_dict(self) -> dict[str, Any]:
        """The design (:meth:`~deniable.designs.Design.describe`), the counts, the estimate's
        fields at :attr:`level`, then :attr:`source` and ``missing``."""
        out = self.design.describe()
        binary = not self._two_groups and self.design.n_truths == 2
        if binary:  # the counts first; other estimates carry their own
            out["n"] = self.tally.n
            if len(self.tally.counts) == 2:
                out["yes"] = self.tally.yes
            else:
                out["counts"] = self.tally.counts
        out.update(self.estimate.to_dict(self.level))
        if binary:
            out["n"] = self.tally.n
        out.update(self.source)
        if self.missing is not None:
            out["missing"] = self.missing
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The design and its ε, the counts, then the estimate's own table."""
        d = self.design
        rows: list[tuple[str, str]] = []
        if self.source:
            rows.append(
                (", ".join(k.replace("_", " ") for k in self.source),
                 ", ".join(str(x) for x in self.source.values()))
            )  # fmt: skip
        rows.append(("design", f"{d.name} ({format_parameters(d.parameters())})"))
        fields = d.describe()
        if "p_yes_given_1" in fields:
            per = " per card" if d.n_reports > 2 else ""
            shown = format_probabilities(fields["p_yes_given_1"], fields["p_yes_given_0"])
            rows.append((f"P(yes | 1), P(yes | 0){per}", ", ".join(shown)))
        rows.append(("ε", epsilon_note(d.epsilon)))
        counts = self.tally.counts.tolist()
        if self._two_groups:
            pass  # the estimate's table has each group's counts
        elif d.n_truths == 2:
            if len(counts) == 2:
                rows.append(("yes / n", f"{self.tally.yes} / {self.tally.n}"))
            else:
                rows.append(("counts / n", f"{','.join(map(str, counts))} / {self.tally.n}"))
        else:
            rows.append(("n", str(self.tally.n)))
        inner = self.estimate.table(self.level)
        if inner.header:
            head, sections = rows, (replace(inner, title=""), *inner.sections)
            notes: tuple[str, ...] = ()
        else:
            head, sections, notes = rows + list(inner.rows), inner.sections, inner.notes
        if self.missing is not None:
            label = "missing reports or groups (dropped)" if self._two_groups else (
                "missing reports (dropped)")  # fmt: skip
            at = max((i + 1 for i, (k, _) in enumerate(head) if k.endswith("/ n") or k == "n"),
                     default=len(head))  # fmt: skip
            head.insert(at, (label, str(self.missing)))
        title = "Two-group estimate" if self._two_groups else "Prevalence estimate"
        return Table.pairs(head, title=title, notes=notes, sections=sections)
