"""Count Mean Sketch, spec version 2 (``deniable.cms-spec/2``: 16-bit flip fields, four a
word; deniable.oracles._cms_fields): the threshold and the realized epsilon from their
definitions, exact epsilon by enumerating every flip field of a tiny sketch through the
randomizer (b = 4 by the private hook ``_field_bits``), unbiasedness and variance with the
realized flip by seeded simulation, the vectors replayed from an independent reading of
docs/specs.md, the spec and key round trips, and spec 1 still read as before."""

from __future__ import annotations

import itertools
import json
import math
import pickle
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from deniable.exceptions import DataError, ParameterError
from deniable.oracles import (
    CMS,
    CMS_SPEC2_SCHEMA,
    CMS_SPEC_SCHEMA,
    HCMS,
    SFP,
    cms_from_spec,
    cms_spec,
    mechanism_from_spec,
    sketch_from_key,
)
from deniable.randomness import ArrayWords

VECTORS_FILE = Path(__file__).parent / "vectors" / "oracles.json"
M64 = (1 << 64) - 1


@dataclass(frozen=True)
class CMS4(CMS):
    """Spec 2 with 4-bit fields (16 a word): small enough to enumerate every field."""

    _field_bits: ClassVar[int] = 4


def threshold(eps: float, b: int) -> int:
    """The least ``t >= ceil(2**b / (1 + e^(eps / 2)))`` with ``((2**b - t) / t)^2 <=
    e^eps``, the exponential at 60 digits (docs/specs.md)."""
    import decimal

    with decimal.localcontext() as ctx:
        ctx.prec = 60
        e_eps = decimal.Decimal(eps).exp()
        f = 1 / (1 + decimal.Decimal(eps / 2).exp())
        t = int((f * (1 << b)).to_integral_value(rounding=decimal.ROUND_CEILING))
        while (decimal.Decimal((1 << b) - t) / t) ** 2 > e_eps:
            t += 1
    return t


# ---- the threshold and the realized epsilon


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 22.0])
def test_threshold_and_realized_epsilon_follow_their_definitions(eps: float) -> None:
    cms = CMS(k=2, m=8, epsilon=eps)
    t = threshold(eps, 16)
    assert cms.flip_threshold == t and cms.implemented_flip == t / 2**16
    realized = 2 * math.log((2**16 - t) / t)
    # the stated epsilon is the realized one (never below it, within a few ulps), at most
    # the one asked for
    assert realized - 1e-12 <= cms.epsilon <= eps
    assert math.isclose(cms.epsilon, realized, rel_tol=1e-14)
    assert cms.implemented_epsilon <= cms.epsilon
    # building again from the realized epsilon gives the same sketch (a fixed point)
    again = CMS(k=2, m=8, epsilon=cms.epsilon)
    assert again.flip_threshold == t and again.epsilon == cms.epsilon and again == cms


def test_the_documented_table_at_m_1024() -> None:
    # docs/performance.md, b = 16: t_b and the realized epsilon at eps = 1, 2, 4, 8
    table = {1.0: (24743, 0.99994), 2.0: (17626, 1.99990), 4.0: (7813, 3.99973),
             8.0: (1179, 7.99956)}  # fmt: skip
    for eps, (t, realized) in table.items():
        cms = CMS(k=1024, m=1024, epsilon=eps)
        assert cms.flip_threshold == t and round(cms.epsilon, 5) == realized
        assert cms.words_per_report == 257
        assert CMS(k=1024, m=1024, epsilon=eps, spec_version=1).words_per_report == 1025


# ---- exact epsilon by enumeration (b = 4)


