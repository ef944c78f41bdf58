"""The two-round memoized longitudinal oracles L-GRR, L-SUE, L-OUE and L-OSUE (Arcolezi et
al. 2022): their three epsilons by enumeration of the channels, their parameters against
the paper's closed forms, memoization in a MemoStore, the estimate's variance by seeded
simulation, and bad input.  (The protocol clauses are in tests/test_conformance.py.)"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from _longitudinal import check_replayed_rounds, grr_matrix, log_worst_ratio
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import LGRR, LOLOHA, LOSUE, LOUE, LSUE, make_oracle, oracle_spec
from deniable.oracles._longitudinal import fit_both
from deniable.randomness import ArrayWords

CLASSES = (LGRR, LSUE, LOUE, LOSUE)


# --- the channels, enumerated independently of the closed forms ---------------------------


def _bits(k: int) -> list[tuple[int, ...]]:
    return list(itertools.product((0, 1), repeat=k))


def _ue(inputs: list[tuple[int, ...]], k: int, p: float, q: float) -> np.ndarray:
    """``[report vector, input vector]``: bit j set with p where the input is 1, else q."""
    out = np.empty((2**k, len(inputs)))
    for r, rep in enumerate(_bits(k)):
        for c, x in enumerate(inputs):
            prob = 1.0
            for rb, xb in zip(rep, x, strict=True):
                on = p if xb else q
                prob *= on if rb else 1 - on
            out[r, c] = prob
    return out


def channels(o: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(PRR, IRR)``: the PRR from the values, the IRR from every PRR output."""
    p1, q1, p2, q2 = o.probabilities
    if isinstance(o, LGRR):
        return grr_matrix(o.k, p1), grr_matrix(o.k, p2)
    onehot = [tuple(int(j == x) for j in range(o.k)) for x in range(o.k)]
    return _ue(onehot, o.k, p1, q1), _ue(_bits(o.k), o.k, p2, q2)


def examples() -> list[Any]:
    out = []
    for cls in CLASSES:
        for k in (2, 3):
            out.append(cls.from_epsilon(2.0, k, eps_1=1.2))
    out += [LGRR(k=4, p1=0.7, p2=0.6), LSUE(k=3, p1=0.9, p2=0.6), LOUE(k=3, q1=0.1, q2=0.3)]
    return [*out, LOSUE(k=3, q1=0.2, p2=0.7)]


@pytest.mark.parametrize("o", examples(), ids=repr)
def test_three_epsilons_are_exact_and_tight(o: Any) -> None:
    prr, irr = channels(o)
    composed = irr @ prr
    np.testing.assert_allclose(composed.sum(axis=0), 1, rtol=1e-12)
    for stated, ch in ((o.epsilon, prr), (o.epsilon_1, composed), (o.epsilon_irr, irr)):
        worst = log_worst_ratio(ch)
        # tight: the stated value is the worst ratio; 1e-6 less would be refuted
        assert stated == pytest.approx(worst, rel=1e-9)
        assert worst > stated * (1 - 1e-6)
    assert o.epsilon_inf == o.epsilon and o.epsilon_1 < o.epsilon
    assert o.implemented_epsilon <= o.epsilon


def test_the_composed_channel_is_the_support_channel() -> None:
    """What the estimator inverts (channel p, q) is the enumerated composition's."""
    for o in examples():
        prr, irr = channels(o)
        composed = irr @ prr
        if isinstance(o, LGRR):
            p, q = composed[0, 0], composed[1, 0]
        else:  # P(bit 0 set | value 0), P(bit 0 set | value 1)
            on = np.array([rep[0] for rep in _bits(o.k)], dtype=bool)
            p, q = composed[on, 0].sum(), composed[on, 1].sum()
        assert (o.channel.p, o.channel.q) == pytest.approx((p, q), rel=1e-12)


# --- parameters: the paper's closed forms ----------------------------------------------------

