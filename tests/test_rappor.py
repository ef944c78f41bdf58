"""RAPPOR (deniable.oracles._rappor, _rappor_decode): the Bloom filter as documented, exact
epsilons against a brute-force channel, the randomizers' bit probabilities, memoized PRRs
that survive a restart, tallies, decoding end to end and under the null, and bad input."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import pickle
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _memo_layouts import BASE, old_rappor_layout
from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError, PrivacyError
from deniable.mechanisms import InMemoryMemoStore
from deniable.oracles import Rappor, RapporClient, RapporEstimate, RapporReports

PAPER = {"m": 128, "h": 2, "f": 0.5, "p": 0.5, "q": 0.75}


def zipf_population(k: int, n: int, seed: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    cands = [f"https://site{i}.example/" for i in range(k)]
    w = 1 / np.arange(1, k + 1) ** 1.1
    w /= w.sum()
    rng = np.random.default_rng(seed)
    idx = rng.choice(k, n, p=w)
    return cands, np.asarray(cands)[idx], np.bincount(idx, minlength=k) / n


# --------------------------------------------------------------------------- Bloom filter


def test_bloom_bits_follow_the_documented_hash() -> None:
    """Recompute bit_ci(s) from the module docstring with Python integers."""
    r = Rappor(m=64, h=3, cohorts=5, f=0.5, p=0.25, q=0.75)
    values = ["", "a", "héllo", "https://example.org/x"]
    for cohort in range(5):
        got = r.bloom_bits(values, cohort).tolist()
        for s, bits in zip(values, got, strict=True):
            d = hashlib.blake2b(s.encode(), digest_size=8, person=b"deniable-rappor").digest()
            x = int.from_bytes(d, "big") >> 31
            want = []
            for i in range(3):
                raw = hashlib.blake2b(f"deniable.rappor/1:{cohort}:{i}".encode(), digest_size=16)
                a = int.from_bytes(raw.digest()[:8], "little")
                b = int.from_bytes(raw.digest()[8:], "little")
                want.append(((((a * x + b) % 2**64) >> 32) * 64) >> 32)
            assert bits == want


def test_cohorts_hash_differently_and_the_design_matrix_matches_bloom() -> None:
    r = Rappor(m=128, h=2, cohorts=8, f=0.5, p=0.5, q=0.75)
    cands = [f"c{i}" for i in range(20)]
    x = r.design_matrix(cands)
    assert x.shape == (8, 128, 20)
    assert x.sum(axis=1).min() >= 1 and x.sum(axis=1).max() <= 2
    for c in range(8):
        np.testing.assert_array_equal(x[c].T, r.bloom(cands, c))
    assert not (x[0] == x[1]).all()


# --------------------------------------------------------------------------- epsilon


def _brute_epsilon(m: int, h: int, p1: float, p0: float) -> float:
    """Worst-case log likelihood ratio of the channel that sets output bit i with p1 where
    the Bloom bit is 1 and p0 where it is 0, over every Bloom filter of 1..h set bits and
    every output of m bits (enumerated)."""
    inputs = [s for r in range(1, h + 1) for s in itertools.combinations(range(m), r)]
    outputs = np.array(list(itertools.product((0, 1), repeat=m)), dtype=bool)
    logs = []
    for s in inputs:
        b = np.zeros(m, dtype=bool)
        b[list(s)] = True
        prob = np.where(b, p1, p0)
        logs.append(np.where(outputs, np.log(prob), np.log1p(-prob)).sum(axis=1))
    arr = np.array(logs)
    return float((arr.max(axis=0) - arr.min(axis=0)).max())


@pytest.mark.parametrize(
    ("h", "f", "p", "q"), [(2, 0.5, 0.5, 0.75), (1, 0.25, 0.3, 0.9), (3, 0.7, 0.1, 0.6)]
)
def test_epsilons_equal_the_brute_force_worst_case(h: int, f: float, p: float, q: float) -> None:
    r = Rappor(m=8, h=h, cohorts=1, f=f, p=p, q=q)
    # the PRR channel per bit: keep with 1 - f, else a fair coin
    assert r.permanent_epsilon == pytest.approx(_brute_epsilon(8, h, 1 - f / 2, f / 2), rel=1e-12)
    # PRR then IRR, composed per bit from the two stages (not from the closed form)
    p1 = (1 - f / 2) * q + f / 2 * p
    p0 = f / 2 * q + (1 - f / 2) * p
    assert (r.q_star, r.p_star) == pytest.approx((p1, p0), rel=1e-12)
    assert r.epsilon == pytest.approx(_brute_epsilon(8, h, p1, p0), rel=1e-12)
    assert r.epsilon <= r.permanent_epsilon


def _implemented(prob: float, *, up: bool) -> float:
    """``prob`` as a 53-bit threshold draws it: rounded up or down to ``2**-53``."""
    scaled = prob * 2.0**53
    return (math.ceil(scaled) if up else math.floor(scaled)) / 2.0**53


@pytest.mark.parametrize(
    ("h", "f", "p", "q"),
    [
        (2, 0.5, 1e-17, 2e-17),  # p and q within 2**-53: the rounding reverses the channel
        (1, 0.25, 0.3, math.nextafter(0.3, 1)),  # both round to one threshold: epsilon 0
        (3, 0.7, 0.1, 0.6),
    ],
)
def test_epsilon_is_the_implemented_channels_even_where_rounding_crosses_p_and_q(
    h: int, f: float, p: float, q: float
) -> None:
    """The IRR draws p rounded up and q rounded down to 2**-53 (the PRR f rounded up).
    Where that keeps the channel's direction, the stated epsilon (the nominal closed form)
    bounds the implemented channel's worst case (enumerated); where it reverses it, the
    stated epsilon is the implemented channel's, never the nominal one; never negative."""
    r = Rappor(m=8, h=h, cohorts=1, f=f, p=p, q=q)
    fi, pi, qi = _implemented(f, up=True), _implemented(p, up=True), _implemented(q, up=False)
    p1 = (1 - fi / 2) * qi + fi / 2 * pi
    p0 = fi / 2 * qi + (1 - fi / 2) * pi
    implemented = _brute_epsilon(8, h, p1, p0) if p1 != p0 else 0.0
    assert r.epsilon >= 0
    if p1 < p0:  # reversed by rounding
        assert r.epsilon == pytest.approx(implemented, rel=1e-9)
    else:
        assert r.epsilon >= implemented * (1 - 1e-12)
        nominal = _brute_epsilon(8, h, r.q_star, r.p_star)
        assert r.epsilon == pytest.approx(nominal, rel=1e-9, abs=1e-14)  # float sums


