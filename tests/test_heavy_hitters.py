"""Heavy hitters over an unknown domain: PEM and TreeHist (deniable.oracles._heavy_hitters).

Exact checks (the linear hash's collision probability enumerated, the per-device epsilon in
closed form, the exact binomial threshold against a direct sum, prefix arithmetic against
Python integers), seeded statistical checks with their false-alarm rates stated, and every
bad input.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.exceptions import DataError, ParameterError, ParameterTypeError
from deniable.oracles import (
    PEM,
    HeavyHitterReports,
    HeavyHitters,
    LinearOLH,
    TreeHist,
)
from deniable.oracles._prefix_oracle import PrefixOLH
from deniable.oracles._strings import (
    decode_strings,
    encode_strings,
    extend_prefixes,
    prefix_mask,
    words_of,
)

# ---- data


def _zipf_items(n: int, heavy: list[str], total: float, length: int, seed: int) -> list[bytes]:
    """``heavy[r]`` with frequency proportional to ``1 / (r + 1)`` (Zipf, exponent 1),
    ``total`` of the devices in all, in exact counts; the rest distinct-ish random
    lowercase strings of ``length`` bytes (26**length values: none frequent)."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, len(heavy) + 1)
    counts = np.floor(total * n * weights / weights.sum()).astype(int)
    out = [h.encode() for h, c in zip(heavy, counts, strict=True) for _ in range(c)]
    rest = rng.integers(97, 123, size=(n - len(out), length), dtype=np.uint8)
    out += [row.tobytes() for row in rest]
    rng.shuffle(out)  # type: ignore[arg-type]
    return out


def _zipf_frequencies(n: int, heavy: list[str], total: float) -> dict[str, float]:
    weights = 1 / np.arange(1, len(heavy) + 1)
    counts = np.floor(total * n * weights / weights.sum())
    return {h: float(c) / n for h, c in zip(heavy, counts, strict=True)}


# ---- epsilon per device


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0, 6.0])
def test_epsilon_per_device_is_the_one_report_of_linear_olh(epsilon: float) -> None:
    pem = PEM(epsilon, max_bytes=4)
    tree = TreeHist(epsilon, max_bytes=4)
    base = LinearOLH.from_epsilon(epsilon, LinearOLH.max_k)
    t, g = base.p_truthful, base.g
    # closed form of one report's randomized response over g buckets: ln(1 + g t / (1 - t))
    closed = math.log1p(g * t / (1 - t))
    for proto in (pem, tree):
        assert proto.epsilon_per_device == pytest.approx(closed, rel=1e-12)
        assert proto.epsilon_per_device <= epsilon + 1e-12
        assert proto.implemented_epsilon <= proto.epsilon_per_device
        assert proto.base.g == g


def test_each_device_reports_exactly_once_in_balanced_groups() -> None:
    n = 10_007
    items = [f"s{i % 50}" for i in range(n)]
    pem = PEM(2.0, max_bytes=4, start_bits=8, step_bits=8)
    reports = pem.randomize(items, rng=3)
    sizes = [int(r.shape[0]) for r in reports.reports]
    assert reports.levels == (8, 16, 24, 32)
    assert sum(sizes) == n == reports.n  # one report a device: eps per device = eps
    assert max(sizes) - min(sizes) <= 1


def test_linear_hash_collides_with_probability_exactly_one_over_g() -> None:
    """Every 2 x 3 binary matrix A enumerated: for each pair x != x' of 3-bit prefixes,
    #{A : A x = A x'} = 64 / 4 (the pairwise collision probability 1/g the variance uses)."""
    base = LinearOLH(k=8, g=4, p_truthful=0.5)
    oracle = PrefixOLH(base, bits=3, words=1)
    rows = np.array(
        [[a0 << 61, a1 << 61] for a0, a1 in itertools.product(range(8), repeat=2)],
        dtype=np.uint64,
    )
    values = [np.full((64, 1), x << 61, dtype=np.uint64) for x in range(8)]
    hashes = [oracle._hash(rows, x) for x in values]
    for x, y in itertools.combinations(range(8), 2):
        assert int(np.count_nonzero(hashes[x] == hashes[y])) == 64 // 4
    # and each bucket is hit by exactly 64 / 4 matrices for a nonzero prefix
    for x in range(1, 8):
        assert np.bincount(hashes[x].astype(np.int64), minlength=4).tolist() == [16] * 4


