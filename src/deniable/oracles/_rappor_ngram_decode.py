"""RAPPOR over n-grams, the server's side: strings nobody listed (Fanti, Pihur & Erlingsson
2016, "Building a RAPPOR with the Unknown", sec. 4).  The client is
``deniable.oracles._rappor_ngram``.

1. **N-grams per position.**  The n-gram reports of position ``j`` are tallied and decoded
   by the candidate decoder (:meth:`Rappor.decode <deniable.oracles.Rappor.decode>`)
   against every n-gram of the domain (``K`` of them); an n-gram is *significant* when its
   one-sided p-value is below ``alpha / (G K)``: Bonferroni over the ``K`` n-grams and the
   ``G`` positions, so an absent n-gram is significant anywhere with probability at most
   about ``alpha``.
2. **Pairs of positions.**  For each pair ``j1 < j2``, the devices that reported it give
   two reports ``r1, r2``; with ``S1``, ``S2`` the significant n-grams of the two positions
   plus one category "other", the joint distribution ``pi_ab`` of the pair is estimated by
   EM (the paper's sec. 4.1) from the likelihood of each report given its n-gram,

       P(r | a) = prod_i q*^(r_i B_i) (1 - q*)^((1 - r_i) B_i) p*^(r_i (1 - B_i))
                  (1 - p*)^((1 - r_i)(1 - B_i)),

   ``B`` the Bloom filter of ``a`` in the device's cohort, ``p*``, ``q*`` the one-report
   channel of a bit (PRR then IRR).  For "other" each bit is set with ``b = 1 - (1 -
   1/m)^h`` independently (a random string's Bloom filter, approximately): ``P(S_i = 1) = b
   q* + (1 - b) p*``.  EM: ``pi_ab <- pi_ab mean_d P(r1_d | a) P(r2_d | b) / sum_a'b'
   pi_a'b' P(r1_d | a') P(r2_d | b')``, from uniform, accelerated by SQUAREM (Varadhan &
   Roland 2008) with every cell kept positive, then Newton's method on the cells the
   maximum keeps, until the concave log-likelihood is certified within ``1e-12`` a device
   of its maximum (``deniable.oracles._rappor_ngram_em``).  An *edge* joins ``a`` and
   ``b`` when ``pi_ab >= edge_threshold``.  The joint estimates only link n-grams (each
   pair is seen by about ``2 pairs n / (G (G - 1))`` devices, and "other" is an
   approximation): frequencies come from step 4.
3. **Candidates.**  A candidate is one significant n-gram per position, every two of them
   joined by an edge (a ``G``-clique of the ``G``-partite graph, the paper's step), whose
   padding is only at the end; the padding is dropped.  A pair of positions no device
   reported constrains nothing.
4. **Strings.**  With full-string reports, the candidates are decoded by the candidate
   decoder against them at level ``alpha`` (Bonferroni over the candidates).  The n-gram
   reports' noise is independent of the full reports', so whatever candidates steps 1-3
   give, an absent string is discovered with probability at most about ``alpha``: that is
   the false-discovery rule.  Without full-string reports the candidates are returned
   without frequencies.

Recall against false discoveries: a string is found only if each of its n-grams is
significant (its frequency above about ``z(alpha / (G K)) se``, ``se`` growing with the
domain ``K`` through ``sqrt`` of the reports per position ``2 pairs n / G``) and every pair
of them has a joint estimate of at least ``edge_threshold``; a lower ``edge_threshold``
keeps rarer strings and lets more chains through to step 4 (more candidates: a stricter
``alpha / K`` there), a larger ``alpha`` finds rarer n-grams and admits more noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from deniable.common import validation as v
from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._bits import row_popcounts
from deniable.oracles._rappor import Rappor, RapporReports
from deniable.oracles._rappor_ngram_em import joint_em
from deniable.oracles._rappor_ngram_result import NgramDiscovery

__all__ = [
    "NgramDiscovery",
    "NgramReports",
    "PairLabels",
    "PairLikelihoods",
    "discover",
    "discover_tallies",
    "pair_likelihoods",
]

FloatArray = npt.NDArray[np.float64]
#: Report-by-label cells of one block of ``_loglik`` (each ``m / 8`` bytes).
_ROWS = 1 << 18


@dataclass(frozen=True)
class NgramReports:
    """What devices sent: ``positions`` (``(n, pairs, 2)`` position pairs ``j1 < j2``),
    ``ngrams`` (the ``2 n pairs`` n-gram reports, device by device, each pair's ``j1`` report
    then its ``j2`` one) and ``full`` (the ``n`` full-string reports, or None)."""

    positions: npt.NDArray[np.int64]
    ngrams: RapporReports
    full: RapporReports | None

    def __len__(self) -> int:
        return int(self.positions.shape[0])


class _Model(Protocol):
    """What the server reads of :class:`~deniable.oracles.RapporNgram` (the client's
    module imports this one)."""

    @property
    def ngram(self) -> Rappor: ...
    @property
    def full(self) -> Rappor | None: ...
    @property
    def pairs(self) -> int: ...
    @property
    def pad(self) -> str: ...
    @property
    def positions(self) -> int: ...
    @property
    def position_pairs(self) -> npt.NDArray[np.int64]: ...
    @property
    def domain(self) -> tuple[str, ...]: ...


def _checked(model: _Model, reports: Any) -> NgramReports:
    if not isinstance(reports, NgramReports):
        raise ParameterTypeError(
            f"`reports` must be NgramReports (RapporNgram.randomize), got {type(reports).__name__}."
        )
    for name in ("ngrams", "full"):
        part = getattr(reports, name)
        if not isinstance(part, RapporReports) and not (name == "full" and part is None):
            raise ParameterTypeError(
                f"`reports.{name}` must be RapporReports, got {type(part).__name__}."
            )
    pos = np.asarray(reports.positions)
    n = pos.shape[0] if pos.ndim == 3 else -1
    if pos.shape != (n, model.pairs, 2) or pos.dtype.kind not in "iu" or n < 1:
        raise DataError(
            f"`reports.positions` must be an integer array of shape (n >= 1, pairs = "
            f"{model.pairs}, 2), got dtype {pos.dtype} and shape {pos.shape}."
        )
    ordered = (pos[..., 0] >= 0) & (pos[..., 0] < pos[..., 1])
    if not ordered.all() or pos.max() >= model.positions:
        top = model.positions - 1
        raise DataError(f"`reports.positions` must hold pairs j1 < j2 in 0..{top}.")
    if len(reports.ngrams) != 2 * model.pairs * n:
        raise DataError(
            f"`reports.ngrams` must hold 2 pairs n = {2 * model.pairs * n} reports, got "
            f"{len(reports.ngrams)}."
        )
    if (reports.full is None) != (model.full is None):
        want = f"{n} full-string reports"
        if model.full is None:
            want = "None (the model has no full-string mechanism)"
        raise DataError(f"`reports.full` must be {want}, got {type(reports.full).__name__}.")
    if reports.full is not None and len(reports.full) != n:
        raise DataError(f"`reports.full` must hold {n} reports, got {len(reports.full)}.")
    return NgramReports(pos.astype(np.int64), reports.ngrams, reports.full)


def discover(
    model: _Model,
    reports: Any,
    *,
    alpha: float = 0.05,
    edge_threshold: float = 0.02,
    max_candidates: int = 10_000,
) -> NgramDiscovery:
    """Steps 1-4 of the module docstring on ``reports`` of ``model``."""
    rep = _checked(model, reports)
    flat, r = rep.positions.reshape(-1), model.ngram
    tallies = [r.tally(rep.ngrams[np.flatnonzero(flat == j)]) for j in range(model.positions)]
    full = None if model.full is None or rep.full is None else model.full.tally(rep.full)
    return discover_tallies(
        model, len(rep), tallies, full, lambda pairs: pair_likelihoods(model, rep, pairs),
        alpha=alpha, edge_threshold=edge_threshold, max_candidates=max_candidates,
    )  # fmt: skip


#: Per report of a pair of positions, ``ln P(r | a)`` of its two n-gram reports (``_loglik``).
PairLikelihoods = tuple[FloatArray, FloatArray]
#: The pairs of positions step 2 links, each with its two positions' significant labels.
PairLabels = Mapping[tuple[int, int], tuple[list[str], list[str]]]


def pair_likelihoods(
    model: _Model, reports: NgramReports, pairs: PairLabels
) -> dict[tuple[int, int], PairLikelihoods]:
    """For each pair ``(j1, j2)`` of ``pairs``, the likelihoods of its devices' two n-gram
    reports given each of its labels then "other" (``(D, A + 1)`` each, devices in the
    order of ``reports``; ``D = 0`` when no device reported the pair).  The Bloom filters
    of a list of labels are built once and reused by every pair that holds it."""
    pair_of = np.asarray(reports.positions).reshape(-1, 2)
    masks: dict[tuple[str, ...], _Masks] = {}

    def masks_of(labels: list[str]) -> _Masks:
        key = tuple(labels)
        if key not in masks:
            masks[key] = _masks(model.ngram, labels)
        return masks[key]

    out = {}
    for (j1, j2), (first, second) in pairs.items():
        rows = np.flatnonzero((pair_of[:, 0] == j1) & (pair_of[:, 1] == j2))
        if not rows.size:
            out[(j1, j2)] = (np.empty((0, len(first) + 1)), np.empty((0, len(second) + 1)))
            continue
        r = model.ngram
        out[(j1, j2)] = (_loglik(r, reports.ngrams[2 * rows], masks_of(first)),
                         _loglik(r, reports.ngrams[2 * rows + 1], masks_of(second)))  # fmt: skip
    return out


def discover_tallies(
    model: _Model,
    n: int,
    tallies: Sequence[Tally],
    full: Tally | None,
    loglik: Callable[[PairLabels], Mapping[tuple[int, int], PairLikelihoods]],
    *,
    alpha: float = 0.05,
    edge_threshold: float = 0.02,
    max_candidates: int = 10_000,
) -> NgramDiscovery:
    """Steps 1-4 from what they read of ``n`` devices' reports: each position's n-gram
    tally (``tallies``), the full-string tally (``full``), and ``loglik(pairs)``, called
    once: :func:`pair_likelihoods` of every device's reports, in one order.  The same
    numbers whether the reports are in this process or on a cluster."""
    a = v.probability("alpha", alpha, low_open=True, high_open=True)
    tau = v.probability("edge_threshold", edge_threshold, low_open=True, high_open=True)
    cap = v.integer("max_candidates", max_candidates, minimum=1, maximum=10**6)
    g, r = model.positions, model.ngram
    estimates, significant = [], []
    for j in range(g):  # step 1
        labels = [f"{j}:{w}" for w in model.domain]
        if not _reports_in(r, tallies[j]):
            raise DataError(
                f"`reports` must hold n-gram reports of every position, got none of {j}."
            )
        est = r.decode(tallies[j], labels, alpha=a / g)
        estimates.append(est)
        significant.append(np.flatnonzero(est.reported))
    edges: dict[tuple[int, int], npt.NDArray[np.bool_]] = {}
    wanted = {
        (j1, j2): ([f"{j1}:{model.domain[k]}" for k in significant[j1]],
                   [f"{j2}:{model.domain[k]}" for k in significant[j2]])
        for j1, j2 in model.position_pairs.tolist() if significant[j1].size and significant[j2].size
    }  # fmt: skip
    rows = loglik(wanted) if wanted else {}
    for (j1, j2), (l1, l2) in rows.items():  # step 2
        if l1.shape[0]:  # a pair no device reported constrains nothing
            joint = joint_em(l1, l2)
            edges[(j1, j2)] = joint[: significant[j1].size, : significant[j2].size] >= tau
    chains = _chains([s.size for s in significant], edges, cap)  # step 3
    strings: dict[str, None] = {}
    for chain in chains.tolist():
        padded = "".join(model.domain[significant[j][k]] for j, k in enumerate(chain))
        s = padded.rstrip(model.pad)
        if s and model.pad not in s:
            strings[s] = None
    cand = tuple(strings)
    grams = tuple(tuple(model.domain[k] for k in s) for s in significant)
    nan = np.full(len(cand), math.nan)
    if model.full is None or full is None or not cand:  # no step 4
        none = cand if model.full is None else ()
        return NgramDiscovery(
            none, nan[: len(none)], nan[: len(none)], cand, grams, tuple(estimates), None,
            a, tau, n,
        )  # fmt: skip
    final = model.full.decode(full, list(cand), alpha=a)  # step 4
    idx = np.flatnonzero(final.reported)
    idx = idx[np.argsort(-final.values[idx], kind="stable")]
    return NgramDiscovery(
        tuple(cand[i] for i in idx), final.values[idx], final.se[idx], cand, grams,
        tuple(estimates), final, a, tau, n,
    )  # fmt: skip


def _reports_in(rappor: Rappor, tally: Tally) -> int:
    """The reports a RAPPOR tally counts (its column ``m``: each cohort's reports)."""
    cells = np.asarray(tally.counts).reshape(rappor.cohorts, rappor.m + 1)
    return int(cells[:, rappor.m].sum())


#: A list of labels' Bloom filters in every cohort, packed as reports are (``(cohorts, A,
#: m / 8)`` uint8), and the bits each sets (``(cohorts, A)``).
_Masks = tuple[npt.NDArray[np.uint8], FloatArray]


def _masks(rappor: Rappor, labels: list[str]) -> _Masks:
    """The packed Bloom filters of ``labels`` in every cohort and their bit counts."""
    x = rappor.design_matrix(labels)  # (cohorts, m, A)
    packed = np.packbits(x.transpose(0, 2, 1), axis=2, bitorder="little")
    return np.ascontiguousarray(packed[:, :, : rappor.width]), x.sum(axis=1, dtype=np.float64)


def _loglik(rappor: Rappor, reports: RapporReports, masks: _Masks) -> FloatArray:
    """``(D, A + 1)``: ``ln P(r_d | a)`` of each report and n-gram, then of "other", up to
    a term common to every column of a row (the likelihood of an empty Bloom filter).

    The set bits of report ``d`` inside the Bloom filter of ``a`` are the popcount of the
    packed report AND the packed filter (an integer, as the 0/1 product it replaces), in
    row blocks of ``_ROWS`` reports: no per-cohort or per-report loop."""
    m = rappor.m
    packed, xsum = masks
    tiny = 1e-12
    ps = min(max(rappor.p_star, tiny), 1 - tiny)
    qs = min(max(rappor.q_star, tiny), 1 - tiny)
    on, off = math.log(qs / ps), math.log((1 - qs) / (1 - ps))
    bits = np.ascontiguousarray(reports.bits, dtype=np.uint8)
    cohorts = np.asarray(reports.cohorts)
    d, a, w = bits.shape[0], packed.shape[1], packed.shape[2]
    out = np.empty((d, a + 1))
    block = max(1, _ROWS // max(1, a))
    for start in range(0, d, block):
        sl = slice(start, start + block)
        both = bits[sl, None, :] & packed[cohorts[sl]]  # (rows, A, m / 8)
        hits = row_popcounts(both.reshape(-1, w)).reshape(-1, a).astype(np.float64)
        out[sl, :-1] = hits * (on - off) + xsum[cohorts[sl]] * off
    b = 1 - (1 - 1 / m) ** rappor.h
    po = b * qs + (1 - b) * ps
    ones = row_popcounts(bits).astype(np.float64)
    out[:, -1] = ones * math.log(po / ps) + (m - ones) * math.log((1 - po) / (1 - ps))
    return out


def _chains(
    sizes: list[int], edges: dict[tuple[int, int], npt.NDArray[np.bool_]], cap: int
) -> npt.NDArray[np.int64]:
    """``(chains, G)``: one significant n-gram index per position, every two joined by an
    edge (a pair without reports constrains nothing), built position by position."""
    partial = np.zeros((1, 0), dtype=np.int64)
    for j, size in enumerate(sizes):
        grown = np.concatenate(
            [np.repeat(partial, size, axis=0), np.tile(np.arange(size), partial.shape[0])[:, None]],
            axis=1,
        )
        keep = np.ones(grown.shape[0], dtype=np.bool_)
        for i in range(j):
            if (i, j) in edges:
                keep &= edges[(i, j)][grown[:, i], grown[:, j]]
        partial = grown[keep]
        if partial.shape[0] > cap:
            raise ParameterError(
                f"`max_candidates` ({cap}) is exceeded: {partial.shape[0]} chains of n-grams "
                f"by position {j}; raise `edge_threshold` or `max_candidates`."
            )
    return partial