def test_a_tiny_epsilon_is_not_lost_to_cancellation() -> None:
    """p and q two thresholds apart: epsilon about 1e-15, checked against the closed form
    evaluated in 60-digit decimals from the exact implemented probabilities."""
    r = Rappor(m=8, h=2, cohorts=1, f=0.5, p=0.1, q=0.1 + 2**-52)
    with localcontext() as ctx:
        ctx.prec = 60
        f, p, q = (
            Decimal(_implemented(x, up=up)) for x, up in ((r.f, True), (r.p, True), (r.q, False))
        )
        q1, p0 = (1 - f / 2) * q + f / 2 * p, f / 2 * q + (1 - f / 2) * p
        want = 2 * ((q1 * (1 - p0)) / (p0 * (1 - q1))).ln()
    assert 0 < r.epsilon < 1e-14
    assert r.epsilon == pytest.approx(float(want), rel=1e-12)


def test_epsilon_is_infinite_when_rounding_makes_a_report_bit_certain() -> None:
    """f = 0, q = 2e-17 rounds to 0: a set report bit then comes only from a Bloom 0, so one
    report can tell a Bloom bit: an infinite epsilon (the nominal formula gave ln 2 h)."""
    assert Rappor(m=8, h=2, cohorts=1, f=0.0, p=1e-17, q=2e-17).epsilon == math.inf


def test_epsilon_is_infinite_where_the_channel_is_deterministic() -> None:
    assert Rappor(m=8, h=1, cohorts=1, f=0.0, p=0.2, q=0.8).permanent_epsilon == math.inf
    assert Rappor(m=8, h=1, cohorts=1, f=0.0, p=0.0, q=0.8).epsilon == math.inf


