"""Count Mean Sketch and Hadamard Count Mean Sketch (deniable.oracles._cms, _sketch,
_cms_spec): exact epsilon by enumeration, unbiasedness and variance by seeded simulation,
the keyed string hash and the vectors from an independent reading of docs/sketches.md, and
every bad input refused by name."""

from __future__ import annotations

import decimal
import hashlib
import itertools
import json
import math
import pickle
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable.designs import Tally
from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import (
    CMS,
    CMS_SPEC_SCHEMA,
    HCMS,
    SketchEstimate,
    SketchReports,
    cms_from_spec,
    cms_spec,
)
from deniable.randomness import ArrayWords

VECTORS_FILE = Path(__file__).parent / "vectors" / "oracles.json"
M64 = (1 << 64) - 1
TWO53 = 1 << 53
TWO16 = 1 << 16


def grid(sketch: Any) -> int:
    """The flip's grid as docs/sketches.md states it: ``2**53`` (``word >> 11``: HCMS, CMS
    of spec 1), ``2**16`` (a 16-bit field: CMS of spec 2, the default)."""
    return TWO16 if getattr(sketch, "spec_version", 1) == 2 else TWO53


# ---- an independent reading of the hash and the algorithms (docs/sketches.md)


def digest(s: str) -> int:
    return (
        int.from_bytes(hashlib.sha256(b"deniable.cms/1\x00" + s.encode()).digest()[:8], "big") >> 31
    )


def column(s: str, salt: int, j: int, m: int) -> int:
    raw = hashlib.sha256(f"deniable.cms/1:{salt}:{j}".encode()).digest()
    a, b = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:16], "little")
    return ((((a * digest(s) + b) % 2**64) >> 32) * m) >> 32


def below(word: int, k: int) -> int:
    if k & (k - 1) == 0:
        return word >> (64 - (k.bit_length() - 1)) if k > 1 else 0
    bits = 64 - k.bit_length()
    return ((word >> (64 - bits)) * k) >> bits


def replay(spec: dict[str, Any], value: str, words: list[int]) -> Any:
    p = spec["parameters"]
    k, m, t = spec["constants"]["rows"], spec["constants"]["columns"], spec["constants"]["flip"]
    row = below(words[0], k)
    col = column(value, p["salt"], row, m)
    if spec["algorithm"] == "count-mean-sketch/1":
        bits = [(i == col) ^ ((words[1 + i] >> 11) < t) for i in range(m)]
        packed = bytes(
            sum(int(bits[8 * byte + i]) << i for i in range(8) if 8 * byte + i < m)
            for byte in range((m + 7) // 8)
        )
        return [row, packed.hex()]
    coef = below(words[1], m)
    bit = (bin(coef & col).count("1") % 2) ^ int((words[2] >> 11) < t)
    return 2 * (row * m + coef) + bit


def sketch_cases() -> list[dict[str, Any]]:
    data = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))
    return [c for c in data["cases"] if c["spec"]["schema"] == CMS_SPEC_SCHEMA]


def test_every_sketch_vector_replays_through_the_documented_algorithm() -> None:
    cases = sketch_cases()
    assert {c["spec"]["mechanism"] for c in cases} == {"cms", "hcms"} and len(cases) == 4
    for case in cases:
        spec = case["spec"]
        w = spec["words_per_report"]
        words = [int(x) for x in case["words"]]
        assert len(words) == w * len(case["values"]) and 0 in words and M64 in words
        for s, cols in case["columns"].items():
            salt, k, m = (
                spec["parameters"]["salt"],
                spec["constants"]["rows"],
                spec["constants"]["columns"],
            )
            assert cols == [column(s, salt, j, m) for j in range(k)], (case["id"], s)
        for i, (value, report) in enumerate(zip(case["values"], case["reports"], strict=True)):
            assert replay(spec, value, words[i * w : (i + 1) * w]) == report, (case["id"], i)


