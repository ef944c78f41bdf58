"""The machinery shared by the audits of :mod:`deniable.audit`: one-sided Clopper-Pearson
bounds, sampling a mechanism on fixed inputs, counting output events, and turning the counts
into an :class:`~deniable.audit.AuditResult` (the Bonferroni correction is explained in
:mod:`deniable.audit`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from deniable.audit._result import AuditResult
from deniable.common import validation as v
from deniable.designs import Design
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.randomness import CHUNK, resolve_rng
from deniable.results import Table, beta_quantile_bounds

__all__ = ["clopper_pearson_bounds"]


# --------------------------------------------------------------------------- bounds


def clopper_pearson_bounds(
    counts: npt.ArrayLike, n: int, alpha: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """One-sided Clopper-Pearson bounds at error ``alpha`` each, vectorized over ``counts``:
    :func:`~deniable.results.beta_quantile_bounds` (the formulas are there) with its inputs
    checked, ``n >= 1``, ``alpha`` in ``(0, 1)`` and every count in ``[0, n]``.

    >>> lo, hi = clopper_pearson_bounds([3], 10, 0.025)  # a two-sided 95% interval
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.0667, 0.6525)
    """
    c = np.asarray(counts, dtype=np.float64)
    size = v.integer("n", n, minimum=1)
    a = v.probability("alpha", alpha, low_open=True, high_open=True)
    if np.any(c < 0) or np.any(c > size):
        raise DataError(f"`counts` must be in [0, n] = [0, {size}], got {c.min()}..{c.max()}.")
    return beta_quantile_bounds(c, size, a)


# --------------------------------------------------------------------------- sampling


def _sample(
    mechanism: Any, x: Any, gen: np.random.Generator, trials: int, vectorized: bool
) -> npt.NDArray[Any]:
    if isinstance(mechanism, Design):
        out = mechanism.randomize(np.full(trials, x), rng=gen)
    elif vectorized:
        out = np.asarray(mechanism(x, gen, trials))
    else:  # one call per trial: slow, but any callable works
        out = np.asarray([mechanism(x, gen) for _ in range(trials)])
    if out.ndim == 0 or out.shape[0] != trials:
        raise DataError(
            f"the mechanism must return one report per trial ({trials}), got an array of "
            f"shape {out.shape}."
        )
    return out


def _label(value: Any) -> str:
    arr = np.asarray(value)
    return f"report = {arr.tolist()}"


def _event_items(event: Any) -> tuple[list[str], list[Any]]:
    """The labels and the events of ``event`` (one event or a list of them), checked."""
    items: list[Any]
    if callable(event) or isinstance(event, set | frozenset):
        items = [event]
    elif isinstance(event, Sequence) and not isinstance(event, str):
        items = list(event)
    else:
        raise ParameterTypeError(
            "`event` must be None, a callable (reports -> boolean mask), a set of report "
            f"values, or a list of these, got {type(event).__name__}."
        )
    if not items:
        raise ParameterError("`event` must hold at least one event, got an empty list.")
    labels = []
    for j, ev in enumerate(items):
        if callable(ev):
            labels.append(getattr(ev, "__name__", f"event[{j}]").replace("<lambda>", f"event[{j}]"))
        elif isinstance(ev, set | frozenset):
            labels.append(f"report in {sorted(ev, key=repr)}")
        else:
            raise ParameterTypeError(
                f"`event[{j}]` must be a callable (reports -> boolean mask) or a set of report "
                f"values, got {type(ev).__name__}."
            )
    return labels, items


def _count_events(s: npt.NDArray[Any], items: list[Any]) -> npt.NDArray[np.int64]:
    """How many of the reports ``s`` fall in each event."""
    counts = np.zeros(len(items), dtype=np.int64)
    for j, ev in enumerate(items):
        if callable(ev):
            mask = np.asarray(ev(s))
        else:
            if s.ndim != 1:
                raise ParameterError(
                    f"`event[{j}]`: a set of values needs scalar reports; these have shape "
                    f"{s.shape[1:]}; give a callable instead."
                )
            mask = np.isin(s, list(ev))
        if mask.dtype != np.bool_ or mask.shape != (s.shape[0],):
            raise DataError(
                f"`event[{j}]` must return a boolean mask of shape ({s.shape[0]},), got "
                f"dtype {mask.dtype} and shape {mask.shape}."
            )
        counts[j] = int(np.count_nonzero(mask))
    return counts


#: Bytes of reports an audit holds at once: the trials of one input are drawn and counted
#: in chunks of about this size, each a multiple of the randomizers' block of words
#: (:data:`~deniable.randomness.CHUNK` reports), so the draws are those of one call.
CHUNK_BYTES = 1 << 26
#: Trials in an audit's first chunk (the size of a report is known after it).
FIRST_CHUNK = CHUNK


def _chunked_counts(
    mechanism: Any,
    x: Any,
    gen: np.random.Generator,
    trials: int,
    vectorized: bool,
    count: Any,
) -> npt.NDArray[np.int64]:
    """``count(reports)`` added over the trials of input ``x``, drawn a chunk at a time:
    memory one chunk (about :data:`CHUNK_BYTES`) whatever ``trials``."""
    total: npt.NDArray[np.int64] | None = None
    done, size = 0, min(trials, FIRST_CHUNK)
    while done < trials:
        m = min(size, trials - done)
        out = _sample(mechanism, x, gen, m, vectorized)
        part = np.asarray(count(out), dtype=np.int64)
        total = part if total is None else total + part
        done += m
        per_report = max(1, out.nbytes // max(m, 1), 8 * (out.size // max(m, 1)))
        size = max(1, CHUNK_BYTES // per_report // CHUNK) * CHUNK
    assert total is not None
    return total


def _event_masks(
    samples: Sequence[npt.NDArray[Any]], event: Any, design: Design | None
) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Counts ``[input, event]`` and event labels."""
    if event is None:
        if design is not None:
            values = np.arange(design.n_reports)
            counts = np.stack(
                [np.bincount(s.astype(np.int64), minlength=design.n_reports) for s in samples]
            )
            return [_label(r) for r in values], counts
        flat = [s.reshape(s.shape[0], -1) for s in samples]
        uniq, inverse = np.unique(np.concatenate(flat), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        counts = np.zeros((len(samples), uniq.shape[0]), dtype=np.int64)
        start = 0
        for i, s in enumerate(flat):
            counts[i] = np.bincount(inverse[start : start + s.shape[0]], minlength=uniq.shape[0])
            start += s.shape[0]
        first = samples[0]
        labels = [_label(u.reshape(first.shape[1:]) if first.ndim > 1 else u[0]) for u in uniq]
        return labels, counts
    labels, items = _event_items(event)
    return labels, np.stack([_count_events(s, items) for s in samples])


#: The most (pair, event) rows an audit's events table lists; past it, the table lists each
#: event's worst pair (one row per event).
MAX_EVENT_ROWS = 4096


def _evaluate(
    counts: npt.NDArray[np.int64],
    labels: list[str],
    names: list[str],
    pairs: list[tuple[int, int]] | None,
    *,
    trials: int,
    level: float,
    claimed: float,
    seed: int | None,
    delta: float = 0.0,
) -> AuditResult:
    """The audit's result from the counts ``[input, event]``, over ``pairs`` of inputs (None:
    every pair, computed in O(inputs x events) time and memory whatever their number)."""
    n_inputs, m = counts.shape
    # every one-sided bound (lower and upper, each input used, each event) at alpha / (2 k m)
    alpha = (1 - level) / (2 * n_inputs * m)
    lo, hi = clopper_pearson_bounds(counts.reshape(-1), trials, alpha)
    lo, hi = lo.reshape(counts.shape), hi.reshape(counts.shape)
    with np.errstate(divide="ignore"):
        # (eps, delta)-DP: p_i <= e^eps p_j + delta, so ln((p_i - delta) / p_j) <= eps
        log_lo, log_hi = np.log(np.maximum(lo - delta, 0.0)), np.log(hi)
    n_pairs = n_inputs * (n_inputs - 1) // 2 if pairs is None else len(pairs)
    bounds = _Bounds(counts, log_lo, log_hi, labels, names)
    if n_pairs * m > MAX_EVENT_ROWS and pairs is None:
        best, best_label, best_pair, emp, table = _every_pair(bounds)
    else:
        every = [(a, b) for a in range(n_inputs) for b in range(a + 1, n_inputs)]
        best, best_label, best_pair, emp, table = _listed_pairs(
            bounds, every if pairs is None else pairs
        )
    table = replace(table, title=f"audit events ({trials} trials per input, confidence {level:g})")
    return AuditResult(
        claimed_epsilon=claimed,
        lower_bound=max(0.0, best),
        empirical_epsilon=emp,
        level=level,
        trials=trials,
        seed=seed,
        worst_event=best_label,
        worst_pair=best_pair,
        events=table,
        claimed_delta=delta,
    )


_EVENT_COLUMNS = (
    "input a", "input b", "event", "count a", "count b", "lower ln(pa/pb)", "lower ln(pb/pa)",
)  # fmt: skip


class _Bounds(NamedTuple):
    """The counts ``[input, event]``, the logs of their lower and upper bounds, the events'
    labels and the inputs' names: what both ways of pairing the inputs read."""

    counts: npt.NDArray[np.int64]
    log_lo: npt.NDArray[np.float64]
    log_hi: npt.NDArray[np.float64]
    labels: list[str]
    names: list[str]

    def row(self, a: int, b: int, e: int) -> tuple[Any, ...]:
        """The events table's row of inputs ``a``, ``b`` and event ``e``."""
        c, lo, hi = self.counts, self.log_lo, self.log_hi
        return (self.names[a], self.names[b], self.labels[e], int(c[a, e]), int(c[b, e]),
                float(lo[a, e] - hi[b, e]), float(lo[b, e] - hi[a, e]))  # fmt: skip


_Pairing = tuple[float, str, tuple[str, str], float, Table]


def _listed_pairs(bounds: _Bounds, pairs: list[tuple[int, int]]) -> _Pairing:
    """Every listed pair and event, one row each (the events table lists them all)."""
    counts, log_lo, log_hi, labels, names = bounds
    with np.errstate(divide="ignore"):
        log_c = np.log(counts.astype(np.float64))
    best, best_label, best_pair = -math.inf, labels[0], (names[0], names[1])
    emp = 0.0
    rows: list[tuple[Any, ...]] = []
    for a, b in pairs:
        for direction in ((a, b), (b, a)):
            i, j = direction
            lb = log_lo[i] - log_hi[j]  # ln(p_i lower / p_j upper), -inf where c_i = 0
            k = int(np.argmax(lb))
            if lb[k] > best:
                best, best_label, best_pair = float(lb[k]), labels[k], (names[i], names[j])
            seen = (counts[i] > 0) | (counts[j] > 0)
            with np.errstate(invalid="ignore"):
                ratio = np.where(seen, log_c[i] - log_c[j], -math.inf)
            emp = max(emp, float(np.nanmax(np.where(np.isnan(ratio), -math.inf, ratio))))
        rows.extend(bounds.row(a, b, e) for e in range(len(labels)))
    return best, best_label, best_pair, emp, Table(_EVENT_COLUMNS, tuple(rows), title="")


def _two_extremes(
    values: npt.NDArray[np.float64], largest: bool
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Per column, the rows of the largest (or smallest) value and of the runner-up."""
    order = values if largest else -values
    top2 = np.argpartition(-order, 1, axis=0)[:2]
    first_is_0 = np.take_along_axis(order, top2[:1], 0) >= np.take_along_axis(order, top2[1:], 0)
    best = np.where(first_is_0[0], top2[0], top2[1])
    second = np.where(first_is_0[0], top2[1], top2[0])
    return best, second


def _every_pair(bounds: _Bounds) -> _Pairing:
    """Every ordered pair of distinct inputs and every event, in O(inputs x events): for
    each event the largest ``ln(p_i lower) - ln(p_j upper)`` over ``i != j`` comes from the
    two largest lower bounds and the two smallest upper bounds (Bonferroni covers every
    pair either way).  The table lists each event's worst pair."""
    counts, log_lo, log_hi, labels, names = bounds
    m = counts.shape[1]
    cols = np.arange(m)
    i1, i2 = _two_extremes(log_lo, largest=True)
    j1, j2 = _two_extremes(log_hi, largest=False)
    clash = i1 == j1
    alt_i = log_lo[i2, cols] - log_hi[j1, cols]  # when the best i and j coincide
    alt_j = log_lo[i1, cols] - log_hi[j2, cols]
    use_i2 = clash & (alt_i >= alt_j)
    i = np.where(use_i2, i2, i1)
    j = np.where(clash & ~use_i2, j2, j1)
    lb = log_lo[i, cols] - log_hi[j, cols]
    e = int(np.argmax(lb))
    best, best_label, best_pair = float(lb[e]), labels[e], (names[i[e]], names[j[e]])
    # plug-in: the largest ln(c_i / c_j) over events seen under some input (inf when an
    # event is seen under one input and not under another)
    cmax, cmin = counts.max(axis=0), counts.min(axis=0)
    seen = cmax > 0
    emp = 0.0
    if np.any(seen & (cmin == 0)):
        emp = math.inf
    elif np.any(seen):
        emp = max(0.0, float(np.max(np.log(cmax[seen]) - np.log(cmin[seen]))))
    rows = tuple(
        bounds.row(a, b, c) for c, a, b in zip(range(m), i.tolist(), j.tolist(), strict=True)
    )
    n = counts.shape[0]
    note = (
        f"{n} inputs: {n * (n - 1) // 2} pairs x {m} events; each event's row is its worst "
        "pair (input a the one its lower bound favours)"
    )
    return best, best_label, best_pair, emp, Table(_EVENT_COLUMNS, rows, title="", notes=(note,))


def _common(
    claimed_epsilon: Any, trials: Any, seed: Any, level: Any
) -> tuple[float, int, int, float, np.random.Generator]:
    claimed = v.positive("claimed_epsilon", claimed_epsilon, allow_zero=True, allow_inf=True)
    n = v.integer("trials", trials, minimum=1, maximum=100_000_000)
    lvl = v.level(level)
    if seed is None:
        seed = int(np.random.SeedSequence().entropy) % (1 << 63)  # type: ignore[arg-type]
    s = v.integer("seed", seed, minimum=0)
    gen = resolve_rng(s)
    assert isinstance(gen, np.random.Generator)
    return claimed, n, s, lvl, gen
