"""The items of a joint estimate: each randomized-response item's reports de-biased to
per-respondent indicators of its true value, and (where the item has a dense channel whose
rows are its reports) the report codes and the channel matrix the EM algorithm needs.

For one item with channel ``P[report, truth]`` (square and invertible), the de-biased
indicator of respondent ``i`` is the column ``P^{-1} e_{r_i}`` of the inverse: ``E[P^{-1}
e_r | x] = P^{-1} P e_x = e_x``.  Several items are randomized independently given the
true answers, so the row-wise Kronecker product of the items' de-biased indicators is
unbiased for the joint indicator ``e_{x_1} (x) e_{x_2} (x) ...``: it is the joint report
indicator mapped through the inverse of the Kronecker product of the channels
(``(P_1 (x) P_2)^{-1} = P_1^{-1} (x) P_2^{-1}``).  The items' de-biasing is
:func:`deniable.sampling.debiased_reports`'s, so a margin of the joint estimate is the
single-item estimate of that item.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import DenseChannel, SymmetricChannel
from deniable.exceptions import DataError, DeniableError, ParameterError, ParameterTypeError
from deniable.sampling import debiased_reports

__all__ = ["MAX_JOINT_CELLS", "Item", "joint_codes", "joint_scores", "prepare_items"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: Largest number of joint cells (product of the items' numbers of values).
MAX_JOINT_CELLS = 4096
#: Largest respondents x joint cells held as one dense array of de-biased joint indicators.
MAX_SCORE_CELLS = 10**8
#: A channel whose condition number exceeds this is treated as singular.
MAX_CONDITION = 1e12


@dataclass(frozen=True)
class Item:
    """One item: its name, number of values ``k``, de-biased indicators ``(n, k)`` and,
    where it has a dense channel indexed by its reports, the codes and the matrix."""

    name: str
    k: int
    scores: FloatArray
    codes: IntArray | None
    channel: FloatArray | None
    why_no_channel: str = ""


def _label(i: int, mechanism: Any) -> str:
    return f"`mechanisms[{i}]` ({getattr(mechanism, 'name', type(mechanism).__name__)!r})"


def _dense(i: int, mechanism: Any, reports: Any) -> tuple[IntArray | None, FloatArray | None, str]:
    channel = getattr(mechanism, "channel", None)
    if not isinstance(channel, DenseChannel | SymmetricChannel):
        kind = type(channel).__name__
        return None, None, f"item {i} has no dense channel indexed by its reports ({kind})"
    matrix = np.asarray(channel.dense(), dtype=np.float64)
    s = np.linalg.svd(matrix, compute_uv=False)
    cond = math.inf if s[-1] <= 0 else float(s[0] / s[-1])
    if not cond <= MAX_CONDITION:
        raise ParameterError(
            f"{_label(i, mechanism)} must have an invertible channel (condition number at "
            f"most {MAX_CONDITION:g}), got condition number {cond:.3g}: its reports carry "
            "(almost) no information about the answer."
        )
    codes = v.reports_array(f"reports[{i}]", reports, categories=matrix.shape[0])
    return np.asarray(codes, dtype=np.intp), matrix, ""


def prepare_items(mechanisms: Any, reports: Any) -> list[Item]:
    """The items of ``mechanisms`` (at least 2) and ``reports`` (one array per item, all of
    one length), checked."""
    if isinstance(mechanisms, str | bytes) or not isinstance(mechanisms, Sequence):
        raise ParameterTypeError(
            "`mechanisms` must be a list of at least 2 designs (one per item), got "
            f"{type(mechanisms).__name__}."
        )
    if len(mechanisms) < 2:
        raise DataError(
            f"`mechanisms` must hold at least 2 items for a joint estimate, got {len(mechanisms)}."
        )
    if hasattr(reports, "columns") and hasattr(reports, "iloc"):  # a pandas DataFrame
        reports = [reports.iloc[:, j].to_numpy() for j in range(reports.shape[1])]
    elif isinstance(reports, np.ndarray) and reports.ndim == 2:
        reports = list(reports.T)  # one column per item
    if isinstance(reports, str | bytes) or not hasattr(reports, "__len__"):
        raise ParameterTypeError(
            f"`reports` must be a list of {len(mechanisms)} arrays of reports (one per item) "
            f"or a 2-D array with one column per item, got {type(reports).__name__}."
        )
    if len(reports) != len(mechanisms):
        raise DataError(
            f"`reports` must hold one array of reports per item ({len(mechanisms)}), got "
            f"{len(reports)}."
        )
    items: list[Item] = []
    for i, (mechanism, rep) in enumerate(zip(mechanisms, reports, strict=True)):
        if getattr(mechanism, "n_groups", 1) != 1:
            raise DataError(
                f"{_label(i, mechanism)} must be a one-group design: a two-group design has "
                "no per-report de-biased value (its prevalence needs both groups' shares), "
                "so it cannot enter a joint estimate."
            )
        try:
            y = debiased_reports(mechanism, rep)
        except DeniableError as exc:
            raise type(exc)(f"{_label(i, mechanism)}: {exc}") from None
        if y.ndim == 1:
            y = np.stack([1.0 - y, y], axis=1)
        codes, matrix, why = _dense(i, mechanism, rep)
        if matrix is not None and matrix.shape[1] != y.shape[1]:
            codes, matrix, why = None, None, f"item {i}'s channel has other inputs than values"
        name = str(getattr(mechanism, "name", type(mechanism).__name__))
        items.append(Item(name, int(y.shape[1]), y, codes, matrix, why))
    sizes = [it.scores.shape[0] for it in items]
    if len(set(sizes)) > 1:
        listed = ", ".join(f"item {i}: {s}" for i, s in enumerate(sizes))
        raise DataError(
            f"`reports` must hold one report per respondent for every item (the same "
            f"length), got {listed}."
        )
    cells = math.prod(it.k for it in items)
    if cells > MAX_JOINT_CELLS:
        raise DataError(
            f"the items have {cells} joint cells (the product of their numbers of values), "
            f"more than {MAX_JOINT_CELLS}: estimate fewer items at a time."
        )
    if cells * sizes[0] > MAX_SCORE_CELLS:
        raise DataError(
            f"{sizes[0]} respondents x {cells} joint cells is too many for one joint estimate "
            f"(at most {MAX_SCORE_CELLS:g}): estimate fewer items or respondents at a time."
        )
    return items


def joint_scores(items: Sequence[Item]) -> FloatArray:
    """The de-biased joint indicators ``(n, prod k)``: the row-wise Kronecker product of the
    items' (first item slowest, as ``numpy.kron``)."""
    z = items[0].scores
    for it in items[1:]:
        z = (z[:, :, None] * it.scores[:, None, :]).reshape(z.shape[0], -1)
    return np.asarray(z, dtype=np.float64)


def joint_codes(items: Sequence[Item]) -> tuple[IntArray, FloatArray] | None:
    """The joint report code of each respondent and the Kronecker product of the channels
    (``None`` unless every item has a dense channel)."""
    if any(it.codes is None or it.channel is None for it in items):
        return None
    code = np.zeros(items[0].scores.shape[0], dtype=np.intp)
    matrix: FloatArray = np.ones((1, 1))
    for it in items:
        assert it.codes is not None and it.channel is not None
        code = code * it.channel.shape[0] + it.codes
        matrix = np.asarray(np.kron(matrix, it.channel), dtype=np.float64)
    return code, np.asarray(matrix, dtype=np.float64)
