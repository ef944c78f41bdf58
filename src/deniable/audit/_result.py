"""The outcome of an empirical privacy audit, :class:`AuditResult` (see :mod:`deniable.audit`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deniable.common import format_epsilon, json_number, to_jsonable
from deniable.exceptions import PrivacyError
from deniable.results import Result, Table

__all__ = ["AuditResult"]

_num = json_number


@dataclass(frozen=True)
class AuditResult(Result):
    """The outcome of an audit: the confident lower bound on epsilon beside the claim.

    ``lower_bound`` is ``max(0, max over events and directions of ln((p_lo - delta) /
    p_hi))`` with ``delta = claimed_delta`` (0 for a pure claim); with probability at least
    ``level`` the mechanism's true epsilon at that delta is at least this.
    ``empirical_epsilon`` is the plain plug-in ``max |ln(c0 / c1)|`` (no confidence; ``inf``
    when an event was seen under one input only).  ``passed`` is ``lower_bound <=
    claimed_epsilon``; :meth:`raise_if_failed` raises :class:`PrivacyError` otherwise.

    :func:`~deniable.audit.audit_design` and :func:`~deniable.audit.audit_unary` also
    record what was audited: ``mechanism`` (a name), its ``parameters``, its
    ``true_epsilon`` and ``label`` (all three in words).
    """

    claimed_epsilon: float
    lower_bound: float
    empirical_epsilon: float
    level: float
    trials: int
    seed: int | None
    worst_event: str
    worst_pair: tuple[str, str]
    events: Table = field(repr=False)
    claimed_delta: float = 0.0
    mechanism: str | None = None
    parameters: Mapping[str, Any] | None = field(default=None, repr=False)
    true_epsilon: float | None = None
    label: str | None = field(default=None, repr=False)

    @property
    def passed(self) -> bool:
        """True when the data do not refute the claimed epsilon."""
        return self.lower_bound <= self.claimed_epsilon

    def raise_if_failed(self) -> AuditResult:
        """Raise :class:`PrivacyError` if the audit failed; otherwise return ``self``."""
        if not self.passed:
            a, b = self.worst_pair
            at = f" at delta = {self.claimed_delta:g}" if self.claimed_delta else ""
            raise PrivacyError(
                f"audit FAILED: epsilon >= {self.lower_bound:.4f}{at} with confidence "
                f"{self.level:g} (event {self.worst_event}, {a} vs {b}, {self.trials} trials "
                f"per input, seed {self.seed}), but the claimed epsilon is "
                f"{_num(self.claimed_epsilon)}."
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON summary (infinities as strings); first what was audited, when
        recorded (``mechanism``, ``parameters``, ``true_epsilon``)."""
        out: dict[str, Any] = {}
        if self.mechanism is not None:
            out.update(mechanism=self.mechanism, parameters=self.parameters,
                       true_epsilon=self.true_epsilon)  # fmt: skip
        out.update(
            {
                "claimed_epsilon": _num(self.claimed_epsilon),
                "claimed_delta": self.claimed_delta,
                "lower_bound": _num(self.lower_bound),
                "empirical_epsilon": _num(self.empirical_epsilon),
                "passed": self.passed,
                "level": self.level,
                "trials": self.trials,
                "seed": self.seed,
                "worst_event": self.worst_event,
                "worst_pair": list(self.worst_pair),
                "events": self.events.to_json(),
            }
        )
        result: dict[str, Any] = to_jsonable(out)
        return result

    @property
    def verdict(self) -> str:
        """PASSED or FAILED, in a sentence."""
        claim = "∞" if math.isinf(self.claimed_epsilon) else f"{self.claimed_epsilon:.6g}"
        bound = f"{self.lower_bound:.4f}"
        if self.passed:
            return f"PASSED: the data do not refute ε = {claim} (lower bound {bound} <= {claim})."
        return (
            f"FAILED: ε >= {bound} with confidence {self.level:g}, above the claimed "
            f"ε = {claim}: the mechanism is NOT {claim}-DP."
        )

    def table(self) -> Table:
        """What was audited, the claim, the confident lower bound, the plug-in epsilon, the
        worst event, and the verdict."""
        a, b = self.worst_pair
        rows = [
            *([("mechanism", self.label or self.mechanism)] if self.mechanism else []),
            ("claimed ε", format_epsilon(self.claimed_epsilon)),
            (f"lower bound ({self.level:g} confidence)", f"{self.lower_bound:.4f}"),
            ("plug-in ε", format_epsilon(self.empirical_epsilon)),
            ("worst event", f"{self.worst_event} ({a} vs {b})"),
            ("trials per input, seed", f"{self.trials}, {self.seed}"),
        ]
        return Table.pairs(
            rows,
            title="Empirical privacy audit (Clopper-Pearson, Bonferroni)",
            notes=(self.verdict,),
        )

    def __str__(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        a, b = self.worst_pair
        at = f" at delta {self.claimed_delta:g}" if self.claimed_delta else ""
        return (
            f"audit {verdict}: claimed epsilon {_num(float(f'{self.claimed_epsilon:.6g}'))}"
            f"{at}, "
            f"{self.level:g}-confidence lower bound {self.lower_bound:.4f} "
            f"(plug-in {_num(round(self.empirical_epsilon, 4))}; worst event {self.worst_event}, "
            f"{a} vs {b}; {self.trials} trials per input, seed {self.seed})"
        )