REQUESTS = [(2.0, 1.0), (4.0, 1.5), (1.0, 0.3), (0.5, 0.49), (8.0, 0.1)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
@pytest.mark.parametrize(("eps_inf", "eps_1"), REQUESTS)
def test_from_epsilon_meets_both_requests_from_below(
    cls: Any, eps_inf: float, eps_1: float
) -> None:
    if cls is LOUE and eps_1 >= math.log((2 * math.exp(eps_inf) + 1) / 3):
        with pytest.raises(ParameterError, match="`eps_1`"):  # beyond L-OUE's reach
            cls.from_epsilon(eps_inf, 7, eps_1=eps_1)
        return
    o = cls.from_epsilon(eps_inf, 7, eps_1=eps_1)
    assert eps_inf - 1e-9 <= o.epsilon <= eps_inf
    assert eps_1 - 1e-9 <= o.epsilon_1 <= eps_1
    assert make_oracle(cls.name, eps_inf, 7) == cls.from_epsilon(eps_inf, 7, eps_1=eps_inf / 2)


@pytest.mark.parametrize(("eps_inf", "eps_1"), REQUESTS)
def test_parameters_are_arcolezi_et_al_s(eps_inf: float, eps_1: float) -> None:
    """L-SUE, L-OUE, L-OSUE: the closed forms of Arcolezi et al. 2022 (as their reference
    code writes them); L-GRR at k = 2, where the paper's form is exact (for k > 2 it drops
    the paths through a third value, see LGRR's docstring)."""
    a, b = math.exp(eps_inf), math.exp(eps_1)
    osue = (1 - a * b) / (b - a - a * b + 1)
    assert LOSUE.from_epsilon(eps_inf, 5, eps_1=eps_1).p2 == pytest.approx(osue, rel=1e-9)
    e, h = eps_inf, eps_1
    root = math.sqrt(
        (4 * math.exp(7 * e / 2) - 4 * math.exp(5 * e / 2) - 4 * math.exp(3 * e / 2)
         + 4 * math.exp(e / 2) + math.exp(4 * e) + 4 * math.exp(3 * e) - 10 * math.exp(2 * e)
         + 4 * math.exp(e) + 1) * math.exp(h)
    )  # fmt: skip
    c = (
        math.exp(h)
        - math.exp(2 * e)
        + 2 * math.exp(e)
        - 2 * math.exp(h + e)
        + math.exp(h + 2 * e)
        - 1
    )
    d = (math.exp(3 * e / 2) - math.exp(e / 2) + math.exp(e) - math.exp(h + e / 2)
         - math.exp(h + e) + math.exp(h + 3 * e / 2) + math.exp(h + 2 * e) - 1)  # fmt: skip
    sue = -(root * (b - 1) * (a - 1) ** 2 - c * d) / ((b - 1) * (a - 1) ** 2 * c)
    assert LSUE.from_epsilon(eps_inf, 5, eps_1=eps_1).p2 == pytest.approx(sue, rel=1e-7)
    if eps_1 < math.log((2 * a + 1) / 3):
        oue = (
            -1.11803398874989
            * math.sqrt(0.1 * b + 0.05 * b * b + 0.3 * a + 0.45 * a * a - a * b - 0.7 * b * a * a
                        + 0.3 * a * b * b + 0.45 * a * a * b * b + 0.05)
            - 0.25 * b - 0.25 * a + 0.75 * a * b - 0.25
        ) / (a * (b - 1))  # fmt: skip
        assert LOUE.from_epsilon(eps_inf, 5, eps_1=eps_1).q2 == pytest.approx(oue, rel=1e-7)
    p1 = a / (a + 1)
    q1 = 1 - p1
    grr = (q1 - b * p1) / (-p1 * b + 2 * q1 * b - q1 * b - p1 + q1)
    assert LGRR.from_epsilon(eps_inf, 2, eps_1=eps_1).p2 == pytest.approx(grr, rel=1e-9)


def test_l_grr_solves_the_composed_channel_where_the_papers_form_falls_short() -> None:
    o = LGRR.from_epsilon(2.0, 5, eps_1=1.0)
    assert o.epsilon_1 == pytest.approx(1.0, abs=1e-12)
    # the paper's p2 at k = 5 gives a first report of epsilon ~0.86, not 1
    a, b, k = math.exp(2.0), math.exp(1.0), 5
    p1 = a / (a + k - 1)
    q1 = (1 - p1) / (k - 1)
    p2 = (q1 - b * p1) / (-p1 * b + k * q1 * b - q1 * b - p1 * (k - 1) + q1)
    assert LGRR(k=5, p1=p1, p2=p2).epsilon_1 == pytest.approx(0.8596, abs=1e-4)


def test_longitudinal_epsilon_composes_rounds_and_values() -> None:
    o = LOSUE.from_epsilon(2.0, 8, eps_1=0.5)
    assert o.longitudinal_epsilon(1) == o.epsilon_1
    assert o.longitudinal_epsilon(3) == pytest.approx(1.5)
    assert o.longitudinal_epsilon(30) == o.epsilon  # capped by the PRR
    assert o.longitudinal_epsilon() == o.epsilon
    assert o.longitudinal_epsilon(30, values=3) == pytest.approx(3 * o.epsilon)
    assert o.longitudinal_epsilon(0) == 0


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
def test_first_reports_take_their_words_report_by_report(cls: Any) -> None:
    """Report i consumes words i w .. i w + w - 1 (w = words_per_report, as the spec
    states), whatever the value: a batch equals its reports drawn one at a time."""
    o = cls.from_epsilon(2.0, 70 if cls is not LGRR else 5, eps_1=1.0)
    w = o.words_per_report
    assert oracle_spec(o)["words_per_report"] == w
    values = np.array([0, 4, 2, 4, 1, 3])
    words = np.random.default_rng(4).integers(0, 2**64, size=w * values.size, dtype=np.uint64)
    batch = o.randomize(values, rng=ArrayWords(words))
    for i, x in enumerate(values):
        one = o.randomize([x], rng=ArrayWords(words[i * w : (i + 1) * w]))
        np.testing.assert_array_equal(one[0], batch[i])


# --- memoization -----------------------------------------------------------------------------


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
def test_a_device_replays_its_prr_across_rounds_and_restarts(cls: Any) -> None:
    """One device reporting value 2 for 3000 rounds: its reports average to the IRR of one
    fixed PRR (each support share within 6 binomial SEs of p2 or q2 given the PRR: false
    alarm ~2e-9 per value), and a new oracle object over the store (a restart) and another
    IRR keep that PRR."""
    o = cls.from_epsilon(2.0, 4, eps_1=1.0)
    store = InMemoryMemoStore()
    gen = np.random.default_rng(3)
    rounds = 3000
    reports = np.concatenate(
        [o.randomize([2], rng=gen, memo=store, devices=["dev"]) for _ in range(rounds)]
    )
    prr = o._memoized(np.array([2]), np.array(["dev"], dtype=object), store, None)[0]
    _, _, p2, q2 = o.probabilities
    share = o.tally(reports).counts[: o.k] / rounds
    if isinstance(o, LGRR):
        expected = np.where(np.arange(o.k) == prr, p2, q2)
    else:  # the PRR packed as a report is (bit j at bit j % 8 of byte j // 8)
        expected = np.where(np.unpackbits(prr, count=o.k, bitorder="little"), p2, q2)
    se = np.sqrt(expected * (1 - expected) / rounds)
    assert np.max(np.abs(share - expected) / se) <= 6
    restarted = cls.from_epsilon(2.0, 4, eps_1=0.5)  # the same PRR, another IRR
    again = restarted._memoized(np.array([2]), np.array(["dev"], dtype=object), store, None)[0]
    np.testing.assert_array_equal(again, prr)


def test_another_permanent_stage_is_refused() -> None:
    store = InMemoryMemoStore()
    LOUE.from_epsilon(2.0, 4, eps_1=1.0).randomize([1], rng=1, memo=store, devices=[5])
    # L-OSUE at the same eps_inf keeps the same OUE PRR: replayed, not drawn again
    LOSUE.from_epsilon(2.0, 4, eps_1=1.0).randomize([1], rng=2, memo=store, devices=[5])
    for other in (LOUE.from_epsilon(3.0, 4), LSUE.from_epsilon(2.0, 4), LGRR.from_epsilon(2.0, 4)):
        with pytest.raises(PrivacyError, match="second PRR"):
            other.randomize([1], rng=3, memo=store, devices=[5])
    # a device with no PRR of that value yet gets one
    LGRR.from_epsilon(2.0, 4).randomize([1], rng=3, memo=store, devices=[6])


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
def test_replayed_rounds_are_unbiased_with_the_stated_variance(cls: Any) -> None:
    """200 fixed populations of 1 000 devices (seeded), each a fresh store: the second
    round's estimate (a replayed PRR) has mean within 6 SE of the truth (false alarm
    ~2e-9 per value) and its variance for the commonest value within the chi-square(199)
    band at 1e-6 on each side of the fixed-population variance; that variance at a zero
    frequency is the paper's q_s (1 - q_s) / (n (p1 - q1)^2 (p2 - q2)^2)."""
    o = cls.from_epsilon(2.0, 4, eps_1=1.2)
    n = 1000
    check_replayed_rounds(o, np.repeat(np.arange(4), [500, 300, 150, 50]), reps=200, seed=11)
    p1, q1, p2, q2 = o.probabilities
    qs = o.channel.q
    paper = qs * (1 - qs) / (n * (p1 - q1) ** 2 * (p2 - q2) ** 2)
    assert o.variance(n, [0, 1, 0, 0])[0] == pytest.approx(paper, rel=1e-9)


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
def test_bad_input_is_refused_naming_the_parameter(cls: Any) -> None:
    for eps_1 in (2.0, 3.0):
        with pytest.raises(ParameterError, match=r"`eps_1`.*less than `eps_inf` = 2\.0.*got"):
            cls.from_epsilon(2.0, 4, eps_1=eps_1)
    with pytest.raises(ParameterError, match="`eps_inf`"):
        cls.from_epsilon(math.inf, 4, eps_1=1.0)
    with pytest.raises(ParameterError, match=r"`k`.*got 1"):
        cls.from_epsilon(2.0, 1)
    o = cls.from_epsilon(2.0, 4)
    for bad in ([4], [-1], [0.5]):
        with pytest.raises(DataError, match="`values`"):
            o.randomize(bad, rng=1)
    store = InMemoryMemoStore()
    with pytest.raises(ParameterError, match="`devices`"):
        o.randomize([1], rng=1, memo=store)
    with pytest.raises(ParameterError, match="`devices`"):
        o.randomize([1, 2], rng=1, memo=store, devices=[1])
    with pytest.raises(ParameterError, match="`devices` needs `memo`"):
        o.randomize([1], rng=1, devices=[1])
    with pytest.raises(ParameterTypeError, match="`memo`"):
        o.randomize([1], rng=1, memo={}, devices=[1])
    with pytest.raises(DataError, match="`devices`"):
        o.randomize([1, 2], rng=1, memo=store, devices=[1, 1])
    stored = store.lookup("longitudinal/prr/1/0", np.array([1]), mechanism=o.permanent_key)
    assert (stored < 0).all()  # nothing was drawn or stored for the refused batches


def test_l_oue_refuses_a_first_report_its_irr_cannot_reach() -> None:
    top = math.log((2 * math.exp(2.0) + 1) / 3)
    with pytest.raises(ParameterError, match=r"`eps_1` must be less than ln\(\(2 e\^eps_inf"):
        LOUE.from_epsilon(2.0, 4, eps_1=top + 1e-3)
    assert LOUE.from_epsilon(2.0, 4, eps_1=top - 1e-3).epsilon_1 <= top


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: LGRR(k=4, p1=0.2, p2=0.5), "p1"),
        (lambda: LSUE(k=4, p1=0.8, p2=0.5), "p2"),
        (lambda: LOUE(k=4, q1=0.5, q2=0.1), "q1"),
        (lambda: LOSUE(k=4, q1=0.1, p2=1.0), "p2"),
    ],
)
def test_parameters_outside_their_range_are_refused(make: Any, name: str) -> None:
    with pytest.raises(ParameterError, match=f"`{name}` must be in"):
        make()