def test_every_sketch_vector_tallies_and_round_trips_its_spec() -> None:
    for case in sketch_cases():
        sketch = cms_from_spec(case["spec"])
        words = np.array([int(x) for x in case["words"]], dtype=np.uint64)
        reports = sketch.randomize(case["values"], rng=ArrayWords(words))
        assert sketch.tally(reports).counts.tolist() == case["tally"], case["id"]
        # the tally from the file's reports, read independently of randomize
        if sketch.name == "cms":
            rows = np.array([r for r, _ in case["reports"]])
            bits = np.array([list(bytes.fromhex(b)) for _, b in case["reports"]], np.uint8)
            counts = sketch.tally(SketchReports(rows, bits)).counts
        else:
            counts = np.bincount(case["reports"], minlength=2 * sketch.k * sketch.m)
        assert counts.tolist() == case["tally"]


def test_the_hash_is_the_documented_one_and_depends_on_salt() -> None:
    sketch = CMS(k=5, m=37, epsilon=1.0, salt=12345)
    strings = ["apple", "b", "z\u00fcrich", "\U0001f600"]
    assert sketch.columns(strings).tolist() == [
        [column(s, 12345, j, 37) for j in range(5)] for s in strings
    ]
    # bytes and str of the same UTF-8 are one string
    assert sketch.columns([b"z\xc3\xbcrich"]).tolist() == sketch.columns(["z\u00fcrich"]).tolist()
    other = CMS(k=5, m=37, epsilon=1.0, salt=12346)
    assert sketch.columns(strings).tolist() != other.columns(strings).tolist()


# ---- exact epsilon by enumeration


def _strings_with_distinct_columns(sketch: Any, count: int) -> list[str]:
    """Strings whose columns differ from the first's in at least one row, and one string
    whose columns equal the first's in every row (to check ratio 1)."""
    pool = [f"s{i}" for i in range(2000)]
    cols = sketch.columns(pool)
    first = cols[0]
    distinct = [pool[i] for i in range(1, len(pool)) if (cols[i] != first).any()]
    return [pool[0], *distinct[:count]]


def cms_distribution(sketch: CMS, s: str) -> np.ndarray:
    """P(row j, bits v) for every report of a tiny CMS, from the documented channel."""
    f = sketch.flip_threshold / grid(sketch)
    cols = sketch.columns([s])[0]
    out = []
    for j in range(sketch.k):
        for bits in itertools.product((0, 1), repeat=sketch.m):
            p = 1.0 / sketch.k
            for i, b in enumerate(bits):
                p *= (1 - f) if b == int(i == cols[j]) else f
            out.append(p)
    return np.array(out)


def hcms_distribution(sketch: HCMS, s: str) -> np.ndarray:
    f = sketch.flip_threshold / grid(sketch)
    cols = sketch.columns([s])[0]
    out = []
    for j in range(sketch.k):
        for coef in range(sketch.m):
            sign = bin(coef & int(cols[j])).count("1") % 2
            for b in (0, 1):
                out.append((1 - f if b == sign else f) / (sketch.k * sketch.m))
    return np.array(out)


@pytest.mark.parametrize(
    ("sketch", "dist"),
    [
        (CMS(k=2, m=3, epsilon=1.0), cms_distribution),
        (CMS(k=3, m=4, epsilon=2.5, salt=9), cms_distribution),
        (CMS(k=2, m=3, epsilon=1.0, spec_version=1), cms_distribution),
        (CMS(k=3, m=4, epsilon=2.5, salt=9, spec_version=1), cms_distribution),
        (HCMS(k=2, m=4, epsilon=1.0), hcms_distribution),
        (HCMS(k=3, m=8, epsilon=0.3, salt=5), hcms_distribution),
    ],
)
def test_epsilon_is_exact_by_enumeration(sketch: Any, dist: Any) -> None:
    strings = _strings_with_distinct_columns(sketch, 6)
    dists = [dist(sketch, s) for s in strings]
    for d in dists:
        assert math.isclose(d.sum(), 1.0, rel_tol=1e-12)
    worst = max(float(np.max(np.log(a / b))) for a, b in itertools.permutations(dists, 2))
    # the implemented epsilon is attained (two strings with another column in some row) ...
    assert math.isclose(worst, sketch.implemented_epsilon, rel_tol=1e-9, abs_tol=1e-12)
    # ... never exceeds the stated one, and is tight: a slightly smaller epsilon fails
    assert worst <= sketch.epsilon + 1e-12
    assert worst > sketch.epsilon - 1e-9
    # CMS: the flip is 1 / (1 + e^(eps / 2)) (two bits move); HCMS 1 / (1 + e^eps)
    moved = 2 if sketch.name == "cms" else 1
    assert math.isclose(sketch.flip, 1 / (1 + math.exp(sketch.epsilon / moved)), rel_tol=1e-15)


