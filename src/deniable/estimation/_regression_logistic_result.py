"""The result of :func:`~deniable.estimation.logistic_rr`: a
:class:`~deniable.estimation.RegressionResult` with predictions on the scale of the link."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from deniable.common import validation as v
from deniable.estimation._formula import check_formula, evaluation_context
from deniable.estimation._regression_data import (
    Array,
    check_finite,
    columns_list,
    named_columns,
    require_data_extras,
)
from deniable.estimation._regression_direct import DirectTest
from deniable.estimation._regression_links import link_functions
from deniable.estimation._regression_results import RegressionResult, logit_interval
from deniable.estimation._regression_stats import Prevalence
from deniable.exceptions import DataError

__all__ = ["LogisticRRResult"]


@dataclass(frozen=True, eq=False)
class LogisticRRResult(RegressionResult):
    """Result of :func:`logistic_rr`: a :class:`RegressionResult` with predictions.

    ``direct_test`` is set when a direct-questioning column was given and both groups have
    respondents; ``link`` is the link of the prevalence model (``"logit"``, ``"probit"``,
    ``"cloglog"``).
    """

    title: ClassVar[str] = "Logistic regression with a randomized outcome"

    direct: str | None = field(default=None, repr=False)
    direct_test: DirectTest | None = field(default=None, repr=False)
    spec: Any = field(default=None, repr=False, compare=False)
    index: Any = field(default=None, repr=False, compare=False)
    link: str = "logit"

    def _inverse_link(self, eta: Array) -> tuple[Array, Array]:
        """``(F(eta), f(eta))``: the prevalence and its derivative."""
        p, _, f, _ = link_functions(self.link)(eta)
        return p, f

    def _matrix(self, data: Any) -> Array:
        if data is None:
            assert self.data is not None
            return self.data.X
        pd, formulaic = require_data_extras()
        frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(dict(data))
        # The formula was checked when fitted; checked again here because the stored spec is
        # evaluated on new data, and only in the restricted context.
        used = list(check_formula(self.formula).covariates)
        absent = [c for c in used if c not in frame.columns]
        if absent:
            raise DataError(
                f"`data` for prediction lacks the {named_columns(absent)} that the formula "
                f"uses (columns: {columns_list(frame)})."
            )
        missing = int(frame[used].isna().any(axis=1).sum()) if used else 0
        if missing:
            raise DataError(f"`data` has missing values in the covariates: {missing} rows.")
        try:
            with np.errstate(all="ignore"):  # check_finite names a transform's NaN / inf
                mm = self.spec.get_model_matrix(
                    frame, context=evaluation_context(), na_action="ignore"
                )
        except formulaic.errors.FormulaicError as exc:
            first = str(exc).splitlines()[0]
            raise DataError(f"`data` cannot be used for prediction: {first}") from None
        X = np.asarray(mm.to_numpy(dtype=np.float64))
        check_finite(X, self.terms, what="the covariate")
        return X

    def predict(self, data: Any = None, *, level: float = 0.95) -> Any:
        """Predicted prevalence ``F(x' beta)`` per row (``F`` the inverse link: ``expit``
        for the logit), with SE and interval (DataFrame).

        The interval is ``F(x' beta -+ z se(x' beta))`` with ``se(x' beta)^2 = x' V x``
        (delta method on the link scale, mapped back, so it stays in (0, 1); ``z`` a t
        quantile under a survey design); ``se`` is the delta-method SE of the prevalence
        itself, ``f(x' beta) se(x' beta)`` (``p (1 - p) se(x' beta)`` for the logit).
        ``data=None`` predicts for the rows fitted.
        """
        lvl = v.level(level)
        X = self._matrix(data)
        k = len(self.terms)
        V = self.cov[:k, :k]
        eta = X @ self._coef()
        se_eta = np.sqrt(np.einsum("ij,jk,ik->i", X, V, X))
        z = self._quantile(lvl)
        p, f = self._inverse_link(eta)
        pd = require_data_extras()[0]
        index = None if data is not None else self.index
        return pd.DataFrame(
            {
                "prevalence": p,
                "se": f * se_eta,
                "lower": self._inverse_link(eta - z * se_eta)[0],
                "upper": self._inverse_link(eta + z * se_eta)[0],
            },
            index=index,
        )

    def prevalence(self, level: float = 0.95, *, data: Any = None) -> Prevalence:
        """Average predicted prevalence ``m = mean_i F(x_i' beta)`` over the rows fitted
        (or over the rows of ``data``; ``F`` the inverse link).

        ``se(m)^2 = g' V g`` with ``g = mean_i f(x_i' beta) x_i``: the uncertainty of
        ``beta``, given the covariates of these rows (their own sampling variation is not
        added).  The interval is built on the logit scale (``se / (m (1 - m))``) and mapped
        back, so it stays in (0, 1).
        """
        lvl = v.level(level)
        X = self._matrix(data)
        k = len(self.terms)
        p, f = self._inverse_link(X @ self._coef())
        m = float(p.mean())
        g = (X * f[:, None]).mean(axis=0)
        se = float(math.sqrt(max(0.0, float(g @ self.cov[:k, :k] @ g))))
        lo, hi = logit_interval(m, se / (m * (1 - m)) if 0 < m < 1 else math.inf, lvl)
        return Prevalence(m, se, lo, hi, lvl, "mean predicted prevalence")

    def _extra_lines(self, level: float) -> list[str]:
        lines = [str(self.prevalence(level=level))]
        if self.direct_test is not None:
            lines.append(str(self.direct_test))
        return lines

    def _extra_dict(self, level: float) -> dict[str, Any]:
        out: dict[str, Any] = {"prevalence": self.prevalence(level=level).to_dict()}
        if self.direct is not None:
            out["direct"] = self.direct
        if self.direct_test is not None:
            out["direct_test"] = self.direct_test.to_dict()
        return out
