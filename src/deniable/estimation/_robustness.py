"""How many fake respondents it takes to move an estimate: robustness to manipulation.

Every estimate of a randomized-response survey is a mean of de-biased reports.  With ``n``
reports and the moment estimator ``pi_hat = (1/n) sum_i g(r_i)``, where ``g(r)`` is the
de-biased value of one report ``r`` (for a binary design ``g(yes) = (1 - P0) / (P1 - P0)``,
``g(no) = -P0 / (P1 - P0)``), ``m`` fake reports ``r'_1..r'_m`` added to the tally give

    pi_hat' = (n pi_hat + sum_l g(r'_l)) / (n + m),
    pi_hat' - pi_hat = sum_l (g(r'_l) - pi_hat) / (n + m).

Two kinds of fakes (Cheu, Smith & Ullman 2021; Cao, Jia & Gong 2021):

* **output manipulation**: the fakes send reports of their choosing (a script posting
  "yes").  The largest upward shift has every fake send the report of largest ``g``:
  ``m (G+ - pi_hat) / (n + m)`` with ``G+ = max_r g(r)``; downward, ``G- = min_r g(r)``.
  For a binary design with ``P1 > P0`` and ``lambda = yes / n`` this is
  ``m (1 - lambda) / ((n + m)(P1 - P0))`` up and ``m lambda / ((n + m)(P1 - P0))`` down:
  each fake report is amplified by ``1 / (P1 - P0)``.
* **input manipulation**: the fakes choose their *answers* and randomize them honestly (the
  respondent's page run by a liar).  The estimator is unbiased, ``E[g(R) | answer a] =
  e_a``, so the expected shift is ``m (e_a - pi_hat) / (n + m)``: ``m (1 - pi_hat_j) /
  (n + m)`` up for answer ``j`` and ``m pi_hat_j / (n + m)`` down, exactly as in a survey
  without randomization.  (The shift itself is random; its expectation is stated.)

So a shift of ``D m / (n + m)`` (``D`` the distance above) reaches ``s`` once the fakes'
share of all reports ``m / (n + m)`` is ``s / D``: the smallest number of fakes is
``m = ceil(s n / (D - s))``, and when ``D <= s`` no number of fakes moves the estimate by
``s`` (it only tends to ``pi_hat + D``).  For a binary design the output manipulator's
advantage is ``D_output / D_input = (1 - lambda) / ((P1 - P0)(1 - pi_hat)) = 1 + (1 - P1) /
((P1 - P0)(1 - pi_hat))``, near ``1 / (P1 - P0)`` for a symmetric design: the stronger the
privacy, the cheaper the attack.  That is the price of deniability, and the reason to
admit respondents by invitation.

For k-category forced response (``Categorical``, ``t = p_truthful``, forced distribution
``f``): ``g_j(r) = (1[r = j] - (1 - t) f_j) / t``, so ``G+_j = (1 - (1 - t) f_j) / t``
(every fake reports ``j``) and ``G-_j = -(1 - t) f_j / t`` (every fake reports another
category); with uniform forcing (k-ary randomized response, ``p`` and ``q``) the upward
output shift is ``m (1 - lambda_j) / ((n + m)(p - q))``, the gain Cao, Jia & Gong derive for
kRR's maximal-gain attack.  For Kuk's design with ``k`` draws, ``g(r) = (r / k - theta2) /
(theta1 - theta2)`` (``r`` red cards).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.designs import Design, Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.results import Result, Table

__all__ = ["DIRECTIONS", "MANIPULATIONS", "ManipulationRobustness", "manipulation_robustness"]

#: The directions an estimate is pushed in.
DIRECTIONS = ("up", "down")
#: What the fakes control: their answers (``input``) or their reports (``output``).
MANIPULATIONS = ("input", "output")


def _fakes_needed(reach: float, shift: float, n: int) -> int | None:
    """The smallest ``m >= 0`` with ``m reach / (n + m) >= shift``, i.e. ``m (reach -
    shift) >= shift n``; ``None`` when ``reach <= shift`` (no number of fakes suffices)."""
    gap = reach - shift
    if not gap > 0:
        return None

    def enough(m: int) -> bool:
        return m * gap >= shift * n

    m = max(0, math.ceil(shift * n / gap))
    # the float quotient may be off by one either way: settle on the predicate itself
    for _ in range(64):
        if enough(m):
            break
        m += 1
    for _ in range(64):
        if m == 0 or not enough(m - 1):
            break
        m -= 1
    return m


@dataclass(frozen=True)
class ManipulationRobustness(Result):
    """How many fake respondents would move each estimate by ``shift`` (see the module
    docstring for the formulas).

    ``labels`` name the estimated shares (a binary design: one, the prevalence of the
    answer ``1``; a categorical design: one per category), ``estimates`` are the unbiased
    moment estimates from ``n`` honest reports, and ``reach[direction][manipulation]``
    the distance ``D`` per share: ``m`` fakes move a share by ``D m / (n + m)`` (output
    manipulation: at most; input manipulation: in expectation).  :meth:`fakes` gives the
    smallest number of fakes that moves a share by ``shift``.
    """

    design: str
    key: str
    n: int
    shift: float
    labels: tuple[str, ...]
    estimates: npt.NDArray[np.float64] = field(repr=False)
    reach: dict[str, dict[str, npt.NDArray[np.float64]]] = field(repr=False)

    def _index(self, category: int | None) -> int:
        if category is None:
            if len(self.labels) != 1:
                raise ParameterError(
                    f"`category` must be given (an integer in [0, {len(self.labels) - 1}]) for "
                    f"a design with {len(self.labels)} estimated shares, got None."
                )
            return 0
        return v.integer("category", category, minimum=0, maximum=len(self.labels) - 1)

    def fakes(
        self, direction: str = "up", manipulation: str = "output", category: int | None = None
    ) -> int | None:
        """The fewest fake respondents (one report each) that move the estimate of
        ``category`` (``None`` for a binary design's prevalence) by ``shift`` in
        ``direction``, under ``manipulation``; ``None`` if no number suffices."""
        j = self._index(category)
        d = v.choice("direction", direction, DIRECTIONS)
        how = v.choice("manipulation", manipulation, MANIPULATIONS)
        return _fakes_needed(float(self.reach[d][how][j]), self.shift, self.n)

    def share(
        self, direction: str = "up", manipulation: str = "output", category: int | None = None
    ) -> float | None:
        """The fakes' share of all reports, ``m / (n + m)``, that moves the estimate by
        ``shift``: ``shift / D`` (``None`` if ``D <= shift``)."""
        j = self._index(category)
        d = v.choice("direction", direction, DIRECTIONS)
        how = v.choice("manipulation", manipulation, MANIPULATIONS)
        reach = float(self.reach[d][how][j])
        return self.shift / reach if reach > self.shift else None

    def shift_by(
        self,
        fakes: int,
        direction: str = "up",
        manipulation: str = "output",
        category: int | None = None,
    ) -> float:
        """How far ``fakes`` fake respondents move the estimate (``D m / (n + m)``, at most
        for output manipulation, in expectation for input manipulation), as a positive
        number in ``direction``."""
        m = v.integer("fakes", fakes, minimum=0)
        j = self._index(category)
        d = v.choice("direction", direction, DIRECTIONS)
        how = v.choice("manipulation", manipulation, MANIPULATIONS)
        return float(self.reach[d][how][j]) * m / (self.n + m)

    def _rows(self) -> list[tuple[Any, ...]]:
        rows = []
        for j, label in enumerate(self.labels):
            cells: list[Any] = [label, float(self.estimates[j])]
            for d in DIRECTIONS:
                for how in MANIPULATIONS:
                    m = _fakes_needed(float(self.reach[d][how][j]), self.shift, self.n)
                    cells.append("impossible" if m is None else m)
            rows.append(tuple(cells))
        return rows

    def table(self) -> Table:
        s = f"{self.shift:g}"
        return Table(
            ("share", "estimate", f"+{s} input", f"+{s} output", f"-{s} input", f"-{s} output"),
            tuple(self._rows()),
            title=f"Fake respondents needed to move the estimate by {s} ({self.design}, "
            f"n = {self.n} reports)",
            notes=(
                "input: the fakes choose their answers and randomize them (the expected "
                "shift); output: the fakes choose their reports (the largest shift)",
                "m fakes move a share by D m / (n + m); 'impossible': no number of fakes "
                "moves it that far (Cheu, Smith & Ullman 2021; Cao, Jia & Gong 2021)",
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        shares = []
        for j, label in enumerate(self.labels):
            row: dict[str, Any] = {"label": label, "estimate": float(self.estimates[j])}
            for d in DIRECTIONS:
                row[d] = {
                    how: {
                        "fakes": _fakes_needed(float(self.reach[d][how][j]), self.shift, self.n),
                        "share": self.share(d, how, j),
                        "reach": float(self.reach[d][how][j]),
                    }
                    for how in MANIPULATIONS
                }
            shares.append(row)
        out: dict[str, Any] = to_jsonable(
            {
                "design": self.design,
                "key": self.key,
                "n": self.n,
                "shift": self.shift,
                "shares": shares,
            }
        )
        return out


def _binary_values(design: Design, counts: npt.NDArray[np.int64]) -> tuple[float, float, float]:
    """``(pi_hat, min g, max g)`` of a design with a binary answer whose report ``r`` of
    ``R`` values is a count of "yes" out of ``R - 1`` (one report for a binary design, the
    red cards of Kuk's design): ``g(r) = (r / (R - 1) - P0) / (P1 - P0)``."""
    p1 = float(design.p_yes_given_1)  # type: ignore[attr-defined]
    p0 = float(design.p_yes_given_0)  # type: ignore[attr-defined]
    d = p1 - p0
    if d == 0:
        raise ParameterError(
            f"`design` must be informative (P(yes | 1) != P(yes | 0)) for an estimate, got "
            f"{design!r}."
        )
    top = counts.size - 1
    n = int(counts.sum())
    share = float(np.dot(np.arange(counts.size, dtype=np.float64), counts)) / (top * n)
    estimate = (share - p0) / d
    ends = ((0.0 - p0) / d, (1.0 - p0) / d)
    return estimate, min(ends), max(ends)


def manipulation_robustness(
    design: Design,
    tally: Tally,
    *,
    shift: float = 0.05,
    labels: Sequence[str] | None = None,
) -> ManipulationRobustness:
    """How many fake respondents would move the estimate from ``tally`` by ``shift``.

    Parameters
    ----------
    design : Design
        A one-group design with a binary answer (every binary design, Kuk's) or
        ``Categorical``.
    tally : Tally
        The honest reports (at least one).
    shift : float
        The move to resist, on the scale of the estimated shares, in (0, 1].
    labels : sequence of str, optional
        Names of the estimated shares (default: ``"prevalence"`` for a binary answer,
        ``"0"``, ``"1"``, ... for categories).

    Returns
    -------
    ManipulationRobustness
        Per share and direction, the fakes needed under input manipulation (the fakes choose
        answers; expected shift ``m (e_a - pi_hat) / (n + m)``) and output manipulation (the
        fakes choose reports; largest shift ``m (G - pi_hat) / (n + m)``, ``G`` the largest
        or smallest de-biased value of one report); see the module docstring.

    References
    ----------
    Cheu, Smith & Ullman (2021), "Manipulation attacks in local differential privacy",
    IEEE S&P.  Cao, Jia & Gong (2021), "Data poisoning attacks to local differential
    privacy protocols", USENIX Security.

    Examples
    --------
    Warner at ``p = 3/4`` (``P1 - P0 = 1/2``), 1000 reports of which 600 "yes" (estimate
    0.7): 67 fake "yes" reports move the estimate up by 0.05, where fakes who answer "yes"
    and randomize honestly need 200.

    >>> from deniable.designs import Warner
    >>> d = Warner(0.75)
    >>> r = manipulation_robustness(d, d.tally_counts([400, 600]), shift=0.05)
    >>> r.fakes("up", "output"), r.fakes("up", "input")
    (67, 200)
    >>> round(r.shift_by(67, "up", "output"), 4)
    0.0502
    """
    if not isinstance(design, Design):
        raise ParameterTypeError(f"`design` must be a Design, got {type(design).__name__}.")
    if not isinstance(tally, Tally):
        raise ParameterTypeError(f"`tally` must be a Tally, got {type(tally).__name__}.")
    s = v.real("shift", shift)
    if not 0 < s <= 1:
        raise ParameterError(f"`shift` must be in (0, 1] (a move of an estimated share), got {s}.")
    if design.n_groups != 1:
        raise ParameterError(
            f"`design` must be a one-group design, got the two-group design {design.name!r}."
        )
    bound = design.bind(tally)
    n = int(bound.n)
    if n == 0:
        raise DataError("`tally` must hold at least one report for an estimate, got 0.")
    counts = np.asarray(bound.counts, dtype=np.int64)
    if design.n_truths > 2 and design.n_reports == design.n_truths:
        # a k-ary design: the count of reports j is sufficient for the share of j, read
        # with P(j | j) and P(j | not j) (Design.binary_count), whatever the design
        a, b = np.array(
            [design.binary_count(category=j) for j in range(design.n_truths)], dtype=np.float64
        ).T
        gap = a - b
        estimates = (counts / n - b) / gap
        high = (1 - b) / gap
        low = -b / gap
        names = [str(j) for j in range(design.n_truths)]
    elif design.n_truths == 2 and hasattr(design, "p_yes_given_1"):
        value, g_low, g_high = _binary_values(design, counts)
        estimates = np.array([value])
        high, low = np.array([g_high]), np.array([g_low])
        names = ["prevalence"]
    else:
        raise ParameterError(
            f"`design` must have a binary answer or be 'categorical' for a robustness "
            f"statement, got {design.name!r}."
        )
    if labels is not None:
        names = [str(x) for x in labels]
        if len(names) != estimates.size:
            raise ParameterError(
                f"`labels` must have {estimates.size} entries (one per estimated share), got "
                f"{len(names)}."
            )
    reach = {
        "up": {"input": 1.0 - estimates, "output": high - estimates},
        "down": {"input": estimates.copy(), "output": estimates - low},
    }
    for parts in reach.values():
        for arr in parts.values():
            arr.setflags(write=False)
    estimates.setflags(write=False)
    return ManipulationRobustness(design.name, design.key, n, s, tuple(names), estimates, reach)
