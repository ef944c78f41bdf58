"""RAPPOR decoding: candidate strings against the per-cohort bit counts (Erlingsson, Pihur &
Korolova 2014, sec. 4; Fanti, Pihur & Erlingsson 2016, sec. 3).

With ``N_c`` reports in cohort ``c`` and ``c_ci`` of them with bit ``i`` set,

    t_ci = (c_ci - (p + f q / 2 - f p / 2) N_c) / ((1 - f)(q - p))

is an unbiased estimate of the number of clients of cohort ``c`` whose Bloom bit ``i`` is
set.  If clients' cohorts do not depend on their values, ``E t_ci = N_c sum_k X_cik pi_k``
with ``X_cik`` = 1 iff candidate ``k`` sets bit ``i`` in cohort ``c`` (the design matrix)
and ``pi_k`` the candidate's frequency.  The decoder stacks the cohorts' rows and

1. weights each row by ``1 / sd(t_ci)``, ``Var(t_ci) = N_c l (1 - l) / ((1 - f)(q - p))^2``
   with ``l = c_ci / N_c`` clipped to ``[p*, q*]`` (the binomial variance of the count):
   the weighted system ``y = A pi + e`` has noise of unit variance in every row;
2. *selects* candidates on it, by ``method``:

   * ``"nnls"`` (the default): non-negative least squares over all candidates (its one
     minimizer when ``A`` has full column rank: ``scipy.optimize.nnls`` on the ``K x K``
     Cholesky factor of ``A'A``, else on ``A``: ``deniable.oracles._rappor_nnls``); the
     candidates with a positive coefficient are selected;
   * ``"lasso"`` (the paper's method): the non-negative Lasso
     (``deniable.oracles._lasso``, cyclic coordinate descent) on the columns of ``A``
     scaled to unit Euclidean norm, ``a_k / ||a_k||`` (no centering, no intercept),

         minimize (1/2) ||y - sum_k b_k a_k / ||a_k|| ||^2 + penalty sum_k b_k,  b >= 0,

     (``b_k = ||a_k|| pi_k``); the candidates with a positive ``b_k`` are selected.  On
     unit-norm columns ``a_k' e / ||a_k||`` is a standard normal, and a zero coefficient
     stays zero while the residual's correlation with its column is at most ``penalty``:
     the penalty is a threshold in units of the noise's standard deviation.  The default
     is the universal threshold ``penalty = sqrt(2 ln K)`` (Donoho & Johnstone 1994): the
     largest of ``K`` independent standard normals stays below it with probability tending
     to 1, so pure noise selects few absent candidates; it lies below the reporting
     threshold ``z(alpha / K)`` of step 4 (for ``alpha <= 0.05``, ``K <= 10**9``), so the
     screening is looser than the test.  ``penalty = 0`` selects as NNLS does; ``penalty
     >= max_k a_k' y / ||a_k||`` selects nothing;

3. refits the selected columns by weighted least squares (the paper refits by ordinary
   least squares after its Lasso selection), ``pi_hat = (A' W A)^+ A' W t``, with the
   covariance ``s^2 (A' W A)^+``, ``s^2 = max(1, weighted RSS / (rows - selected))``: the
   binomial model's covariance, inflated when the residuals show more spread than it
   predicts (strings outside the candidate list, hash collisions);
4. reports a selected candidate when its one-sided z-test ``pi_hat / se`` has a p-value
   below ``alpha / K`` (Bonferroni over all ``K`` candidates): a family-wise false-alarm
   rate of at most about ``alpha`` for candidates absent from the population.

Unselected candidates get the estimate 0, no standard error and p-value 1.  Steps 3 and 4
are the same for both methods: the selection only decides which columns are refit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._lasso import nonnegative_lasso
from deniable.oracles._rappor_nnls import nnls_coefficients
from deniable.results import Result, Table, normal_quantile

__all__ = ["METHODS", "SE_RAPPOR", "RapporEstimate", "decode", "default_penalty"]

FloatArray = npt.NDArray[np.float64]

#: The selection methods of :func:`decode`.
METHODS = ("nnls", "lasso")


def default_penalty(k: int) -> float:
    """The Lasso's default penalty for ``k`` candidates: the universal threshold
    ``sqrt(2 ln k)`` in noise standard deviations (module docstring, step 2)."""
    return math.sqrt(2 * math.log(k))


#: How :attr:`RapporEstimate.se` is computed: the binomial variance of each bit count
#: (clients sampled from a population, each count's share plugged in), through the weighted
#: least-squares refit, times the residual scale ``s^2 >= 1``.
SE_RAPPOR = (
    "sampling: binomial variance of each bit count at its share, through the weighted "
    "least-squares refit, times the residual scale s^2"
)


@dataclass(frozen=True)
class RapporEstimate(Result):
    """Decoded RAPPOR frequencies of candidate strings (``deniable.oracles._rappor_decode``).

    Attributes
    ----------
    candidates : the candidate strings, in the order given.
    values : the estimated frequency of each (0 for unselected candidates).
    se : standard errors (NaN for unselected candidates).
    p_values : one-sided p-values of ``frequency > 0`` (1 for unselected candidates).
    reported : whether each candidate passes the Bonferroni threshold.
    alpha : the family-wise level; ``threshold = alpha / K`` is the per-candidate level.
    n : the number of reports decoded.
    key : the mechanism's key.
    scale : the residual scale ``s^2`` of the refit.
    method : how candidates were selected, ``"nnls"`` or ``"lasso"``.
    penalty : the Lasso penalty in noise standard deviations (None for ``"nnls"``).
    """

    candidates: tuple[str, ...]
    values: FloatArray = field(repr=False)
    se: FloatArray = field(repr=False)
    p_values: FloatArray = field(repr=False)
    reported: npt.NDArray[np.bool_] = field(repr=False)
    alpha: float
    n: int
    key: str = field(repr=False)
    scale: float = 1.0
    method: str = "nnls"
    penalty: float | None = None

    @property
    def se_convention(self) -> str:
        """Which variance :attr:`se` is (``SE_RAPPOR``): the sampling one, as every frequency
        estimate's ``se`` (``deniable.designs.FrequencyEstimate``)."""
        return SE_RAPPOR

    @property
    def selected(self) -> npt.NDArray[np.bool_]:
        """Whether each candidate was selected (and refit): those with a standard error."""
        return np.asarray(~np.isnan(self.se))

    def _selection(self) -> str:
        k = len(self.candidates)
        chosen = f"{int(self.selected.sum())} of {k} selected"
        if self.method == "lasso" and self.penalty is not None:
            rule = " = sqrt(2 ln K)" if self.penalty == default_penalty(k) else ""
            return (
                f"selection: non-negative Lasso, penalty {self.penalty:.4g}{rule} noise sd "
                f"on unit-norm columns ({chosen}); refit by weighted least squares"
            )
        return f"selection: non-negative least squares ({chosen}); refit by weighted least squares"

    @property
    def threshold(self) -> float:
        """The per-candidate level: ``alpha / K``."""
        return self.alpha / len(self.candidates)

    @property
    def counts(self) -> FloatArray:
        """Estimated number of clients of each candidate: ``n`` times its frequency."""
        return np.asarray(self.values * self.n, dtype=np.float64)

    @property
    def count_se(self) -> FloatArray:
        """Standard errors of :attr:`counts`: ``n`` times :attr:`se` (NaN unselected)."""
        return np.asarray(self.se * self.n, dtype=np.float64)

    def ci(self, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
        """``(low, high)``: the normal (Wald) interval ``value -/+ z se`` of each frequency
        at ``level``, ``z`` the two-sided normal quantile (NaN for unselected candidates:
        they have no standard error).

        >>> est = RapporEstimate(("a", "b"), np.array([0.4, 0.0]), np.array([0.01, np.nan]),
        ...                      np.array([1e-9, 1.0]), np.array([True, False]), 0.05, 100, "k")
        >>> [np.round(x, 4).tolist() for x in est.ci(0.95)]
        [[0.3804, nan], [0.4196, nan]]
        """
        z = normal_quantile(level)
        low = np.asarray(self.values - z * self.se, dtype=np.float64)
        return low, np.asarray(self.values + z * self.se, dtype=np.float64)

    def top(self) -> list[tuple[str, float]]:
        """The reported candidates and their frequencies, most frequent first."""
        idx = np.flatnonzero(self.reported)
        idx = idx[np.argsort(-self.values[idx], kind="stable")]
        return [(self.candidates[i], float(self.values[i])) for i in idx]

    def table(self) -> Table:
        """The reported candidates, most frequent first: frequency, SE, p-value."""
        rows = tuple(
            (self.candidates[i], float(self.values[i]), float(self.se[i]),
             float(self.p_values[i]))
            for i in sorted(np.flatnonzero(self.reported), key=lambda j: -self.values[j])
        )  # fmt: skip
        return Table(
            ("candidate", "frequency", "SE", "p-value"),
            rows,
            title=f"RAPPOR: {int(self.reported.sum())} of {len(self.candidates)} candidates "
            f"reported, n = {self.n}",
            notes=(
                self._selection(),
                f"reported: one-sided p-value < alpha / K = {self.alpha:g} / "
                f"{len(self.candidates)} (Bonferroni); residual scale s^2 = {self.scale:.3g}",
                f"SE {SE_RAPPOR}",
            ),
        )

    def to_dict(self, level: float | None = None) -> dict[str, Any]:
        """Plain JSON: mechanism, n, method, penalty, alpha, threshold, scale, se_convention,
        and per candidate its estimate; with ``level``, also ``level`` and each candidate's
        Wald interval ``ci_wald`` (:meth:`ci`; null for an unselected candidate)."""
        out: dict[str, Any] = {
            "mechanism": self.key,
            "n": self.n,
            "method": self.method,
            "penalty": self.penalty,
            "alpha": self.alpha,
            "threshold": self.threshold,
            "scale": self.scale,
            "se_convention": SE_RAPPOR,
            "candidates": [
                {
                    "candidate": c,
                    "frequency": to_jsonable(float(self.values[i])),
                    "se": to_jsonable(float(self.se[i])),
                    "p_value": to_jsonable(float(self.p_values[i])),
                    "selected": bool(self.selected[i]),
                    "reported": bool(self.reported[i]),
                }
                for i, c in enumerate(self.candidates)
            ],
        }
        if level is not None:
            low, high = self.ci(level)
            out["level"] = float(level)
            for i, row in enumerate(out["candidates"]):
                ok = bool(self.selected[i])
                row["ci_wald"] = [float(low[i]), float(high[i])] if ok else None
        return out


def _strings(name: str, values: Any) -> npt.NDArray[np.str_]:
    if isinstance(values, str):
        values = [values]
    if isinstance(values, bytes) or not hasattr(values, "__len__"):
        raise ParameterTypeError(
            f"`{name}` must be a sequence of strings, got {type(values).__name__}."
        )
    arr = np.asarray(values)
    if arr.dtype.kind == "U" and not isinstance(values, np.ndarray):
        # numpy turns ["a", 3] into ["a", "3"]: refuse what was not a string
        bad_item = next((x for x in values if not isinstance(x, str)), None)
        if bad_item is not None:
            arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise DataError(f"`{name}` must be a 1-D sequence of strings, got shape {arr.shape}.")
    if arr.size and arr.dtype.kind == "O" and all(isinstance(x, str) for x in arr.tolist()):
        return arr.astype(str)
    if arr.size and arr.dtype.kind != "U":
        bad = next((x for x in arr.tolist() if not isinstance(x, str)), arr.dtype)
        raise DataError(
            f"`{name}` must hold strings, got {type(bad).__name__} {bad!r} (dtype {arr.dtype})."
        )
    return arr.astype(str)


def decode(
    rappor: Any,
    tally: Tally,
    candidates: Any,
    *,
    alpha: float = 0.05,
    method: str = "nnls",
    penalty: float | None = None,
) -> RapporEstimate:
    """Decode ``tally`` against ``candidates`` (the module docstring has the method).

    ``method`` is ``"nnls"`` or ``"lasso"``; ``penalty`` (Lasso only, in noise standard
    deviations, ``>= 0``) defaults to ``sqrt(2 ln K)``.
    """
    from scipy.stats import norm

    a = v.probability("alpha", alpha, low_open=True, high_open=True)
    how = v.choice("method", method, METHODS)
    lam: float | None = None
    if penalty is not None:
        if how != "lasso":
            raise ParameterError(
                f"`penalty` applies to method='lasso' only, got penalty = {penalty!r} with "
                f"method = {how!r}."
            )
        lam = v.positive("penalty", penalty, allow_zero=True)
    cand = _strings("candidates", candidates)
    if cand.size == 0:
        raise DataError("`candidates` must hold at least one string, got none.")
    if np.unique(cand).size != cand.size:
        raise DataError("`candidates` must be distinct strings, got a repeated one.")
    c, n_c = rappor.counts(tally)
    n = int(n_c.sum())
    if n == 0:
        raise DataError("`tally` must hold at least one report, got 0.")
    t = rappor.bit_estimates(tally)
    x = rappor.design_matrix(cand).astype(np.float64)  # (cohorts, m, K)
    live = n_c > 0
    scale_t = (1 - rappor.f) * (rappor.q - rappor.p)
    lo, hi = sorted((rappor.p_star, rappor.q_star))
    share = np.clip(c[live] / n_c[live, None], lo, hi)
    share = np.clip(share, 0.5 / n_c[live, None], 1 - 0.5 / n_c[live, None])
    var = n_c[live, None] * share * (1 - share) / scale_t**2
    w = 1 / np.sqrt(var).reshape(-1)
    design = (x[live] * n_c[live, None, None]).reshape(-1, cand.size)
    y = t[live].reshape(-1)
    aw, yw = design * w[:, None], y * w
    k = cand.size
    if how == "lasso":
        lam = default_penalty(k) if lam is None else lam
        sel = _lasso_selection(aw, yw, lam)
    else:
        sel = _nnls_selection(aw, yw)
    values = np.zeros(k)
    se = np.full(k, math.nan)
    p_values = np.ones(k)
    s2 = 1.0
    if sel.size:
        a_s = aw[:, sel]
        gram_inv = np.linalg.pinv(a_s.T @ a_s)
        beta = gram_inv @ (a_s.T @ yw)
        resid = yw - a_s @ beta
        dof = max(1, a_s.shape[0] - sel.size)
        s2 = max(1.0, float(resid @ resid) / dof)
        sd = np.sqrt(np.maximum(np.diag(gram_inv) * s2, 0.0))
        values[sel] = beta
        se[sel] = sd
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, beta / sd, 0.0)
        p_values[sel] = norm.sf(z)
    reported = p_values < a / k
    return RapporEstimate(
        candidates=tuple(cand.tolist()),
        values=values,
        se=se,
        p_values=p_values,
        reported=reported,
        alpha=a,
        n=n,
        key=rappor.key,
        scale=s2,
        method=how,
        penalty=lam,
    )


def _nnls_selection(aw: FloatArray, yw: FloatArray) -> npt.NDArray[np.intp]:
    """The columns with a positive NNLS coefficient (step 2, ``"nnls"``), solved on the
    ``K x K`` normal-equations form where that gives ``scipy.optimize.nnls``'s answer
    (``deniable.oracles._rappor_nnls``)."""
    return np.flatnonzero(nnls_coefficients(aw, yw) > 0)


def _lasso_selection(aw: FloatArray, yw: FloatArray, penalty: float) -> npt.NDArray[np.intp]:
    """The columns with a positive non-negative Lasso coefficient on unit-norm columns
    (step 2, ``"lasso"``)."""
    norms = np.sqrt(np.einsum("ij,ij->j", aw, aw))
    unit = aw / np.where(norms > 0, norms, 1.0)
    fit = nonnegative_lasso(unit, yw, penalty)
    return np.flatnonzero(fit.coef > 0)
