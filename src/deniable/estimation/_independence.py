"""Tests of independence of two randomized-response items that account for the
randomization (and for the survey design).

With the de-biased joint table ``p`` (``r x c``) and its covariance ``V``, independence is
``d = (r - 1)(c - 1)`` contrasts ``g_ab = p_ab - p_a. p_.b = 0`` (``a < r - 1``, ``b < c -
1``) with Jacobian ``G``:

* ``wald``: ``W = g^T (G V G^T)^{-1} g``.  Under simple random sampling ``W ~ chi2(d)``
  (the covariance includes the randomization's variance); under a design with ``f``
  degrees of freedom the adjusted Wald ``F = (f - d + 1) / (f d) W ~ F(d, f - d + 1)``
  (Thomas & Rao 1987; R's ``svychisq(statistic = "adjWald")``).
* ``rao-scott``: ``X2 = g^T (G V0 G^T)^{-1} g`` with ``V0`` the covariance under simple
  random sampling of ``n`` with the same randomization, divided by the mean generalized
  design effect ``delta_bar``, the mean eigenvalue of ``(G V0 G^T)^{-1} (G V G^T)``:
  ``X2 / delta_bar ~ chi2(d)`` (first order, Rao & Scott 1981, 1984); the second-order
  (Satterthwaite) version ``X2 / (delta_bar (1 + a^2)) ~ chi2(d / (1 + a^2))``, ``a`` the
  coefficient of variation of the eigenvalues, is given beside it.  Under simple random
  sampling every ``delta`` is 1 and the test is the Wald test.
* ``lr``: ``G2 = 2 n (l_sat - l_ind)``, the log-likelihoods (per respondent) of the EM fit
  of the saturated model and of the independence model (the product of each item's own
  MLE) on the joint reports (van den Hout & van der Heijden 2002, sec. 4); ``G2 ~ chi2(d)``
  under simple random sampling, ``G2 / delta_bar ~ chi2(d)`` under a design (the
  weighted shares give a pseudo-likelihood; Rao & Scott 1984, sec. 4).

Each reference distribution is asymptotic; with an estimate on the boundary of the
simplex the chi-square reference of the likelihood ratio is conservative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_number, to_jsonable
from deniable.common import validation as v
from deniable.estimation._association import pair_of
from deniable.estimation._joint_em import em_simplex, log_likelihood
from deniable.estimation._joint_results import JointEstimate
from deniable.exceptions import ParameterError
from deniable.results import Result, Table

__all__ = ["INDEPENDENCE_TESTS", "IndependenceTest", "independence_test"]

FloatArray = npt.NDArray[np.float64]

#: The tests of independence offered.
INDEPENDENCE_TESTS = ("wald", "rao-scott", "lr")


@dataclass(frozen=True)
class IndependenceTest(Result):
    """A test of independence of two items: ``statistic`` against ``reference`` (a
    distribution named as ``chi2(d)`` or ``F(d1, d2)``), its ``p_value``, the generalized
    design effects ``deltas`` (Rao-Scott) and remarks."""

    method: str
    items: tuple[str, ...]
    statistic: float
    reference: str
    p_value: float
    df: tuple[float, ...]
    n: int
    variance_method: str
    design: str
    deltas: tuple[float, ...] = ()
    second_order: tuple[float, float, float] | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: every field."""
        out = {
            "method": self.method, "items": list(self.items), "statistic": self.statistic,
            "reference": self.reference, "p_value": self.p_value, "df": list(self.df),
            "n": self.n, "variance_method": self.variance_method, "design": self.design,
            "deltas": list(self.deltas), "notes": list(self.notes),
        }  # fmt: skip
        if self.second_order is not None:
            stat, dof, p = self.second_order
            out["second_order"] = {"statistic": stat, "df": dof, "p_value": p}
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self) -> Table:
        """The test for people."""
        rows: list[tuple[str, str]] = [
            ("design", self.design),
            ("statistic", format_number(self.statistic, 6)),
            ("reference distribution", self.reference),
            ("p-value", format_number(self.p_value, 4)),
        ]
        if self.deltas:
            rows.append(("design effects (delta)", ", ".join(format_number(d, 4)
                                                            for d in self.deltas)))  # fmt: skip
        if self.second_order is not None:
            stat, dof, p = self.second_order
            rows.append(("second order (Satterthwaite)",
                         f"{format_number(stat, 6)} on chi2({dof:.3g}), p = "
                         f"{format_number(p, 4)}"))  # fmt: skip
        rows.extend(("note", note) for note in self.notes)
        title = (
            f"Test of independence of {' and '.join(self.items)} ({self.method}, "
            f"{self.n} respondents)"
        )
        return Table.pairs(rows, title=title)


