"""Replicate-weights designs (R's ``svrepdesign``): the jackknife (JK1, JKn), the bootstrap,
balanced repeated replication (BRR) and Fay's BRR.

An estimate is recomputed with each column of replicate weights, ``theta_r``, and its
variance is (Wolter 2007, chs. 3-5; Lumley 2010, sec. 2.3)::

    V = scale * sum_r rscales_r (theta_r - c)^2

with ``c`` the mean of the replicates (R's default, ``mse = FALSE``) or the full-sample
estimate (``mse = True``).  The default ``scale`` of each method is R's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError
from deniable.sampling._design import as_weights

__all__ = ["REPLICATE_METHODS", "ReplicateDesign", "replicate_covariance"]

FloatArray = npt.NDArray[np.float64]

#: The replicate methods and the default ``scale`` each implies for ``R`` replicates.
REPLICATE_METHODS = ("JK1", "JKn", "bootstrap", "BRR", "Fay")


def _default_scale(method: str, replicates: int, rho: float) -> float:
    if method == "JK1":
        return (replicates - 1) / replicates  # delete-one-PSU jackknife
    if method == "JKn":
        return 1.0  # the stratum factors (n_h - 1) / n_h are the rscales
    if method == "bootstrap":
        return 1 / (replicates - 1)
    return 1 / (replicates * (1 - rho) ** 2)  # BRR (rho = 0) and Fay


@dataclass(frozen=True, eq=False)
class ReplicateDesign:
    """A design given by replicate weights (R's ``svrepdesign``).

    Parameters
    ----------
    replicate_weights : an ``(n, R)`` array: column ``r`` holds every respondent's weight in
        replicate ``r`` (finite, >= 0; ``R >= 2``).  Build one from a
        :class:`SampleDesign` with ``as_replicate``.
    weights : the full-sample weights (finite, > 0), one per respondent.
    method : ``"JK1"``, ``"JKn"``, ``"bootstrap"``, ``"BRR"`` or ``"Fay"``.
    rho : Fay's coefficient in [0, 1) (``"Fay"`` only; BRR is ``rho = 0``).
    scale : the overall factor; default by method: JK1 ``(R - 1) / R``, JKn 1, bootstrap
        ``1 / (R - 1)``, BRR ``1 / R``, Fay ``1 / (R (1 - rho)^2)``.
    rscales : one factor per replicate (default 1; JKn: ``(n_h - 1) / n_h`` of the
        replicate's stratum, required).
    mse : centre the replicates at the full-sample estimate instead of their mean.

    Notes
    -----
    ``df`` is the rank of the replicate weights minus 1 (R's ``degf``).
    """

    replicate_weights: Any
    weights: Any
    method: str = "JK1"
    rho: float | None = None
    scale: float | None = None
    rscales: Any = None
    mse: bool = False
    n: int = field(init=False)

    def __post_init__(self) -> None:
        method = v.choice("method", self.method, REPLICATE_METHODS)
        reps = np.asarray(self.replicate_weights)
        if reps.ndim != 2 or reps.shape[1] < 2 or reps.dtype.kind not in "biuf":
            raise DataError(
                "`replicate_weights` must be a 2-D numeric array of shape (respondents, "
                f"replicates) with at least 2 replicates, got shape {reps.shape} dtype "
                f"{reps.dtype}."
            )
        reps = np.array(reps, dtype=np.float64)
        n, r = reps.shape
        weights = as_weights("weights", self.weights)
        if weights.size != n:
            raise DataError(
                f"`replicate_weights` must have one row per respondent ({weights.size}, the "
                f"length of `weights`), got {n} rows."
            )
        if not np.isfinite(reps).all() or (reps < 0).any():
            raise DataError("`replicate_weights` must be finite and >= 0.")
        rho = 0.0
        if method == "Fay":
            if self.rho is None:
                raise ParameterError("`rho` must be given for method 'Fay' (in [0, 1)), got None.")
            rho = v.probability("rho", self.rho, high_open=True)
        elif self.rho not in (None, 0, 0.0):
            raise ParameterError(
                f"`rho` is for method 'Fay' only, got rho={self.rho!r} with {method!r}."
            )
        scale = (
            _default_scale(method, r, rho)
            if self.scale is None
            else v.positive("scale", self.scale)
        )
        if self.rscales is None:
            if method == "JKn":
                raise ParameterError(
                    "`rscales` must be given for method 'JKn' ((n_h - 1) / n_h for each "
                    "replicate's stratum; as_replicate(design, 'JKn') computes them), got None."
                )
            rscales = np.ones(r)
        else:
            rscales = np.asarray(self.rscales, dtype=np.float64)
            if rscales.shape != (r,) or not np.isfinite(rscales).all() or (rscales < 0).any():
                raise DataError(
                    f"`rscales` must be {r} finite numbers >= 0 (one per replicate), got "
                    f"shape {rscales.shape}."
                )
        reps.setflags(write=False)
        rscales.setflags(write=False)
        set_ = object.__setattr__
        set_(self, "replicate_weights", reps)
        set_(self, "weights", weights)
        set_(self, "rho", rho if method == "Fay" else None)
        set_(self, "scale", scale)
        set_(self, "rscales", rscales)
        set_(self, "n", n)

    @property
    def replicates(self) -> int:
        """Number of replicates ``R``."""
        return int(self.replicate_weights.shape[1])

    @cached_property
    def df(self) -> int:
        """Rank of the replicate weights minus 1 (R's ``degf`` of a replicate design)."""
        gram = self.replicate_weights.T @ self.replicate_weights
        return int(np.linalg.matrix_rank(gram)) - 1

    @cached_property
    def population(self) -> float:
        """The estimated population size, the sum of the full-sample weights."""
        return float(np.sum(self.weights))

    @property
    def equal_probability(self) -> bool:
        """Whether every full-sample weight is the same."""
        return bool(np.all(self.weights == self.weights[0]))

    @property
    def variance_method(self) -> str:
        """How the variance is computed (printed with every estimate)."""
        fay = f", rho = {self.rho:g}" if self.method == "Fay" else ""
        return f"{self.method} replicates (R = {self.replicates}{fay})"

    def describe(self) -> str:
        """One line: respondents, replicates, method, scale."""
        centre = "full-sample estimate" if self.mse else "mean of the replicates"
        return (
            f"{self.n} respondents, {self.variance_method}, scale {self.scale:.6g}, centred "
            f"at the {centre}"
        )

    def with_weights(self, weights: Any, replicate_weights: Any) -> ReplicateDesign:
        """The same method and scales with new full-sample and replicate weights."""
        return ReplicateDesign(
            replicate_weights, weights, self.method, self.rho, self.scale, self.rscales, self.mse
        )


def replicate_covariance(
    design: ReplicateDesign, thetas: FloatArray, estimate: FloatArray
) -> FloatArray:
    """``scale * sum_r rscales_r (theta_r - c)(theta_r - c)^T`` for replicate estimates
    ``thetas`` of shape ``(R, m)``."""
    centre = estimate if design.mse else thetas.mean(axis=0)
    dev = thetas - centre
    cov = design.scale * (dev * design.rscales[:, None]).T @ dev
    return np.asarray(cov, dtype=np.float64)
