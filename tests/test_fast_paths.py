"""The small-call fast paths keep the contract of the array paths, bit for bit.

* One answer given as a Python ``int`` or ``bool`` takes a scalar path (Python ints, no
  arrays until the result): its report, its dtype and shape, and the words it consumes equal
  those of the array path for the same words (``ArrayWords``), for every binary design,
  Kuk and the categorical designs, on edge words (0, 2**64 - 1, each side of every
  threshold) and random ones; replayed report by report, the committed test vectors come
  out unchanged.
* What a design needs on every call (its thresholds, its forced distribution, the
  categorical plan) is computed once: the helpers behind them run once however many
  calls follow, and the cached values equal recomputed ones.
* The categorical estimate is O(k): values, variances and SEs equal the old dense
  computation; the ``k x k`` covariances are built only when asked for, and then equal the
  old ones.

Timing is not tested here: speed belongs to ``scripts/bench`` (benchmarks/bench_calls.py).
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import deniable.designs._base as base_module
import deniable.designs._categorical as categorical_module
from _cases import DESIGN_CASES
from deniable.designs import (
    Binary,
    BinaryDesign,
    Categorical,
    Design,
    Kuk,
    Tally,
    TwoCoin,
    Warner,
    design_from_spec,
)
from deniable.designs._categorical import MAX_DENSE_K
from deniable.exceptions import DataError, ParameterTypeError
from deniable.randomness import (
    ArrayWords,
    ChaCha20Words,
    SystemRandom,
    python_words,
    random_words,
)

VECTORS_FILE = Path(__file__).parent / "vectors" / "randomizers.json"
TOP = (1 << 64) - 1
SEED = 20240601

BINARY_CASES = [
    (i, f) for i, f in DESIGN_CASES if isinstance(f(), BinaryDesign) and not isinstance(f(), Kuk)
]
KUK_CASES = [(i, f) for i, f in DESIGN_CASES if isinstance(f(), Kuk)]
CATEGORICAL_CASES: list[tuple[str, Any]] = [
    *((i, f) for i, f in DESIGN_CASES if isinstance(f(), Categorical)),
    ("k1024", lambda: Categorical.from_epsilon(1.0, 1024)),  # a power of two: a plain shift
    ("k1000", lambda: Categorical.from_epsilon(1.0, 1000)),  # multiply-shift
    ("k3-forced", lambda: Categorical(3, 0.5, (0.25, 0.5, 0.25))),  # cumulative thresholds
    ("k4-forced-zero", lambda: Categorical(4, 0.3, (0.5, 0.5, 0.0, 0.0))),
    ("k70000", lambda: Categorical(70_000, 0.9)),  # uint32 reports
]


def edge_words(thresholds: list[int]) -> list[int]:
    """0, the top word, each side of ``t << 11`` for every threshold, and random words."""
    words = [0, 1, TOP, TOP - 1, 1 << 63, (1 << 63) - 1]
    for t in thresholds:
        for w in ((t << 11) - 1, t << 11, (t << 11) + 1):
            if 0 <= w <= TOP:
                words.append(w)
    rng = np.random.Generator(np.random.PCG64(SEED))
    words += [int(w) for w in rng.bit_generator.random_raw(40)]
    return words


def array_report(design: Design, x: int, words: list[int]) -> tuple[npt.NDArray[Any], int]:
    """The array path's report of one answer (a 1-element uint8 array) and words used."""
    src = ArrayWords(words)
    out = design.randomize(np.array([x], dtype=np.uint8), rng=src)
    return out, src.used


def scalar_report(design: Design, x: Any, words: list[int]) -> tuple[npt.NDArray[Any], int]:
    src = ArrayWords(words)
    out = design.randomize(x, rng=src)
    return out, src.used