def test_the_randomizers_set_bits_with_the_stated_probabilities() -> None:
    """50,000 reports of one string: the rate of each bit is q* on the string's Bloom bits
    and p* elsewhere (|z| < 5 on every bit: false alarm below 1e-4)."""
    r = Rappor(m=16, h=2, cohorts=1, **{k: PAPER[k] for k in ("f", "p", "q")})
    n = 50_000
    client = RapporClient(r, InMemoryMemoStore())
    rep = client.report(np.arange(n), ["abc"] * n, rng=7)
    rate = np.unpackbits(rep.bits, axis=1, bitorder="little").mean(axis=0)
    b = r.bloom(["abc"], 0)[0]
    want = np.where(b, r.q_star, r.p_star)
    z = (rate - want) / np.sqrt(want * (1 - want) / n)
    assert np.abs(z).max() < 5
    prr = client.permanent(np.arange(n), ["abc"] * n)
    prate = prr.mean(axis=0)
    pwant = np.where(b, 1 - r.f / 2, r.f / 2)
    assert np.abs((prate - pwant) / np.sqrt(pwant * (1 - pwant) / n)).max() < 5


# --------------------------------------------------------------------------- memoization


def test_prr_survives_a_restart_with_a_persistent_store(tmp_path: Path) -> None:
    from deniable.service.db import make_engine

    url = f"sqlite:///{tmp_path / 'memo.db'}"
    engines = [make_engine(url), make_engine(url)]  # one per "device start", disposed below
    try:
        _restart(engines, tmp_path)
    finally:
        for engine in engines:
            engine.dispose()  # no connection left open (a ResourceWarning on Python 3.13)


def _restart(engines: list[Any], tmp_path: Path) -> None:
    from deniable.service.db import migrate
    from deniable.service.stores import SqlMemoStore

    migrate(engines[0])  # the service's schema: a SQLite file that persists
    r = Rappor(m=72, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)  # 72 bits: two store chunks
    ids = np.arange(200)
    values = [f"v{i % 7}" for i in range(200)]
    first = RapporClient(r, SqlMemoStore(engines[0]))
    prr = first.permanent(ids, values, rng=1)
    cohorts = first.cohorts_of(ids)
    rep1 = first.report(ids, values, rng=2)
    del first
    again = RapporClient(r, SqlMemoStore(engines[1]))  # a restarted device: same file
    np.testing.assert_array_equal(again.permanent(ids, values, rng=3), prr)
    np.testing.assert_array_equal(again.cohorts_of(ids), cohorts)
    rep2 = again.report(ids, values, rng=4)
    np.testing.assert_array_equal(rep2.cohorts, cohorts)
    assert not np.array_equal(rep1.bits, rep2.bits)  # a fresh IRR on every report
    # a client object over a new store draws fresh PRRs
    fresh = RapporClient(r, InMemoryMemoStore()).permanent(ids, values, rng=1 + 10)
    assert not np.array_equal(fresh, prr)
    # another value of the same client is another PRR
    other = again.permanent(ids, [f"w{i % 7}" for i in range(200)], rng=5)
    assert not np.array_equal(other, prr)


def test_memoized_within_a_batch_and_across_batches() -> None:
    r = Rappor(m=32, h=2, cohorts=2, f=0.5, p=0.5, q=0.75)
    client = RapporClient(r, InMemoryMemoStore())
    prr = client.permanent([1, 1, 2, 1], ["a", "a", "a", "b"], rng=1)
    np.testing.assert_array_equal(prr[0], prr[1])
    np.testing.assert_array_equal(client.permanent([1], ["b"], rng=9)[0], prr[3])
    np.testing.assert_array_equal(client.permanent(["x"], ["a"], rng=9).shape, (1, 32))
    as_objects = np.array(["a", "b"], dtype=object)  # strings in an object array
    np.testing.assert_array_equal(client.permanent([1, 1], as_objects), prr[[0, 3]])


def test_a_clients_cohort_is_permanent() -> None:
    r = Rappor(m=16, h=1, cohorts=4, f=0.5, p=0.5, q=0.75)
    client = RapporClient(r, InMemoryMemoStore())
    rep = client.report([10, 11], ["a", "b"], cohorts=[3, 1], rng=1)
    assert rep.cohorts.tolist() == [3, 1]
    with pytest.raises(DataError, match=r"client 10 is in cohort 3 \(stored\), got 2"):
        client.report([10], ["a"], cohorts=[2], rng=1)