def _contrasts(p: FloatArray, shape: tuple[int, int]) -> tuple[FloatArray, FloatArray]:
    """``(g, G)``: the interaction contrasts ``p_ab - p_a. p_.b`` and their Jacobian."""
    r, c = shape
    t = p.reshape(shape)
    rows, cols = t.sum(axis=1), t.sum(axis=0)
    g, jac = [], []
    for a in range(r - 1):
        for b in range(c - 1):
            g.append(t[a, b] - rows[a] * cols[b])
            d = np.zeros(shape)
            d[a, b] += 1.0
            d[a, :] -= cols[b]
            d[:, b] -= rows[a]
            jac.append(d.ravel())
    return np.asarray(g), np.asarray(jac)


def _chi2_sf(x: float, dof: float) -> float:
    from scipy import stats

    return float(stats.chi2.sf(x, dof)) if math.isfinite(x) else math.nan


def _deltas(jac: FloatArray, srs: FloatArray, cov: FloatArray) -> FloatArray:
    vals = np.linalg.eigvals(np.linalg.solve(jac @ srs @ jac.T, jac @ cov @ jac.T))
    return np.sort(np.real(vals))


def independence_test(joint: JointEstimate, *, items: Any = (0, 1), method: str = "wald"
                      ) -> IndependenceTest:  # fmt: skip
    """Test that two items of a joint estimate are independent, accounting for the
    randomization and the survey design (module docstring: the statistics and their
    reference distributions).

    Parameters
    ----------
    joint : from :func:`joint_estimate`.
    items : the pair of items (indices into ``joint.items``).
    method : ``"wald"`` (the default), ``"rao-scott"`` or ``"lr"`` (likelihood ratio of
        the EM fits; items with dense channels only).

    Examples
    --------
    >>> import numpy as np
    >>> from deniable.designs import Warner
    >>> from deniable.estimation import joint_estimate
    >>> rng = np.random.default_rng(1)
    >>> x = rng.integers(0, 2, 2000)
    >>> w = Warner(0.8)
    >>> joint = joint_estimate([w, w], [w.randomize(x, rng=rng), w.randomize(x, rng=rng)])
    >>> independence_test(joint).p_value < 1e-6  # the same answer twice: dependent
    True
    """
    v.choice("method", method, INDEPENDENCE_TESTS)
    pair = pair_of(joint, items)
    shape = (pair.shape[0], pair.shape[1])
    dof = (shape[0] - 1) * (shape[1] - 1)
    srs = math.isinf(pair.df)
    g, jac = _contrasts(pair.values, shape)
    reference_cov = pair.covariance if pair.srs_covariance is None else pair.srs_covariance
    notes: list[str] = []
    try:
        deltas = np.ones(dof) if srs else _deltas(jac, reference_cov, pair.covariance)
        if method == "wald":
            return _wald(pair, g, jac, dof, srs, deltas)
        x2 = float(g @ np.linalg.solve(jac @ reference_cov @ jac.T, g))
    except np.linalg.LinAlgError:
        raise ParameterError(
            "the covariance of the independence contrasts is singular (an item with a single "
            "value observed, or too few respondents): no test is possible."
        ) from None
    delta_bar = float(np.mean(deltas))
    if method == "lr":
        x2 = _likelihood_ratio(pair)
        stat = x2 if srs else x2 / delta_bar
        name = "likelihood ratio (EM fits)" + ("" if srs else ", Rao-Scott first order")
        if pair.mle_boundary:
            notes.append(
                "the MLE is on the boundary of the simplex: the chi2 reference is conservative."
            )
        second = None
    else:
        stat = x2 / delta_bar
        a2 = float(np.mean((deltas - delta_bar) ** 2)) / delta_bar**2
        dof2 = dof / (1 + a2)
        stat2 = x2 / (delta_bar * (1 + a2))
        second = (stat2, dof2, _chi2_sf(stat2, dof2))
        name = "Rao-Scott first order"
    if srs:
        notes.append("simple random sampling: every design effect delta is 1.")
    return IndependenceTest(
        name, pair.items, stat, f"chi2({dof})", _chi2_sf(stat, dof), (float(dof),), pair.n,
        pair.variance_method, pair.design, tuple(float(d) for d in deltas), second,
        tuple(notes),
    )  # fmt: skip