def assert_same(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape == (1,)
    assert a.tolist() == b.tolist()


# ------------------------------------------------------------------ binary designs


@pytest.mark.parametrize("make", [f for _, f in BINARY_CASES], ids=[i for i, _ in BINARY_CASES])
def test_binary_scalar_equals_the_array_path_word_by_word(make: Any) -> None:
    design = make()
    for w in edge_words(list(design.thresholds())):
        for x in (0, 1, False, True):
            got, used = scalar_report(design, x, [w])
            want, want_used = array_report(design, int(x), [w])
            assert used == want_used == 1
            assert_same(got, want)


def test_binary_scalar_is_the_threshold_comparison() -> None:
    """Independent of the array path: report = (w >> 11) < t[x], at each side of t."""
    design = TwoCoin()  # thresholds 2**51 (x = 0) and 3 * 2**51 (x = 1)
    t0, t1 = design.thresholds()
    assert (t0, t1) == (1 << 51, 3 << 51)
    for x, t in ((0, t0), (1, t1)):
        assert design.randomize(x, rng=ArrayWords([(t << 11) - 1])).tolist() == [1]
        assert design.randomize(x, rng=ArrayWords([t << 11])).tolist() == [0]


@pytest.mark.parametrize("make", [f for _, f in KUK_CASES], ids=[i for i, _ in KUK_CASES])
def test_kuk_scalar_equals_the_array_path(make: Any) -> None:
    design = make()
    words = edge_words(list(design.thresholds()))
    k = design.draws
    for start in range(0, len(words) - k + 1, max(1, k // 2)):
        chunk = words[start : start + k]
        for x in (0, 1, True):
            got, used = scalar_report(design, x, chunk)
            want, want_used = array_report(design, int(x), chunk)
            assert used == want_used == k
            assert_same(got, want)


def test_seeded_scalar_calls_continue_the_array_stream() -> None:
    """One word per binary report, in order: n scalar calls on a seeded Generator give the
    reports of one array call on the same seed, and leave the generator in the same state."""
    design = Warner(0.8)
    truth = (np.random.Generator(np.random.PCG64(1)).random(500) < 0.4).astype(np.uint8)
    gen_a = np.random.Generator(np.random.PCG64(SEED))
    gen_b = np.random.Generator(np.random.PCG64(SEED))
    one_by_one = [int(design.randomize(int(x), rng=gen_a)[0]) for x in truth]
    assert one_by_one == design.randomize(truth, rng=gen_b).tolist()
    assert gen_a.bit_generator.state == gen_b.bit_generator.state


def test_scalar_input_keeps_the_documented_result() -> None:
    """A scalar answer gives a 1-element report array (as before the fast path), from
    every kind of source; out-of-range or non-integer scalars raise as the array path does."""
    d = Binary(1.0)
    for rng in (None, SystemRandom(), 5, np.random.Generator(np.random.PCG64(1))):
        out = d.randomize(1, rng=rng)
        assert out.dtype == np.uint8 and out.shape == (1,) and out[0] in (0, 1)
        cat = Categorical.from_epsilon(1.0, 1024).randomize(5, rng=rng)
        assert cat.dtype == np.uint16 and cat.shape == (1,) and 0 <= cat[0] < 1024
    for bad in (2, -1):
        with pytest.raises(DataError, match=r"`truth` must hold integers in 0..1"):
            d.randomize(bad)
    with pytest.raises(DataError, match=r"`truth` must hold integers in 0..3"):
        Categorical(4, 0.5).randomize(4)
    with pytest.raises(ParameterTypeError, match="`rng` must be None"):
        d.randomize(1, rng="seed")
    # numpy scalars take the array path: the same report from the same word
    w = [12345678901234567890]
    assert d.randomize(np.int64(1), rng=ArrayWords(w)).tolist() == (
        d.randomize(1, rng=ArrayWords(w)).tolist()
    )


def test_python_words_are_the_words_of_every_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python_words`` hands out exactly the words ``random_words`` would, in order."""
    for size in (1, 2, 3, 5, 9):
        gen_a = np.random.Generator(np.random.PCG64(SEED))
        gen_b = np.random.Generator(np.random.PCG64(SEED))
        assert python_words(gen_a, size) == random_words(gen_b, size).tolist()
        assert gen_a.bit_generator.state == gen_b.bit_generator.state
        assert (
            python_words(7, size)
            == random_words(np.random.Generator(np.random.PCG64(7)), size).tolist()
        )
        words = list(range(3, 3 + size))
        assert python_words(ArrayWords(words), size) == words
        assert (
            python_words(np.random.PCG64(3), size) == np.random.PCG64(3).random_raw(size).tolist()
        )
        # the default CSPRNG: the next words of the process's keystream, in order
        key = bytes(range(32))
        monkeypatch.setattr(
            "deniable.randomness._system._default", ChaCha20Words(key, reseed_bytes=None)
        )
        twin = ChaCha20Words(key, reseed_bytes=None)
        assert python_words(None, size) == twin.python_words(size)
        assert python_words(SystemRandom(), size) == twin.python_words(size)
        assert random_words(SystemRandom(), size).tolist() == twin.random_raw(size).tolist()
        # os.urandom: the same bytes read as the same native-order words as SystemRandom
        data = bytes(range(7, 7 + 8 * size))
        monkeypatch.setattr("os.urandom", lambda m, data=data: data[:m])
        want = SystemRandom(source="os").random_raw(size).tolist()
        assert want == [
            int.from_bytes(data[i : i + 8], sys.byteorder) for i in range(0, 8 * size, 8)
        ]
        assert python_words(SystemRandom(source="os"), size) == want
        monkeypatch.undo()
    with pytest.raises(DataError, match="has 1 of its 1 words left, 2 were asked"):
        python_words(ArrayWords([1]), 2)


# ------------------------------------------------------------------ categorical


def categorical_array_report(
    design: Categorical, x: int, keep_word: int, category_word: int
) -> npt.NDArray[Any]:
    # a block of one report: its keep word, then its category word
    truth = np.array([x], dtype=np.uint32)
    return design.randomize(truth, rng=ArrayWords([keep_word, category_word]))


@pytest.mark.parametrize(
    "make", [f for _, f in CATEGORICAL_CASES], ids=[i for i, _ in CATEGORICAL_CASES]
)
def test_categorical_scalar_equals_the_array_path(make: Any) -> None:
    design = make()
    keep, cum = design.thresholds()
    words = edge_words([keep, *(cum or [])])
    k = design.k
    answers = sorted({0, 1, k - 1, k // 2})
    pairs = list(zip(words, reversed(words), strict=True))
    for keep_word, category_word in pairs:
        for x in answers:
            src = ArrayWords([keep_word, category_word])
            got = design.randomize(x, rng=src)
            assert src.used == 2
            assert_same(got, categorical_array_report(design, x, keep_word, category_word))
    # bools are the answers 0 and 1
    for b in (False, True):
        w = [words[3], words[-1]]
        assert_same(
            design.randomize(b, rng=ArrayWords(w)), categorical_array_report(design, int(b), *w)
        )


def test_vectors_replayed_report_by_report_through_the_scalar_path() -> None:
    """Every committed one-group vector: each report from its own words, one scalar call."""
    cases = json.loads(VECTORS_FILE.read_text())["cases"]
    replayed = 0
    for case in cases:
        spec = case["spec"]
        if spec["algorithm"].startswith("two-group/"):  # two-group: see test_specs.py
            continue
        design = design_from_spec(spec)
        words = [int(w, 0) for w in case["words"]]
        truth, reports = case["truth"], case["reports"]
        n, per = len(truth), spec["words_per_report"]
        assert len(words) == n * per
        for i, x in enumerate(truth):
            # one block (n <= CHUNK): word d of report i is words[d * n + i] (k-ary: n keep
            # words, then n category words; Kuk: n words for each draw in turn)
            assert n <= 1 << 16
            mine = [words[d * n + i] for d in range(per)]
            assert design.randomize(int(x), rng=ArrayWords(mine)).tolist() == [reports[i]], (
                case["id"],
                i,
            )
        replayed += 1
    assert replayed >= 20


def test_seeded_categorical_scalar_calls_match_single_report_arrays() -> None:
    design = Categorical.from_epsilon(2.0, 1000)
    truth = np.random.Generator(np.random.PCG64(2)).integers(0, 1000, 300)
    gen_a = np.random.Generator(np.random.PCG64(SEED))
    gen_b = np.random.Generator(np.random.PCG64(SEED))
    for x in truth.tolist():
        assert design.randomize(x, rng=gen_a).tolist() == design.randomize([x], rng=gen_b).tolist()
    assert gen_a.bit_generator.state == gen_b.bit_generator.state


# ------------------------------------------------------------------ computed once


def test_binary_thresholds_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = base_module.binary_thresholds

    def counting(p1: float, p0: float) -> tuple[int, int]:
        calls.append((p1, p0))
        return real(p1, p0)

    monkeypatch.setattr(base_module, "binary_thresholds", counting)
    design = TwoCoin(0.4, 0.3)
    assert len(calls) == 1  # at construction, which checks them
    gen = np.random.Generator(np.random.PCG64(1))
    for _ in range(20):
        design.randomize(1, rng=gen)
        design.randomize([0, 1, 1], rng=gen)
        design.thresholds()
        _ = design.implemented_channel
    assert len(calls) == 1


@pytest.mark.parametrize("make", [f for _, f in DESIGN_CASES], ids=[i for i, _ in DESIGN_CASES])
def test_cached_thresholds_equal_recomputed_ones(make: Any) -> None:
    design = make()
    if isinstance(design, BinaryDesign):
        fresh = type(design)._thresholds.func(design)  # type: ignore[attr-defined]
        assert design.thresholds() == fresh
    elif isinstance(design, Kuk):  # several draws: one card's thresholds, drawn per card
        assert design.card.thresholds() == BinaryDesign._thresholds.func(design.card)  # type: ignore[attr-defined]
    elif isinstance(design, Categorical):
        fresh_keep, fresh_cum = Categorical._thresholds.func(design)
        keep, cum = design.thresholds()
        assert keep == fresh_keep and cum == (None if fresh_cum is None else list(fresh_cum))
        assert design._forced_counts() == (
            cum,
            list(Categorical._forced_plan.func(design)[1]),
            Categorical._forced_plan.func(design)[2],
        )


def test_categorical_caches_and_hands_out_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = categorical_module.probability_threshold

    def counting(p: Any, rounding: str = "nearest") -> int:
        calls.append(p)
        return real(p, rounding)

    monkeypatch.setattr(categorical_module, "probability_threshold", counting)
    design = Categorical(3, 0.5, (0.25, 0.5, 0.25))
    gen = np.random.Generator(np.random.PCG64(1))
    design.randomize(1, rng=gen)
    first = len(calls)
    assert first > 0
    for _ in range(10):
        design.randomize(2, rng=gen)
        design.randomize([0, 1, 2], rng=gen)
        keep, cum = design.thresholds()
    assert len(calls) == first
    # the caches are not handed out: mutating what a caller gets changes nothing
    assert cum is not None
    cum.append(0)
    design.forced_distribution[0] = 9.0
    assert design.thresholds() == (keep, cum[:-1])
    assert design.forced_distribution.tolist() == [0.25, 0.5, 0.25]
    # and they leave equality, hashing and repr alone
    twin = Categorical(3, 0.5, (0.25, 0.5, 0.25))
    assert twin == design and hash(twin) == hash(design) and repr(twin) == repr(design)


# ------------------------------------------------------------------ O(k) estimate


def old_dense(design: Categorical, tally: Tally) -> dict[str, npt.NDArray[np.float64]]:
    """The estimate as it was computed before (a dense covariance at every call)."""
    n = tally.n
    lam = np.asarray(tally.counts, dtype=float) / n
    f = design.forced_distribution
    t = design.p_truthful
    values = (lam - (1 - t) * f) / t
    cov = (np.diag(lam) - np.outer(lam, lam)) / (n * t * t)
    cov_unb = cov * n / (n - 1) if n > 1 else np.full_like(cov, math.nan)
    return {"values": values, "cov": cov, "cov_unb": cov_unb, "se": np.sqrt(np.diag(cov))}


@pytest.mark.parametrize(
    "design",
    [
        Categorical.from_epsilon(1.0, 1024),
        Categorical.from_epsilon(3.0, 2),
        Categorical(5, 0.6, (0.1, 0.2, 0.3, 0.2, 0.2)),
    ],
    ids=["k1024", "k2", "k5-forced"],
)
@pytest.mark.parametrize("n", [1, 10, 100_000])
def test_estimate_equals_the_old_dense_computation(design: Categorical, n: int) -> None:
    rng = np.random.Generator(np.random.PCG64(n))
    truth = rng.integers(0, design.k, n)
    tally = design.tally(design.randomize(truth, rng=rng))
    est = design.estimate(tally)
    old = old_dense(design, tally)
    np.testing.assert_array_equal(est.values, old["values"])
    np.testing.assert_array_equal(est.variances, np.diag(old["cov"]))
    np.testing.assert_array_equal(est.se, old["se"])
    # the covariances are not built until asked for, and then equal the old ones
    assert "covariance" not in vars(est) and "covariance_unbiased" not in vars(est)
    np.testing.assert_array_equal(est.covariance, old["cov"])
    np.testing.assert_array_equal(est.covariance_unbiased, old["cov_unb"])
    assert est.covariance is est.covariance  # built once
    # each category's exact intervals are unchanged
    j = int(np.argmax(tally.counts))
    assert est.category(j).value == pytest.approx(float(old["values"][j]), rel=1e-12, abs=1e-15)


def test_estimate_above_the_dense_limit_keeps_variances_only() -> None:
    k = MAX_DENSE_K + 1
    design = Categorical.from_epsilon(2.0, k)
    counts = np.arange(k) % 5
    est = design.estimate(design.tally_counts(counts))
    lam = counts / counts.sum()
    t = design.p_truthful
    np.testing.assert_allclose(est.variances, lam * (1 - lam) / (counts.sum() * t * t), rtol=1e-12)
    assert est.covariance.shape == est.covariance_unbiased.shape == (k,)
    np.testing.assert_array_equal(est.covariance, est.variances)


def test_tally_count_checks_still_refuse_booleans_anywhere() -> None:
    counts: list[Any] = list(range(1024))
    assert Tally(counts).n == sum(counts)
    for bad, where in ((True, 0), (np.bool_(False), 1023)):
        wrong = list(counts)
        wrong[where] = bad
        with pytest.raises(ParameterTypeError, match=rf"`counts\[{where}\]` must be an integer"):
            Tally(wrong)
        with pytest.raises(ParameterTypeError, match=rf"`counts\[{where}\]` must be an integer"):
            Tally(tuple(wrong))


@pytest.mark.parametrize("make", [f for _, f in DESIGN_CASES], ids=[i for i, _ in DESIGN_CASES])
def test_pickles_and_copies_carry_parameters_not_caches(make: Any) -> None:
    """The cached thresholds and plans are recomputed by whoever loads a design (another
    version of the code may round differently), and the loaded design randomizes alike."""
    design = make()
    design.randomize(np.zeros(3, dtype=np.uint8), rng=1)
    _ = design.key
    cached = {name for name in vars(design) if name not in {f for f in design.__dataclass_fields__}}
    assert cached  # the key at least
    for twin in (pickle.loads(pickle.dumps(design)), copy.copy(design), copy.deepcopy(design)):
        assert twin == design
        assert not cached & set(vars(twin))
        truth = np.array([0, 1, 1, 0, 1], dtype=np.uint8)
        assert twin.randomize(truth, rng=7).tolist() == design.randomize(truth, rng=7).tolist()
        assert twin.key == design.key