# --------------------------------------------------------------------------- configurations


def test_a_new_irr_keeps_every_clients_prr_and_cohort() -> None:
    """p and q do not define the permanent stage: a client asked under new ones replays its
    PRR and cohort.  (Keyed by the whole mechanism, a new p once drew a second PRR and
    cohort: the permanent epsilon paid twice, and two PRRs for an averaging attacker.)"""
    store = InMemoryMemoStore()
    ids, values = np.arange(300), [f"v{i % 5}" for i in range(300)]
    old = RapporClient(Rappor(**BASE), store)
    prr, cohorts = old.permanent(ids, values, rng=1), old.cohorts_of(ids)
    for p, q in ((0.3, 0.75), (0.5, 0.9), (0.0, 1.0)):
        new = RapporClient(Rappor(**{**BASE, "p": p, "q": q}), store)
        np.testing.assert_array_equal(new.permanent(ids, values, rng=2), prr)
        np.testing.assert_array_equal(new.cohorts_of(ids), cohorts)
        assert new.report(ids, values, rng=3).cohorts.tolist() == cohorts.tolist()


@pytest.mark.parametrize(
    ("change", "stored", "asked"),
    [
        ({"m": 64}, '"m":72}', '"m":64}'),
        ({"h": 3}, '"h":2,', '"h":3,'),
        ({"f": 0.25}, '"f":"1/2"', '"f":"1/4"'),
        ({"cohorts": 16}, 'rappor-cohort{"cohorts":8}', 'rappor-cohort{"cohorts":16}'),
    ],
)
def test_a_new_permanent_stage_is_refused_for_a_client_that_holds_one(
    change: dict[str, Any], stored: str, asked: str
) -> None:
    store = InMemoryMemoStore()
    old = RapporClient(Rappor(**BASE), store)
    prr = old.permanent([1, 2], ["x", "y"], rng=1)
    new = RapporClient(Rappor(**{**BASE, **change}), store)
    calls = [
        (1, lambda: new.permanent([1], ["x"], rng=2)),
        (2, lambda: new.report([3, 2], ["y", "y"], rng=2)),
    ]
    for who, call in calls:
        with pytest.raises(PrivacyError) as err:
            call()
        text = str(err.value)
        assert text.startswith("RAPPOR: question 'rappor/"), text
        assert f"respondent {who} holds a permanent report drawn by" in text, text
        assert stored in text and asked in text and "refused" in text, text  # both named
    np.testing.assert_array_equal(old.permanent([1, 2], ["x", "y"]), prr)  # unchanged
    # a client without permanent state is served under the new configuration
    assert new.permanent([99], ["x"], rng=3).shape == (1, new.rappor.m)


def test_a_store_of_the_old_layout_is_read() -> None:
    ids, values = np.arange(100), [f"v{i % 3}" for i in range(100)]
    first = Rappor(**BASE)
    second = Rappor(**{**BASE, "p": 0.3})  # the old layout's second PRR after a new p
    old = {**old_rappor_layout(first, ids, values, 1), **old_rappor_layout(second, ids, values, 2)}
    assert all(q.startswith("rappor/rappor{") for q in old)
    store = InMemoryMemoStore.__new__(InMemoryMemoStore)
    store.__setstate__({"memo": old})  # an InMemoryMemoStore pickled by the old version
    kept = RapporClient(first, InMemoryMemoStore())
    kept.permanent(ids, values, rng=1)  # seeded: the draws of the old first layout
    for p in (0.25, 0.3, 0.5):  # whatever p now: the first layout's PRRs and cohorts
        client = RapporClient(Rappor(**{**BASE, "p": p}), store)
        np.testing.assert_array_equal(client.permanent(ids, values), kept.permanent(ids, values))
        np.testing.assert_array_equal(client.cohorts_of(ids), kept.cohorts_of(ids))


# --------------------------------------------------------------------------- tally