def test_report_channel_enumerated_has_exactly_the_implemented_epsilon() -> None:
    """Every word outcome of a report enumerated through ``randomize`` (ArrayWords): the
    rows (64 matrices; low bits of the row words masked away), keep or not (weights
    ``keep / 2**53`` and the rest) and the bucket word's top bits.  The largest ratio
    P(report | x) / P(report | x') over 3-bit prefixes is ``1 + g keep / (2**53 - keep)``
    exactly, whose log is ``implemented_epsilon`` (at most the stated epsilon)."""
    from collections import defaultdict
    from fractions import Fraction

    from deniable.randomness import ArrayWords

    base = LinearOLH(k=8, g=4, p_truthful=0.3)
    oracle = PrefixOLH(base, bits=3, words=1)
    keep_t, _ = base.randomized_response.thresholds()
    weights = {0: Fraction(keep_t, 2**53), (1 << 64) - 1: 1 - Fraction(keep_t, 2**53)}
    combos = [
        (a0, a1, kw, e)
        for a0, a1 in itertools.product(range(8), repeat=2)
        for kw in weights
        for e in range(4)
    ]
    junk = (1 << 61) - 1  # bits past the prefix: masked away
    words = [w for a0, a1, kw, e in combos for w in ((a0 << 61) | junk, a1 << 61, kw, e << 62)]
    dist = []
    for x in range(8):
        prefixes = np.full((len(combos), 1), x << 61, dtype=np.uint64)
        reports = oracle.randomize(prefixes, rng=ArrayWords(words))
        d: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)
        for rep, (_, _, kw, _) in zip(reports.tolist(), combos, strict=True):
            d[tuple(rep)] += Fraction(1, 64) * weights[kw] / 4
        assert sum(d.values()) == 1
        dist.append(d)
    ratio = max(dx[r] / dy[r] for dx in dist for dy in dist for r in dx)
    assert ratio == 1 + Fraction(4 * keep_t, 2**53 - keep_t)
    assert math.log(ratio) == pytest.approx(base.implemented_epsilon, rel=1e-12)
    assert base.implemented_epsilon <= base.epsilon


def test_randomized_reports_support_own_prefix_with_p_and_others_with_one_over_g() -> None:
    """n = 200000 reports of one 20-bit prefix: the share supporting it is Binomial(n, p'),
    another prefix's Binomial(n, 1/g); each checked within 4.5 SD (false alarm ~ 1.4e-5)."""
    pem = PEM(2.0, max_bytes=3)
    oracle = pem.oracle(20)
    n = 200_000
    x = np.full((n, 1), 0xABCDE << 44, dtype=np.uint64)
    reports = oracle.randomize(x, rng=11)
    cands = np.array([[0xABCDE << 44], [0x12345 << 44]], dtype=np.uint64)
    counts = oracle.support_counts(oracle.check_reports(reports), cands)
    p, q = pem.base.p, 1 / pem.base.g
    assert pem.base.q == pytest.approx(q, rel=1e-12)
    for c, prob in zip(counts, (p, q), strict=True):
        assert abs(c - n * prob) <= 4.5 * math.sqrt(n * prob * (1 - prob))


@pytest.mark.parametrize(("bits", "step", "max_bytes"), [(12, 4, 2), (72, 8, 9), (66, 3, 9)])
def test_extension_counts_equal_the_support_counts_of_the_extended_candidates(
    bits: int, step: int, max_bytes: int
) -> None:
    """The linear shortcut (A (p, e) = A p xor A e) against counting every candidate."""
    pem = PEM(3.0, max_bytes=max_bytes)
    oracle = pem.oracle(bits)
    w = pem.words
    rng = np.random.default_rng(bits)
    raw = rng.integers(0, 1 << 63, size=(3000, w), dtype=np.uint64)
    mask = prefix_mask(bits, w)
    reports = oracle.check_reports(oracle.randomize(raw & mask[None, :], rng=1))
    prefixes = raw[:5] & prefix_mask(bits - step, w)[None, :]
    fast = oracle.extension_counts(reports, prefixes, step)
    slow = oracle.support_counts(reports, extend_prefixes(prefixes, bits - step, step))
    assert fast.tolist() == slow.tolist()
    assert fast.sum() > 0