def test_strings_with_equal_columns_are_indistinguishable() -> None:
    sketch = CMS(k=1, m=2, epsilon=1.0)
    pool = [f"t{i}" for i in range(50)]
    cols = sketch.columns(pool)[:, 0]
    a, b = [pool[i] for i in np.flatnonzero(cols == cols[0])[:2]]
    assert np.array_equal(cms_distribution(sketch, a), cms_distribution(sketch, b))


def test_the_randomizer_draws_the_enumerated_channel() -> None:
    # seeded, 60000 reports of a tiny HCMS and CMS against the enumerated probabilities:
    # chi-square at a false-alarm rate of 1e-6 (threshold from scipy's chi2 quantile)
    from scipy.stats import chi2

    cases = ((HCMS(k=2, m=4, epsilon=1.0), hcms_distribution),
             (CMS(k=2, m=3, epsilon=1.0), cms_distribution),
             (CMS(k=2, m=3, epsilon=1.0, spec_version=1), cms_distribution))  # fmt: skip
    for sketch, dist in cases:
        p = dist(sketch, "apple")
        reports = sketch.randomize(["apple"] * 60000, rng=7)
        if sketch.name == "cms":
            bits = np.unpackbits(reports.bits, axis=1, bitorder="little")[:, : sketch.m]
            index = reports.rows * 2**sketch.m + bits @ (2 ** np.arange(sketch.m)[::-1])
        else:
            index = reports
        observed = np.bincount(index, minlength=p.size)
        expected = 60000 * p
        stat = float(((observed - expected) ** 2 / expected).sum())
        assert stat < chi2.ppf(1 - 1e-6, p.size - 1), sketch.name


# ---- unbiasedness and variance over salts and coins