def test_tally_adds_across_batches_refuses_others_and_pickles() -> None:
    r = Rappor(m=32, h=2, cohorts=3, f=0.5, p=0.5, q=0.75)
    client = RapporClient(r, InMemoryMemoStore())
    a = client.report(np.arange(100), ["x"] * 100, rng=1)
    b = client.report(np.arange(100, 150), ["y"] * 50, rng=2)
    both = RapporReports(np.concatenate([a.cohorts, b.cohorts]), np.vstack([a.bits, b.bits]))
    ta, tb = r.tally(a), r.tally(b)
    assert ta + tb == r.tally(both)
    assert ta.mechanism == r.key and ta.counts.size == 3 * 33
    grid = (ta + tb).counts.reshape(3, 33)
    assert grid[:, 32].sum() == 150
    unpacked = np.unpackbits(both.bits, axis=1, bitorder="little")
    for c in range(3):
        np.testing.assert_array_equal(grid[c, :32], unpacked[both.cohorts == c].sum(axis=0))
    other = Rappor(m=32, h=2, cohorts=3, f=0.25, p=0.5, q=0.75)
    with pytest.raises(DataError, match="belongs to mechanism"):
        other.decode(ta, ["x", "y"])
    with pytest.raises(DataError):
        _ = ta + other.tally(RapporClient(other, InMemoryMemoStore()).report([1], ["x"], rng=1))
    assert pickle.loads(pickle.dumps(ta)) == ta
    r2 = pickle.loads(pickle.dumps(r))
    assert r2 == r and r2.key == r.key
    est = r.decode(ta + tb, ["x", "y", "z"])
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est2.values, est.values)
    assert est2.candidates == est.candidates


def test_an_unbound_tally_of_the_right_size_is_bound() -> None:
    r = Rappor(m=8, h=1, cohorts=2, f=0.5, p=0.5, q=0.75)
    t = r.bind(Tally([0] * 8 + [1] + [0] * 8 + [1]))
    assert t.mechanism == r.key
    with pytest.raises(DataError, match=r"the tally has 3 report values, .* has 18 \(cohorts"):
        r.bind(Tally([1, 2, 3]))
    with pytest.raises(DataError, match="at most its cohort's number of reports"):
        r.bind(Tally([2] + [0] * 7 + [1] + [0] * 9))


# --------------------------------------------------------------------------- decoding


@pytest.mark.parametrize("method", ["nnls", "lasso"])
def test_end_to_end_recovers_the_top_strings(method: str) -> None:
    """100,000 clients, 16 cohorts, the paper's m, h, f, p, q; a Zipf(1.1) population over 50
    strings and 50 absent candidates; either selection method.  Every reported estimate
    lies within 4 SE of the true frequency (two-sided false alarm 6e-5 per candidate), the
    5 most frequent strings (above 3.5%, 4 SE) are reported, and no absent candidate is
    (Bonferroni at alpha = 0.05: family-wise false alarm about 5%)."""
    r = Rappor(cohorts=16, **PAPER)
    cands, values, truth = zipf_population(50, 100_000, seed=11)
    rep = RapporClient(r, InMemoryMemoStore()).report(np.arange(values.size), values, rng=12)
    absent = [f"https://absent{i}.example/" for i in range(50)]
    est = r.decode(r.tally(rep), cands + absent, alpha=0.05, method=method)
    assert isinstance(est, RapporEstimate) and est.method == method
    assert est.n == 100_000
    assert not est.reported[50:].any()
    assert est.reported[:5].all()
    idx = np.flatnonzero(est.reported)
    assert (np.abs(est.values[idx] - truth[idx]) < 4 * est.se[idx]).all()
    assert (np.abs(est.values[:3] - truth[:3]) < 0.03).all()
    assert [name for name, _ in est.top()[:3]] == cands[:3]
    text = str(est.table())
    assert "https://site0.example/" in text and "Bonferroni" in text
    data = json.loads(json.dumps(est.to_dict()))
    assert data["threshold"] == pytest.approx(0.05 / 100, rel=1e-12)
    assert data["candidates"][0]["reported"] is True
    # its SE names its variance, as every frequency estimate does (issue 15)
    assert data["se_convention"] == est.se_convention and est.se_convention.startswith("sampling")
    assert f"SE {est.se_convention}" in text.replace("\n", " ")