@pytest.mark.parametrize("k", [3, 56, 57, 130])
def test_unary_prrs_unpack_from_their_memo_chunks(k: int) -> None:
    """A unary PRR is kept as int64 chunks of 56 bits, bit j in chunk j // 56 at position
    j % 56: any such chunks give back the bits, packed as a report is (bit j at bit j % 8
    of byte j // 8, the padding zero), the form the IRR takes (one chunk, an exact chunk, a
    spill into a second, three chunks)."""
    o = LOUE.from_epsilon(2.0, k, eps_1=1.0)
    bits = np.random.default_rng(k).random((500, k)) < 0.5
    chunks = np.zeros((500, -(-k // 56)), dtype=np.int64)
    for j in range(k):
        chunks[:, j // 56] |= bits[:, j].astype(np.int64) << (j % 56)
    got = o._from_chunks(chunks)
    assert got.dtype == np.uint8 and got.shape == (500, -(-k // 8))
    np.testing.assert_array_equal(np.unpackbits(got, axis=1, bitorder="little")[:, :k], bits)
    assert not np.unpackbits(got, axis=1, bitorder="little")[:, k:].any()


@pytest.mark.parametrize("memo", [False, True], ids=["fresh", "memo"])
@pytest.mark.parametrize("cls", [*CLASSES, LOLOHA], ids=lambda c: c.name)
def test_no_values_give_no_reports(cls: Any, memo: bool) -> None:
    """Zero values give zero reports of the report's own shape and dtype: a unary oracle's
    ``(0, ceil(k / 8))`` bytes, L-GRR's ``(0,)`` values, LOLOHA's ``(0, 3)`` words (two seed
    words and the bucket), with a memo or without, and the empty batch tallies to zeros."""
    k = 12
    o = cls.from_epsilon(2.0, k)
    width = {LGRR: (), LOLOHA: (3,)}.get(cls, (-(-k // 8),))
    dtype = {LGRR: np.int64, LOLOHA: np.uint64}.get(cls, np.uint8)
    store = InMemoryMemoStore() if memo else None
    got = o.randomize([], rng=1, memo=store, devices=[] if memo else None)
    assert got.shape == (0, *width)
    assert got.dtype == dtype
    assert not o.tally(got).counts.any()


def test_fit_both_fits_eps_inf_first_then_eps_1_at_it() -> None:
    # the builder is called at (eps_inf, eps_1) first, then lowers eps_1 at the e_inf found
    calls: list[tuple[float, float]] = []

    def at(e_inf: float, e_1: float) -> LGRR:
        calls.append((e_inf, e_1))
        return LGRR.from_epsilon(e_inf, 5, eps_1=e_1)

    out = fit_both(at, 2.0, 1.0)
    assert calls[0] == (2.0, 1.0) and all(c[0] == calls[-1][0] for c in calls[1:])
    assert out.epsilon <= 2.0 and out.epsilon_1 <= 1.0
    assert out == LGRR.from_epsilon(2.0, 5, eps_1=1.0)