def population(n: int) -> tuple[list[str], dict[str, float]]:
    """30% "a", 20% "b", the rest over 25 strings of 2% each."""
    values = ["a"] * (3 * n // 10) + ["b"] * (2 * n // 10)
    values += [f"o{i % 25}" for i in range(n - len(values))]
    shares = {s: values.count(s) / n for s in set(values)}
    return values, shares


def _replicates(
    cls: Any, reps: int, n: int, **params: Any
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    values, shares = population(n)
    cands = sorted(shares)
    est, var_fixed, moments = [], [], []
    for r in range(reps):
        sketch = cls(salt=1000 + r, **params)
        tally = sketch.tally(sketch.randomize(values, rng=r))
        e = sketch.estimate(tally, cands)
        est.append(e.values)
        var_fixed.append(e.se_fixed**2)
        moments.append(sketch.second_moment(tally))
    shares["__F2__"] = float(np.mean(moments))
    return np.array(est), np.array(var_fixed), shares


@pytest.mark.parametrize(("cls", "params"), [(CMS, {"k": 4, "m": 8, "epsilon": 2.0}),
                                            (HCMS, {"k": 4, "m": 8, "epsilon": 2.0})])  # fmt: skip
def test_unbiased_with_the_stated_variance_over_salts(cls: Any, params: dict[str, Any]) -> None:
    """Seeded: 300 salts, 2000 devices each.  The mean of "a"'s estimate is tested against
    its share with the stated (fixed-population) variance, z < 4.9 (false alarm ~1e-6 per
    check); the sample variance against the stated one within chi-square bounds at 1e-6.
    The collision term is large here (k = 4, m = 8): leaving it out fails the check."""
    from scipy.stats import chi2

    reps, n = 300, 2000
    est, var_fixed, shares = _replicates(cls, reps, n, **params)
    f2_mean = shares.pop("__F2__")
    # the sketch's own estimate of sum_v pi_v^2 (0.09 + 0.04 + 25 * 0.02^2 = 0.14) is
    # unbiased up to clipping: its mean over the salts within 0.01 (its sd / sqrt(300) is
    # about 0.0005 here)
    assert abs(f2_mean - sum(x * x for x in shares.values())) < 0.01
    cands = sorted(shares)
    sketch = cls(**params)
    for name in ("a", "b", "o0"):
        i = cands.index(name)
        pi = shares[name]
        others = sum(x * x for s, x in shares.items() if s != name)
        stated = float(sketch.variance(n, pi, others))
        z = (est[:, i].mean() - pi) / math.sqrt(stated / reps)
        assert abs(z) < 4.9, (name, z)
        ratio = est[:, i].var(ddof=1) / stated
        lo, hi = chi2.ppf([1e-6, 1 - 1e-6], reps - 1) / (reps - 1)
        assert lo < ratio < hi, (name, ratio)
        no_collisions = (
            stated
            - sketch.collision
            * (1 - sketch.collision)
            / sketch.k
            * others
            / (1 - sketch.collision) ** 2
        )
        assert est[:, i].var(ddof=1) / no_collisions > hi or name != "a", name
        # the plug-in se_fixed (every string a candidate) is close to the stated one
        assert 0.8 < var_fixed[:, i].mean() / stated < 1.25, name


def test_sampling_variance_exceeds_the_fixed_one_by_the_population_spread() -> None:
    sketch = CMS(k=8, m=16, epsilon=1.0)
    fixed = float(sketch.variance(1000, 0.3, 0.1))
    iid = float(sketch.variance(1000, 0.3, 0.1, population="iid"))
    c = sketch.collision
    # iid - fixed = Var over devices of the mean match, mu (1 - mu) - ..., closed form:
    mu = 0.3 + 0.7 * c
    a, b = sketch._moments()
    spread = c * (1 - c) / sketch.k
    per_iid = a + b * mu - mu**2 - spread * 0.1
    per_fixed = 0.3 * (a + b - 1) + 0.7 * (a + b * c - c * c - spread)
    assert math.isclose((iid - fixed) * 1000 * (1 - c) ** 2, per_iid - per_fixed, rel_tol=1e-9)
    assert iid > fixed


def test_estimate_matches_apples_formula_on_a_hand_built_tally() -> None:
    # f(d) = m / (m - 1) (mean_j M[j, h_j(d)] - n / m), M[j, i] = k (C[j, i] - f N_j) / (1 - 2 f)
    sketch = CMS(k=2, m=4, epsilon=2.0)
    counts = np.array([[3, 7, 1, 2, 10], [5, 0, 6, 4, 12]])
    tally = sketch.tally_counts(counts.reshape(-1))
    f = sketch.flip_threshold / grid(sketch)
    big_m = sketch.k * (counts[:, :4] - f * counts[:, 4:]) / (1 - 2 * f)
    cols = sketch.columns(["x", "y"])
    n = 22
    for i in range(2):
        mean = np.mean([big_m[j, cols[i, j]] for j in range(2)])
        expected = 4 / 3 * (mean - n / 4) / n
        assert math.isclose(sketch.estimate(tally, ["x", "y"]).values[i], expected, rel_tol=1e-12)


# ---- tallies, results, identity


def test_tallies_merge_and_the_result_is_complete() -> None:
    for sketch in (CMS(k=3, m=12, epsilon=3.0), HCMS(k=3, m=16, epsilon=3.0)):
        vals = ["x"] * 300 + ["y"] * 100
        r1, r2 = sketch.randomize(vals, rng=1), sketch.randomize(vals, rng=2)
        both = sketch.tally(r1) + sketch.tally(r2)
        if sketch.name == "cms":
            joined = SketchReports(
                np.concatenate([r1.rows, r2.rows]), np.concatenate([r1.bits, r2.bits])
            )
        else:
            joined = np.concatenate([r1, r2])
        assert both == sketch.tally(joined)
        est = sketch.estimate(both, ["x", "y", "zz"])
        assert isinstance(est, SketchEstimate) and est.n == 800
        assert np.array_equal(est.variances, est.se**2)
        assert np.array_equal(est.variances_fixed, est.se_fixed**2)
        assert np.allclose(est.counts, 800 * est.values)
        low, high = est.ci(0.9)
        assert ((low <= np.clip(est.values, 0, 1)) & (np.clip(est.values, 0, 1) <= high)).all()
        d = est.to_dict()
        assert [c["candidate"] for c in d["candidates"]] == ["x", "y", "zz"]
        assert "frequency" in str(est) and d["mechanism"] == sketch.key
        assert pickle.loads(pickle.dumps(sketch)) == sketch
        assert pickle.loads(pickle.dumps(both)) == both


def test_spec_refuses_a_tampered_field() -> None:
    spec = cms_spec(CMS(k=3, m=10, epsilon=2.0, salt=4))
    assert cms_from_spec(json.dumps(spec)) == CMS(k=3, m=10, epsilon=2.0, salt=4)
    tampered = (
        ("constants", {**spec["constants"], "flip": 1}),
        ("epsilon", 3.0),
        ("hash", {}),
        ("strings", {**spec["strings"], "max_bytes": 9}),
    )
    for field, value in tampered:
        with pytest.raises(DataError, match=f"`{field}`"):
            cms_from_spec({**spec, field: value})
    with pytest.raises(DataError, match="`mechanism`"):
        cms_from_spec({**spec, "mechanism": "olh"})
    with pytest.raises(DataError, match="unknown spec field `extra`"):
        cms_from_spec({**spec, "extra": 1})


# ---- bad input: one clear error naming it


@pytest.mark.parametrize("cls", [CMS, HCMS])
def test_bad_strings_are_refused_by_name(cls: Any) -> None:
    sketch = cls(k=2, m=8, epsilon=1.0, max_bytes=5)
    with pytest.raises(DataError, match=r"`values`\[1\] must be a non-empty string"):
        sketch.randomize(["a", ""], rng=1)
    with pytest.raises(DataError, match=r"`values`\[0\] must be at most max_bytes = 5 bytes.*6"):
        sketch.randomize(["\u00fc\u00fc\u00fc"], rng=1)  # 3 characters, 6 bytes
    with pytest.raises(DataError, match=r"`values`\[0\] must be valid UTF-8.*byte 1"):
        sketch.randomize([b"a\xff"], rng=1)
    with pytest.raises(DataError, match=r"`values`\[0\] must be a str or UTF-8 bytes, got int"):
        sketch.randomize([3], rng=1)
    with pytest.raises(DataError, match="valid Unicode"):
        sketch.randomize(["\ud800"], rng=1)
    tally = sketch.tally(sketch.randomize(["ab"] * 4, rng=1))
    with pytest.raises(DataError, match=r"`candidates`\[0\] must be valid UTF-8"):
        sketch.estimate(tally, [b"\xc3"])
    with pytest.raises(DataError, match="`candidates` must be distinct"):
        sketch.estimate(tally, ["ab", "ab"])
    with pytest.raises(DataError, match="`candidates` must hold at least one"):
        sketch.estimate(tally, [])
    with pytest.raises(ParameterTypeError, match="`values` must be a string or a sequence"):
        sketch.randomize(5, rng=1)


def test_a_domain_too_large_for_the_sketch_is_refused_by_name() -> None:
    sketch = CMS(k=1, m=4, epsilon=1.0)
    tally = sketch.tally(sketch.randomize(["a"] * 10, rng=1))
    with pytest.raises(DataError, match=r"`candidates` must be at most m\*\*k = 4 strings.*got 5"):
        sketch.estimate(tally, ["a", "b", "c", "d", "e"])
    assert sketch.estimate(tally, ["a", "b", "c", "d"]).values.size == 4


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"k": 0, "m": 8, "epsilon": 1.0}, "`k` must be an integer in"),
        ({"k": 2, "m": 1, "epsilon": 1.0}, "`m` must be an integer in"),
        ({"k": 2, "m": 8, "epsilon": 0.0}, "`epsilon`"),
        ({"k": 2, "m": 8, "epsilon": math.inf}, "`epsilon`"),
        ({"k": 2, "m": 8, "epsilon": 31.0}, "`epsilon` must be at most 30"),
        # the flip rounds to 1/2 (estimates divided by zero before)
        ({"k": 2, "m": 8, "epsilon": 1e-17}, "`epsilon` is too small for 'cms'"),
        ({"k": 2, "m": 8, "epsilon": 1.0, "salt": -1}, "`salt`"),
        ({"k": 2, "m": 8, "epsilon": 1.0, "max_bytes": 0}, "`max_bytes`"),
        ({"k": 65536, "m": 65536, "epsilon": 1.0}, "`m` must keep the tally at most 2\\*\\*27"),
    ],
)
def test_bad_parameters_are_refused_by_name(params: dict[str, Any], match: str) -> None:
    with pytest.raises((ParameterError, ParameterTypeError), match=match):
        CMS(**params)