@pytest.mark.parametrize(("epsilon", "step"), [(1.0, 4), (4.0, 8), (9.0, 3)])
def test_extension_counts_add_over_blocks_of_reports_and_any_bucket_width(
    monkeypatch: pytest.MonkeyPatch, epsilon: float, step: int
) -> None:
    """Counted in blocks of reports (a small block forces several) with buckets of 2 to
    2**13 values (uint8 and uint16 tables): the same counts as counting every candidate."""
    import deniable.oracles._prefix_oracle as po

    monkeypatch.setattr(po, "_PAIRS", 1 << (step + 9))  # blocks of 512 reports
    pem = PEM(epsilon, max_bytes=3, top_k=4)
    bits = 20
    oracle = pem.oracle(bits)
    rng = np.random.default_rng(step)
    raw = rng.integers(0, 1 << 63, size=(2500, 1), dtype=np.uint64) & prefix_mask(bits, 1)
    raw[:1200] = raw[0]  # a frequent prefix, so that the counts are not all near n / g
    reports = oracle.check_reports(oracle.randomize(raw, rng=2))
    prefixes = raw[[0, 1300, 2000]] & prefix_mask(bits - step, 1)[None, :]
    fast = oracle.extension_counts(reports, prefixes, step)
    slow = oracle.support_counts(reports, extend_prefixes(prefixes, bits - step, step))
    assert fast.tolist() == slow.tolist()
    assert fast.max() > 1000 * pem.base.p  # the frequent one is there


@pytest.mark.parametrize(("epsilon", "bits"), [(0.5, 1), (2.0, 8), (4.0, 13), (9.0, 6)])
def test_domain_counts_equal_the_support_counts_of_every_prefix(
    monkeypatch: pytest.MonkeyPatch, epsilon: float, bits: int
) -> None:
    """The first round's counts by one Walsh-Hadamard transform, in blocks of reports (a
    small block forces several), against counting each of the 2**bits prefixes directly."""
    import deniable.oracles._prefix_oracle as po

    pem = PEM(epsilon, max_bytes=2, start_bits=min(bits, 16), top_k=4)
    oracle = pem.oracle(bits)
    monkeypatch.setattr(po, "_SUBSETS", pem.base.g * 700)  # blocks of 700 reports
    rng = np.random.default_rng(bits)
    raw = rng.integers(0, 1 << 63, size=(3000, 1), dtype=np.uint64) & prefix_mask(bits, 1)
    raw[:900] = raw[0]
    reports = oracle.check_reports(oracle.randomize(raw, rng=5))
    every = np.arange(1 << bits, dtype=np.uint64)[:, None] << np.uint64(64 - bits)
    fast = oracle.domain_counts(reports)
    assert fast.tolist() == oracle.support_counts(reports, every).tolist()
    assert int(fast[int(raw[0, 0] >> np.uint64(64 - bits))]) > 900 * pem.base.p


def test_domain_counts_refuse_a_prefix_longer_than_they_count() -> None:
    oracle = PEM(2.0, max_bytes=3).oracle(21)
    reports = oracle.check_reports(oracle.randomize(np.zeros((4, 1), dtype=np.uint64), rng=1))
    with pytest.raises(
        ParameterError, match=r"^`bits` must be at most 20 to count every prefix, got 21\.$"
    ):
        oracle.domain_counts(reports)


# ---- the exact binomial threshold


@pytest.mark.parametrize(
    ("alpha", "n", "m"),
    [(0.05, 60, 7), (0.05, 1, 1), (1e-6, 3, 10), (0.5, 200, 1), (0.01, 2857, 256)],
)
def test_count_threshold_is_the_least_count_with_tail_at_most_alpha_over_m(
    alpha: float, n: int, m: int
) -> None:
    pem = PEM(1.0, max_bytes=2, alpha=alpha)  # g = 4: q = 1/4
    assert pem.base.g == 4
    from fractions import Fraction

    def tail(c: int) -> Fraction:  # P(Binomial(n, 1/4) >= c), exactly
        return sum(
            (Fraction(math.comb(n, i) * 3 ** (n - i), 4**n) for i in range(max(c, 0), n + 1)),
            Fraction(0),
        )

    c_star = pem.count_threshold(n, m)
    bound = Fraction(alpha) / m
    assert tail(c_star) <= bound < tail(c_star - 1)


