"""The adaptive choice: the frequency oracle with the smallest exact variance for ``k``
values, ``epsilon`` and ``n`` reports, with the reason."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deniable.common import validation as v
from deniable.designs import MAX_COUNT
from deniable.exceptions import DeniableError, ParameterError
from deniable.oracles._base import check_epsilon
from deniable.oracles._registry import FREQUENCY_ORACLES
from deniable.oracles._variance import support_probabilities
from deniable.results import Result, Table

__all__ = ["CRITERION", "OracleChoice", "choose_oracle"]

#: What :func:`choose_oracle` minimizes.
CRITERION = (
    "the exact variance of a category's estimate at the uniform distribution (1/k each; k "
    "times it is the variance summed over the categories, the same for every distribution)"
)

_COLUMNS = (
    "oracle", "epsilon", "variance", "SE", "vs best", "report bits", "words", "decoding",
)  # fmt: skip


#: Relative difference of variances treated as a tie (float rounding of equal formulas).
_TIE = 1e-9


def _bits(n: int) -> int:
    return max(1, (n - 1).bit_length())


def _linear_bits(oracle: Any) -> int:
    """Bits of a LinearOLH report: ``l`` rows of ``L`` bits and the ``l``-bit bucket."""
    return int((oracle.value_bits + 1) * oracle.bucket_bits)


#: (registry name, label, report bits, decoding cost) of every oracle of
#: :data:`~deniable.oracles.FREQUENCY_ORACLES`, in the order ties are broken: the cheaper
#: report and decoding first (OLH-linear before OLH: the same variance at the same g,
#: decoded in O(n g + k log k) rather than O(n k)).
_CANDIDATES: tuple[tuple[str, str, Callable[[Any], int], str], ...] = (
    ("grr", "GRR", lambda m: _bits(m.k), "O(n + k)"),
    ("hadamard", "HR", lambda m: _bits(m.n_reports), "O(n + k log k)"),
    ("olh-linear", "OLH-linear", lambda m: _linear_bits(m), "O(n g + k log k)"),
    ("olh", "OLH", lambda m: 128 + _bits(m.g), "O(n k)"),
    ("blh", "BLH", lambda m: 129, "O(n k)"),
    ("oue", "OUE", lambda m: m.k, "O(n k / 8)"),
    ("sue", "SUE", lambda m: m.k, "O(n k / 8)"),
    ("subset", "SS", lambda m: m.k, "O(n k / 8)"),
)


@dataclass(frozen=True)
class OracleChoice(Result):
    """The result of :func:`choose_oracle`: the chosen ``oracle``, the ``reason`` (printed
    by :meth:`table` and ``str``), and one row per candidate in :attr:`candidates`."""

    epsilon: float
    k: int
    n: int
    oracle: Any
    reason: str
    candidates: Table = field(repr=False)

    def table(self) -> Table:
        """The candidates (exact epsilon, variance per category and SE at ``n``, relative
        variance, report size, words per report, decoding cost) with the reason below."""
        c = self.candidates
        return Table(c.columns, c.rows, title=c.title, notes=(*c.notes, self.reason))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the request, the chosen oracle's key, the reason and the rows."""
        return {
            "epsilon": self.epsilon,
            "k": self.k,
            "n": self.n,
            "oracle": self.oracle.key,
            "criterion": CRITERION,
            "reason": self.reason,
            "candidates": self.candidates.to_json(),
        }


def _words(oracle: Any) -> int:
    """64-bit words per report (the categorical design: a keep word and a category word)."""
    return int(getattr(oracle, "words_per_report", 2))


def _label(name: str, oracle: Any) -> str:
    if name in ("OLH", "OLH-linear"):
        return f"{name} (g = {oracle.g})"
    if name == "SS":
        return f"SS (d = {oracle.d})"
    return name


def choose_oracle(epsilon: float, k: int, n: int) -> OracleChoice:
    """The frequency oracle with the smallest exact variance for ``k`` values at
    ``epsilon`` from ``n`` reports.

    Every oracle of :data:`~deniable.oracles.FREQUENCY_ORACLES` (GRR, Hadamard response,
    OLH with a linear hash, OLH, BLH, OUE, SUE, subset selection) is built with its
    ``from_epsilon`` and ranked by :data:`CRITERION`; the variance scales as ``1 / n`` for
    all of them, so ``n`` sets the printed standard errors, not the order.  Ties go to the
    cheaper report and decoding (OLH with a linear hash before OLH at the same ``g``).

    >>> choice = choose_oracle(1.0, k=1024, n=10**6)
    >>> choice.oracle.name, choice.oracle.d
    ('subset', 275)
    >>> print(choice.reason)  # doctest: +ELLIPSIS
    SS (d = 275) has the smallest exact variance ... OUE is next, its variance 0.26% larger...
    >>> choose_oracle(4.0, k=4, n=1000).oracle.name       # few values, high epsilon: GRR
    'categorical'
    """
    eps = check_epsilon(epsilon)
    kk = v.integer("k", k, minimum=2, maximum=1 << 24)
    size = v.integer("n", n, minimum=1, maximum=MAX_COUNT)
    rows: list[tuple[Any, ...]] = []
    built: list[tuple[str, Any, float]] = []
    skipped: list[str] = []
    for registered, name, report_bits, decoding in _CANDIDATES:
        try:
            oracle = FREQUENCY_ORACLES[registered].from_epsilon(eps, kk)
        except DeniableError as exc:  # k beyond the oracle's range, epsilon beyond its grid
            skipped.append(f"{name}: {exc}")
            continue
        p, q = support_probabilities(oracle)
        var = (q * (1 - q) + (p * (1 - p) - q * (1 - q)) / kk) / (size * (p - q) ** 2)
        built.append((_label(name, oracle), oracle, var))
        rows.append((_label(name, oracle), oracle.epsilon, var, math.sqrt(var),
                     report_bits(oracle), _words(oracle), decoding))  # fmt: skip
    if not built:
        raise ParameterError(
            f"no frequency oracle takes k = {kk} at epsilon = {eps:g} (`epsilon` or `k` out of "
            "every candidate's range): " + "; ".join(skipped)
        )
    least = min(t[2] for t in built)
    # the first (cheapest) of the candidates within float rounding of the least variance
    best_label, best, best_var = next(t for t in built if t[2] <= least * (1 + _TIE))
    table_rows = tuple(
        (*row[:4], row[2] / best_var, *row[4:]) for row in sorted(rows, key=lambda r: r[2])
    )
    runner = sorted((t for t in built if t[1] is not best), key=lambda t: t[2])
    behind = ""
    if runner:
        label, _, var = runner[0]
        gap = var / best_var - 1
        behind = (
            f"; {label} is next, its variance {gap:.2%} larger" if gap > _TIE else
            f"; {label} ties it (the cheaper report and decoding win)"
        )  # fmt: skip
    reason = (
        f"{best_label} has the smallest exact variance for k = {kk}, epsilon = {eps:g}: "
        f"{best_var:.4g} per category at n = {size} (SE {math.sqrt(best_var):.4g}){behind}. "
        f"Ranked by {CRITERION}."
    )
    table = Table(
        _COLUMNS, table_rows,
        title=f"frequency oracles for k = {kk}, epsilon = {eps:g}, n = {size}",
        notes=tuple(f"not a candidate: {s}" for s in skipped),
    )  # fmt: skip
    return OracleChoice(eps, kk, size, best, reason, table)