def test_hcms_needs_a_power_of_two() -> None:
    with pytest.raises(ParameterError, match=r"`m` must be a power of two for 'hcms'.*got 12"):
        HCMS(k=2, m=12, epsilon=1.0)


def test_bad_reports_and_tallies_are_refused() -> None:
    cms = CMS(k=2, m=10, epsilon=1.0)
    good = cms.randomize(["a", "b"], rng=1)
    with pytest.raises(DataError, match=r"`reports.rows` must be in 0..1, got 2"):
        cms.tally(SketchReports(np.array([0, 2]), good.bits))
    bad_bits = good.bits.copy()
    bad_bits[0, -1] |= 0x80
    with pytest.raises(DataError, match="padding bits"):
        cms.tally(SketchReports(good.rows, bad_bits))
    with pytest.raises(DataError, match=r"`reports.bits` must be a 2-D uint8 array of 2 bytes"):
        cms.tally(SketchReports(good.rows, good.bits[:, :1]))
    with pytest.raises(ParameterTypeError, match="`reports` must be SketchReports"):
        cms.tally(np.zeros((2, 3)))
    with pytest.raises(DataError, match="the tally has 3 report values"):
        cms.estimate(Tally([1, 2, 3]), ["a"])
    other = CMS(k=2, m=10, epsilon=1.0, salt=1)
    with pytest.raises(DataError, match="belongs to mechanism"):
        other.estimate(cms.tally(good), ["a"])
    with pytest.raises(DataError, match="a bit count must be at most"):
        cms.tally_counts([5] + [0] * 9 + [1] + [0] * 11)
    with pytest.raises(DataError, match="`n` must be at least 1"):
        cms.estimate(cms.tally_counts([0] * 22), ["a"])
    hcms = HCMS(k=2, m=4, epsilon=1.0)
    with pytest.raises(DataError, match="`reports`"):
        hcms.tally([16])


