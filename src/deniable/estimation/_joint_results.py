"""The joint distribution of several randomized-response items: :class:`JointEstimate`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import format_interval, format_number, to_jsonable
from deniable.common import validation as v
from deniable.estimation._joint_em import fit_mle
from deniable.exceptions import ParameterError
from deniable.results import Result, Table, normal_quantile

__all__ = ["JOINT_ESTIMATORS", "JointEstimate", "quantile"]

FloatArray = npt.NDArray[np.float64]

#: The estimators of a joint distribution: the unbiased moment inversion, the MLE (EM).
JOINT_ESTIMATORS = ("moment", "mle")


def quantile(level: float, df: float) -> float:
    """Two-sided quantile at ``level``: normal for ``df = inf`` (simple random sampling),
    Student t with the design's ``df`` otherwise (NaN for ``df < 1``)."""
    lvl = v.level(level)
    if math.isinf(df):
        return normal_quantile(lvl)
    if not df >= 1:
        return math.nan
    from scipy import stats

    return float(stats.t.ppf(0.5 + lvl / 2, df))


def _marginal_map(shape: tuple[int, ...], keep: tuple[int, ...]) -> FloatArray:
    """The ``(prod shape[keep], prod shape)`` 0/1 matrix summing the other items out."""
    total = math.prod(shape)
    index = np.unravel_index(np.arange(total), shape)
    sub = tuple(shape[i] for i in keep)
    rows = np.ravel_multi_index(tuple(index[i] for i in keep), sub) if keep else np.zeros(total)
    out = np.zeros((math.prod(sub), total))
    out[np.asarray(rows, dtype=np.intp), np.arange(total)] = 1.0
    return out