@pytest.mark.parametrize("method", ["nnls", "lasso"])
def test_null_simulation_reports_no_absent_candidate_beyond_the_stated_rate(method: str) -> None:
    """10 seeded runs of 20,000 clients over 5 strings, decoded against them and 45 absent
    candidates: a run reports an absent one with probability about alpha = 0.05, so at most
    2 of 10 runs may (P(Binomial(10, 0.05) >= 3) = 1.2%).  (In 400 further runs: 8 with
    NNLS, 10 with the Lasso, i.e. 2.0% and 2.5%.)  Every run reports all 5 strings."""
    r = Rappor(cohorts=8, **PAPER)
    present = [f"p{i}" for i in range(5)]
    absent = [f"a{i}" for i in range(45)]
    runs_with_false = 0
    for seed in range(10):
        rng = np.random.default_rng(seed)
        values = np.asarray(present)[rng.integers(0, 5, 20_000)]
        rep = RapporClient(r, InMemoryMemoStore()).report(np.arange(values.size), values, rng=rng)
        est = r.decode(r.tally(rep), present + absent, method=method)
        runs_with_false += bool(est.reported[5:].any())
        assert est.reported[:5].all()
    assert runs_with_false <= 2


def test_bit_estimates_are_unbiased_counts() -> None:
    r = Rappor(m=16, h=1, cohorts=1, f=0.5, p=0.5, q=0.75)
    n = 40_000
    rep = RapporClient(r, InMemoryMemoStore()).report(np.arange(n), ["s"] * n, rng=3)
    t = r.bit_estimates(r.tally(rep))[0]
    b = r.bloom(["s"], 0)[0]
    # at most the binomial SD of a bit count (p(1-p) <= 1/4), scaled by the unbiasing;
    # within 5 of them (false alarm ~6e-7 per bit)
    sd = math.sqrt(n * 0.25) / ((1 - r.f) * (r.q - r.p))
    assert (np.abs(t - np.where(b, n, 0)) < 5 * sd).all()


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"m": 12}, r"`m` \(Bloom filter bits\) must be a positive multiple of 8, got 12"),
        ({"m": 65532}, r"`m` \(Bloom filter bits\) must be a positive multiple of 8, got 65532"),
        ({"m": 0}, r"`m` must be an integer in \[8, 65536\], got 0"),
        ({"m": 4}, r"`m` must be an integer in \[8, 65536\], got 4"),
        ({"m": -8}, r"`m` must be an integer in \[8, 65536\], got -8"),
        ({"m": 65544}, r"`m` must be an integer in \[8, 65536\], got 65544"),
        ({"h": 0}, r"`h`.*got 0"),
        ({"f": 1.0}, r"`f` must be in \[0, 1\), got 1.0"),
        ({"f": -0.1}, r"`f` must be in \[0, 1\), got -0.1"),
        ({"q": 1.5}, r"`q` must be in \[0, 1\], got 1.5"),
        ({"p": 0.8, "q": 0.5}, r"`p` must be less than `q` \(0 <= p < q <= 1\), got p = 0.8"),
        ({"cohorts": 0}, r"`cohorts`.*got 0"),
    ],
)
def test_bad_parameters_name_the_parameter(kwargs: dict[str, float], match: str) -> None:
    base: dict[str, float] = {"m": 16, "h": 2, "cohorts": 2, "f": 0.5, "p": 0.5, "q": 0.75}
    with pytest.raises(ParameterError, match=match):
        Rappor(**{**base, **kwargs})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("m", "match"),
    [(8.5, r"`m` must be an integer, got float 8.5"), ("16", r"`m` must be an integer, got str"),
     (True, r"`m` must be an integer, got bool True")],
)  # fmt: skip
def test_a_bloom_filter_size_of_the_wrong_kind_is_a_type_error(m: object, match: str) -> None:
    with pytest.raises(ParameterTypeError, match=match):
        Rappor(m=m, h=1, cohorts=1, f=0.5, p=0.5, q=0.75)  # type: ignore[arg-type]