def test_identity_binding_and_pickling_come_from_the_base() -> None:
    import inspect

    from deniable.designs import MechanismBase

    for cls in (CMS, HCMS):
        for name in ("key", "bind", "tally_counts", "__getstate__", "describe"):
            assert inspect.getattr_static(cls, name) is MechanismBase.__dict__[name], name
    # spec 1: the key it always had; spec 2 names its version (and its realized epsilon)
    assert CMS(k=2, m=8, epsilon=0.5, spec_version=1).key == (
        'cms{"epsilon":"1/2","k":2,"m":8,"max_bytes":1024,"salt":0}'
    )
    two = CMS(k=2, m=8, epsilon=0.5)
    assert two.key == (
        f'cms{{"epsilon":"{Fraction(two.epsilon)}","k":2,"m":8,"max_bytes":1024,"salt":0,'
        '"spec_version":2}'
    )


@pytest.mark.parametrize("cls", [CMS, HCMS])
def test_sampled_devices_have_the_stated_iid_variance_and_intervals_cover(cls: Any) -> None:
    """Seeded: 300 replicates, each a new salt and 2000 devices drawn iid from the shares of
    `population`.  The sample variance of "a"'s estimate is the stated sampling variance
    (chi-square bounds at a false-alarm rate of 1e-6), and the default 95% intervals (`se`)
    cover the true share in at least 270 of 300 replicates for each of three strings
    (expected 285; P(Bin(300, 0.95) < 270) is about 1e-4)."""
    from scipy.stats import chi2

    _, shares = population(2000)
    names = sorted(shares)
    probs = np.array([shares[s] for s in names])
    rng = np.random.default_rng(99)
    est, covered = [], np.zeros(3, dtype=int)
    checked = [names.index(s) for s in ("a", "b", "o0")]
    for r in range(300):
        sketch = cls(k=4, m=8, epsilon=2.0, salt=5000 + r)
        values = list(np.asarray(names)[rng.choice(len(names), 2000, p=probs)])
        e = sketch.estimate(sketch.tally(sketch.randomize(values, rng=rng)), names)
        low, high = e.ci(0.95)
        covered += [(low[i] <= probs[i] <= high[i]) for i in checked]
        est.append(e.values[names.index("a")])
    others = sum(x * x for s, x in shares.items() if s != "a")
    stated = float(cls(k=4, m=8, epsilon=2.0).variance(2000, 0.3, others, population="iid"))
    ratio = np.var(est, ddof=1) / stated
    lo, hi = chi2.ppf([1e-6, 1 - 1e-6], 299) / 299
    assert lo < ratio < hi, ratio
    assert (covered >= 270).all(), covered