def test_count_threshold_refuses_bad_arguments() -> None:
    with pytest.raises(ParameterError, match="`alpha` must be set"):
        PEM(1.0, max_bytes=2, alpha=None).count_threshold(10, 2)
    with pytest.raises(ParameterError, match=r"`m` must be an integer in \[1, inf\]"):
        PEM(1.0, max_bytes=2).count_threshold(10, 0)


# ---- prefixes and strings


def test_strings_round_trip_with_padding_stripped() -> None:
    assert encode_strings(["é", "x"], 2).tolist() == encode_strings([b"\xc3\xa9", b"x"], 2).tolist()
    items = ["a", "é", "日本", b"xyz\n", "abcdefghi"]
    words = encode_strings(items, 9)
    assert words.shape == (5, 2)
    # big-endian, left-aligned: "a" is 0x61 in the top byte of word 0
    assert int(words[0, 0]) == 0x61 << 56 and int(words[0, 1]) == 0
    assert decode_strings(words, 9) == ["a", "é", "日本", "xyz\n", "abcdefghi"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=7).filter(lambda t: "\x00" not in t), min_size=1),
    st.integers(1, 40),
)
def test_str_items_on_one_buffer_are_encoded_as_each_item_is(
    items: list[str], max_bytes: int
) -> None:
    """Lists of str are encoded by numpy on one buffer (_str_words); every list the
    item-by-item path accepts gives the same words, bytes items by construction, and any
    other list (an item too long, a lone surrogate) goes to that path, which names it."""
    from deniable.oracles import _strings

    one_by_one = [t.encode("utf-8", "surrogatepass") for t in items]
    fast = _strings._str_words(items, max_bytes)
    if all(0 < len(b) <= max_bytes for b in one_by_one) and not any(
        0xD800 <= ord(c) <= 0xDFFF for t in items for c in t
    ):
        assert fast is not None
        assert fast.tolist() == encode_strings(one_by_one, max_bytes).tolist()
        assert decode_strings(fast, max_bytes) == items
    else:
        assert fast is None
        with pytest.raises(DataError, match=r"^`items\[\d+\]` must "):
            encode_strings(items, max_bytes)


def test_str_items_with_a_nul_empty_or_other_kind_take_the_path_that_names_them() -> None:
    from deniable.oracles import _strings

    for items in (["ab", "c\x00d"], ["ab", ""], ["ab", b"cd"], ("ab", 3), []):
        assert _strings._str_words(items, 8) is None
    assert _strings._str_words(("ab", "é"), 3) is not None  # a tuple of str is fine


def test_a_candidate_that_is_not_utf8_decodes_to_bytes() -> None:
    fixed = np.array([[0xFF, 0xFE, 0, 0]], dtype=np.uint8)
    assert decode_strings(words_of(fixed), 4) == [b"\xff\xfe"]


@pytest.mark.parametrize(("bits", "step"), [(8, 4), (62, 4), (60, 4), (127, 1), (64, 8)])
def test_extend_prefixes_matches_integer_arithmetic(bits: int, step: int) -> None:
    total = 192  # three words
    rng = np.random.default_rng(bits)
    prefixes = [int(rng.integers(0, 1 << 62)) % (1 << bits) for _ in range(3)]

    def words(value: int) -> list[int]:  # a value of `total` bits as big-endian words
        return [(value >> (total - 64 * (j + 1))) & ((1 << 64) - 1) for j in range(3)]

    arr = np.array([words(p << (total - bits)) for p in prefixes], dtype=np.uint64)
    out = extend_prefixes(arr, bits, step)
    expected = [
        words(((p << step) | e) << (total - bits - step))
        for p in prefixes
        for e in range(1 << step)
    ]
    assert out.tolist() == expected
    mask = prefix_mask(bits + step, 3)
    assert np.all(out & ~mask[None, :] == 0)


# ---- recall on planted strings (fixed seeds)


