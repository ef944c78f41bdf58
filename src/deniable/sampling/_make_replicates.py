"""Replicate weights from a :class:`SampleDesign` (R's ``as.svrepdesign``): the delete-one-PSU
jackknife (JK1 without strata, JKn within strata), the Rao-Wu rescaling bootstrap, and
balanced repeated replication (BRR, Fay's variant) for two PSUs per stratum (Wolter 2007,
chs. 3-5)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError
from deniable.sampling._design import SampleDesign, plain
from deniable.sampling._replicate import REPLICATE_METHODS, ReplicateDesign

__all__ = ["as_replicate"]

FloatArray = npt.NDArray[np.float64]

#: Most cells (respondents x replicates) of replicate weights built in memory.
MAX_CELLS = 2 * 10**8


def as_replicate(
    design: SampleDesign,
    method: str = "JKn",
    *,
    replicates: int | None = None,
    seed: Any = None,
    rho: float | None = None,
    mse: bool = False,
) -> ReplicateDesign:
    """Replicate weights for ``design`` (R's ``as.svrepdesign``).

    ``JK1``: one replicate per PSU, that PSU's weights 0 and the others times ``P / (P -
    1)`` (one stratum only).  ``JKn``: one replicate per PSU of each stratum with two PSUs
    or more, that PSU 0 and the rest of its stratum times ``n_h / (n_h - 1)``,
    ``rscales = (n_h - 1) / n_h``; strata with a single PSU get no replicate (they add
    nothing: R's "remove").  ``bootstrap``: ``replicates`` (default 200) Rao & Wu (1988)
    rescaling replicates, ``n_h - 1`` PSUs drawn with replacement in each stratum, each
    drawn ``c`` times weighted by ``c n_h / (n_h - 1)``; seeded by ``seed``.  ``BRR`` and
    ``Fay`` (``rho`` in [0, 1)): two PSUs per stratum; replicate ``r`` multiplies one PSU by
    ``2 - rho`` and the other by ``rho`` as column ``h`` of a Sylvester Hadamard matrix says.
    None of them carries the fpc (the variance is the with-replacement one).
    """
    if not isinstance(design, SampleDesign):
        raise TypeError(f"`design` must be a SampleDesign, got {type(design).__name__}.")
    v.choice("method", method, REPLICATE_METHODS)
    if method == "JK1":
        if design.n_strata > 1:
            raise ParameterError(
                f"`method` 'JK1' is for an unstratified design, got {design.n_strata} strata: "
                "use 'JKn'."
            )
        return _jackknife(design, "JK1", mse)
    if method == "JKn":
        return _jackknife(design, "JKn", mse)
    if method == "bootstrap":
        r = 200 if replicates is None else v.integer("replicates", replicates, minimum=2)
        return _bootstrap(design, r, seed, mse)
    return _brr(design, method, rho, mse)


def _check_size(design: SampleDesign, r: int) -> None:
    if design.n * r > MAX_CELLS:
        raise DataError(
            f"{design.n} respondents x {r} replicates is too many replicate weights to hold "
            f"(at most {MAX_CELLS} cells)."
        )


def _jackknife(design: SampleDesign, method: str, mse: bool) -> ReplicateDesign:
    n_h = design.psu_per_stratum
    keep = np.flatnonzero(n_h[design.psu_stratum] > 1)  # PSUs that get a replicate
    r = keep.size
    if r < 2:
        raise DataError("the jackknife needs at least 2 PSUs in strata of two PSUs or more.")
    _check_size(design, r)
    factor = n_h / np.maximum(n_h - 1, 1)
    column = np.full(design.n_psu, -1)
    column[keep] = np.arange(r)
    psu = design.psu_index
    h = design.stratum_index
    reps = np.repeat(design.weights[:, None], r, axis=1)
    rep_stratum = design.psu_stratum[keep]
    in_stratum = h[:, None] == rep_stratum[None, :]
    reps *= np.where(in_stratum, factor[h][:, None], 1.0)
    rows = np.flatnonzero(column[psu] >= 0)
    reps[rows, column[psu[rows]]] = 0.0
    if method == "JK1":
        return ReplicateDesign(reps, design.weights, "JK1", mse=mse)
    rscales = (n_h[rep_stratum] - 1) / n_h[rep_stratum]
    return ReplicateDesign(reps, design.weights, "JKn", rscales=rscales, mse=mse)


def _bootstrap(design: SampleDesign, r: int, seed: Any, mse: bool) -> ReplicateDesign:
    _check_size(design, r)
    rng = np.random.default_rng(seed)  # replicate weights, not privacy: a seeded numpy draw
    n_h = design.psu_per_stratum
    if (n_h < 2).any():
        j = int(np.argmax(n_h < 2))
        raise DataError(
            f"the bootstrap needs at least 2 PSUs per stratum, got 1 in stratum "
            f"{plain(design.strata_labels[j])!r}."
        )
    order = np.argsort(design.psu_stratum, kind="stable")  # PSUs grouped by stratum
    offset = np.concatenate([[0], np.cumsum(n_h)[:-1]])
    draw_h = np.repeat(np.arange(n_h.size), n_h - 1)
    mult = np.empty((design.n_psu, r))
    for k in range(r):
        u = rng.random(draw_h.size)
        pick = order[offset[draw_h] + np.floor(u * n_h[draw_h]).astype(np.int64)]
        counts = np.bincount(pick, minlength=design.n_psu)
        mult[:, k] = counts * (n_h / (n_h - 1))[design.psu_stratum]
    reps = design.weights[:, None] * mult[design.psu_index]
    return ReplicateDesign(reps, design.weights, "bootstrap", mse=mse)


def _brr(design: SampleDesign, method: str, rho: float | None, mse: bool) -> ReplicateDesign:
    from scipy.linalg import hadamard

    n_h = design.psu_per_stratum
    if (n_h != 2).any():
        j = int(np.argmax(n_h != 2))
        raise DataError(
            f"`method` {method!r} needs exactly 2 PSUs in every stratum, got {n_h[j]} in "
            f"stratum {plain(design.strata_labels[j])!r}."
        )
    coef = 0.0
    if method == "Fay":
        if rho is None:
            raise ParameterError("`rho` must be given for method 'Fay' (in [0, 1)), got None.")
        coef = v.probability("rho", rho, high_open=True)
    h_count = design.n_strata
    order = 1 << int(np.ceil(np.log2(h_count + 1)))
    signs = hadamard(order)[:, 1 : h_count + 1]  # (replicates, strata), column 0 skipped
    _check_size(design, order)
    first = np.zeros(design.n_psu, dtype=bool)
    first[np.unique(design.psu_stratum, return_index=True)[1]] = True  # one PSU per stratum
    per_psu = signs[:, design.psu_stratum].T  # (PSUs, replicates)
    sign = np.where(first[:, None], per_psu, -per_psu)
    mult = np.where(sign > 0, 2 - coef, coef)
    reps = design.weights[:, None] * mult[design.psu_index]
    return ReplicateDesign(
        reps, design.weights, method, rho=coef if method == "Fay" else None, mse=mse
    )
