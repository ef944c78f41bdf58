"""``oracles.report_epsilon``: what one report costs a device against any change of its
values (a telemetry stream's per-report charge), checked exactly: RAPPOR's by enumerating
every pair of permanent responses and every report at m = 8 bits (the stated value is
reached, so it is tight), and as a bound on two memoized reports across change patterns,
where the one-report epsilon is not one."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from deniable.designs import Warner
from deniable.exceptions import ParameterTypeError
from deniable.oracles import (
    CMS,
    FREQUENCY_ORACLES,
    HCMS,
    DBitFlipPM,
    LongitudinalOracle,
    MultiAttribute,
    OneBitMean,
    Rappor,
    make_oracle,
    report_epsilon,
)
from deniable.randomness import ArrayWords


def _irr_log_channel(m: int, p: float, q: float) -> np.ndarray:
    """``log P(S | B')`` of RAPPOR's IRR for every PRR ``B'`` (rows) and report ``S``
    (columns), each a vector of ``m`` bits, enumerated (``2**m`` of each)."""
    vectors = np.array(list(itertools.product([0, 1], repeat=m)), dtype=bool)  # (2**m, m)
    prr, rep = vectors[:, None, :], vectors[None, :, :]
    prob = np.where(prr, np.where(rep, q, 1 - q), np.where(rep, p, 1 - p))
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(prob).sum(axis=2))


@pytest.mark.parametrize(
    ("p", "q"),
    [(0.5, 0.75), (0.1, 0.25), (0.6, 0.95), (0.25, 0.75)],
    ids=["paper", "set-bit-dominates", "clear-bit-dominates", "symmetric"],
)
def test_rappors_report_epsilon_is_the_irrs_exact_epsilon_over_every_prr(
    p: float, q: float
) -> None:
    m = 8
    rappor = Rappor(m=m, h=2, cohorts=4, f=0.5, p=p, q=q)
    logs = _irr_log_channel(m, p, q)
    # the largest log-ratio between two PRRs for one report, over every report
    enumerated = float(np.max(logs.max(axis=0) - logs.min(axis=0)))
    closed = m * max(math.log(q / p), math.log((1 - p) / (1 - q)))
    assert report_epsilon(rappor) == pytest.approx(closed, rel=1e-12)
    assert enumerated == pytest.approx(closed, rel=1e-12)  # reached: tight
    # reached by two PRRs differing in every bit, and by nothing smaller
    assert enumerated > report_epsilon(rappor) * (1 - 1e-9)
    worst = np.unravel_index(np.argmax(logs.max(axis=0) - logs.min(axis=0)), (2**m,))[0]
    assert bin(int(np.argmax(logs[:, worst])) ^ int(np.argmin(logs[:, worst]))) == "0b11111111"


def test_rappors_report_epsilon_is_infinite_without_a_floor() -> None:
    assert report_epsilon(Rappor(m=8, h=1, cohorts=1, f=0.5, p=0.0, q=0.5)) == math.inf
    assert report_epsilon(Rappor(m=8, h=1, cohorts=1, f=0.5, p=0.5, q=1.0)) == math.inf


def _two_report_loss(rappor: Rappor, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The largest log-ratio of two memoized RAPPOR reports (one cohort) between the value
    sequences (a, a) and (a, b), ``a`` and ``b`` their Bloom filters; and between (a, a)
    and (b, b).  Exact: given the values the m bits are independent (PRR and IRR bit by
    bit), so the joint law of the two reports is a product over bits of 2x2 tables, and
    the largest ratio is the sum over bits of each bit's largest one."""
    f, p, q = rappor.f, rappor.p, rappor.q

    def prr(x: int) -> np.ndarray:  # P(B' = 0), P(B' = 1) given the Bloom bit x
        one = f / 2 + (1 - f) * x
        return np.array([1 - one, one])

    irr = np.array([[1 - p, p], [1 - q, q]])  # rows: B'; columns: S

    def joint(x1: int, x2: int, kept: bool) -> np.ndarray:
        if kept:  # one PRR of the one value for both reports
            return np.einsum("b,bs,bt->st", prr(x1), irr, irr)
        return np.outer(prr(x1) @ irr, prr(x2) @ irr)

    def loss(first: Any, second: Any) -> float:
        ups = downs = 0.0
        for i in range(rappor.m):
            d = np.log(joint(*first(i))) - np.log(joint(*second(i)))
            ups, downs = ups + float(d.max()), downs + float(-d.min())
        return max(ups, downs)

    across = loss(lambda i: (a[i], a[i], True), lambda i: (a[i], b[i], False))
    same = loss(lambda i: (a[i], a[i], True), lambda i: (b[i], b[i], True))
    return across, same


def test_two_memoized_rappor_reports_lose_at_most_twice_the_report_epsilon() -> None:
    # a weak PRR (f near 1) and a sharp IRR: two reports of one kept PRR agree far more
    # often than two of two PRRs, which shows a change in the bits the values share too
    rappor = Rappor(m=8, h=1, cohorts=1, f=0.875, p=0.0625, q=0.9375)
    a = np.zeros(8, dtype=int)
    b = np.zeros(8, dtype=int)
    a[0], b[1] = 1, 1  # two values whose one Bloom bit differs (h = 1)
    across, same = _two_report_loss(rappor, a, b)
    assert same <= 2 * rappor.epsilon + 1e-12  # a constant value: two one-report epsilons
    assert across > 2 * rappor.epsilon + 0.1  # a change: the one-report epsilon is no charge
    assert across <= 2 * report_epsilon(rappor) + 1e-12  # the per-report charge is one


@pytest.mark.parametrize("name", sorted(FREQUENCY_ORACLES))
def test_every_registered_oracle_costs_its_epsilon_or_its_irrs(name: str) -> None:
    oracle = make_oracle(name, 2.0, k=12)
    got = report_epsilon(oracle)
    if isinstance(oracle, LongitudinalOracle):
        assert got == oracle.epsilon_irr
        assert got > oracle.epsilon_1  # the first report's epsilon would undercharge
    else:
        assert got == oracle.epsilon == 2.0 or got == pytest.approx(oracle.epsilon, rel=1e-12)


@pytest.mark.parametrize(
    "mechanism",
    [
        DBitFlipPM(2.0, k=8, b=4, d=2),
        OneBitMean(1.0, upper=24.0),
        Warner(0.75),
        "oue",
        None,
    ],
    ids=["dbitflip", "onebit", "warner", "a name", "none"],
)
def test_anything_else_is_refused_naming_the_stream_oracles(mechanism: Any) -> None:
    with pytest.raises(ParameterTypeError, match=r"`oracle` must be a stream oracle: .*rappor"):
        report_epsilon(mechanism)


def test_several_attributes_are_refused() -> None:
    multi = MultiAttribute([3, 4], 1.0, protocol="rs+fd", oracle="grr")
    with pytest.raises(ParameterTypeError, match="got MultiAttribute"):
        report_epsilon(multi)


def test_dbitflip_reports_show_a_change_with_no_finite_bound() -> None:
    """Why dBitFlipPM is refused: its memoized reports carry no fresh randomness, so two
    reports of a kept value are always equal (probability 1), while a change of bucket
    makes them differ with positive probability: no finite epsilon bounds the pair."""
    from deniable.oracles import DBitFlipMemo

    memo = DBitFlipMemo(DBitFlipPM(1.0, k=16, b=4, d=2))
    devices = [f"d{i}" for i in range(400)]
    day1 = memo.report(devices, [0] * 400, rng=1)
    day2 = memo.report(devices, [0] * 200 + [15] * 200, rng=2)  # half change bucket 0 -> 3
    same = (day1.bits == day2.bits).all(axis=1)
    assert same[:200].all()  # kept: equal always
    # changed: a device sampling bucket 0 or 3 redraws that bit; it differs with
    # probability about 0.4 each, so none differing among 200 has probability < 1e-20
    assert not same[200:].all()


def test_rappors_charge_counts_the_rounding_when_it_crosses_p_and_q() -> None:
    # The IRR draws p as ceil(p 2**53) and q as floor(q 2**53) out of 2**53.  At p = 1e-17,
    # q = 2e-17 that is 1 and 0: a set bit is possible over a kept 0 and impossible over a
    # kept 1, an infinite ratio (the closed form said 8 ln 2).  At p = 1.2e-16, q = 1.9e-16
    # it is 2 and 1: the set bit is twice as likely over a kept 0, 8 ln 2 (the closed form
    # said 8 ln(19 / 12)).
    tiny = Rappor(m=8, h=1, cohorts=1, f=0.5, p=1e-17, q=2e-17)
    zero_prr, one_prr = np.zeros((1, 8), dtype=np.bool_), np.ones((1, 8), dtype=np.bool_)
    words = ArrayWords(np.zeros(8, dtype=np.uint64))  # every word below any threshold >= 1
    assert np.unpackbits(tiny.instantaneous(zero_prr, rng=words)).all()
    words = ArrayWords(np.zeros(8, dtype=np.uint64))
    assert not np.unpackbits(tiny.instantaneous(one_prr, rng=words)).any()
    assert report_epsilon(tiny) == math.inf
    crossed = Rappor(m=8, h=1, cohorts=1, f=0.5, p=1.2e-16, q=1.9e-16)
    assert report_epsilon(crossed) == pytest.approx(8 * math.log(2), rel=1e-12)
    # no crossing: the closed form, an upper bound of the implemented ratios
    plain = Rappor(m=8, h=1, cohorts=1, f=0.5, p=0.25, q=0.75)
    assert report_epsilon(plain) == pytest.approx(8 * math.log(3), rel=1e-12)


def _sketch_log_channel(sketch: Any, strings: list[str]) -> np.ndarray:
    """``log P(report | string)`` of a count mean sketch, every report enumerated from the
    protocol as docs/sketches.md states it (a uniform row; CMS: the one-hot vector of the
    string's column, each bit flipped with the implemented f; HCMS: a uniform coefficient
    l and the bit parity(l & column), flipped with f), rows: strings, columns: reports."""
    # the grid of the flip: 2**53 (word >> 11), 2**16 for a CMS of spec 2 (16-bit fields)
    f = sketch.flip_threshold / 2 ** (16 if getattr(sketch, "spec_version", 1) == 2 else 53)
    cols = sketch.columns(strings)  # (S, k): each string's column in every row
    k, m = sketch.k, sketch.m
    out = []
    for c in cols:
        if isinstance(sketch, CMS):  # reports (j, bits): k 2**m of them
            bits = np.array(list(itertools.product([0, 1], repeat=m)), dtype=bool)
            logs = []
            for j in range(k):
                onehot = np.arange(m) == c[j]
                flips = (bits != onehot).sum(axis=1)
                logs.append(np.log(1 / k) + flips * np.log(f) + (m - flips) * np.log(1 - f))
            out.append(np.concatenate(logs))
        else:  # reports (j, l, b): 2 k m of them
            j, coef, b = np.meshgrid(np.arange(k), np.arange(m), [0, 1], indexing="ij")
            sign = np.array([bin(int(x)).count("1") % 2 for x in (coef & c[j]).ravel()])
            flipped = sign != b.ravel()
            out.append(np.log(1 / (k * m)) + np.where(flipped, np.log(f), np.log(1 - f)))
    return np.array(out)


@pytest.mark.parametrize(
    "sketch",
    [
        CMS(k=3, m=6, epsilon=2.0, salt=5),
        CMS(k=2, m=4, epsilon=0.5),
        CMS(k=3, m=6, epsilon=2.0, salt=5, spec_version=1),
        CMS(k=2, m=4, epsilon=0.5, spec_version=1),
        HCMS(k=3, m=8, epsilon=1.5),
    ],
    ids=["cms", "cms-small-eps", "cms-spec1", "cms-spec1-small-eps", "hcms"],
)
def test_a_sketchs_report_epsilon_is_its_exact_epsilon_by_enumeration(sketch: Any) -> None:
    # strings with different columns in some row (the largest ratio needs one), and the
    # closed form from the stated flip probability: CMS 2 ln((1 - f) / f), f = 1 / (1 +
    # e^(eps/2)); HCMS ln((1 - f) / f), f = 1 / (1 + e^eps)
    strings = [f"s{i}" for i in range(12)]
    assert len({tuple(c) for c in sketch.columns(strings)}) > 1
    logs = _sketch_log_channel(sketch, strings)
    enumerated = float(np.max(logs.max(axis=0) - logs.min(axis=0)))
    moved = 2 if isinstance(sketch, CMS) else 1
    f = 1 / (1 + math.exp(sketch.epsilon / moved))
    closed = moved * math.log((1 - f) / f)
    assert report_epsilon(sketch) == pytest.approx(closed, rel=1e-12)
    # the implemented f (rounded up toward 1/2) reaches the stated value within rounding,
    # never above it: the charge is exact and safe
    assert enumerated <= report_epsilon(sketch) * (1 + 1e-12)
    assert enumerated == pytest.approx(report_epsilon(sketch), rel=1e-9)