def test_pem_recalls_planted_zipf_strings() -> None:
    """Five planted strings, Zipf frequencies 0.197 .. 0.039 of n = 50000 devices, among
    random 6-byte strings.  At epsilon 4 each of the 11 groups has ~4545 devices and the
    rounds' thresholds are ~0.016; the smallest planted frequency sits ~4 SE above them, so
    a miss has probability below 11 x 5 x 3e-5 ~ 2e-3 (normal approximation): stated
    recall 5/5 at this seed.  Each estimate is within 4.5 SE of its truth (false alarm
    ~ 4e-5, selection bias negligible this far above the threshold)."""
    heavy = ["apple", "banana", "cherry", "durian", "elder"]
    n = 50_000
    items = _zipf_items(n, heavy, 0.45, 6, seed=0)
    found = PEM(4.0, max_bytes=6, start_bits=8, step_bits=4, top_k=16).run(items, rng=1)
    assert isinstance(found, HeavyHitters)
    truth = _zipf_frequencies(n, heavy, 0.45)
    assert set(heavy) <= set(found.strings)
    for s, f, se in zip(found.strings, found.frequencies, found.se, strict=True):
        if s in truth:
            assert abs(f - truth[s]) <= 4.5 * se
    assert list(found.strings[:3]) == heavy[:3]  # 0.197, 0.098, 0.066: order by estimate
    assert [r.bits for r in found.rounds] == [*range(8, 48, 4), 48]


def test_treehist_recalls_planted_zipf_strings() -> None:
    """Three planted 3-byte strings, frequencies 0.22, 0.11, 0.073 of n = 50000, at
    epsilon 4: 24 groups of ~2083, thresholds ~0.025, the smallest frequency ~4 SE above:
    a miss has probability below 24 x 3 x 3e-5 ~ 2e-3; stated recall 3/3 at this seed."""
    heavy = ["cat", "dog", "emu"]
    items = _zipf_items(50_000, heavy, 0.4, 3, seed=5)
    found = TreeHist(4.0, max_bytes=3, top_k=16).run(items, rng=6)
    assert set(heavy) <= set(found.strings)
    assert len(found.rounds) == 24


# ---- the null: no string frequent


def test_pem_false_discoveries_under_the_null() -> None:
    """Uniform random 4-byte ASCII strings (2**28 values, n = 20000: none frequent).  A
    string of frequency 0 enters the final list with probability at most alpha = 0.05
    (exact binomial threshold, Bonferroni); a string held by one device shifts its count's
    mean by at most 1.  Over 10 seeds the runs with any false discovery are Binomial(10,
    <= 0.05) (with that slack): at most 3 allowed, false alarm P(>= 4) ~ 1e-3."""
    runs_with_fd = 0
    pem = PEM(3.0, max_bytes=4, start_bits=8, step_bits=4, top_k=16, alpha=0.05)
    for seed in range(10):
        raw = np.random.default_rng(100 + seed).integers(1, 128, size=(20_000, 4), dtype=np.uint8)
        found = pem.run([r.tobytes() for r in raw], rng=seed)
        runs_with_fd += len(found.strings) > 0
    assert runs_with_fd <= 3


