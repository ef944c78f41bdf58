"""The survey design of a sample: weights, strata, primary sampling units (PSUs) and finite
population corrections, with the rule for a stratum holding a single PSU.

:class:`SampleDesign` is R's ``svydesign(ids = ~psu, strata = ~stratum, weights = ~w, fpc =
~N, nest = TRUE)``; its Taylor-linearized covariance lives in ``_taylor``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError

__all__ = ["LONELY_PSU_RULES", "SampleDesign", "as_labels", "as_weights", "plain"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: The rules for a stratum with one PSU, as R's ``options(survey.lonely.psu = ...)``.
LONELY_PSU_RULES = ("fail", "certainty", "remove", "adjust", "average")


def plain(x: Any) -> Any:
    """A numpy scalar as the Python value it holds (for messages)."""
    return x.item() if isinstance(x, np.generic) else x


def as_weights(name: str, values: Any, n: int | None = None) -> FloatArray:
    """``values`` as a read-only 1-D float array of finite, strictly positive weights (of
    length ``n`` when given); a pandas Series is read by value."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise DataError(f"`{name}` must be a 1-D array, got an array of shape {arr.shape}.")
    if arr.dtype.kind not in "biuf":
        raise DataError(f"`{name}` must hold numbers, got dtype {arr.dtype}.")
    out = np.array(arr, dtype=np.float64)
    if n is not None and out.size != n:
        raise DataError(f"`{name}` must have one entry per respondent ({n}), got {out.size}.")
    if out.size == 0:
        raise DataError(f"`{name}` must not be empty.")
    bad = ~np.isfinite(out) | (out <= 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise DataError(
            f"`{name}` must be finite and > 0 for every respondent, got {plain(out[i])!r} at "
            f"row {i} ({int(bad.sum())} such rows)."
        )
    out.setflags(write=False)
    return out


def as_labels(name: str, values: Any, n: int) -> tuple[IntArray, npt.NDArray[Any]]:
    """``(codes, labels)``: the distinct labels of ``values`` (sorted) and each row's index
    into them.  Missing labels (None, NaN) are refused, naming the row."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise DataError(f"`{name}` must be a 1-D array, got an array of shape {arr.shape}.")
    if arr.size != n:
        raise DataError(f"`{name}` must have one entry per respondent ({n}), got {arr.size}.")
    if arr.dtype.kind == "f":
        missing = np.isnan(arr)
    elif arr.dtype.kind == "O":
        missing = np.fromiter(
            (x is None or (isinstance(x, float) and math.isnan(x)) for x in arr), bool, arr.size
        )
    else:
        missing = np.zeros(arr.size, dtype=bool)
    if missing.any():
        i = int(np.argmax(missing))
        raise DataError(
            f"`{name}` must have a label for every respondent, got {plain(arr[i])!r} at row {i}."
        )
    if arr.dtype.kind in "biu" and arr.size:
        fast = integer_codes(arr)
        if fast is not None:
            return fast
    try:
        labels, codes = np.unique(arr, return_inverse=True)
    except TypeError as exc:
        raise DataError(f"`{name}` must hold labels of one kind (comparable), got {exc}.") from None
    return np.asarray(codes, dtype=np.intp).reshape(-1), labels


def integer_codes(arr: npt.NDArray[Any]) -> tuple[IntArray, npt.NDArray[Any]] | None:
    """``np.unique(arr, return_inverse=True)`` for integers of a small range (at most a few
    times the number of rows) in O(n + range) without sorting; ``None`` otherwise."""
    lo, hi = int(arr.min()), int(arr.max())
    span = hi - lo + 1
    if span > max(4 * arr.size, 1 << 16):
        return None
    shifted = (arr - lo).astype(np.intp) if lo else arr.astype(np.intp, copy=False)
    present = np.bincount(shifted, minlength=span) > 0
    rank = np.cumsum(present, dtype=np.intp) - 1
    labels = (np.flatnonzero(present) + lo).astype(arr.dtype)
    return rank[shifted], labels


@dataclass(frozen=True, eq=False)
class SampleDesign:
    """A sample's design: weights, strata, PSUs (clusters) and finite population corrections.

    Parameters
    ----------
    weights : the sampling weights, one per respondent (finite, > 0; ``1 / pi_i`` for a
        respondent with inclusion probability ``pi_i``).  Default: all 1.
    strata : each respondent's stratum (any labels).  Default: one stratum.
    psu : each respondent's primary sampling unit (cluster).  PSU labels are read *within*
        their stratum (R's ``nest = TRUE``): PSU 1 of stratum A and PSU 1 of stratum B are two
        PSUs.  Default: every respondent is a PSU of its own.
    fpc : each respondent's stratum's **population count of PSUs** ``N_h`` (the same on every
        row of a stratum, at least the ``n_h`` PSUs sampled there); the variance is then
        multiplied by ``1 - n_h / N_h`` (sampling PSUs without replacement).  A sampling
        fraction ``f_h`` is given as ``fpc = n_h / f_h``.  Default: no correction
        (sampling with replacement, or from a population much larger than the sample).
    lonely_psu : what a stratum with a single PSU contributes to the variance, as R's
        ``options(survey.lonely.psu = ...)``: ``"fail"`` (the default: refuse, naming the
        stratum), ``"certainty"`` and ``"remove"`` (nothing: a certainty PSU, or the stratum
        left out of the variance), ``"adjust"`` (the PSU's linearized total centred at the
        population mean, zero, not its stratum's: for a mean or a ratio that is the mean of
        all PSU totals; conservative), ``"average"`` (the other strata's
        variance scaled up by ``H / H_ok``, as if the lonely strata had their average).

    Notes
    -----
    ``n`` is the number of respondents; ``df`` (``#PSUs - #strata``) the degrees of
    freedom of the design's variance, as R's ``degf``.

    Examples
    --------
    >>> d = SampleDesign(weights=[2.0, 2.0, 4.0, 4.0], strata=[1, 1, 2, 2])
    >>> d.n, d.n_strata, d.n_psu, d.df
    (4, 2, 4, 2)
    """

    weights: Any = None
    strata: Any = None
    psu: Any = None
    fpc: Any = None
    lonely_psu: str = "fail"
    n: int = field(init=False)
    calibration: tuple[IntArray, ...] = field(init=False, default=(), repr=False)
    stratum_index: IntArray = field(init=False, repr=False)
    psu_index: IntArray = field(init=False, repr=False)
    psu_stratum: IntArray = field(init=False, repr=False)
    psu_per_stratum: npt.NDArray[np.int64] = field(init=False, repr=False)
    sampling_fraction: FloatArray = field(init=False, repr=False)
    strata_labels: npt.NDArray[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        v.choice("lonely_psu", self.lonely_psu, LONELY_PSU_RULES)
        n = self._size()
        weights = np.ones(n) if self.weights is None else as_weights("weights", self.weights, n)
        set_ = object.__setattr__
        set_(self, "weights", weights)
        set_(self, "n", n)
        if self.strata is None:
            strata: IntArray = np.zeros(n, dtype=np.intp)
            labels: npt.NDArray[Any] = np.array([0])
        else:
            strata, labels = as_labels("strata", self.strata, n)
        set_(self, "stratum_index", strata)
        set_(self, "strata_labels", labels)
        if self.psu is None:
            psu_index = np.arange(n, dtype=np.intp)
            psu_stratum = strata
        else:
            codes, psu_labels = as_labels("psu", self.psu, n)
            key = strata.astype(np.int64) * len(psu_labels) + codes
            fast = integer_codes(key)  # (codes, labels), as np.unique's (labels, codes)
            inverse, uniq = fast if fast is not None else np.unique(key, return_inverse=True)[::-1]
            psu_index = np.asarray(inverse, dtype=np.intp).reshape(-1)
            psu_stratum = np.asarray(uniq // len(psu_labels), dtype=np.intp)
        set_(self, "psu_index", psu_index)
        set_(self, "psu_stratum", psu_stratum)
        counts = np.bincount(psu_stratum, minlength=len(labels)).astype(np.int64)
        set_(self, "psu_per_stratum", counts)
        set_(self, "sampling_fraction", self._fractions(counts, labels))
        lonely = np.flatnonzero(counts == 1)
        if lonely.size and self.lonely_psu == "fail":
            raise DataError(
                f"stratum {plain(labels[lonely[0]])!r} has only one PSU ({lonely.size} such "
                "strata): its variance cannot be estimated; choose `lonely_psu` from "
                f"{', '.join(repr(r) for r in LONELY_PSU_RULES[1:])} (R's survey.lonely.psu)."
            )
        for arr in (strata, psu_index, psu_stratum, counts):
            arr.setflags(write=False)

    def _size(self) -> int:
        for name in ("weights", "strata", "psu", "fpc"):
            value = getattr(self, name)
            if value is not None:
                arr = np.asarray(value)
                if arr.ndim != 1:
                    raise DataError(
                        f"`{name}` must be a 1-D array, got an array of shape {arr.shape}."
                    )
                if arr.size == 0:
                    raise DataError(f"`{name}` must not be empty.")
                return int(arr.size)
        raise ParameterError(
            "a SampleDesign needs at least one of `weights`, `strata`, `psu`, `fpc` (one "
            "entry per respondent), got none."
        )

    def _fractions(self, counts: npt.NDArray[np.int64], labels: npt.NDArray[Any]) -> FloatArray:
        """``f_h = n_h / N_h`` per stratum (0 without ``fpc``)."""
        h = len(labels)
        if self.fpc is None:
            return np.zeros(h)
        arr = np.asarray(self.fpc)
        if arr.ndim != 1 or arr.size != self.n:
            raise DataError(
                f"`fpc` must have one entry per respondent ({self.n}), got shape {arr.shape}."
            )
        if arr.dtype.kind not in "biuf" or not np.isfinite(arr.astype(float)).all():
            raise DataError("`fpc` must hold finite numbers (population PSU counts N_h).")
        pop = arr.astype(np.float64)
        lo = np.full(h, np.inf)
        hi = np.full(h, -np.inf)
        np.minimum.at(lo, self.stratum_index, pop)
        np.maximum.at(hi, self.stratum_index, pop)
        differ = np.flatnonzero(lo != hi)
        if differ.size:
            j = differ[0]
            raise DataError(
                f"`fpc` must be the same on every row of a stratum (its population count of "
                f"PSUs), got values from {lo[j]:g} to {hi[j]:g} in stratum {plain(labels[j])!r}."
            )
        short = np.flatnonzero(lo < counts)
        if short.size:
            j = short[0]
            raise DataError(
                f"`fpc` must be at least the number of PSUs sampled in the stratum (the "
                f"population count of PSUs N_h >= n_h), got N_h = {lo[j]:g} < n_h = "
                f"{counts[j]} in stratum {plain(labels[j])!r}."
            )
        out = counts / lo
        out.setflags(write=False)
        return np.asarray(out, dtype=np.float64)

    # ---- sizes

    @property
    def n_strata(self) -> int:
        """Number of strata."""
        return int(self.psu_per_stratum.size)

    @property
    def n_psu(self) -> int:
        """Number of PSUs (respondents, when no ``psu`` is given)."""
        return int(self.psu_stratum.size)

    @property
    def df(self) -> int:
        """Degrees of freedom of the variance: ``#PSUs - #strata`` (R's ``degf``)."""
        return self.n_psu - self.n_strata

    @cached_property
    def population(self) -> float:
        """The estimated population size, the sum of the weights."""
        return float(np.sum(self.weights))

    @property
    def clustered(self) -> bool:
        """Whether some PSU holds more than one respondent."""
        return self.n_psu < self.n

    @property
    def equal_probability(self) -> bool:
        """Whether every weight is the same."""
        w = self.weights
        return bool(np.all(w == w[0]))

    @property
    def variance_method(self) -> str:
        """How the variance is computed (printed with every estimate)."""
        return "Taylor linearization"

    def describe(self) -> str:
        """One line: respondents, strata, PSUs, fpc, lonely-PSU rule."""
        fpc = "with fpc" if self.fpc is not None else "no fpc"
        return (
            f"{self.n} respondents, {self.n_strata} strata, {self.n_psu} PSUs, {fpc}, "
            f"lonely PSU: {self.lonely_psu}"
        )

    def with_weights(
        self, weights: Any, calibration: tuple[IntArray, ...] | None = None
    ) -> SampleDesign:
        """The same strata, PSUs and fpc with new ``weights`` (the weighting functions'
        result); ``calibration``: the codes of the margins the weights are calibrated to
        (post-strata, raking margins), whose totals the variance then treats as known
        (default: none)."""
        out = SampleDesign(weights, self.strata, self.psu, self.fpc, self.lonely_psu)
        object.__setattr__(out, "calibration", tuple(calibration or ()))
        return out