@dataclass(frozen=True, eq=False)
class JointEstimate(Result):
    """The joint distribution of ``m >= 2`` randomized-response items.

    Cells are numbered as ``numpy.kron`` orders them (the first item slowest): for two
    binary items ``(0, 0), (0, 1), (1, 0), (1, 1)``.

    Attributes
    ----------
    items : the items' mechanism names.
    shape : each item's number of values.
    values : the moment estimate of the cell probabilities (unbiased; may leave the
        simplex: a cell may be negative).
    covariance : its covariance (``variance_method``).
    n : respondents.
    df : degrees of freedom of the variance (``inf`` under simple random sampling, where
        intervals use the normal quantile; the design's otherwise, with Student t).
    variance_method : how the covariance is computed.
    design : one line describing the sample.
    mle : the maximum-likelihood estimate on the simplex (EM; a pseudo-MLE under a design),
        or ``None`` when an item has no dense channel (``notes`` says which).
    mle_covariance : its covariance (observed information, or the design sandwich; NaN for
        cells on the boundary).
    mle_boundary : the cells of the MLE on the boundary of the simplex.
    em_iterations : EM iterations used.
    report_shares, report_covariance : the (weighted) shares of the joint reports and their
        covariance, where every item has a dense channel.
    channels : the items' dense channels ``P[report, truth]`` (the joint channel is their
        Kronecker product), or ``None``.
    srs_covariance : the covariance the moment estimate would have under simple random
        sampling of ``n`` with the same randomization (the weighted plug-in covariance of
        the de-biased joint indicators over ``n``): the reference of the design effects and
        of the Rao-Scott correction; ``None`` when it is :attr:`covariance` itself.
    notes : remarks (a moment estimate outside the simplex, the MLE on the boundary, ...).
    """

    items: tuple[str, ...]
    shape: tuple[int, ...]
    values: FloatArray
    covariance: FloatArray
    n: int
    df: float
    variance_method: str
    design: str
    mle: FloatArray | None = None
    mle_covariance: FloatArray | None = None
    mle_boundary: tuple[int, ...] = ()
    em_iterations: int = 0
    report_shares: FloatArray | None = field(default=None, repr=False)
    report_covariance: FloatArray | None = field(default=None, repr=False)
    channels: tuple[FloatArray, ...] | None = field(default=None, repr=False)
    srs_covariance: FloatArray | None = field(default=None, repr=False)
    notes: tuple[str, ...] = ()

    @property
    def k(self) -> int:
        """Number of joint cells."""
        return int(self.values.size)

    @property
    def cells(self) -> list[tuple[int, ...]]:
        """The joint cell of each entry: a tuple of the items' values."""
        return [tuple(int(x) for x in c) for c in np.ndindex(*self.shape)]

    @property
    def se(self) -> FloatArray:
        """Standard errors of the moment estimate."""
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))

    @property
    def deff(self) -> FloatArray:
        """Design effects of the cells: the design variance over the variance under simple
        random sampling of ``n`` with the same randomization (1 for simple random sampling)."""
        srs = self.covariance if self.srs_covariance is None else self.srs_covariance
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.diag(self.covariance) / np.diag(srs), dtype=np.float64)

    def estimate(self, estimator: str = "moment") -> tuple[FloatArray, FloatArray]:
        """``(values, covariance)`` of ``estimator``: ``"moment"`` or ``"mle"``."""
        v.choice("estimator", estimator, JOINT_ESTIMATORS)
        if estimator == "moment":
            return self.values, self.covariance
        if self.mle is None or self.mle_covariance is None:
            why = "; ".join(self.notes) or "no dense channel"
            raise ParameterError(f"`estimator` 'mle' is not available here: {why}")
        return self.mle, self.mle_covariance

    def ci(self, level: float = 0.95, estimator: str = "moment") -> FloatArray:
        """``(k, 2)`` intervals ``value +- q se`` (``q`` normal under simple random sampling,
        t with the design's df otherwise); not clipped to [0, 1]."""
        values, cov = self.estimate(estimator)
        q = quantile(level, self.df)
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
        se = np.where(np.isnan(np.diag(cov)), np.nan, se)
        return np.stack([values - q * se, values + q * se], axis=1)

    def as_array(self, estimator: str = "moment") -> FloatArray:
        """The estimate as an array of ``shape`` (``[x1, x2, ...]``)."""
        return self.estimate(estimator)[0].reshape(self.shape)

    def marginal(self, items: Any) -> JointEstimate:
        """The joint estimate of the items ``items`` (indices, at least one), the others
        summed out; the MLE is refitted on the marginal reports."""
        keep = tuple(v.integer("items", i, minimum=0, maximum=len(self.shape) - 1) for i in items)
        if not keep or len(set(keep)) != len(keep):
            raise ParameterError(f"`items` must be distinct item indices, got {items!r}.")
        m = _marginal_map(self.shape, keep)
        values = m @ self.values
        cov = m @ self.covariance @ m.T
        extra: dict[str, Any] = {}
        if self.srs_covariance is not None:
            extra["srs_covariance"] = m @ self.srs_covariance @ m.T
        if self.channels is not None and self.report_shares is not None:
            reports = tuple(c.shape[0] for c in self.channels)
            mr = _marginal_map(reports, keep)
            shares = mr @ self.report_shares
            share_cov = None
            if self.report_covariance is not None:
                share_cov = mr @ self.report_covariance @ mr.T
            channels = tuple(self.channels[i] for i in keep)
            a: FloatArray = np.ones((1, 1))
            for c in channels:
                a = np.asarray(np.kron(a, c), dtype=np.float64)
            srs = math.isinf(self.df)
            mle, mle_cov, boundary, its, notes = fit_mle(
                a, shares, self.n, None if srs else share_cov, values
            )
            extra.update(
                mle=mle, mle_covariance=mle_cov, mle_boundary=boundary, em_iterations=its,
                report_shares=shares, report_covariance=share_cov, channels=channels,
                notes=notes,
            )  # fmt: skip
        return JointEstimate(
            tuple(self.items[i] for i in keep), tuple(self.shape[i] for i in keep), values,
            cov, self.n, self.df, self.variance_method, self.design, **extra,
        )  # fmt: skip

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        """Plain JSON: the cells, both estimates with SEs and intervals, the design."""
        out: dict[str, Any] = {
            "items": list(self.items), "shape": list(self.shape), "n": self.n,
            "df": self.df, "variance_method": self.variance_method, "design": self.design,
            "level": level, "cells": [list(c) for c in self.cells],
            "estimate": self.values, "se": self.se, "ci": self.ci(level),
            "covariance": self.covariance,
        }  # fmt: skip
        if self.mle is not None and self.mle_covariance is not None:
            out["mle"] = self.mle
            out["mle_se"] = np.sqrt(np.maximum(np.diag(self.mle_covariance), 0.0))
            out["mle_ci"] = self.ci(level, "mle")
            out["mle_covariance"] = self.mle_covariance
            out["mle_boundary"] = list(self.mle_boundary)
            out["em_iterations"] = self.em_iterations
        out["notes"] = list(self.notes)
        result: dict[str, Any] = to_jsonable(out)
        return result

    def table(self, level: float = 0.95) -> Table:
        """One row per joint cell: the moment estimate, SE and interval, and the MLE."""
        ci = self.ci(level)
        mle = self.mle is not None and self.mle_covariance is not None
        columns = ["cell", "estimate", "SE", f"{level:.0%} CI"]
        if mle:
            columns += ["MLE", "SE (MLE)"]
            mle_se = np.sqrt(np.maximum(np.diag(self.mle_covariance), 0.0))  # type: ignore[arg-type]
        rows = []
        for j, cell in enumerate(self.cells):
            row: list[Any] = [
                "(" + ", ".join(map(str, cell)) + ")", format_number(float(self.values[j]), 6),
                format_number(float(self.se[j]), 6), format_interval(ci[j], 6),
            ]  # fmt: skip
            if mle:
                row += [format_number(float(self.mle[j]), 6),  # type: ignore[index]
                        format_number(float(mle_se[j]), 6)]  # fmt: skip
            rows.append(tuple(row))
        notes = (f"SE: {self.variance_method}", *self.notes)
        title = (
            f"Joint distribution of {len(self.items)} items ({' x '.join(self.items)}) from "
            f"{self.n} respondents ({self.design})"
        )
        return Table(tuple(columns), tuple(rows), title=title, notes=notes)