def enumerated(sketch: CMS, s: str) -> dict[tuple[int, int], Fraction]:
    """P(row, packed bits) of string ``s``: every row word (``j 2**64 / k``, the start of
    row j's range) and every value of the m flip fields in use, through ``randomize``."""
    b = sketch._field_bits
    k, m = sketch.k, sketch.m
    assert k & (k - 1) == 0 and m <= min(8, 64 // b)  # one flip word, one byte of bits
    rows = np.array([(j << 64) // k for j in range(k)], dtype=np.uint64)
    fields = np.array(list(itertools.product(range(1 << b), repeat=m)), dtype=np.uint64)
    flips = (fields << (np.uint64(b) * np.arange(m, dtype=np.uint64))).sum(axis=1)
    words = np.stack(np.broadcast_arrays(rows[:, None], flips[None, :]), axis=-1).reshape(-1)
    total = words.size // 2
    reports = sketch.randomize([s] * total, rng=ArrayWords(words))
    cells = np.bincount(reports.rows * 256 + reports.bits[:, 0], minlength=k * 256)
    return {(int(c) // 256, int(c) % 256): Fraction(int(cells[c]), total)
            for c in np.flatnonzero(cells)}  # fmt: skip


@pytest.mark.parametrize(("k", "m", "eps"), [(2, 3, 1.0), (2, 4, 2.5), (1, 4, 5.0)])
def test_epsilon_is_exact_by_enumerating_every_field(k: int, m: int, eps: float) -> None:
    sketch = CMS4(k=k, m=m, epsilon=eps, salt=3)
    t = threshold(eps, 4)
    assert sketch.flip_threshold == t
    pool = [f"p{i}" for i in range(200)]
    cols = sketch.columns(pool)
    distinct = [pool[i] for i in np.unique(cols[:, 0], return_index=True)[1]]
    assert len(distinct) >= 2
    dists = [enumerated(sketch, s) for s in distinct[:3]]
    worst = max(
        max(math.log(a[key] / b.get(key, Fraction(0))) for key in a)
        for a, b in itertools.permutations(dists, 2)
    )
    exact = 2 * math.log((16 - t) / t)
    assert math.isclose(worst, exact, rel_tol=1e-12)  # attained: two columns differ
    assert math.isclose(sketch.epsilon, exact, rel_tol=1e-14) and sketch.epsilon <= eps
    # each bit flips with probability exactly t / 16
    d = dists[0]
    assert sum(d.values()) == 1
    assert sketch.implemented_flip == t / 16


def test_an_epsilon_too_large_for_the_fields_is_refused_by_name() -> None:
    # b = 4: t >= 1 needs f >= 1/16, eps <= 2 ln 15 = 5.416; just below, f 16 = 1.003
    # rounds up to t = 2 (realized 2 ln 7: far less than asked, never more)
    edge = CMS4(k=1, m=4, epsilon=5.41)
    assert edge.flip_threshold == 2 and math.isclose(edge.epsilon, 2 * math.log(7))
    with pytest.raises(ParameterError, match=r"`epsilon` must be at most 5\.4161 .*spec_version=2"):
        CMS4(k=1, m=4, epsilon=5.5)
    with pytest.raises(ParameterError, match=r"`epsilon` must be at most 22\.18.*got 23\.0"):
        CMS(k=2, m=8, epsilon=23.0)
    assert CMS(k=2, m=8, epsilon=23.0, spec_version=1).epsilon == 23.0  # spec 1 takes it
    with pytest.raises(ParameterError, match=r"`epsilon` is too small for 'cms' \(spec_vers"):
        CMS(k=2, m=8, epsilon=1e-5)  # f rounds to 1/2 on the 2**-16 grid


@pytest.mark.parametrize("version", [0, 3, "2", 2.0, True, None])
def test_a_bad_spec_version_is_refused_by_name(version: Any) -> None:
    with pytest.raises(ParameterError, match=r"`spec_version` must be 1 or 2, got"):
        CMS(k=2, m=8, epsilon=1.0, spec_version=version)


# ---- unbiasedness and variance with the realized flip


def test_every_device_of_one_string_is_estimated_without_bias_b4() -> None:
    """b = 4, eps = 1: the realized flip t / 16 = 7/16 is far from the asked 0.3775, so an
    estimate with the asked flip would be biased by about 0.4.  Every device holds "a":
    ``Y = (bit - f) / (1 - 2 f)`` has mean 1 and variance ``f (1 - f) / (1 - 2 f)^2``; the
    estimate's is that over ``n (1 - c)^2``.  Seeded: 400 replicates of 500 devices; mean
    within 4.9 SE (false alarm ~1e-6), variance within chi-square bounds at 1e-6."""
    from scipy.stats import chi2

    sketch = CMS4(k=3, m=8, epsilon=1.0, salt=7)
    f, c, n = 7 / 16, sketch.collision, 500
    assert sketch.flip_threshold == 7
    stated = float(sketch.variance(n, 1.0, 0.0))
    assert math.isclose(stated, f * (1 - f) / (1 - 2 * f) ** 2 / (n * (1 - c) ** 2), rel_tol=1e-12)
    est = [sketch.estimate(sketch.randomize(["a"] * n, rng=r), ["a"]).values[0] for r in range(400)]
    assert abs(np.mean(est) - 1.0) < 4.9 * math.sqrt(stated / 400)
    lo, hi = chi2.ppf([1e-6, 1 - 1e-6], 399) / 399
    assert lo < np.var(est, ddof=1) / stated < hi


def test_a_mixed_population_is_estimated_without_bias_b16() -> None:
    """Spec 2 (b = 16), eps = 4, k = 64 rows of m = 256: 30% "a", 10% "b", the rest over 60
    strings.  Seeded: 200 replicates (a new salt each) of 4000 devices; each share's mean
    within 4.9 stated SE (false alarm ~1e-6 per check) and its sample variance within
    chi-square bounds at 1e-6 of the stated fixed-population variance."""
    from scipy.stats import chi2

    n, reps = 4000, 200
    values = ["a"] * 1200 + ["b"] * 400 + [f"o{i % 60}" for i in range(2400)]
    shares = {"a": 0.3, "b": 0.1, "o0": 40 / n}
    total_sq = 0.3**2 + 0.1**2 + 60 * (40 / n) ** 2
    est = np.array([
        (s := CMS(k=64, m=256, epsilon=4.0, salt=77 + r)).estimate(
            s.tally(s.randomize(values, rng=r)), list(shares)
        ).values
        for r in range(reps)
    ])  # fmt: skip
    sketch = CMS(k=64, m=256, epsilon=4.0)
    lo, hi = chi2.ppf([1e-6, 1 - 1e-6], reps - 1) / (reps - 1)
    for i, (name, pi) in enumerate(shares.items()):
        stated = float(sketch.variance(n, pi, total_sq - pi**2))
        assert abs(est[:, i].mean() - pi) < 4.9 * math.sqrt(stated / reps), name
        assert lo < est[:, i].var(ddof=1) / stated < hi, name


# ---- keys, pickles, SFP


def test_the_key_carries_the_version_and_tallies_never_pool() -> None:
    one = CMS(k=2, m=8, epsilon=1.0, spec_version=1)
    two = CMS(k=2, m=8, epsilon=1.0)
    assert one.key == 'cms{"epsilon":"1","k":2,"m":8,"max_bytes":1024,"salt":0}'
    assert '"spec_version":2' in two.key and one.key != two.key
    t1, t2 = one.tally(one.randomize(["x"] * 5, rng=1)), two.tally(two.randomize(["x"], rng=1))
    with pytest.raises(DataError, match="different mechanisms") as info:
        t1 + t2
    assert one.key in str(info.value) and two.key in str(info.value)
    with pytest.raises(DataError, match="belongs to mechanism") as info:
        one.estimate(t2, ["x"])
    assert one.key in str(info.value) and two.key in str(info.value)
    # a key before spec 2 (no spec_version) is spec 1's; a spec-2 key spec 2's
    assert sketch_from_key(one.key) == one and sketch_from_key(one.key).spec_version == 1
    assert sketch_from_key(two.key) == two and sketch_from_key(two.key).spec_version == 2
    with pytest.raises(DataError, match="not canonical"):
        sketch_from_key(one.key[:-1] + ',"spec_version":1}')
    with pytest.raises(DataError, match="count mean sketch's key"):
        sketch_from_key(HCMS(k=2, m=8, epsilon=1.0).key[:-1] + ',"spec_version":2}')


def test_a_pickle_from_before_spec_2_loads_as_spec_1() -> None:
    one = CMS(k=2, m=8, epsilon=1.0, spec_version=1)
    state = {n: x for n, x in one.__getstate__().items() if n != "spec_version"}
    old = CMS.__new__(CMS)
    old.__setstate__(state)
    assert old == one and old.key == one.key and old.flip_threshold == one.flip_threshold
    two = CMS(k=2, m=8, epsilon=1.0)
    assert pickle.loads(pickle.dumps(two)) == two


def test_sfp_keeps_its_sketches_on_spec_1() -> None:
    sfp = SFP(max_length=4, epsilon=2.0, alphabet="ab", sketch="cms")
    assert sfp.fragment_sketch.spec_version == 1 and sfp.word_sketch.spec_version == 1


# ---- the spec and the vectors


def spec2_cases() -> list[dict[str, Any]]:
    data = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    return [c for c in data["cases"] if c["spec"]["schema"] == CMS_SPEC2_SCHEMA]


def below(word: int, k: int) -> int:
    if k & (k - 1) == 0:
        return word >> (64 - (k.bit_length() - 1)) if k > 1 else 0
    bits = 64 - k.bit_length()
    return ((word >> (64 - bits)) * k) >> bits


def replay2(spec: dict[str, Any], column: list[int], words: list[int]) -> list[Any]:
    """docs/specs.md, count-mean-sketch/2: the row from word 0, then bit i = one-hot XOR
    (field i % r of word 1 + i // r < flip), packed little-endian."""
    c = spec["constants"]
    k, m, t, b, r = c["rows"], c["columns"], c["flip"], c["field_bits"], c["fields_per_word"]
    row = below(words[0], k)
    bits = [
        (i == column[row]) ^ (((words[1 + i // r] >> (b * (i % r))) & ((1 << b) - 1)) < t)
        for i in range(m)
    ]
    packed = bytes(
        sum(int(bits[8 * byte + i]) << i for i in range(8) if 8 * byte + i < m)
        for byte in range((m + 7) // 8)
    )
    return [row, packed.hex()]


def test_every_spec2_vector_replays_and_round_trips() -> None:
    cases = spec2_cases()
    assert len(cases) == 2
    for case in cases:
        spec = case["spec"]
        c = spec["constants"]
        assert (
            spec["algorithm"] == "count-mean-sketch/2" and spec["parameters"]["spec_version"] == 2
        )
        assert (c["field_bits"], c["fields_per_word"]) == (16, 4)
        w = spec["words_per_report"]
        assert w == 1 + -(-c["columns"] // 4)
        assert c["flip"] == threshold(_eps(spec), 16)
        words = [int(x) for x in case["words"]]
        assert 0 in words and M64 in words
        for i, (value, report) in enumerate(zip(case["values"], case["reports"], strict=True)):
            got = replay2(spec, case["columns"][value], words[i * w : (i + 1) * w])
            assert got == report, (case["id"], i)
        sketch = cms_from_spec(spec)
        assert sketch.spec_version == 2 and cms_spec(sketch) == spec
        assert mechanism_from_spec(json.dumps(spec)) == sketch
        reports = sketch.randomize(case["values"], rng=ArrayWords(np.array(words, np.uint64)))
        assert sketch.tally(reports).counts.tolist() == case["tally"]


def _eps(spec: dict[str, Any]) -> float:
    return float(Fraction(spec["parameters"]["epsilon"]))


def test_schema_1_still_reads_as_spec_1_and_versions_do_not_mix() -> None:
    one = CMS(k=3, m=10, epsilon=2.0, spec_version=1)
    spec1 = cms_spec(one)
    assert spec1["schema"] == CMS_SPEC_SCHEMA and "spec_version" not in spec1["parameters"]
    assert spec1["algorithm"] == "count-mean-sketch/1" and spec1["words_per_report"] == 11
    assert cms_from_spec(spec1) == one and cms_from_spec(spec1).spec_version == 1
    assert mechanism_from_spec(spec1) == one
    spec2 = cms_spec(CMS(k=3, m=10, epsilon=2.0))
    # a schema-1 spec that names a version, a schema-2 spec without one or of HCMS: refused
    bad = dict(spec1, parameters={**spec1["parameters"], "spec_version": 2})
    with pytest.raises(DataError, match="spec_version"):
        cms_from_spec(bad)
    params = {n: x for n, x in spec2["parameters"].items() if n != "spec_version"}
    with pytest.raises(DataError, match="spec_version"):
        cms_from_spec(dict(spec2, parameters=params))
    with pytest.raises(DataError, match="`mechanism` must be one of cms for schema"):
        cms_from_spec(dict(cms_spec(HCMS(k=3, m=8, epsilon=1.0)), schema=CMS_SPEC2_SCHEMA))
    # a tampered threshold or field width is refused naming the field
    for field, value in (("flip", spec2["constants"]["flip"] + 1), ("field_bits", 8)):
        tampered = dict(spec2, constants={**spec2["constants"], field: value})
        with pytest.raises(DataError, match="`constants` does not match"):
            cms_from_spec(tampered)
