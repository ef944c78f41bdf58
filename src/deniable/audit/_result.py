"""The outcome of an empirical privacy audit, :class:`AuditResult` (see :mod:`deniable.audit`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from deniable.exceptions import PrivacyError
from deniable.results._table import Table

__all__ = ["AuditResult"]


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


@dataclass(frozen=True)
class AuditResult:
    """The outcome of an audit: the confident lower bound on epsilon beside the claim.

    ``lower_bound`` is ``max(0, max over events and directions of ln((p_lo - delta) /
    p_hi))`` with ``delta = claimed_delta`` (0 for a pure claim); with probability at least
    ``level`` the mechanism's true epsilon at that delta is at least this.
    ``empirical_epsilon`` is the plain plug-in ``max |ln(c0 / c1)|`` (no confidence; ``inf``
    when an event was seen under one input only).  ``passed`` is ``lower_bound <=
    claimed_epsilon``; :meth:`raise_if_failed` raises :class:`PrivacyError` otherwise.
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
        """Plain-JSON summary (infinities as strings)."""
        return {
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