def test_rappor_bits_without_cohorts_are_not_written_to_a_report_file(tmp_path: Path) -> None:
    """RAPPOR's report files (tests/test_rappor_files.py) hold RapporReports: its packed bits
    alone (no cohorts) are refused naming the argument, and no file is left behind."""
    from deniable.oracles import write_reports

    r = Rappor(m=16, h=1, cohorts=2, f=0.5, p=0.5, q=0.75)
    rep = RapporClient(r, InMemoryMemoStore()).report([1, 2], ["a", "b"], rng=1)
    with pytest.raises(ParameterTypeError, match="`reports` must be RapporReports"):
        write_reports(tmp_path / "r.bin", r, rep.bits)
    assert list(tmp_path.iterdir()) == []


def test_bad_client_input_and_malformed_reports() -> None:
    r = Rappor(m=16, h=2, cohorts=4, f=0.5, p=0.5, q=0.75)
    client = RapporClient(r, InMemoryMemoStore())
    with pytest.raises(ParameterError, match=r"`cohorts` must be in 0..3 \(cohorts = 4\), got 9"):
        client.report([1], ["a"], cohorts=[9])
    with pytest.raises(DataError, match=r"`values` must have one value per client \(2\), got 1"):
        client.report([1, 2], ["a"])
    with pytest.raises(DataError, match=r"`values` must hold strings, got int 3"):
        client.report([1, 2], ["a", 3])
    good = client.report([1, 2], ["a", "b"], rng=1)
    with pytest.raises(DataError, match=r"`reports.bits` must be a 2-D uint8 array of 2 bytes"):
        r.tally(RapporReports(good.cohorts, good.bits[:, :1]))
    with pytest.raises(DataError, match="got an array of dtype int64"):
        r.tally(RapporReports(good.cohorts, good.bits.astype(np.int64)))
    with pytest.raises(ParameterError, match=r"`cohorts` must be in 0..3"):
        r.tally(RapporReports(np.array([0, 7]), good.bits))
    with pytest.raises(DataError, match=r"one cohort per value \(2\), got shape \(3,\)"):
        r.tally(RapporReports(np.array([0, 1, 2]), good.bits))
    with pytest.raises(ParameterTypeError, match="`reports` must be RapporReports"):
        r.tally(good.bits)  # type: ignore[arg-type]
    with pytest.raises(ParameterTypeError, match="`store` must be a MemoStore"):
        RapporClient(r, store={})
    with pytest.raises(ParameterError, match=r"`alpha` must be in \(0, 1\), got 2"):
        r.decode(r.tally(good), ["a"], alpha=2)
    with pytest.raises(DataError, match="`candidates` must be distinct"):
        r.decode(r.tally(good), ["a", "a"])
    with pytest.raises(DataError, match="`candidates` must hold at least one string, got none"):
        r.decode(r.tally(good), [])
    with pytest.raises(DataError, match=r"`candidates` must hold strings, got int 7"):
        r.decode(r.tally(good), ["a", 7])
    with pytest.raises(DataError, match="`tally` must hold at least one report, got 0"):
        r.decode(r.tally(good[:0]), ["a"])
    with pytest.raises(ParameterError, match=r"`cohorts` must be in 0..3 \(cohorts = 4\), got -1"):
        r.tally(RapporReports(np.array([0, -1]), good.bits))


def test_thresholds_round_toward_privacy() -> None:
    """f and p are realized at least as large, q at most as large as stated (53 bits)."""
    from fractions import Fraction

    from deniable.oracles._rappor import _threshold

    for prob in (1 / 3, 0.1, 0.7, 0.5):
        up, down = _threshold(prob, up=True), _threshold(prob, up=False)
        assert Fraction(int(up), 2**53) >= Fraction(prob) >= Fraction(int(down), 2**53)
        assert int(up) - int(down) <= 1


def test_reports_slice_into_batches() -> None:
    r = Rappor(m=16, h=1, cohorts=2, f=0.5, p=0.5, q=0.75)
    rep = RapporClient(r, InMemoryMemoStore()).report(np.arange(10), ["a"] * 10, rng=1)
    assert len(rep[:4]) == 4 and rep[4:].bits.shape == (6, 2)
    assert r.tally(rep[:4]) + r.tally(rep[4:]) == r.tally(rep)