def _wald(pair: JointEstimate, g: FloatArray, jac: FloatArray, dof: int, srs: bool,
          deltas: FloatArray) -> IndependenceTest:  # fmt: skip
    w = float(g @ np.linalg.solve(jac @ pair.covariance @ jac.T, g))
    common = (pair.n, pair.variance_method, pair.design, tuple(float(d) for d in deltas))
    if srs:
        return IndependenceTest(
            "Wald", pair.items, w, f"chi2({dof})", _chi2_sf(w, dof), (float(dof),), *common
        )
    from scipy import stats

    f = pair.df
    d2 = f - dof + 1
    if d2 < 1:
        return IndependenceTest(
            "adjusted Wald", pair.items, math.nan, f"F({dof}, {d2:g})", math.nan,
            (float(dof), float(d2)), *common,
            notes=(f"the design has {f:g} degrees of freedom, too few for {dof} contrasts "
                   "(the adjusted Wald test needs df >= number of contrasts); use "
                   "method='rao-scott'.",),
        )  # fmt: skip
    stat = (f - dof + 1) / (f * dof) * w
    return IndependenceTest(
        "adjusted Wald", pair.items, stat, f"F({dof}, {d2:g})", float(stats.f.sf(stat, dof, d2)),
        (float(dof), float(d2)), *common,
        notes=(f"Wald statistic before the adjustment: {format_number(w, 6)}",),
    )  # fmt: skip


def _likelihood_ratio(pair: JointEstimate) -> float:
    if pair.mle is None or pair.channels is None or pair.report_shares is None:
        raise ParameterError(
            "`method` 'lr' needs the EM fits, which need every item's dense channel: "
            + "; ".join(pair.notes)
        )
    first, second = pair.channels
    lam = pair.report_shares.reshape(first.shape[0], second.shape[0])
    margins = []
    table = pair.values.reshape(pair.shape)
    for channel, shares, start in (
        (first, lam.sum(axis=1), table.sum(axis=1)),
        (second, lam.sum(axis=0), table.sum(axis=0)),
    ):
        init = np.clip(start, 0.0, None) + 1e-3
        pi, _, _ = em_simplex(channel, shares, init / init.sum())
        margins.append(pi)
    joint_channel = np.asarray(np.kron(first, second), dtype=np.float64)
    independent = np.asarray(np.kron(margins[0], margins[1]), dtype=np.float64)
    saturated = log_likelihood(joint_channel, pair.report_shares, pair.mle)
    reduced = log_likelihood(joint_channel, pair.report_shares, independent)
    return max(2 * pair.n * (saturated - reduced), 0.0)
