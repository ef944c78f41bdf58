"""What one RAPPOR n-gram report costs a stream (oracles.report_epsilon): ``2 pairs
eps_1(ngram) + eps_1(full)``, every PRR, the pairs and the cohort drawn afresh each report,
checked by enumerating every report ``(pairs, n-gram reports, full report)`` of tiny
protocols over every string, from the closed form ``h ln(q* (1 - p*) / (p* (1 - q*)))``
(Erlingsson, Pihur & Korolova 2014, Theorem 2) of each RAPPOR report."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import logsumexp

from deniable.oracles import Rappor, RapporNgram, report_epsilon


def _eps_1(f: float, p: float, q: float, h: int) -> float:
    """One fresh RAPPOR report's epsilon from its parameters (the closed form)."""
    ps, qs = f / 2 * (p + q) + (1 - f) * p, f / 2 * (p + q) + (1 - f) * q
    return h * math.log(qs * (1 - ps) / (ps * (1 - qs)))


def _strings(ng: RapporNgram) -> list[str]:
    return [
        "".join(t)
        for n in range(1, ng.length + 1)
        for t in itertools.product(ng.alphabet, repeat=n)
    ]


def _labels(ng: RapporNgram, s: str, pos: np.ndarray) -> list[str]:
    """The labels ``"<j>:<n-gram>"`` of ``s`` at ``pos``, then the full string's."""
    padded = s.ljust(ng.length, ng.pad)
    out = [f"{j}:{padded[j * ng.gram : (j + 1) * ng.gram]}" for j in pos]
    return out + ([s] if ng.full is not None else [])


def _log_channel(r: Rappor, label: str, cohort: int, reports: np.ndarray) -> np.ndarray:
    """``log P(report | label, cohort)`` of a fresh PRR then IRR over every ``m``-bit report,
    from the implemented ``p*, q*`` (each bit independent given the Bloom filter)."""
    ps, qs = (float(x) for x in r.implemented_stars)
    on = np.where(r.bloom([label], cohort)[0], qs, ps)  # P(report bit = 1) per bit
    return np.where(reports == 1, np.log(on), np.log1p(-on)).sum(axis=1)


def _every(m: int) -> np.ndarray:
    return np.array(list(itertools.product([0, 1], repeat=m)), dtype=np.int64)


def _enumerated_one_cohort(ng: RapporNgram) -> float:
    """One cohort: given the pairs the reports are independent, so the largest log ratio
    of the joint report for two strings is the sum over reports of each report's largest
    log ratio over its ``2**m`` outcomes; the largest over every pair of strings and every
    choice of pairs."""
    assert ng.ngram.cohorts == 1 and (ng.full is None or ng.full.cohorts == 1)
    mechs = [ng.ngram] * (2 * ng.pairs) + ([ng.full] if ng.full is not None else [])
    worst = 0.0
    for chosen in itertools.combinations(range(len(ng.position_pairs)), ng.pairs):
        pos = ng.position_pairs[list(chosen)].reshape(-1)
        chans = [
            [_log_channel(r, lab, 0, _every(r.m)) for r, lab in zip(mechs, _labels(ng, s, pos),
                                                                     strict=True)]
            for s in _strings(ng)
        ]  # fmt: skip
        for a, b in itertools.permutations(chans, 2):
            worst = max(worst, sum(float(np.max(x - y)) for x, y in zip(a, b, strict=True)))
    return worst


def _enumerated_joint(ng: RapporNgram) -> float:
    """Every joint report (all ``2 pairs`` n-gram reports' bits) of every choice of pairs,
    mixed over the cohorts: the largest log ratio over every pair of strings."""
    assert ng.full is None
    cohorts, m = ng.ngram.cohorts, ng.ngram.m
    reports = _every(2 * ng.pairs * m)
    worst = 0.0
    for chosen in itertools.combinations(range(len(ng.position_pairs)), ng.pairs):
        pos = ng.position_pairs[list(chosen)].reshape(-1)
        logs = []
        for s in _strings(ng):
            per_cohort = [
                sum(
                    _log_channel(ng.ngram, lab, c, reports[:, i * m : (i + 1) * m])
                    for i, lab in enumerate(_labels(ng, s, pos))
                ) - math.log(cohorts)
                for c in range(cohorts)
            ]  # fmt: skip
            logs.append(logsumexp(np.array(per_cohort), axis=0))
        arr = np.array(logs)  # (strings, reports); the pairs' 1 / C(P, pairs) cancels
        worst = max(worst, float(np.max(arr.max(axis=0) - arr.min(axis=0))))
    return worst


def test_one_cohort_reaches_the_sum_of_the_reports_epsilons_by_enumeration() -> None:
    ngram = Rappor(m=8, h=1, cohorts=1, f=0.5, p=0.25, q=0.75)
    full = Rappor(m=8, h=2, cohorts=1, f=0.25, p=0.25, q=0.75)
    ng = RapporNgram(ngram, full, alphabet="ab", gram=1, length=3, pairs=2)
    closed = 4 * _eps_1(0.5, 0.25, 0.75, 1) + _eps_1(0.25, 0.25, 0.75, 2)
    assert report_epsilon(ng) == pytest.approx(closed, rel=1e-12)
    assert report_epsilon(ng) == ng.epsilon
    enumerated = _enumerated_one_cohort(ng)
    assert enumerated <= report_epsilon(ng) * (1 + 1e-12)  # never under-charged
    assert enumerated == pytest.approx(report_epsilon(ng), rel=1e-9)  # and exact here


def test_mixing_cohorts_and_choosing_pairs_never_exceeds_the_charge() -> None:
    ngram = Rappor(m=8, h=1, cohorts=2, f=0.5, p=0.25, q=0.75)
    ng = RapporNgram(ngram, None, alphabet="ab", gram=1, length=3, pairs=1)
    assert report_epsilon(ng) == pytest.approx(2 * _eps_1(0.5, 0.25, 0.75, 1), rel=1e-12)
    enumerated = _enumerated_joint(ng)
    assert 0 < enumerated <= report_epsilon(ng) * (1 + 1e-12)


def test_the_charge_is_the_one_collection_epsilon_not_the_permanent_one() -> None:
    ngram = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)
    full = Rappor(m=32, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)
    ng = RapporNgram(ngram, full, alphabet="abc", gram=2, length=6, pairs=2)
    assert report_epsilon(ng) == 4 * ngram.epsilon + full.epsilon
    # f = 0: a fresh PRR is the Bloom filter itself; with q = 1 a report bit is certain
    certain = RapporNgram(Rappor(m=8, h=1, cohorts=1, f=0.0, p=0.0, q=1.0), None,
                          alphabet="ab", gram=1, length=2)  # fmt: skip
    assert report_epsilon(certain) == math.inf