@pytest.mark.parametrize(
    ("cls", "epsilon"),
    [(HCMS, 1.0), (HCMS, 0.17), (HCMS, 0.51), (CMS, 0.23), (CMS, 1.02), (CMS, 1.41)]
    + [(cls, i / 10) for cls in (CMS, HCMS) for i in range(1, 60)],
)
def test_the_flip_threshold_keeps_the_ratio_at_most_e_eps_exactly(cls: Any, epsilon: float) -> None:
    # A float ``log`` comparison lets ((2**53 - t) / t)^bits exceed e^eps by an ulp (it did at
    # HCMS eps = 1.0, CMS eps = 0.23): check the rational ratio against e^eps at 60 digits.
    sketch = cls(k=2, m=4, epsilon=epsilon)
    t, top = sketch.flip_threshold, grid(sketch)
    moved = 2 if sketch.name == "cms" else 1
    ratio = Fraction(top - t, t) ** moved
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        e_eps = decimal.Decimal(epsilon).exp()
        assert decimal.Decimal(ratio.numerator) / decimal.Decimal(ratio.denominator) <= e_eps
    # tight: one less is above the stated epsilon (the threshold is the least that holds)
    assert Fraction(top - (t - 1), t - 1) ** moved > Fraction(math.exp(epsilon)) * (1 - 1e-12)
    assert sketch.implemented_epsilon <= sketch.epsilon <= epsilon


@pytest.mark.parametrize(
    ("share", "others", "match"),
    [
        ("x", 0.1, "`share` must be a number"),
        (0.1, [object()], "`others` must be a number"),
        (0.1, "0.1", "`others` must be a number"),
        (1.5, 0.1, "`share` must be in"),
        (0.1, math.nan, "`others` must be in"),
    ],
)
def test_variance_refuses_bad_shares_by_name(share: Any, others: Any, match: str) -> None:
    # one error of the project's tree naming the parameter, never numpy's bare ValueError
    with pytest.raises((ParameterError, ParameterTypeError), match=match):
        CMS(k=2, m=8, epsilon=1.0).variance(100, share, others)


@pytest.mark.parametrize("cls", [CMS, HCMS])
def test_variance_when_every_device_holds_the_string_is_the_coins_alone(cls: Any) -> None:
    """Every device holds "a": each report's Y has mean 1 whatever the row and salt, so
    Var pi_hat = Var(Y) / (n (1 - c)^2), derived per report: CMS ``Y = (bit - f) / (1 - 2 f)``
    with ``bit ~ Bernoulli(1 - f)``, ``Var Y = f (1 - f) / (1 - 2 f)^2``; HCMS ``Y = +-1 / (1 -
    2 f)`` with mean 1, ``Var Y = 1 / (1 - 2 f)^2 - 1``.  (The salt-spread checks above are
    dominated by the collision term and let a wrong per-report moment through.)  Seeded:
    400 replicates of 500 devices, sample variance within chi-square bounds at 1e-6."""
    from scipy.stats import chi2

    sketch = cls(k=3, m=8, epsilon=2.0, salt=7)
    f, c, n = sketch.flip_threshold / grid(sketch), sketch.collision, 500
    var_y = f * (1 - f) / (1 - 2 * f) ** 2 if cls is CMS else 1 / (1 - 2 * f) ** 2 - 1
    stated = float(sketch.variance(n, 1.0, 0.0))
    assert math.isclose(stated, var_y / (n * (1 - c) ** 2), rel_tol=1e-12)
    est = [sketch.estimate(sketch.randomize(["a"] * n, rng=r), ["a"]).values[0] for r in range(400)]
    assert abs(np.mean(est) - 1.0) < 4.9 * math.sqrt(stated / 400)
    lo, hi = chi2.ppf([1e-6, 1 - 1e-6], 399) / 399
    assert lo < np.var(est, ddof=1) / stated < hi


def test_hcms_refuses_an_epsilon_whose_flip_rounds_to_a_half() -> None:
    with pytest.raises(ParameterError, match="`epsilon` is too small for 'hcms'"):
        HCMS(k=2, m=8, epsilon=1e-17)
    assert HCMS(k=2, m=8, epsilon=1e-15).flip_threshold < TWO53 // 2  # still a signal