def _held_prefixes(items: list[bytes], max_bytes: int, bits: int) -> set[bytes]:
    """The prefixes of ``bits`` bits some device holds, as the rounds list them."""
    words = encode_strings(items, max_bytes) & prefix_mask(bits, -(-max_bytes // 8))[None, :]
    raw = np.ascontiguousarray(words.astype(">u8")).view(np.uint8)[:, : -(-bits // 8)]
    return {row.tobytes() for row in raw}


def test_a_round_keeps_a_prefix_no_device_holds_with_probability_at_most_alpha() -> None:
    """Strings "ab" + two random lowercase letters (676 values of ~0.0015 each: none
    frequent), n = 20000, PEM with 4-bit steps (7 rounds of ~2857 devices).  Every round
    tests candidates no device holds (the other first bytes, the nibbles past "ab", the
    non-letters): their counts are exactly Binomial(n_j, 1/g), so a round keeps one with
    probability at most alpha = 0.01.  Over 10 seeds x 7 rounds the (run, round) pairs that
    do are at most Binomial(70, 0.01): at most 4 allowed, false alarm P(>= 5) ~ 6e-4."""
    pem = PEM(3.0, max_bytes=4, start_bits=8, step_bits=4, top_k=64, alpha=0.01)
    held = {}
    bad_rounds = deep_runs = 0
    for seed in range(10):
        letters = np.random.default_rng(200 + seed).integers(97, 123, size=(20_000, 2))
        items = [b"ab" + row.astype(np.uint8).tobytes() for row in letters]
        held = {b: _held_prefixes(items, 4, b) for b in pem.levels}
        found = pem.run(items, rng=seed)
        deep_runs += len(found.rounds) >= 6  # the test reached the long prefixes
        for r in found.rounds:
            bad_rounds += bool(set(r.prefixes) - held[r.bits])
    assert bad_rounds <= 4
    assert deep_runs >= 8


def test_top_k_mode_keeps_k_and_names_the_rule() -> None:
    raw = np.random.default_rng(1).integers(97, 123, size=(4000, 2), dtype=np.uint8)
    found = PEM(2.0, max_bytes=2, start_bits=8, step_bits=8, top_k=5, alpha=None).run(
        [r.tobytes() for r in raw], rng=2
    )
    assert len(found.strings) == 5
    assert {r.rule for r in found.rounds} == {"top-k"}
    assert all(r.kept == 5 for r in found.rounds)
    # the threshold that decided is the fifth largest estimate: the last one kept
    assert found.rounds[-1].threshold == pytest.approx(min(found.frequencies))


# ---- the result


def test_result_to_dict_and_table() -> None:
    items = ["hi"] * 3000 + ["yo"] * 2000 + [chr(97 + i % 26) * 2 for i in range(5000)]
    found = PEM(4.0, max_bytes=2, start_bits=8, step_bits=8, top_k=4).run(items, rng=1)
    d = json.loads(json.dumps(found.to_dict()))
    assert d["epsilon_per_device"] == found.epsilon
    assert [h["string"] for h in d["heavy_hitters"]][:2] == ["hi", "yo"]
    for h in d["heavy_hitters"]:
        assert h["ci"][0] < h["frequency"] < h["ci"][1]
        assert h["ci"][1] - h["frequency"] == pytest.approx(1.959963984540054 * h["se"])
    assert [r["bits"] for r in d["rounds"]] == [8, 16]
    text = str(found)
    assert "epsilon per device = 4" in text and "rounds" in text and "hi" in text


# ---- bad input


@pytest.mark.parametrize(
    ("items", "kind", "match"),
    [
        (["ok", ""], DataError, r"`items\[1\]` must be a non-empty"),
        (["ok", "toolong"], DataError, r"`items\[1\]` must be at most max_bytes = 4"),
        (["ok", "é" * 3], DataError, r"`items\[1\]` must be at most max_bytes = 4 bytes.*got 6"),
        (["ok", b"\xff\xfe"], DataError, r"`items\[1\]` must be valid UTF-8"),
        ([b"ab", b"\xc3", b"\xa9"], DataError, r"`items\[1\]` must be valid UTF-8"),
        (["ok", "a\x00"], DataError, r"`items\[1\]` must not contain a NUL"),
        (["ok", "\ud800"], DataError, r"`items\[1\]` must be encodable as UTF-8"),
        (["ok", 3], ParameterTypeError, r"`items\[1\]` must be a str or bytes, got int"),
        (["ok", b"ok", "\ud800"], DataError, r"`items\[2\]` must be encodable as UTF-8"),
        ([b"ok", b"a\x00b"], DataError, r"`items\[1\]` must not contain a NUL"),
        ("abc", ParameterTypeError, r"`items` must be a sequence"),
        ([], DataError, r"`items` must hold at least one"),
        (["a"], DataError, r"at least one string per group"),
    ],
)
def test_bad_items_are_refused_naming_the_item(items: object, kind: type, match: str) -> None:
    pem = PEM(1.0, max_bytes=4, start_bits=8, step_bits=8)
    with pytest.raises(kind, match=match):
        pem.randomize(items, rng=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, r"`epsilon`"),
        ({"max_bytes": 0}, r"`max_bytes` must be an integer in \[1, 64\]"),
        ({"max_bytes": 65}, r"`max_bytes`"),
        ({"start_bits": 17}, r"`start_bits` must be an integer in \[1, 16\]"),
        ({"max_bytes": 1, "start_bits": 9}, r"`start_bits` must be an integer in \[1, 8\]"),
        ({"step_bits": 0}, r"`step_bits`"),
        ({"top_k": 0}, r"`top_k`"),
        ({"alpha": 1.0}, r"`alpha` must be in \(0, 1\) or None"),
        ({"g": 3}, r"`g` must be a power of two"),
    ],
)
def test_bad_parameters_are_refused_naming_them(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {"epsilon": 1.0, "max_bytes": 4, **kwargs}
    with pytest.raises(ParameterError, match=match):
        PEM(**args)  # type: ignore[arg-type]


def test_reports_of_another_protocol_or_malformed_are_refused() -> None:
    items = [f"s{i % 9}" for i in range(600)]
    pem = PEM(2.0, max_bytes=2, start_bits=8, step_bits=8)
    reports = pem.randomize(items, rng=0)
    with pytest.raises(DataError, match=r"`reports` must be the HeavyHitterReports"):
        PEM(2.0, max_bytes=2, start_bits=4, step_bits=4).estimate(reports)
    with pytest.raises(DataError, match=r"`reports` must be the HeavyHitterReports"):
        pem.estimate("reports")  # type: ignore[arg-type]
    with pytest.raises(DataError, match=r"`reports` must hold one array per level \(2\), got 1"):
        HeavyHitterReports(reports.levels, reports.reports[:1])
    bad = reports.reports[0].copy()
    bad[0, 0] |= np.uint64(1)  # a row bit past the 8-bit prefix
    with pytest.raises(DataError, match=r"rows of at most 8 bits"):
        pem.estimate(HeavyHitterReports(reports.levels, (bad, reports.reports[1])))
    with pytest.raises(DataError, match=r"must be an \(n, \d+\) uint64 array"):
        pem.estimate(HeavyHitterReports(reports.levels, (bad[:, :1], reports.reports[1])))


# ---- bigger studies


@pytest.mark.slow
def test_pem_false_discovery_rate_under_the_null_over_many_runs() -> None:
    """100 null runs (as the fast test): runs with any false discovery are Binomial(100,
    <= 0.05); at most 11 allowed, false alarm P(>= 12) ~ 5e-3."""
    pem = PEM(3.0, max_bytes=4, start_bits=8, step_bits=4, top_k=16, alpha=0.05)
    runs_with_fd = 0
    for seed in range(100):
        raw = np.random.default_rng(1000 + seed).integers(1, 128, size=(20_000, 4), dtype=np.uint8)
        runs_with_fd += len(pem.run([r.tobytes() for r in raw], rng=seed).strings) > 0
    assert runs_with_fd <= 11


@pytest.mark.slow
def test_pem_recall_at_large_n() -> None:
    """n = 400000, ten Zipf strings of 8 bytes down to frequency ~0.015 (~6 SE above the
    thresholds ~0.006 at 15 groups of ~26700): recall 10/10 at this seed (a miss has
    probability below 15 x 10 x 1e-9)."""
    heavy = [f"item{i:04d}" for i in range(10)]
    items = _zipf_items(400_000, heavy, 0.45, 8, seed=9)
    found = PEM(4.0, max_bytes=8, start_bits=8, step_bits=4, top_k=32).run(items, rng=10)
    assert set(heavy) <= set(found.strings)


def test_se_is_the_documented_wald_se_of_the_last_group() -> None:
    # se = sqrt(lambda (1 - lambda) / (n_j (p - q)^2)), lambda = q + (p - q) f the support
    # rate the frequency f implies (docs/heavy-hitters.md); n_j the last group's reports
    pem = PEM(epsilon=2.0, max_bytes=2, start_bits=8, step_bits=8, top_k=4, alpha=None)
    items = ["ab"] * 1500 + ["cd"] * 1000 + [chr(101 + i % 20) * 2 for i in range(2500)]
    found = pem.run(items, rng=3)
    p, q = pem.base.p, pem.base.q
    n_last = found.rounds[-1].devices
    assert found.strings[:2] == ("ab", "cd")
    for f, se in zip(found.frequencies, found.se, strict=True):
        lam = q + (p - q) * f
        assert math.isclose(se, math.sqrt(lam * (1 - lam) / n_last) / (p - q), rel_tol=1e-9)
