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
   Roland 2008), until no cell moves by more than ``1e-6`` in a cycle (at most 2000
   cycles).  An *edge* joins ``a`` and ``b`` when ``pi_ab >= edge_threshold``.  The joint
   estimates only link n-grams (each pair is seen by about ``2 pairs n / (G (G - 1))``
   devices, and "other" is an approximation): frequencies come from step 4.
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
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from deniable.common import to_jsonable
from deniable.common import validation as v
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles._rappor import Rappor, RapporReports
from deniable.oracles._rappor_decode import RapporEstimate
from deniable.results import Result, Table, normal_quantile

__all__ = ["NgramDiscovery", "NgramReports", "discover"]

FloatArray = npt.NDArray[np.float64]
_EM_TOL = 1e-6
_EM_ITERATIONS = 2000


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


@dataclass(frozen=True)
class NgramDiscovery(Result):
    """Strings discovered from n-gram reports (``deniable.oracles._rappor_ngram_decode``).

    Attributes
    ----------
    strings : the discovered strings, most frequent first (without full-string reports:
        every candidate, in the order found).
    values, se : their frequencies and standard errors (NaN without full-string reports).
    candidates : every candidate string (step 3).
    ngrams : the significant n-grams of each position (step 1).
    ngram_estimates : each position's decoded n-gram frequencies (a ``RapporEstimate``).
    estimate : the candidates decoded against the full-string reports (None without them).
    alpha : the family-wise level of steps 1 and 4.
    edge_threshold : the joint frequency that joins two n-grams (step 2).
    n : devices.
    """

    strings: tuple[str, ...]
    values: FloatArray = field(repr=False)
    se: FloatArray = field(repr=False)
    candidates: tuple[str, ...]
    ngrams: tuple[tuple[str, ...], ...]
    ngram_estimates: tuple[RapporEstimate, ...] = field(repr=False)
    estimate: RapporEstimate | None = field(repr=False)
    alpha: float
    edge_threshold: float
    n: int

    @property
    def ngram_threshold(self) -> float:
        """The per-n-gram level of step 1: ``alpha / (G K)``."""
        g = len(self.ngram_estimates)
        return self.alpha / (g * len(self.ngram_estimates[0].candidates))

    @property
    def string_threshold(self) -> float | None:
        """The per-candidate level of step 4: ``alpha / candidates`` (None without it)."""
        return None if self.estimate is None else self.estimate.threshold

    def ci(self, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
        """``(low, high)``: the Wald interval ``value -/+ z se`` of each discovered string."""
        z = normal_quantile(level)
        return self.values - z * self.se, self.values + z * self.se

    def table(self) -> Table:
        """The discovered strings: frequency, SE, interval at 95%."""
        low, high = self.ci(0.95)
        rows = tuple(
            (s, float(self.values[i]), float(self.se[i]), float(low[i]), float(high[i]))
            for i, s in enumerate(self.strings)
        )
        found = ", ".join(f"{j}: {len(g)}" for j, g in enumerate(self.ngrams))
        step4 = (
            f"strings: p-value < alpha / candidates = {self.string_threshold:.3g}"
            if self.estimate is not None
            else "no full-string reports: candidates without frequencies"
        )
        return Table(
            ("string", "frequency", "SE", "95% low", "95% high"),
            rows,
            title=f"RAPPOR n-grams: {len(self.strings)} strings of {len(self.candidates)} "
            f"candidates, n = {self.n}",
            notes=(
                f"significant n-grams by position ({found}): p-value < alpha / (G K) = "
                f"{self.ngram_threshold:.3g}",
                f"edges: joint frequency (EM) >= {self.edge_threshold:g}",
                step4,
            ),
        )

    def to_dict(self, level: float | None = None) -> dict[str, Any]:
        """Plain JSON: n, alpha, the thresholds, the n-grams, candidates and strings (with
        ``level``, each string's Wald interval ``ci_wald``)."""
        out: dict[str, Any] = {
            "n": self.n,
            "alpha": self.alpha,
            "ngram_threshold": self.ngram_threshold,
            "edge_threshold": self.edge_threshold,
            "string_threshold": self.string_threshold,
            "ngrams": [list(g) for g in self.ngrams],
            "candidates": list(self.candidates),
            "strings": [
                {"string": s, "frequency": to_jsonable(float(self.values[i])),
                 "se": to_jsonable(float(self.se[i]))}
                for i, s in enumerate(self.strings)
            ],
        }  # fmt: skip
        if level is not None:
            low, high = self.ci(level)
            out["level"] = float(level)
            for i, row in enumerate(out["strings"]):
                row["ci_wald"] = [to_jsonable(float(low[i])), to_jsonable(float(high[i]))]
        return out


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
    a = v.probability("alpha", alpha, low_open=True, high_open=True)
    tau = v.probability("edge_threshold", edge_threshold, low_open=True, high_open=True)
    cap = v.integer("max_candidates", max_candidates, minimum=1, maximum=10**6)
    rep = _checked(model, reports)
    n, g, r = len(rep), model.positions, model.ngram
    flat = rep.positions.reshape(-1)
    estimates, significant = [], []
    for j in range(g):  # step 1
        labels = [f"{j}:{w}" for w in model.domain]
        at = np.flatnonzero(flat == j)
        if not at.size:
            raise DataError(
                f"`reports` must hold n-gram reports of every position, got none of {j}."
            )
        est = r.decode(r.tally(rep.ngrams[at]), labels, alpha=a / g)
        estimates.append(est)
        significant.append(np.flatnonzero(est.reported))
    edges: dict[tuple[int, int], npt.NDArray[np.bool_]] = {}
    pair_of = rep.positions.reshape(-1, 2)
    for j1, j2 in model.position_pairs.tolist():  # step 2
        s1, s2 = significant[j1], significant[j2]
        rows = np.flatnonzero((pair_of[:, 0] == j1) & (pair_of[:, 1] == j2))
        if not (s1.size and s2.size and rows.size):
            continue
        l1 = _loglik(r, rep.ngrams[2 * rows], [f"{j1}:{model.domain[k]}" for k in s1])
        l2 = _loglik(r, rep.ngrams[2 * rows + 1], [f"{j2}:{model.domain[k]}" for k in s2])
        edges[(j1, j2)] = _em(l1, l2)[: s1.size, : s2.size] >= tau
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
    if model.full is None or rep.full is None or not cand:  # no step 4
        none = cand if model.full is None else ()
        return NgramDiscovery(
            none, nan[: len(none)], nan[: len(none)], cand, grams, tuple(estimates), None,
            a, tau, n,
        )  # fmt: skip
    final = model.full.decode(model.full.tally(rep.full), list(cand), alpha=a)  # step 4
    idx = np.flatnonzero(final.reported)
    idx = idx[np.argsort(-final.values[idx], kind="stable")]
    return NgramDiscovery(
        tuple(cand[i] for i in idx), final.values[idx], final.se[idx], cand, grams,
        tuple(estimates), final, a, tau, n,
    )  # fmt: skip


def _loglik(rappor: Rappor, reports: RapporReports, labels: list[str]) -> FloatArray:
    """``(D, A + 1)``: ``ln P(r_d | a)`` of each report and n-gram, then of "other", up to
    a term common to every column of a row (the likelihood of an empty Bloom filter)."""
    m, h = rappor.m, rappor.h
    bits = np.unpackbits(reports.bits, axis=1, bitorder="little")[:, :m].astype(np.float64)
    x = rappor.design_matrix(labels).astype(np.float64)  # (cohorts, m, A)
    tiny = 1e-12
    ps = min(max(rappor.p_star, tiny), 1 - tiny)
    qs = min(max(rappor.q_star, tiny), 1 - tiny)
    on, off = math.log(qs / ps), math.log((1 - qs) / (1 - ps))
    out = np.empty((bits.shape[0], len(labels) + 1))
    cohorts = np.asarray(reports.cohorts)
    for c in np.unique(cohorts).tolist():  # one product per cohort, not per device
        at = cohorts == c
        out[at, :-1] = (bits[at] @ x[c]) * (on - off) + x[c].sum(axis=0) * off
    b = 1 - (1 - 1 / m) ** h
    po = b * qs + (1 - b) * ps
    ones = bits.sum(axis=1)
    out[:, -1] = ones * math.log(po / ps) + (m - ones) * math.log((1 - po) / (1 - ps))
    return out


def _em(l1: FloatArray, l2: FloatArray) -> FloatArray:
    """The joint distribution of a pair by EM from the log-likelihoods of its two reports,
    accelerated by SQUAREM (Varadhan & Roland 2008): two EM steps, an extrapolation along
    them projected back onto the simplex, one EM step from there, kept only if the
    likelihood does not fall (else the second plain EM step)."""
    p1 = np.exp(l1 - l1.max(axis=1, keepdims=True))
    p2 = np.exp(l2 - l2.max(axis=1, keepdims=True))
    d = p1.shape[0]

    def step(pi: FloatArray) -> tuple[FloatArray, float]:
        den = ((p1 @ pi) * p2).sum(axis=1)
        return pi * ((p1 / den[:, None]).T @ p2) / d, float(np.log(den).sum())

    pi = np.full((p1.shape[1], p2.shape[1]), 1 / (p1.shape[1] * p2.shape[1]))
    for _ in range(_EM_ITERATIONS):
        one, _ = step(pi)
        two, ll_two = step(one)
        r, w = one - pi, two - 2 * one + pi
        new = two
        if float(np.abs(w).max()) > 0:
            a = min(-1.0, -math.sqrt(float((r * r).sum()) / float((w * w).sum())))
            jump = np.maximum(pi - 2 * a * r + a * a * w, 0.0)
            cand, ll_cand = step(jump / jump.sum())
            if ll_cand >= ll_two:
                new = cand
        done = float(np.abs(new - pi).max()) < _EM_TOL
        pi = new
        if done:
            break
    return np.asarray(pi, dtype=np.float64)


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
